"""Who may use the app. Off by default (a server on localhost is private); for a server that
others can reach, turn one of two gates on in ``.streamlit/secrets.toml``:

* a shared password::

      [access]
      password = "a long passphrase"

* a login with an OpenID Connect provider, Streamlit's own ``st.login``: an ``[auth]``
  section as Streamlit documents it (redirect_uri, cookie_secret, client_id, client_secret,
  server_metadata_url), optionally with ``allowed_emails = ["a@example.org", ...]`` under
  ``[access]``.
"""

from __future__ import annotations

import hashlib
import hmac

import streamlit as st


def _secret(section: str) -> dict:
    try:
        return dict(st.secrets.get(section, {}))
    except Exception:  # no secrets file at all: the gate is off
        return {}


def allowed() -> bool:
    """True when the visitor may use the app; otherwise shows the gate and returns False."""
    access = _secret("access")
    if _secret("auth"):
        return _logged_in(access.get("allowed_emails"))
    if access.get("password"):
        return _knows_password(str(access["password"]))
    return True


def _logged_in(allowed_emails) -> bool:
    if not st.user.get("is_logged_in", False):
        st.title("Label-efficient evaluation")
        st.info("This server asks you to log in first.")
        st.button("Log in", key="login", on_click=st.login, type="primary")
        return False
    email = str(st.user.get("email", ""))
    if allowed_emails and email not in allowed_emails:
        st.title("Label-efficient evaluation")
        st.error(f"The account {email!r} may not use this server. Ask its owner to add it.")
        st.button("Log out", key="logout", on_click=st.logout)
        return False
    st.sidebar.button("Log out", key="logout", on_click=st.logout)
    return True


def _digest(text: str) -> bytes:
    return hashlib.sha256(text.encode()).digest()


def _knows_password(password: str) -> bool:
    if st.session_state.get("access_granted"):
        return True
    st.title("Label-efficient evaluation")
    with st.form("access"):
        given = st.text_input("Password", type="password", key="access_password")
        entered = st.form_submit_button("Enter", type="primary")
    if entered:
        if hmac.compare_digest(_digest(given), _digest(password)):
            st.session_state.access_granted = True
            st.session_state.pop("access_password", None)
            st.rerun()
        st.error("That password is not right. Ask the person who runs this server.")
    return False

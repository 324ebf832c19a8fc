"""Label-efficient evaluation: the Streamlit entry point (``streamlit run app.py``).

The pages live in ``views/``; this file only sets the page up and the navigation. The folder
is not called ``pages/``: Streamlit treats a ``pages/`` folder beside the entry point as an
older kind of multipage app, and a link straight to a page (``/compare?session=...``) then
opened under a "Page not found" dialog, or ran the page file alone.
"""

from pathlib import Path

import streamlit as st

from views import access, common

# A local file: a Material icon or emoji as the page icon is fetched from the internet, and the
# app must work offline.
ICON = str(Path(__file__).resolve().parent / "static" / "icon.png")

st.set_page_config(page_title="Label-efficient evaluation", page_icon=ICON, layout="wide")
if not access.allowed():  # off unless .streamlit/secrets.toml turns it on (see views/access.py)
    st.stop()

PAGES = {
    "Evaluate": [
        st.Page("views/start_page.py", title="Start", icon=":material/flag:", default=True),
        st.Page("views/setup_page.py", title="Set up", icon=":material/tune:", url_path="setup"),
        st.Page("views/label_page.py", title="Label", icon=":material/label:", url_path="label"),
    ],
    "Insight": [
        st.Page(
            "views/convergence_page.py",
            title="Convergence",
            icon=":material/show_chart:",
            url_path="convergence",
        ),
        st.Page(
            "views/pr_explorer_page.py",
            title="PR curve",
            icon=":material/ssid_chart:",
            url_path="pr-curve",
        ),
        st.Page(
            "views/compare_page.py",
            title="Compare samplers",
            icon=":material/compare_arrows:",
            url_path="compare",
        ),
        st.Page(
            "views/measures_page.py",
            title="All measures",
            icon=":material/table_chart:",
            url_path="measures",
        ),
        st.Page(
            "views/export_page.py",
            title="Export",
            icon=":material/download:",
            url_path="export",
        ),
    ],
}
# The sidebar is drawn here, not by st.navigation, so that every link carries the open session
# (?session=...): a page entered by a shared link keeps its session when the user moves on.
navigation = st.navigation(PAGES, position="hidden")
session_id = common.current_session_id()
with st.sidebar:
    for section, pages in PAGES.items():
        st.caption(section)
        for page in pages:
            st.page_link(page, query_params={"session": session_id} if session_id else None)
navigation.run()

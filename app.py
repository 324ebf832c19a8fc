"""Label-efficient evaluation: the Streamlit entry point (``streamlit run app.py``).

The pages live in ``pages/``; this file only sets the page up and the navigation. Page files
are named ``*_page.py`` so that no URL path (``/label``) names a file in ``pages/``: a fresh
server asked for such a path would run the file alone in Streamlit's pages-directory mode.
"""

import streamlit as st

from pages import access

st.set_page_config(
    page_title="Label-efficient evaluation", page_icon=":material/target:", layout="wide"
)
if not access.allowed():  # off unless .streamlit/secrets.toml turns it on (see pages/access.py)
    st.stop()

navigation = st.navigation(
    {
        "Evaluate": [
            st.Page("pages/start_page.py", title="Start", icon=":material/flag:", default=True),
            st.Page(
                "pages/setup_page.py", title="Set up", icon=":material/tune:", url_path="setup"
            ),
            st.Page(
                "pages/label_page.py", title="Label", icon=":material/label:", url_path="label"
            ),
        ],
        "Insight": [
            st.Page(
                "pages/convergence_page.py",
                title="Convergence",
                icon=":material/show_chart:",
                url_path="convergence",
            ),
            st.Page(
                "pages/pr_explorer_page.py",
                title="PR curve",
                icon=":material/ssid_chart:",
                url_path="pr-curve",
            ),
            st.Page(
                "pages/compare_page.py",
                title="Compare samplers",
                icon=":material/compare_arrows:",
                url_path="compare",
            ),
            st.Page(
                "pages/measures_page.py",
                title="All measures",
                icon=":material/table_chart:",
                url_path="measures",
            ),
            st.Page(
                "pages/export_page.py",
                title="Export",
                icon=":material/download:",
                url_path="export",
            ),
        ],
    }
)
navigation.run()

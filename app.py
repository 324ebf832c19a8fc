"""Label-efficient evaluation: the Streamlit entry point (``streamlit run app.py``).

The pages live in ``pages/``; this file only sets the page up and the navigation.
"""

import streamlit as st

st.set_page_config(
    page_title="Label-efficient evaluation", page_icon=":material/target:", layout="wide"
)

navigation = st.navigation(
    [
        st.Page("pages/start_page.py", title="Start", icon=":material/flag:", default=True),
        st.Page("pages/setup_page.py", title="Set up", icon=":material/tune:", url_path="setup"),
        st.Page("pages/label_page.py", title="Label", icon=":material/label:", url_path="label"),
    ]
)
navigation.run()

"""All measures now: every applicable measure re-estimated from this session's answers."""

from __future__ import annotations

import streamlit as st

from evalcore import insight
from pages import common

st.title("All measures")
session_id, session, record = common.require_session()
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}` · "
    f"{session.n_labels} labels. The same answers estimate every measure (sample reuse); the "
    "sampler aimed at the session's own measure, so the others' intervals may be wider."
)
table = insight.measure_table(session, record.confidence)
level = f"{record.confidence:.0%}"
table = table.rename(
    columns={"ci_low": f"{level} interval, low", "ci_high": f"{level} interval, high"}
)
table["measure"] = table.measure.map(lambda name: common.MEASURE_LABELS.get(name, name))
st.dataframe(table, width="stretch", hide_index=True)

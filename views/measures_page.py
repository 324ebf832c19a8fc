"""All measures now: every applicable measure re-estimated from this session's answers."""

from __future__ import annotations

import streamlit as st

from evalcore import insight
from views import common

st.title("All measures")
session_id, session, record = common.require_session()
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}` · "
    f"{session.n_labels} labels. The same answers estimate every measure (sample reuse); the "
    "sampler aimed at the session's own measure, so the others' intervals may be wider."
)
table = insight.measure_table(session, record.confidence)


level = f"{record.confidence:.0%}"
names = zip(table.measure, table.component, strict=True)
shown = table.assign(measure=[common.component_label(session.pool, m, c) for m, c in names])
shown = shown.drop(columns="component")
st.dataframe(
    shown,
    width="stretch",
    hide_index=True,
    column_config={
        "measure": st.column_config.TextColumn("Measure", width="medium"),
        "estimate": st.column_config.NumberColumn("Estimate", format="%.4f"),
        "ci_low": st.column_config.NumberColumn(f"{level} interval, low", format="%.4f"),
        "ci_high": st.column_config.NumberColumn(f"{level} interval, high", format="%.4f"),
        "note": st.column_config.TextColumn("Note", width="large"),
    },
)
notes = shown[shown.note.fillna("").str.len() > 0]
if len(notes):
    with st.expander(f"Notes in full ({len(notes)})"):
        for row in notes.itertuples():
            st.text(f"{row.measure}: {row.note}")

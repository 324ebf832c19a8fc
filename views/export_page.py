"""Export: the answer log, the estimate report and the figures, as files."""

from __future__ import annotations

import io
import json

import pandas as pd
import streamlit as st

from evalcore import insight
from views import common

st.title("Export")
session_id, session, record = common.require_session()
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}`"
)

log = insight.answer_log(session, common.store().answer_times(session_id))
report = insight.report(
    session, record.confidence, session_id=session_id, pool=record.pool_name, created=record.created
)
report_rows = [
    {key: value for key, value in report.items() if key not in ("components", "settings")}
    | {"settings": json.dumps(report["settings"])}
    | component
    for component in report["components"]
]
st.subheader("Answer log")
st.caption(
    "One row per answer: item id, label, the proposal probability of the draw that asked "
    "(importance sampling) or the inclusion probability (Bernoulli), the weight, the time."
)
st.dataframe(log.head(20), width="stretch", hide_index=True)
parquet = io.BytesIO()
log.to_parquet(parquet, index=False)
one, two = st.columns(2)
one.download_button(
    "Answer log (CSV)",
    insight.spreadsheet_safe_csv(log),
    f"answers-{session_id}.csv",
    "text/csv",
    key="log_csv",
    on_click="ignore",
)
two.download_button(
    "Answer log (Parquet)",
    parquet.getvalue(),
    f"answers-{session_id}.parquet",
    "application/vnd.apache.parquet",
    key="log_parquet",
    on_click="ignore",
)

st.subheader("Estimate report")
st.caption("What the report files hold: one column per component of the measure.")
fields = pd.DataFrame(report_rows).set_index("component")
fields.index = [common.component_label(session.pool, session.measure_name, c) for c in fields.index]
st.dataframe(fields.T.astype(str), width="stretch")
one, two = st.columns(2)
one.download_button(
    "Report (JSON)",
    json.dumps(report, indent=2),
    f"report-{session_id}.json",
    "application/json",
    key="report_json",
    on_click="ignore",
)
two.download_button(
    "Report (CSV)",
    insight.spreadsheet_safe_csv(pd.DataFrame(report_rows)),
    f"report-{session_id}.csv",
    "text/csv",
    key="report_csv",
    on_click="ignore",
)

st.subheader("Figures")
st.caption(
    "Each figure as a self-contained HTML file (interactive, works offline). For a PNG, use "
    "the camera button above any figure in the app."
)


@st.cache_data(max_entries=4, show_spinner="Preparing the figure files…")
def figure_files(session_id: str, log_key: int, level: float, _session, _record) -> dict:
    """The files are made before the buttons are drawn: a file made on the click (Streamlit's
    deferred download) could be gone by the time the browser asked for it, and the download
    failed without a word."""
    trace = common.session_trace(session_id, _session, level)
    return common.figure_files(_session, trace, _record.pool_name, level)


if session.n_labels >= 2:
    files = figure_files(session_id, hash(tuple(session.log)), record.confidence, session, record)
    columns = st.columns(len(files))
    for column, (name, html) in zip(columns, files.items(), strict=True):
        column.download_button(
            f"{name} (HTML)",
            html,
            f"{name}-{session_id}.html",
            "text/html",
            key=f"figure_{name}",
            on_click="ignore",
        )
else:
    st.info("Label at least two items to export figures.")

"""Export: the answer log, the estimate report and the figures, as files."""

from __future__ import annotations

import io
import json

import pandas as pd
import streamlit as st

from evalcore import figures, insight
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
)
two.download_button(
    "Answer log (Parquet)",
    parquet.getvalue(),
    f"answers-{session_id}.parquet",
    "application/vnd.apache.parquet",
    key="log_parquet",
)

st.subheader("Estimate report")
st.json(report, expanded=False)
one, two = st.columns(2)
one.download_button(
    "Report (JSON)",
    json.dumps(report, indent=2),
    f"report-{session_id}.json",
    "application/json",
    key="report_json",
)
two.download_button(
    "Report (CSV)",
    insight.spreadsheet_safe_csv(pd.DataFrame(report_rows)),
    f"report-{session_id}.csv",
    "text/csv",
    key="report_csv",
)

st.subheader("Figures")
st.caption(
    "Each figure as a self-contained HTML file (interactive, works offline). For a PNG, use "
    "the camera button above any figure in the app."
)
if session.n_labels >= 2:
    trace = common.session_trace(session_id, session, record.confidence)
    component = trace.component.iloc[0]
    built = {
        "estimate": figures.estimate_figure(trace, component),
        "proposal-kl": figures.kl_figure(trace),
        "effective-sample-size": figures.ess_figure(trace),
        "weights": figures.weights_figure(insight.design_weights(session)),
    }
    if session.pool.n_classes == 2:
        built["pr-curve"] = figures.pr_curve_figure(
            insight.pr_curve_table(session, 100, record.confidence)
        )
    columns = st.columns(len(built))
    for column, (name, figure) in zip(columns, built.items(), strict=True):
        column.download_button(
            f"{name} (HTML)",
            lambda figure=figure: figure.to_html(include_plotlyjs=True, full_html=True),
            f"{name}-{session_id}.html",
            "text/html",
            key=f"figure_{name}",
        )
else:
    st.info("Label at least two items to export figures.")

"""Convergence: is the estimate still moving, and has the proposal settled?"""

from __future__ import annotations

import streamlit as st

from evalcore import figures, insight
from views import common

st.title("Convergence")
session_id, session, record = common.require_session()
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}`"
)
if session.n_labels < 2:
    st.info("Label at least two items to see how the estimate converges.")
    st.stop()


trace = common.session_trace(session_id, session, record.confidence, common.TRACE_WAIT)
if trace is None:  # a replay for the proposal's diagnostics is under way: show what we have
    early = common.history_trace(session_id, session, record.confidence)
    if early is not None:
        component = early.component.iloc[0]
        name = common.component_label(session.pool, session.measure_name, component)
        st.plotly_chart(figures.estimate_figure(early, component, name), **common.CHART)
    st.info(
        f"Replaying the session's {session.n_labels} answers for the proposal's convergence and "
        "the effective sample size; they appear here when it is done."
    )

    @st.fragment(run_every=1.0)
    def look_again() -> None:
        if common.trace_ready(session_id, record.confidence):
            st.rerun()

    look_again()
    st.stop()
components = list(dict.fromkeys(trace.component))
component = components[0]
if len(components) > 1:
    component = st.selectbox("Component", components, key="component")
chart = common.CHART
name = common.component_label(session.pool, session.measure_name, component)
st.plotly_chart(figures.estimate_figure(trace, component, name), **chart)
left, right = st.columns(2)
with left:
    if trace.kl_consecutive.notna().any() or trace.kl_optimal.notna().any():
        st.plotly_chart(figures.kl_figure(trace), **chart)
        if session.pool.y_true is None:
            st.caption("D_KL(q* ‖ q_t) needs the pool's true labels; this pool has none.")
        elif trace.kl_optimal.isna().all():
            st.caption(
                "There is no optimal proposal q* here: every item's term in the estimate's "
                "variance is 0 (seed 003, eq. 5), so D_KL(q* ‖ q_t) is not drawn."
            )
    else:
        st.info(
            f"{common.SAMPLER_LABELS.get(session.sampler_name)} has no proposal distribution, "
            "so there is no KL divergence to show."
        )
    st.plotly_chart(figures.weights_figure(insight.design_weights(session)), **chart)
with right:
    st.plotly_chart(figures.ess_figure(trace), **chart)
    last = trace[trace.n_labels == trace.n_labels.max()].iloc[0]
    st.metric("Effective sample size", f"{last.ess:.1f}", help="Kish: (Σw)² / Σw²")
stride = int(trace.n_labels.drop_duplicates().diff().max()) if trace.n_labels.nunique() > 1 else 1
if stride > 1:
    st.caption(f"Points every {stride} labels (consecutive proposals are {stride} labels apart).")

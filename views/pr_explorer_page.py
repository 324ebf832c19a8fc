"""PR-curve explorer: the estimated precision-recall curve, and where to set the threshold."""

from __future__ import annotations

import numpy as np
import streamlit as st

from evalcore import figures, insight
from views import common

st.title("Precision-recall curve")
session_id, session, record = common.require_session()
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}`"
)
if session.regression:
    st.info(
        "The precision-recall curve is for classifiers; this session evaluates a regression "
        "model (see Convergence and All measures)."
    )
    st.stop()
if session.pool.n_classes != 2:
    st.info(
        "The precision-recall curve is defined for binary pools; this pool has "
        f"{session.pool.n_classes} classes."
    )
    st.stop()
if session.n_labels == 0:
    st.info("Label some items first: the curve is estimated from your answers.")
    st.stop()
if not session.measure_name.startswith("pr_curve"):
    st.caption(
        "This session's sampler aimed at "
        f"{common.measure_label(session.measure_name)}, "
        "not at the curve: the curve is re-estimated from the same answers (sample reuse), and "
        "its intervals are wide where the proposal drew few items."
    )

n_thresholds = st.slider("Thresholds on the curve", 20, 200, 100, 10, key="n_thresholds")
log_key = hash(tuple(session.log))


@st.cache_data(max_entries=16, show_spinner="Estimating the curve…")
def curves(session_id: str, log_key: int, n_thresholds: int, level: float, _session):
    curve = insight.pr_curve_table(_session, n_thresholds, level)
    truth = (
        insight.true_pr_curve(_session, n_thresholds) if _session.pool.y_true is not None else None
    )
    samples = insight.bootstrap_pr_curves(_session, n_thresholds, n_curves=30, seed=0)
    return curve, truth, samples


curve, truth, samples = curves(session_id, log_key, n_thresholds, record.confidence, session)
thresholds = curve.threshold.to_numpy()
# One number format for every threshold on the page: enough decimals to tell neighbours apart.
spacing = np.min(np.abs(np.diff(thresholds))) if len(thresholds) > 1 else 1.0
decimals = int(np.clip(np.ceil(-np.log10(spacing)) if spacing > 0 else 6, 0, 6))


def shown(value: float) -> str:
    return f"{value:.{decimals}f}"


def remember_threshold() -> None:
    st.session_state.pr_threshold = st.session_state.pr_thresholds[st.session_state.threshold]


# The slider follows the chosen threshold's value, not its position, so the slider, the readout
# and the marker agree after the number of thresholds changes (they disagreed until the slider
# was moved).
st.session_state.pr_thresholds = [float(t) for t in thresholds]
chosen = st.session_state.get("pr_threshold", float(thresholds[len(thresholds) // 2]))
st.session_state.threshold = int(np.argmin(np.abs(thresholds - chosen)))
threshold = st.select_slider(
    "Threshold",
    options=list(range(len(thresholds))),
    format_func=lambda i: shown(thresholds[i]),
    key="threshold",
    on_change=remember_threshold,
)
row = curve.iloc[threshold]
level = f"{record.confidence:.0%}"
left, middle, right = st.columns([2, 1, 1])
with left:
    st.plotly_chart(
        figures.pr_curve_figure(curve, truth, samples, float(row.threshold), decimals),
        **common.CHART,
    )
    if not samples:
        st.caption("Bootstrap curves are drawn for importance-sampling sessions.")


def number(value) -> str:
    return "not defined" if np.isnan(value) else f"{value:.3f}"


with middle:
    st.metric(f"Precision at {shown(row.threshold)}", number(row.precision))
    st.caption(f"{level} interval: {number(row.precision_low)} to {number(row.precision_high)}")
    st.metric(f"Recall at {shown(row.threshold)}", number(row.recall))
    st.caption(f"{level} interval: {number(row.recall_low)} to {number(row.recall_high)}")


def spread(finder, target):
    """The threshold each bootstrap curve would choose: how uncertain the choice is."""
    chosen = [finder(sample, target) for sample in samples]
    chosen = [c for c in chosen if c is not None]
    if len(chosen) < 2:
        return ""
    low, high = np.percentile(chosen, [5, 95])
    return f" Across bootstrap curves the choice ranges from {shown(low)} to {shown(high)} (90%)."


def describe_choice(estimate, conservative, what, target):
    if estimate is None:
        return f"No threshold reaches an estimated {what} of {target:.2f}."
    text = f"**{shown(estimate)}** by the estimate."
    if conservative is not None:
        text += f" {shown(conservative)} if the interval's lower limit must reach {target:.2f}."
    else:
        text += f" The interval's lower limit reaches {target:.2f} nowhere."
    return text


def finder(kind: str, find, what: str, default: float) -> None:
    """One threshold finder: a target, the threshold by the estimate, by the interval's
    lower limit, and the spread of the choice across bootstrap curves."""
    target = st.number_input(
        f"{what.capitalize()} at least", 0.0, 1.0, default, 0.01, key=f"{what}_target"
    )
    choice = describe_choice(find(curve, target), find(curve, target, f"{what}_low"), what, target)
    st.markdown(f"{kind} threshold: {choice}{spread(find, target)}")


with right:
    finder("Lowest", insight.lowest_threshold_with_precision, "precision", 0.9)
    finder("Highest", insight.highest_threshold_with_recall, "recall", 0.8)

"""Label-efficient evaluation: label the items a sampler picks and watch the estimate.

A first, single-page version on the built-in demo pools; uploads, persistence and the
insight pages come with the app's own issues.
"""

from pathlib import Path

import streamlit as st

import evalcore as ec

SAMPLE_DIR = Path(__file__).parent / "sample_data"
SAMPLES = {
    "Product record pairs (binary, readable)": "products.csv",
    "Needle in a haystack (1 positive in 5,000)": "needle.csv.gz",
    "Three-class sentiment": "sentiment3.csv",
}
SAMPLER_LABELS = {
    "ais": "Adaptive importance sampling (AIS)",
    "bernoulli": "Bernoulli sampling",
    "is": "Static importance sampling",
    "stratified": "Stratified (proportional)",
    "neyman": "Stratified (Neyman)",
    "passive": "Passive (uniform)",
    "oasis": "OASIS",
}

st.set_page_config(page_title="Label-efficient evaluation", layout="wide")


@st.cache_data
def load_frame(name: str):
    return ec.read_table(SAMPLE_DIR / name)


with st.sidebar:
    st.header("Set up")
    sample = st.selectbox("Demo pool", list(SAMPLES), key="sample")
    pool = ec.Pool.from_dataframe(load_frame(SAMPLES[sample]))
    measures = ["f1", "precision", "recall", "accuracy", "balanced_accuracy", "mcc"]
    if pool.n_classes > 2:
        measures = ["macro_f1", "micro_f1", "accuracy"]
    measure_name = st.selectbox("Measure", measures, key="measure")
    samplers = [s for s in SAMPLER_LABELS if pool.n_classes == 2 or s != "oasis"]
    sampler_name = st.selectbox("Sampler", samplers, format_func=SAMPLER_LABELS.get, key="sampler")
    budget = st.number_input("Label budget", 10, 5000, 200, step=10, key="budget")
    seed = st.number_input("Seed", 0, 2**31 - 1, 0, key="seed")
    if st.button("Start", type="primary", key="start"):
        try:
            st.session_state.session = ec.Session(
                pool, measure_name, sampler_name, int(seed), int(budget)
            )
        except (ec.MeasureError, ec.SessionError, ValueError) as error:
            st.session_state.pop("session", None)
            st.error(str(error))

st.title("Label-efficient evaluation")
session = st.session_state.get("session")
if session is None:
    st.info("Choose a demo pool, a measure and a sampler, then press **Start**.")
    st.stop()


def answer(label: int) -> None:
    proposal = session.next_item()
    session.record(proposal.item, label)


estimate = session.estimate()
low, high = estimate.confidence_interval()
left, right = st.columns([3, 2])
with right:
    st.metric("Labels", f"{session.n_labels} / {session.budget}")
    if estimate.defined:
        st.metric(
            f"Estimated {estimate.component_names[0]}",
            f"{estimate.value[0]:.3f}",
            help=f"95% interval {low[0]:.3f} to {high[0]:.3f}",
        )
        st.caption(f"95% interval: {low[0]:.3f} to {high[0]:.3f}")
    else:
        st.metric(f"Estimated {session.measure_name}", "not yet defined")
        st.caption(estimate.reason)
    if session.pool.y_true is not None and not session.done:
        if st.button("Auto-label 10 items (simulated oracle)", key="auto"):
            for _ in range(min(10, session.budget - session.n_labels)):
                answer(int(session.pool.y_true[session.next_item().item]))
            st.rerun()

with left:
    if session.done:
        st.success("The label budget is used. Start a new session to continue.")
        st.stop()
    proposal = session.next_item()
    item = proposal.item
    st.subheader(f"Item {session.pool.ids[item]}")
    content = session.pool.content
    if content is not None:
        for column in content.columns:
            st.text(f"{column}: {content.iloc[item][column]}")
    else:
        st.text(f"score: {float(session.pool.binary_scores[item]):.4f}")
    columns = st.columns(session.pool.n_classes)
    for code, name in enumerate(session.pool.classes):
        if columns[code].button(str(name), key=f"label_{code}", use_container_width=True):
            answer(code)
            st.rerun()
    if session.n_labels and st.button("Undo last answer", key="undo"):
        session.undo()
        st.rerun()

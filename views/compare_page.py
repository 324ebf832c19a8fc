"""Compare samplers: which one would have served this pool best? (pools with true labels)"""

from __future__ import annotations

import pandas as pd
import streamlit as st

import evalcore as ec
from evalcore import figures
from views import common

st.title("Compare samplers")
st.caption(
    "Runs each sampler many times on this pool, answering from its true labels, and plots the "
    "mean squared error of the estimate and the proposal's convergence against labels used "
    "(as in Fig. 2-3 of Marchant & Rubinstein 2021)."
)
session_id = common.current_session_id()
pool_key = None
if session_id:
    try:
        pool_key = common.store().session_record(session_id).pool_key
        st.session_state.session_id = session_id
        st.query_params["session"] = session_id
    except ec.StoreError:  # deleted since
        pool_key = None
pool_key = pool_key or st.session_state.get("pool_key")
if pool_key is None:
    st.info("Open a pool with a true-label column first (the built-in pools have one).")
    st.page_link("views/start_page.py", label="Go to the start page", icon=":material/arrow_back:")
    st.stop()
pool, pool_name = common.stored_pool(pool_key)
if pool.y_true is None:
    st.info(
        f"{common.plain(pool_name)} has no true-label column, so there is nothing to compare "
        "against. Map a true-label column on the start page to use this page."
    )
    st.stop()
st.caption(f"Pool: **{common.plain(pool_name)}**, {pool.n_pool:,} items.")


# The choices outlive a visit to another page (Streamlit forgets the state of widgets that
# were not drawn in a run, so they are kept under a key of their own).
chosen = st.session_state.get("compare_choices", {})


@st.cache_resource
def finished_runs() -> dict:
    """Summaries of finished simulations, shared by every visit: (pool, sampler, measure,
    budget, repeats, seed) -> SimulationResult.summary()."""
    return {}


samplers = st.multiselect(  # full width: in a half column the third chip was hidden
    "Samplers",
    common.sampler_choices(pool),
    default=chosen.get("samplers", ["ais", "is", "passive"]),
    format_func=common.SAMPLER_LABELS.get,
    key="compare_samplers",
)
left, right = st.columns(2)
with left:
    measure = st.selectbox(
        "Measure",
        measures := [m for m in common.measure_choices(pool) if m not in ("fbeta", "pr_curve")],
        index=measures.index(chosen["measure"]) if chosen.get("measure") in measures else 0,
        format_func=common.MEASURE_LABELS.get,
        key="compare_measure",
    )
with right:
    budget = int(
        st.number_input(
            "Labels per run",
            10,
            min(pool.n_pool, 5000),
            chosen.get("budget", min(200, pool.n_pool)),
            10,
            key="compare_budget",
        )
    )
    repeats = int(
        st.number_input(
            "Runs per sampler", 2, 500, chosen.get("repeats", 20), 1, key="compare_repeats"
        )
    )
    seed = int(st.number_input("Seed", 0, 2**31 - 1, chosen.get("seed", 0), 1, key="compare_seed"))

st.session_state.compare_choices = dict(
    samplers=samplers, measure=measure, budget=budget, repeats=repeats, seed=seed
)
keys = {s: (pool_key, s, measure, budget, repeats, seed) for s in samplers}
missing = [s for s in samplers if keys[s] not in finished_runs()]
run = st.button(
    f"Run {len(missing)} simulation{'s' if len(missing) != 1 else ''}"
    if missing
    else "All results are ready",
    type="primary",
    disabled=not missing,
    key="run_compare",
)
if run:
    st.button(
        "Cancel",
        key="cancel_compare",
        help="Stops after the current run; finished samplers are kept.",
    )
    bar = st.progress(0.0, text="Starting…")
    for index, sampler in enumerate(missing):

        def progress(done, total, index=index, sampler=sampler):
            share = (index + done / total) / len(missing)
            bar.progress(share, text=f"{common.SAMPLER_LABELS[sampler]}: run {done} of {total}")

        try:
            result = ec.simulate(
                pool,
                measure,
                sampler,
                budget,
                repeats,
                seed=seed,
                record_every=max(1, budget // 100),
                progress=progress,
            )
        except (ec.MeasureError, ValueError) as error:
            st.error(f"{common.SAMPLER_LABELS[sampler]} cannot run here: {common.plain(error)}")
            continue
        finished_runs()[keys[sampler]] = result.summary()
    st.rerun()  # show the finished state (the run button above was drawn before the run)

ready = {
    common.SAMPLER_LABELS[s]: finished_runs()[keys[s]]
    for s in samplers
    if keys[s] in finished_runs()
}
if not ready:
    st.info("Pick samplers and press **Run**. Results are kept: coming back costs nothing.")
    st.stop()
never_defined = [name for name, summary in ready.items() if summary.mse.isna().all()]
for name in never_defined:
    st.info(
        f"{name}: the estimate was undefined in every run up to {budget} labels (no run found "
        "the items the measure needs, e.g. a positive), so it has no error to plot or list."
    )
chart = common.CHART
st.plotly_chart(figures.comparison_figure(ready, "mse"), **chart)
if any(summary.kl.notna().any() for summary in ready.values()):
    st.plotly_chart(figures.comparison_figure(ready, "kl"), **chart)
final = {
    name: summary.dropna(subset=["mse"]).iloc[-1][
        ["n_labels", "mse", "mse_low", "mse_high", "coverage", "undefined"]
    ]
    for name, summary in ready.items()
    if summary.mse.notna().any()
}
if final:
    st.dataframe(pd.DataFrame(final).T, width="stretch")

"""Set up: what to measure, how to sample, the budget; then start labelling."""

from __future__ import annotations

import streamlit as st

import evalcore as ec
from views import common

st.title("Set up the evaluation")
key = st.session_state.get("pool_key")
if key is None:
    st.info("Open a built-in pool or upload one on the start page first.")
    st.page_link("views/start_page.py", label="Go to the start page", icon=":material/arrow_back:")
    st.stop()
try:
    pool, pool_name = common.stored_pool(key)
except (ec.StoreError, ec.PoolValidationError) as error:
    st.error(common.plain(error))
    st.stop()

regressing = common.is_regression(pool)
if regressing:
    spread = "with" if pool.spread is not None else "without"
    kind = f"numeric predictions {spread} the model's own uncertainty"
else:
    kind = f"classes {', '.join(common.plain(c) for c in pool.classes)}"
st.caption(f"Pool: **{common.plain(pool_name)}**, {pool.n_pool:,} items, {kind}.")

left, right = st.columns(2)
with left:
    measure = st.selectbox(
        "Measure",
        common.measure_choices(pool),
        format_func=common.MEASURE_LABELS.get,
        key="setup_measure",
    )
    definitions = ec.regression.MEASURE_DEFINITIONS if regressing else ec.MEASURE_DEFINITIONS
    st.caption(definitions[measure])
    measure_name = measure
    if measure == "fbeta":
        beta = st.number_input(
            "beta (recall counts beta times as much as precision)", 0.1, 10.0, 2.0, 0.1
        )
        measure_name = f"fbeta:{beta:g}"
    if measure == "pr_curve":
        thresholds = st.number_input("Thresholds on the curve", 2, 4096, 100, 1)
        measure_name = f"pr_curve:{int(thresholds)}"
    sampler = st.selectbox(
        "Sampler",
        common.sampler_choices(pool),
        format_func=common.SAMPLER_LABELS.get,
        key="setup_sampler",
        help="AIS learns where the informative items are as you label; it needs the fewest "
        "labels under class imbalance. Bernoulli sampling labels in rounds.",
    )
    st.caption(common.sampler_uses(sampler, pool))
    oracle = "final"
    if not regressing:  # a regression answer is a measured value: final
        oracle = st.radio(
            "Your answers are",
            ["final (deterministic)", "possibly inconsistent on repeat (stochastic)"],
            horizontal=True,
            key="setup_oracle",
            help="Deterministic: an item is never asked twice; its answer is reused.",
        )
with right:
    budget = st.number_input(
        "Label budget", 1, pool.n_pool, min(500, pool.n_pool), 10, key="setup_budget"
    )
    confidence = st.slider(
        "Confidence level of the interval", 0.80, 0.99, 0.95, 0.01, key="setup_confidence"
    )
    seed = st.number_input("Random seed", 0, 2**31 - 1, 0, 1, key="setup_seed")

options: dict = {}
with st.expander("Advanced options"):
    if regressing:
        st.caption(
            "Regression samplers run with their documented defaults (a uniform floor of 0.1 "
            "for importance sampling, 10 strata, one Bernoulli round planned for the budget)."
        )
    elif sampler in ("ais", "bernoulli"):
        fitting = ec.strata.fitting_depth(pool.n_pool)
        depth = st.number_input(
            "Tree depth",
            1,
            16,
            fitting,
            1,
            help="The blocks are branching^depth bins of the scores. AIS on a two-class pool "
            "puts them under one root; the depth shapes Bernoulli sampling's tree and that of "
            "multi-class pools. Depth 1 is a flat partition.",
        )
        branching = st.number_input("Branching factor", 2, 1024, 2, 1)
        options.update(depth=int(depth), branching=int(branching))
        st.caption(f"{int(branching) ** int(depth):,} blocks by the CSF rule on the scores.")
    if sampler in ("ais", "is") and not regressing:
        epsilon = st.number_input(
            "epsilon (floor of the proposal)", 1e-9, 0.5, 1e-3, format="%.0e", step=1e-4
        )
        options["epsilon"] = float(epsilon)
    if sampler in ("stratified", "neyman", "oasis") and not regressing:
        n_strata = st.number_input(
            "Number of strata",
            2,
            min(pool.n_pool, 4096),
            min(10 if sampler != "oasis" else 256, pool.n_pool),
            1,
        )
        options["n_strata"] = int(n_strata)
    if sampler == "bernoulli" and not regressing:
        options["round_size"] = int(st.number_input("Expected labels per round", 1, 1000, 50, 1))
    if sampler == "passive":
        st.caption("Passive sampling has no options.")
if oracle.startswith("possibly"):
    options["deterministic"] = False

if st.button("Start labelling", type="primary", key="start"):
    try:
        session = ec.Session(pool, measure_name, sampler, int(seed), int(budget), options)
        session_id = common.store().create_session(key, session, confidence)
    except (ec.MeasureError, ec.SessionError, ec.StoreError, ValueError) as error:
        st.error(f"**The session cannot start.** {common.plain(error)}")
        st.stop()
    common.forget_open_session()
    st.switch_page("views/label_page.py", query_params={"session": session_id})

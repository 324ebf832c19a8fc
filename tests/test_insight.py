"""What the insight pages show, against brute force: replays, census values, weights."""

import io
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_pool

import evalcore as ec
from evalcore import insight

SAMPLE_DATA = Path(__file__).resolve().parents[1] / "sample_data"


def labelled(pool, sampler, budget, measure="f1", seed=3, options=None):
    session = ec.Session(pool, measure, sampler, seed=seed, budget=budget, options=options or {})
    while not session.done:
        proposal = session.next_item()
        session.record(proposal.item, pool.y_true[proposal.item])
    return session


@pytest.fixture(scope="module", autouse=True)
def checkpoints_every_25():
    """The checkpoint positions the tests below name are those of a copy every 25 answers."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(ec.session, "CHECKPOINT_EVERY", 25)
        patch.setattr(insight, "CHECKPOINT_EVERY", 25)
        yield


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n=1200, positive_rate=0.08, seed=4)


@pytest.fixture(scope="module")
def ais(pool):
    return labelled(pool, "ais", 60, options={"depth": 4})


def test_the_trace_ends_at_the_session_estimate_and_its_kl_matches_full_pmfs(pool, ais):
    trace = insight.trace(ais, 0.9, max_points=12)
    checkpoints = trace.n_labels.to_numpy()
    assert checkpoints[-1] == 60 and np.all(np.diff(checkpoints) == 5)
    last = trace.iloc[-1]
    estimate = ais.estimate()
    low, high = estimate.confidence_interval(0.9)
    assert (last.estimate, last.ci_low, last.ci_high) == (estimate.value[0], low[0], high[0])
    # brute force: independent replays to two consecutive checkpoints, full pmfs
    pmfs = {}
    for n in (55, 60):
        replay = ec.Session(pool, "f1", "ais", seed=3, budget=60, options={"depth": 4})
        for item, label in ais.log[:n]:
            replay.record(item, label)
        pmfs[n] = replay.sampler.pmf()
    assert last.kl_consecutive == pytest.approx(ec.kl_divergence(pmfs[55], pmfs[60]), rel=1e-9)
    q_star = ec.optimal_proposal(pool, ais.measure)
    assert last.kl_optimal == pytest.approx(ec.kl_divergence(q_star, pmfs[60]), rel=1e-9)
    weights = ais.sampler.draws().weight
    assert last.ess == pytest.approx(weights.sum() ** 2 / np.sum(weights**2))
    true_f1 = ais.measure.g(ec.true_risk(pool, ais.measure))[0]
    assert last.true_value == pytest.approx(true_f1)


def test_designs_without_a_proposal_have_no_kl(pool):
    session = labelled(pool, "bernoulli", 40, options={"depth": 4, "round_size": 10})
    trace = insight.trace(session)
    assert trace.kl_consecutive.isna().all() and trace.kl_optimal.isna().all()
    assert trace.ess.notna().all()


def test_a_census_estimates_every_measure_and_the_pr_curve_exactly():
    small = synthetic_pool(n=60, positive_rate=0.3, seed=8)
    session = labelled(small, "stratified", 60)
    table = insight.measure_table(session)
    for row in table.itertuples():
        measure = ec.get_measure(row.measure)
        truth = measure.g(ec.true_risk(small, measure))[0]
        assert row.estimate == pytest.approx(truth, abs=1e-12), row.measure
    curve = insight.pr_curve_table(session, 12)
    truth = insight.true_pr_curve(session, 12)
    np.testing.assert_allclose(curve.precision, truth.precision, atol=1e-12)
    np.testing.assert_allclose(curve.recall, truth.recall, atol=1e-12)
    # stratified weights N_h / n_h add up to N when every stratum is sampled
    assert insight.design_weights(session).sum() == pytest.approx(60)


def test_the_measure_table_gives_the_sessions_own_measure_as_the_label_page_does():
    """Regression: the all-measures table re-estimated the session's measure from a measure
    object of its own, and the stage weights and control variates, kept for the design's own
    measure, were dropped: the demo's F1 after 150 answers read 0.8901 there and 0.8872 on
    the label page."""
    demo = ec.Pool.from_dataframe(ec.read_table(SAMPLE_DATA / "products.csv"))
    for name, measure in (("ais", "f1"), ("ais", "fbeta:2"), ("bernoulli", "precision")):
        session = ec.Session(demo, measure, name, seed=0, budget=500)
        while session.n_labels < 150 and not session.done:
            item = session.next_item().item
            session.record(item, int(demo.y_true[item]))
        own = session.estimate()
        (row,) = insight.measure_table(session).query("measure == @measure").itertuples()
        low, high = own.confidence_interval(0.95)
        assert (row.estimate, row.ci_low, row.ci_high) == (own.value[0], low[0], high[0])


def test_a_caveat_in_the_measure_table_speaks_of_the_measure_not_its_code():
    """Regression: before any positive was found the all-measures notes read "with this pool
    the f1 may lie anywhere in ...", the engine's code for the measure in a sentence."""
    demo = ec.Pool.from_dataframe(ec.read_table(SAMPLE_DATA / "products.csv"))
    session = ec.Session(demo, "f1", "ais", seed=0, budget=500)
    session.next_item()
    table = insight.measure_table(session).set_index("measure")
    for name in ("f1", "balanced_accuracy", "mcc"):
        note = table.note[name]
        assert "with this pool the measure may lie anywhere in [" in note, (name, note)
        assert name not in note
    assert "measure may lie" in insight.report(session)["interval_note"]


def test_bootstrap_curves_spread_like_the_estimators_standard_error(pool):
    session = labelled(pool, "is", 400)
    samples = insight.bootstrap_pr_curves(session, 20, n_curves=300, seed=1)
    assert len(samples) == 300
    curve_estimate = ec.estimate(session.sampler, ec.get_measure("pr_curve:20"))
    middle = 8  # a threshold inside the score range with predicted positives and negatives
    recall = np.array([s.recall.iloc[middle] for s in samples])
    se = curve_estimate.std_error[20 + middle]
    assert 0.7 < recall.std() / se < 1.4


def test_threshold_finders_on_a_hand_made_curve():
    curve = pd.DataFrame(
        {
            "threshold": [0.1, 0.2, 0.3, 0.4, 0.5],
            "precision": [0.5, 0.85, 0.8, 0.9, np.nan],
            "precision_low": [0.3, 0.7, 0.6, 0.82, np.nan],
            "recall": [1.0, 0.9, 0.7, 0.4, 0.0],
            "recall_low": [0.95, 0.8, 0.5, 0.2, 0.0],
        }
    )
    # precision >= 0.8 from 0.2 upward (0.3 has exactly 0.8); NaN at the top is ignored
    assert insight.lowest_threshold_with_precision(curve, 0.8) == 0.2
    # 0.85 holds at 0.2 but fails at 0.3: the lowest threshold from which it holds is 0.4
    assert insight.lowest_threshold_with_precision(curve, 0.85) == 0.4
    assert insight.lowest_threshold_with_precision(curve, 0.8, "precision_low") == 0.4
    assert insight.lowest_threshold_with_precision(curve, 0.95) is None
    assert insight.highest_threshold_with_recall(curve, 0.7) == 0.3
    assert insight.highest_threshold_with_recall(curve, 0.7, "recall_low") == 0.2
    assert insight.highest_threshold_with_recall(curve, 1.01) is None


def test_the_answer_log_carries_the_asking_draws_probabilities_and_round_trips(pool, ais):
    times = [f"t{i}" for i in range(ais.n_labels)]
    log = insight.answer_log(ais, times)
    draws = ais.sampler.draws()
    first = [int(np.flatnonzero(draws.items == item)[0]) for item, _ in ais.log]
    np.testing.assert_array_equal(log.proposal_probability, draws.q[first])
    np.testing.assert_array_equal(log.weight, draws.weight[first])
    assert list(log.item_id) == [pool.ids[item] for item, _ in ais.log]
    assert list(log.label) == [pool.classes[label] for _, label in ais.log]
    assert list(log.answered) == times
    buffer = io.BytesIO()
    log.to_parquet(buffer, index=False)
    pd.testing.assert_frame_equal(pd.read_parquet(io.BytesIO(buffer.getvalue())), log)
    again = pd.read_csv(io.StringIO(log.to_csv(index=False)))
    np.testing.assert_allclose(again.weight, log.weight)


def test_the_bernoulli_answer_log_has_inclusion_probabilities(pool):
    session = labelled(pool, "bernoulli", 40, options={"depth": 4, "round_size": 10})
    log = insight.answer_log(session)
    pi = np.concatenate([r.pi for r in session.sampler.rounds_])
    np.testing.assert_array_equal(log.inclusion_probability, pi[: session.n_labels])
    np.testing.assert_allclose(log.weight, 1 / log.inclusion_probability)


def test_the_report_states_settings_and_the_estimate(ais):
    report = insight.report(ais, 0.9, session_id="abc")
    estimate = ais.estimate()
    low, high = estimate.confidence_interval(0.9)
    assert report["session_id"] == "abc" and report["sampler"] == "ais" and report["seed"] == 3
    assert report["settings"] == {
        "budget": 60,
        "depth": 4,
        "batch_repeats": True,
        "oracle_model": "mixture",
        "model_averaging": True,
        "block_share": 0.1,
        "flat_tree": True,
        "bound_find_effect": True,
        "floor_by_cost": True,
        "integrate_offsets": "recalibrated",
        "fit_block_sd": "recalibrated",
        "unanswered_sd": "prior",
        "warm_start": True,
        "root_component": True,
        "hindsight_weights": True,
    }
    assert report["labels_used"] == 60
    (component,) = report["components"]
    assert component == {
        "component": "f1",
        "estimate": estimate.value[0],
        "ci_low": low[0],
        "ci_high": high[0],
    }


def test_a_trace_extended_answer_by_answer_equals_one_from_the_whole_log(ais):
    whole = insight.trace(ais, 0.9, max_points=12)  # stride 5
    builder = insight.Trace(ais, 0.9, stride=5)
    for end in (3, 17, 17, 41, 60):  # 17 and 41 are off the stride: a last row of their own
        assert builder.extend(ais.log[:end])
        part = builder.table()
        assert part.n_labels.iloc[-1] == end
    pd.testing.assert_frame_equal(builder.table(), whole)
    changed = ais.log[:10] + [(ais.log[10][0], 1 - ais.log[10][1])]
    assert not builder.extend(changed)  # differs before every checkpoint: nothing traced
    assert len(builder.log) == 60
    undone = ais.log[:30] + [(ais.log[30][0], 1 - ais.log[30][1])]
    assert builder.extend(undone)  # rewinds to the replay's checkpoint at 25 answers
    fresh = insight.Trace(ais, 0.9, stride=5)
    fresh.extend(undone)
    pd.testing.assert_frame_equal(builder.table(), fresh.table())


def test_a_trace_following_a_sessions_replay_equals_a_trace_of_its_own(pool, ais):
    whole = insight.trace(ais, 0.9, max_points=12)  # stride 5, a replay of its own
    loaded = ec.Session(pool, "f1", "ais", seed=3, budget=60, options={"depth": 4})
    builder = insight.Trace.following(loaded, ais.log[:41], 0.9, stride=5)
    assert loaded.log == ais.log[:41] and builder.log == ais.log[:41]
    assert builder.replay is not loaded  # the trace goes on in a copy
    loaded.record(*ais.log[41])  # the loaded session goes on alone
    assert len(builder.log) == 41
    assert builder.extend(ais.log)
    pd.testing.assert_frame_equal(builder.table(), whole)
    loaded.undo()  # from the checkpoints its replay kept
    replayed = ec.Session(pool, "f1", "ais", seed=3, budget=60, options={"depth": 4})
    replayed.replay_log(ais.log[:41])
    np.testing.assert_array_equal(loaded.estimate().value, replayed.estimate().value)


def test_a_trace_rewinds_to_a_checkpoint_for_an_undo_and_refuses_a_replay_from_the_seed(pool):
    session = labelled(pool, "ais", 80, options={"depth": 4})  # checkpoints at 50 and 75
    loaded = ec.Session(pool, "f1", "ais", seed=3, budget=80, options={"depth": 4})
    builder = insight.Trace.following(loaded, session.log, 0.9, stride=4)
    shorter = session.log[:77]  # three undos: rows after 76 go, the replay restarts at 75
    assert builder.extend(shorter)
    fresh = insight.Trace(session, 0.9, stride=4)
    fresh.extend(shorter)
    pd.testing.assert_frame_equal(builder.table(), fresh.table())
    changed = shorter[:40] + [(shorter[40][0], 1 - shorter[40][1])]  # before every checkpoint
    assert not builder.extend(changed)
    assert builder.log == shorter  # nothing done

"""Sessions: the log and the seed are the whole state."""

import copy
import json

import numpy as np
import pandas as pd
import pytest
from conftest import at_most, synthetic_pool

import evalcore as ec


def label_n(session, pool, n):
    for _ in range(n):
        proposal = session.next_item()
        session.record(proposal.item, pool.y_true[proposal.item])


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n=1500, positive_rate=0.05, seed=21)


def same_estimate(a, b):
    np.testing.assert_array_equal(a.value, b.value)
    np.testing.assert_array_equal(a.covariance, b.covariance)
    assert a.n_labels == b.n_labels and a.n_draws == b.n_draws


@pytest.mark.parametrize("name", ["ais", "bernoulli", "is", "stratified", "oasis", "passive"])
def test_undo_equals_a_replay_of_the_shorter_log(name, pool):
    options = {"depth": 4} if name in ("ais", "bernoulli") else {}
    session = ec.Session(pool, "f1", name, seed=3, budget=60, options=options)
    label_n(session, pool, 25)
    log = list(session.log)
    session.undo()
    assert session.log == log[:-1]
    replay = ec.Session(pool, "f1", name, seed=3, budget=60, options=options, log=log[:-1])
    same_estimate(session.estimate(), replay.estimate())
    assert session.next_item() == replay.next_item()
    # and labelling the undone item again restores the original state exactly
    session.record(*log[-1])
    same_estimate(
        session.estimate(),
        ec.Session(pool, "f1", name, seed=3, budget=60, options=options, log=log).estimate(),
    )


def test_save_and_load_round_trip(pool):
    session = ec.Session(pool, "pr_curve:8", "ais", seed=9, budget=100, options={"depth": 4})
    label_n(session, pool, 30)
    text = session.to_json()
    assert json.loads(text)["log"] == [list(pair) for pair in session.log]
    loaded = ec.Session.from_json(text, pool)
    assert loaded.log == session.log
    same_estimate(loaded.estimate(), session.estimate())
    assert loaded.next_item() == session.next_item()


def test_loading_onto_another_pool_or_a_bad_file_is_refused(pool):
    session = ec.Session(pool, "f1", "passive", seed=1)
    label_n(session, pool, 3)
    with pytest.raises(ec.SessionError, match="different pool"):
        ec.Session.from_json(session.to_json(), synthetic_pool(n=1500, seed=22))
    with pytest.raises(ec.SessionError, match="malformed"):
        ec.Session.from_json("{not json", pool)


def test_an_answer_for_another_item_is_refused(pool):
    session = ec.Session(pool, "f1", "ais", seed=1, options={"depth": 4})
    proposed = session.next_item().item
    with pytest.raises(ec.SessionError, match="proposed item"):
        session.record((proposed + 1) % pool.n_pool, 0)
    assert session.log == []


def drawn_elsewhere(session, pool, at):
    """``session``'s log with answer ``at`` given to an item this machine did not draw
    there, as a machine whose arithmetic rounds the proposal otherwise may have drawn it
    (a predicted positive not in the log: F1 gives it mass under every design)."""
    logged = {item for item, _ in session.log}
    other = next(int(i) for i in np.flatnonzero(pool.y_pred == 1) if int(i) not in logged)
    log = list(session.log)
    log[at] = (other, int(pool.y_true[other]))
    return log


@pytest.mark.parametrize("name", ["ais", "ais-1", "is", "oasis", "passive"])
def test_a_replay_takes_the_logged_item_where_this_machine_draws_another(name, pool):
    """Regression: a session labelled on another processor (another BLAS kernel: README,
    "What that did to a saved session") stopped replaying at the first item this machine
    drew otherwise, and the app offered to delete every answer from there."""
    options = {"depth": 4} if name == "ais" else {}
    session = ec.Session(pool, "f1", name, seed=4, budget=80, options=options)
    label_n(session, pool, 40)
    log = drawn_elsewhere(session, pool, 20)
    replayed = ec.Session(pool, "f1", name, seed=4, budget=80, options=options, log=log)
    assert replayed.log == log
    assert replayed.taken[0] == 20  # the answers before it replay as drawn
    items, _, _ = replayed.sampler.first_draws()
    assert items.tolist() == [item for item, _ in log]
    assert np.isfinite(replayed.estimate().value).all()
    proposed = replayed.next_item().item  # and it labels on, live answers as proposed
    assert proposed not in items
    with pytest.raises(ec.SessionError, match="proposed item"):
        replayed.record(next(i for i in range(pool.n_pool) if i not in (proposed, *items)), 0)


def test_a_log_that_names_an_item_twice_still_fails_to_replay(pool):
    session = ec.Session(pool, "f1", "ais", seed=4, options={"depth": 4})
    label_n(session, pool, 10)
    log = list(session.log)
    log[5] = log[2]
    with pytest.raises(ec.ReplayError, match="labelled already") as failed:
        ec.Session(pool, "f1", "ais", seed=4, options={"depth": 4}, log=log)
    assert failed.value.position == 5


def test_a_taken_item_gets_its_probability_and_leaves_its_cell_as_a_drawn_one_does(pool):
    sampler = ec.make_sampler("ais", pool, ec.get_measure("f1"), 3, depth=4)
    for _ in range(15):
        sampler.record(pool.y_true[sampler.propose().item])
    drawn = sampler.propose().item
    cell = sampler.cell_of_[drawn]
    same_cell = np.flatnonzero((sampler.cell_of_ == cell) & (sampler.labels_ < 0))
    other = int(same_cell[same_cell != drawn][-1])  # behind the drawn one in the cell's order
    q = float(sampler.pmf_of([other])[0])
    taken = sampler.take(other)
    assert taken.item == other and taken.q == pytest.approx(q, rel=1e-12)
    assert taken.weight == pytest.approx(1 / (pool.n_pool * q), rel=1e-12)
    sampler.record(pool.y_true[other])
    for _ in range(60):
        sampler.record(pool.y_true[sampler.propose().item])
    items, _, _ = sampler.first_draws()
    assert len(set(items.tolist())) == len(items) and items[15] == other
    for c in range(len(sampler.cell_size_)):  # each cell's labelled items lead its order
        start, size = sampler.cell_start_[c], sampler.cell_size_[c]
        head = sampler.cell_items_[start : start + size - int(sampler.cell_unlabelled_[c])]
        labelled = np.flatnonzero((sampler.cell_of_ == c) & (sampler.labels_ >= 0))
        assert sorted(head.tolist()) == labelled.tolist()


def test_budget_counts_distinct_labels_and_reused_answers_are_not_logged():
    small = synthetic_pool(n=40, positive_rate=0.3, seed=2)
    session = ec.Session(small, "f1", "passive", seed=0, budget=25)
    label_n(session, small, 25)
    assert session.done
    assert len({item for item, _ in session.log}) == 25
    assert session.sampler.n_draws > 25  # draws of labelled items were answered from the log
    with pytest.raises(ec.SessionError, match="budget"):
        session.next_item()


def test_session_estimates_other_measures_from_the_same_answers(pool):
    session = ec.Session(pool, "f1", "ais", seed=4, options={"depth": 4})
    label_n(session, pool, 50)
    assert session.estimate("accuracy").component_names == ("accuracy",)
    assert session.estimate().component_names == ("f1",)


def test_unknown_sampler_is_refused(pool):
    with pytest.raises(ec.SessionError, match="Unknown sampler"):
        ec.Session(pool, "f1", "magic")


@pytest.mark.parametrize(
    "name, old",
    [
        ("ais", {"batch_repeats": False, "oracle_model": "block", "model_averaging": False}),
        ("ais", {"model_averaging": False}),
        ("ais", {"block_share": None, "flat_tree": False}),
        ("ais", {"bound_find_effect": False}),
        ("ais", {"integrate_offsets": "none"}),
        ("ais", {"fit_block_sd": "none", "unanswered_sd": "fitted"}),
        ("ais", {"warm_start": False}),
        ("ais", {"root_component": False}),
        ("bernoulli", {"oracle_model": "block", "model_averaging": False}),
        ("bernoulli", {"model_averaging": False}),
        ("is", {"batch_repeats": False, "separate_labelled": False}),
        ("is", {"separate_labelled": False}),
        ("passive", {"batch_repeats": False, "separate_labelled": False}),
    ],
)
def test_a_session_saved_before_later_options_replays_as_it_was_labelled(name, old, pool):
    """Sessions saved before repeats were batched, before the item-level model and before
    AIS's fixed share on the one-level tree have no such options in their file: they load
    with the behaviour they were labelled with."""
    session = ec.Session(pool, "f1", name, seed=4, budget=80, options=dict(old))
    label_n(session, pool, 40)
    data = json.loads(session.to_json())
    for option in old:
        del data["options"][option]
    loaded = ec.Session.from_json(json.dumps(data), pool)
    assert loaded.options == session.options
    same_estimate(loaded.estimate(), session.estimate())
    assert loaded.next_item() == session.next_item()
    fresh = ec.Session(pool, "f1", name, seed=4, budget=80)
    new_defaults = {"batch_repeats": True, "oracle_model": "mixture", "model_averaging": True}
    new_defaults.update(separate_labelled=True, block_share=0.1, flat_tree=True)
    new_defaults.update(bound_find_effect=True, integrate_offsets="recalibrated")
    new_defaults.update(fit_block_sd="recalibrated", unanswered_sd="prior", warm_start=True)
    new_defaults.update(root_component=True)
    assert {option: fresh.options[option] for option in old} == {
        option: new_defaults[option] for option in old
    }


def test_a_macro_f1_session_saved_in_format_1_keeps_the_measure_it_sampled_for(mc_pool):
    """Format 1 named seed 004's harmonic-mean macro-F1 ``macro_f1``; it is now
    ``macro_f1_harmonic`` and ``macro_f1`` is scikit-learn's mean of per-class F1."""
    session = ec.Session(mc_pool, "macro_f1_harmonic", "ais", seed=3, budget=60)
    label_n(session, mc_pool, 30)
    data = json.loads(session.to_json())
    data.update(version=1, measure="macro_f1")
    loaded = ec.Session.from_json(json.dumps(data), mc_pool)
    assert loaded.measure_name == "macro_f1_harmonic"
    same_estimate(loaded.estimate(), session.estimate())
    assert loaded.next_item() == session.next_item()


@pytest.mark.parametrize("name", ["ais", "bernoulli", "is", "oasis", "stratified"])
def test_undo_from_a_checkpoint_equals_a_replay_from_the_seed(name, pool, monkeypatch):
    """Undo replays from the latest copy of the sampler within the shorter log; every state
    on the way back, across checkpoint boundaries and down to before the first, is the one
    a replay from the seed gives."""
    monkeypatch.setattr(ec.session, "CHECKPOINT_EVERY", 10)
    options = {"depth": 4} if name in ("ais", "bernoulli") else {}
    session = ec.Session(pool, "f1", name, seed=5, budget=80, options=options)
    label_n(session, pool, 34)
    assert sorted(session._checkpoints) == [20, 30]
    while session.n_labels > 5:
        session.undo()
        fresh = ec.Session(pool, "f1", name, 5, 80, options, list(session.log))
        same_estimate(session.estimate(), fresh.estimate())
        assert session.next_item() == fresh.next_item()


def test_a_fitted_block_sd_depends_on_the_answers_alone(pool):
    """With ``fit_block_sd`` the item-level model's sigmas take one EM step per new answer,
    and each map starts from its MAP on the answers before. Refits on the same answers (an
    insight page reading the proposal, an estimate) take no further step and start from the
    same place, so a replay of the log proposes what the session proposed."""
    options = {"depth": 4, "fit_block_sd": "both"}
    session = ec.Session(pool, "f1", "ais", seed=6, budget=80, options=options)
    for _ in range(40):
        proposal = session.next_item()
        session.record(proposal.item, pool.y_true[proposal.item])
        session.sampler.cell_response()  # refits on the same answers
        session.estimate()
    replay = ec.Session(pool, "f1", "ais", 6, 80, options, list(session.log))
    assert session.next_item() == replay.next_item()
    fitted, replayed = session.sampler.item_model_, replay.sampler.item_model_
    assert fitted.offset_sd_ == replayed.offset_sd_
    assert fitted.next_offset_sd_ == replayed.next_offset_sd_
    np.testing.assert_array_equal(fitted.coef_, replayed.coef_)  # each fit from the same start
    np.testing.assert_array_equal(fitted.identity_offset_, replayed.identity_offset_)
    assert all(fitted.sd(name) != fitted.block_sd for name in fitted.offset_sd_)  # it acts
    same_estimate(session.estimate(), replay.estimate())


def test_an_undo_after_a_checkpoint_does_not_replay_from_the_seed(pool, monkeypatch):
    monkeypatch.setattr(ec.session, "CHECKPOINT_EVERY", 10)
    session = ec.Session(pool, "f1", "ais", seed=5, budget=80, options={"depth": 4})
    label_n(session, pool, 25)

    def rebuild(self):
        raise AssertionError("replayed from the seed")

    monkeypatch.setattr(ec.Session, "_rebuild", rebuild)
    for _ in range(5):
        session.undo()  # back to 20 answers: from the checkpoint at 20
    assert session.n_labels == 20


def test_a_copied_session_is_independent_and_in_the_same_state(pool):
    session = ec.Session(pool, "f1", "ais", seed=6, budget=80, options={"depth": 4})
    label_n(session, pool, 12)
    twin = session.copy()
    same_estimate(twin.estimate(), session.estimate())
    assert twin.next_item() == session.next_item()
    label_n(twin, pool, 5)
    assert session.n_labels == 12 and twin.n_labels == 17
    fresh = ec.Session(pool, "f1", "ais", 6, 80, {"depth": 4}, list(session.log))
    same_estimate(session.estimate(), fresh.estimate())
    assert twin.pool is session.pool  # the pool is shared, never copied


@pytest.mark.parametrize("name", ["ais", "bernoulli", "is", "stratified"])
def test_copies_share_the_structures_built_once_and_nothing_that_changes(name, pool):
    session = ec.Session(pool, "f1", name, seed=6, budget=80, options={})
    label_n(session, pool, 12)
    original = session.sampler
    twin = session.copy()
    assert twin.sampler.codes_ is original.codes_  # built once, read-only, shared
    items = "stratum_items_" if name == "stratified" else "cell_items_"
    assert getattr(twin.sampler, items) is getattr(original, items)
    with pytest.raises(ValueError, match="read-only"):
        getattr(twin.sampler, items)[0] = 0
    assert twin.sampler.labels_ is not original.labels_  # changes with every answer
    before = session.estimate()
    label_n(twin, pool, 5)
    same_estimate(session.estimate(), before)
    assert original.labels_[[item for item, _ in twin.log[12:]]].max() == -1
    # the intervals' O(N) grouping is the pool's, found again for the copy
    view = ec.intervals.oracle_view(twin.sampler, twin.sampler.codes_, 2)
    assert view.grouping is ec.intervals.oracle_view(original, original.codes_, 2).grouping


def test_a_snapshot_shares_the_checkpoint_and_copies_of_it_label_on_independently(
    pool, monkeypatch
):
    monkeypatch.setattr(ec.session, "CHECKPOINT_EVERY", 10)
    session = ec.Session(pool, "f1", "ais", seed=6, budget=80, options={"depth": 4})
    label_n(session, pool, 20)
    snapshot = session.snapshot()
    assert snapshot.sampler is session._checkpoints[20]  # no copy at a checkpoint
    label_n(session, pool, 3)
    tab = snapshot.copy()
    for item, label in session.log[20:]:
        tab.record(item, label)
    same_estimate(tab.estimate(), session.estimate())
    assert tab.next_item() == session.next_item()
    fresh = ec.Session(pool, "f1", "ais", 6, 80, {"depth": 4}, list(session.log[:20]))
    same_estimate(snapshot.estimate(), fresh.estimate())  # the snapshot did not move


def test_a_thinned_history_is_the_full_history_at_every_stride_and_the_last_answer(pool):
    session = ec.Session(pool, "f1", "ais", seed=8, budget=80, options={"depth": 4})
    label_n(session, pool, 23)
    full = session.history(0.9)
    assert [row[0] for row in full] == list(range(1, 24))
    thinned = session.history(0.9, max_points=5)  # stride ceil(23 / 5) = 5
    assert [row[0] for row in thinned] == [5, 10, 15, 20, 23]
    assert thinned == [full[n - 1] for n in (5, 10, 15, 20, 23)]


def test_replaying_a_new_session_builds_its_sampler_once_and_a_used_one_again(pool, monkeypatch):
    session = ec.Session(pool, "f1", "ais", seed=9, budget=80, options={"depth": 4})
    label_n(session, pool, 12)
    log = list(session.log)
    built = []
    make = ec.session.make_sampler
    monkeypatch.setattr(
        ec.session, "make_sampler", lambda *a, **k: built.append(1) or make(*a, **k)
    )
    fresh = ec.Session(pool, "f1", "ais", 9, 80, {"depth": 4})
    history = fresh.replay_log(log, 0.95)
    assert len(built) == 1  # not once for the constructor and once for the replay
    assert history == session.history(0.95)
    used = ec.Session(pool, "f1", "ais", 9, 80, {"depth": 4})
    used.next_item()  # a draw moves the sampler on: the replay must start from the seed again
    used.replay_log(log)
    same_estimate(used.estimate(), session.estimate())
    assert used.next_item() == session.next_item()


def test_sessions_of_one_measure_on_one_pool_share_the_intervals_grouping(pool):
    first = ec.Session(pool, "f1", "ais", seed=1, budget=30, options={"depth": 4})
    second = ec.Session(pool, "f1", "is", seed=2, budget=30)
    label_n(first, pool, 3)
    label_n(second, pool, 3)
    views = [ec.intervals.oracle_view(s.sampler, s.sampler.codes_, 2) for s in (first, second)]
    assert views[0].grouping is views[1].grouping  # one O(N) grouping per pool and measure
    assert views[0].model is not views[1].model  # each session fits its own answers


@pytest.fixture(scope="module")
def few_predicted():
    """Predicted positives are the only items whose answer can change precision: 52 here."""
    return synthetic_pool(n=1500, positive_rate=0.02, seed=5, separation=5.0)


def test_the_items_that_can_change_a_measure_are_those_whose_loss_depends_on_the_label(
    few_predicted,
):
    pool = few_predicted
    precision = ec.get_measure("precision")
    np.testing.assert_array_equal(ec.informative_items(pool, precision), pool.y_pred == 1)
    for name in ("recall", "f1", "accuracy", "mcc"):
        assert ec.informative_items(pool, ec.get_measure(name)).all()


@pytest.mark.parametrize("name", ["ais", "is", "ais-1", "oasis", "bernoulli"])
def test_a_precision_session_ends_exact_once_every_predicted_positive_is_labelled(
    name, few_predicted
):
    """Regression: the importance samplers have no mass left on an unlabelled item then, and
    ``next_item`` drew labelled items forever (the app and ``simulate`` hung)."""
    pool = few_predicted
    predicted = int(pool.y_pred.sum())
    session = ec.Session(pool, "precision", name, seed=2, budget=10 * predicted)
    for _ in range(10 * predicted):
        if session.done:
            break
        proposal = session.next_item()
        session.record(proposal.item, pool.y_true[proposal.item])
    assert session.exhausted and session.done
    labelled = [item for item, _ in session.log]
    assert set(np.flatnonzero(pool.y_pred)) <= set(labelled)
    if name in ("ais", "is", "ais-1"):  # Prop. 4's q is zero where the loss is
        assert len(labelled) == predicted
    truth = pool.y_true[pool.y_pred == 1].mean()
    estimate = session.estimate()
    np.testing.assert_allclose(estimate.value, [truth])
    np.testing.assert_allclose(estimate.confidence_interval(), ([truth], [truth]))
    with pytest.raises(ec.SessionError, match="can change the precision is labelled"):
        session.next_item()


def test_a_session_that_asks_again_is_never_exhausted(few_predicted):
    pool = few_predicted
    predicted = int(pool.y_pred.sum())
    options = {"deterministic": False}
    session = ec.Session(pool, "precision", "is", seed=2, budget=None, options=options)
    label_n(session, pool, predicted + 20)
    assert not session.exhausted and not session.done


@pytest.mark.parametrize("measure", ["f1", "pr_curve:16", "macro_f1"])
@pytest.mark.parametrize("name", ["stratified", "neyman", "ais", "bernoulli"])
def test_a_session_labelled_to_the_end_reports_the_measure_inside_its_interval(
    name, measure, mc_pool
):
    """Regression: labelled to the end, the stratified designs' F1 interval came out as
    (value, value - 1 ulp): the hull's upper limit rounded below the estimate and only the
    lower one was clipped up to the bounds."""
    if measure == "macro_f1":
        pool = mc_pool
    else:
        pool = synthetic_pool(n=300, positive_rate=0.05, seed=3, separation=3.0)
    session = ec.Session(pool, measure, name, seed=4, budget=pool.n_pool)
    while not session.done:
        item = session.next_item().item
        session.record(item, pool.y_true[item])
    estimate = session.estimate()
    low, high = estimate.confidence_interval()
    assert np.all(low <= estimate.value) and np.all(estimate.value <= high)
    np.testing.assert_allclose(high - low, 0.0, atol=1e-12)


@pytest.mark.parametrize("n", [4, 50, 200])
@pytest.mark.parametrize("name", ec.SAMPLER_NAMES)
def test_every_sampler_starts_on_a_small_pool_with_its_defaults(name, n):
    """Regression: AIS, ais-1, Bernoulli sampling and OASIS asked for 2^8 blocks, so a pool
    of fewer than 256 items could not start a session (the command line has no option to
    change it); stratified designs asked for 10 strata."""
    pool = synthetic_pool(n=n, positive_rate=0.3, seed=1)
    session = ec.Session(pool, "f1", name, seed=3, budget=n)
    while not session.done:
        label_n(session, pool, 1)
    assert session.n_labels <= n
    if session.exhausted:  # Bernoulli sampling's rounds may end sooner
        truth = ec.get_measure("f1").g(ec.true_risk(pool, ec.get_measure("f1")))
        np.testing.assert_allclose(session.estimate().value, truth)


def test_a_pool_of_256_items_or_more_keeps_the_papers_2_to_the_8_blocks():
    pool = synthetic_pool(n=300, seed=1)
    f1 = ec.get_measure("f1")
    assert ec.make_sampler("ais-1", pool, f1, 0).partition.n_blocks == 2**8
    assert ec.make_sampler("oasis", pool, f1, 0).partition.n_blocks == 2**8
    assert ec.make_sampler("ais", pool, f1, 0, oracle_model="block").partition.depth == 8
    assert ec.make_sampler("stratified", pool, f1, 0).stratum_size_.size == 10
    small = synthetic_pool(n=200, seed=1)
    assert ec.make_sampler("ais-1", small, f1, 0).partition.n_blocks == 2**7


def pool_with_probabilities(prob_of_score, n=600, seed=0):
    """A rare-positive pool whose probability column is ``prob_of_score(score)``."""
    rng = np.random.default_rng(seed)
    label = (rng.random(n) < 0.05).astype(int)
    score = rng.normal(3.0 * label - 1.5)
    frame = pd.DataFrame({"id": np.arange(n), "score": score, "label": label})
    frame["prob"] = prob_of_score(score)
    mapping = ec.ColumnMapping(score="score", id="id", label="label", prob="prob")
    return ec.Pool.from_dataframe(frame, mapping)


ROUNDED = {  # probabilities as CSV exports often hold them: many exactly 0
    "rounded": lambda score: np.round(1 / (1 + np.exp(-2.5 * score)), 2),
    "hard": lambda score: (score > 0).astype(float),  # a classifier without probabilities
}


@pytest.mark.parametrize("kind", ROUNDED)
@pytest.mark.parametrize("name", ["ais", "is", "ais-1"])
def test_a_session_whose_model_is_sure_of_every_answer_left_still_ends(name, kind):
    """Regression: once the items with a probability above 0 were labelled, the proposal's
    mass on the unlabelled items fell below 1e-12 (AIS, ais-1: the tree's MAP; static IS:
    exactly 0), the draws of labelled items went on one at a time, and the label page hung
    (600 items, 155 rounded to 0.00 here: after 445 answers)."""
    pool = pool_with_probabilities(ROUNDED[kind])
    session = ec.Session(pool, "f1", name, seed=2, budget=pool.n_pool)
    with at_most(60):
        while not session.done:
            label_n(session, pool, 1)
    assert session.exhausted
    f1 = ec.get_measure("f1")
    np.testing.assert_allclose(session.estimate().value, f1.g(ec.true_risk(pool, f1)))
    _, weight, labelled_share = session.sampler.first_draws()
    least = ec.samplers.LEAST_UNLABELLED_SHARE
    assert np.all(np.isfinite(weight)) and np.all(labelled_share <= 1 - least)


class LeftoverGenerator:
    """A numpy Generator whose ``multinomial`` always puts one draw in the last category.
    numpy's gives that category 1 - sum(p[:-1]), which rounding can leave above 0 where p
    is 0: here the rare case is certain. Copies (a session keeps one for undo) share the
    tally of such categories."""

    def __init__(self, rng, tally=None):
        self.rng, self.tally = rng, tally if tally is not None else {"massless_last": 0}

    def multinomial(self, n, pvals):
        counts = self.rng.multinomial(n - 1, pvals)
        counts[-1] += 1
        self.tally["massless_last"] += pvals[-1] == 0
        return counts

    def __deepcopy__(self, memo):
        return LeftoverGenerator(copy.deepcopy(self.rng, memo), self.tally)

    def __getattr__(self, name):
        return getattr(self.rng, name)


@pytest.mark.parametrize("name", ["ais", "ais-1"])
def test_no_repeated_draw_lands_on_a_labelled_item_of_no_mass(name):
    """Regression: the repeats of labelled items are spread over them by numpy's
    multinomial, whose last category takes the mass rounding leaves over. Where the last
    labelled item had no mass (a true negative, for F1), a repeat could land on it at q = 0
    and weight 1 / 0 (`ais-1` on a hard classifier's pool of 20,000 items, once in its first
    2,000 labels)."""
    pool = pool_with_probabilities(ROUNDED["hard"])
    session = ec.Session(pool, "f1", name, seed=2, budget=pool.n_pool)
    session.sampler.rng_ = rng = LeftoverGenerator(session.sampler.rng_)
    with at_most(60):
        label_n(session, pool, int(pool.y_pred.sum()) + 50)
    draws = session.sampler.draws()
    assert rng.tally["massless_last"] > 0  # the case arose
    assert np.all(draws.q > 0) and np.all(np.isfinite(draws.weight))
    assert draws.count.sum() == session.sampler.n_draws


def test_static_is_reaches_the_items_a_hard_classifier_gives_no_chance():
    """Theorem 1 asks q > 0 wherever an answer can change the measure; with probabilities of
    exactly 0 static IS gave the predicted negatives none, so no false negative could ever
    be found. Past the predicted positives it now draws them, evenly (each counts at
    ``RULED_OUT`` in Prop. 5's floor)."""
    pool = pool_with_probabilities(ROUNDED["hard"])
    predicted = int(pool.y_pred.sum())
    session = ec.Session(pool, "f1", "is", seed=2, budget=predicted + 20)
    with at_most(60):
        label_n(session, pool, predicted + 20)
    items, weight, labelled_share = session.sampler.first_draws()
    assert pool.y_pred[items[:predicted]].all() and not pool.y_pred[items[predicted:]].any()
    unlabelled = pool.n_pool - np.arange(predicted, predicted + 20)
    evenly = (1 - labelled_share[predicted:]) / unlabelled  # q of each unlabelled item
    np.testing.assert_allclose(weight[predicted:], 1 / (pool.n_pool * evenly), rtol=1e-4)


def test_accuracy_on_a_one_hot_pool_has_a_proposal_for_static_is():
    """Regression: every item's answer with a loss had probability exactly 0, so static IS's
    proposal had no mass anywhere and its first draw failed (IndexError)."""
    rng = np.random.default_rng(0)
    label = rng.integers(3, size=300)
    predicted = np.where(rng.random(300) < 0.8, label, rng.integers(3, size=300))
    frame = pd.DataFrame({f"score_{c}": (predicted == c).astype(float) for c in range(3)})
    frame["label"] = label
    pool = ec.Pool.from_dataframe(frame)
    session = ec.Session(pool, "accuracy", "is", seed=1, budget=300)
    with at_most(60):
        while not session.done:
            label_n(session, pool, 1)
    assert session.exhausted
    np.testing.assert_allclose(session.estimate().value, [np.mean(label == predicted)])

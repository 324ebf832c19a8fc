"""One suite over every sampler: valid proposals, determinism, budget accounting."""

import itertools

import numpy as np
import pytest
from conftest import multiclass_pool, synthetic_pool
from scipy import stats
from scipy.special import expit

import evalcore as ec

SAMPLERS = {  # case name: (sampler name, options)
    "passive": ("passive", {}),
    "is": ("is", {}),
    "is-smoothed": ("is", {"smoothing": 0.9}),
    "ais": ("ais", {"depth": 4}),
    "ais-item": ("ais", {"depth": 4, "oracle_model": "item"}),
    "ais-block": ("ais", {"depth": 4, "oracle_model": "block"}),
    "ais-1": ("ais-1", {"n_blocks": 16}),
    "ais-stochastic": ("ais", {"depth": 4, "deterministic": False}),
    "ais-defensive": ("ais", {"depth": 4, "defensive": 0.1}),
    "oasis": ("oasis", {"n_strata": 16}),
}
MEASURES = ["f1", "accuracy", "pr_curve:5", "mcc"]


def build(case, pool, measure, seed=0, **extra):
    name, options = SAMPLERS[case]
    return ec.make_sampler(name, pool, measure, seed, **options, **extra)


def answer(sampler, pool, n):
    for _ in range(n):
        proposal = sampler.propose()
        sampler.record(pool.y_true[proposal.item])


@pytest.fixture(scope="module")
def small_pool():
    return synthetic_pool(n=800, positive_rate=0.05, seed=11)


@pytest.mark.parametrize("measure_name", MEASURES)
@pytest.mark.parametrize("name", list(SAMPLERS))
def test_pmf_is_a_distribution_covering_every_nonzero_loss(name, measure_name, small_pool):
    measure = ec.get_measure(measure_name)
    sampler = build(name, small_pool, measure)
    codes = measure.codes(small_pool)
    nonzero = measure.nonzero_loss(measure.n_codes(small_pool), 2)
    for n in (0, 30):
        answer(sampler, small_pool, n)
        pmf = sampler.pmf()
        assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
        assert np.all(pmf >= 0)
        # q > 0 wherever the loss can be non-zero for a label the item may still have
        labelled = sampler.labels_ >= 0
        may_matter = np.where(
            labelled & sampler.deterministic,
            nonzero[codes, np.maximum(sampler.labels_, 0)],
            nonzero[codes].any(axis=1),
        )
        assert np.all(pmf[may_matter] > 0)
        # the weight of a proposal is p(x) / q(x)
        proposal = sampler.propose()
        assert proposal.q == pytest.approx(pmf[proposal.item], rel=1e-12)
        assert proposal.weight == pytest.approx(1 / (small_pool.n_pool * proposal.q))
        sampler.record(small_pool.y_true[proposal.item])


@pytest.mark.parametrize("name", list(SAMPLERS) + ["stratified", "neyman", "bernoulli"])
def test_same_seed_same_draws_and_other_seed_other_draws(name, small_pool):
    measure = ec.get_measure("f1")

    def items(seed):
        if name in ("stratified", "neyman", "bernoulli"):
            sampler = ec.make_sampler(name, small_pool, measure, seed)
        else:
            sampler = build(name, small_pool, measure, seed)
        out = []
        for _ in range(40):
            proposal = sampler.propose()
            out.append(proposal.item)
            sampler.record(small_pool.y_true[proposal.item])
        return out

    assert items(5) == items(5)
    assert items(5) != items(6)


@pytest.mark.parametrize("name", ["passive", "is", "ais", "oasis"])
def test_deterministic_reuse_costs_no_label(name):
    pool = synthetic_pool(n=60, positive_rate=0.2, seed=2)
    options = {} if name == "oasis" else {"batch_repeats": False}  # one draw at a time
    sampler = build(name, pool, ec.get_measure("f1"), **options)
    reused = 0
    for _ in range(200):
        proposal = sampler.propose()
        if proposal.known_label is not None:
            reused += 1
            assert proposal.known_label == sampler.labels_[proposal.item]
        sampler.record(pool.y_true[proposal.item])
    assert reused > 0
    assert sampler.n_labels == np.sum(sampler.labels_ >= 0) < sampler.n_draws == 200


def test_deterministic_oracle_refuses_a_changed_answer(small_pool):
    sampler = build("passive", small_pool, ec.get_measure("f1"), batch_repeats=False)
    while True:
        proposal = sampler.propose()
        if proposal.known_label is not None:
            with pytest.raises(ValueError, match="cannot change its answer"):
                sampler.record(1 - proposal.known_label)
            break
        sampler.record(0)


def test_record_without_proposal_and_bad_label_are_refused(small_pool):
    sampler = build("ais", small_pool, ec.get_measure("f1"))
    with pytest.raises(RuntimeError, match="propose"):
        sampler.record(0)
    sampler.propose()
    with pytest.raises(ValueError, match="class code"):
        sampler.record(7)


@pytest.mark.parametrize("allocation", ["stratified", "neyman"])
def test_stratified_draws_each_item_once_and_visits_every_stratum_first(allocation, small_pool):
    sampler = ec.make_sampler(allocation, small_pool, ec.get_measure("f1"), 0, n_strata=6)
    items = []
    for _ in range(200):
        proposal = sampler.propose()
        items.append(proposal.item)
        sampler.record(small_pool.y_true[proposal.item])
    assert len(set(items)) == 200
    first_strata = sampler.stratum_[items[:6]]
    assert sorted(first_strata.tolist()) == list(range(6))


def test_proportional_allocation_tracks_stratum_sizes(small_pool):
    sampler = ec.make_sampler("stratified", small_pool, ec.get_measure("f1"), 0, n_strata=5)
    for _ in range(400):
        sampler.record(small_pool.y_true[sampler.propose().item])
    expected = 400 * sampler.stratum_size_ / small_pool.n_pool
    assert np.all(np.abs(sampler.n_sampled_ - expected) <= 1.0 + 1e-9)


@pytest.mark.parametrize("measure_name", MEASURES)
def test_bernoulli_probabilities_are_valid_with_the_requested_expected_size(
    measure_name, small_pool
):
    measure = ec.get_measure(measure_name)
    sampler = ec.make_sampler("bernoulli", small_pool, measure, 0, round_size=40, depth=4)
    for _ in range(3):
        b = sampler.inclusion_probabilities(40.0)
        unsampled = sampler.cell_size_ - sampler.cell_sampled_
        relevant = (unsampled > 0) & (sampler.cell_h() > 0)
        assert np.all((b[relevant] > 0) & (b[relevant] <= 1))
        assert b @ unsampled == pytest.approx(40.0, rel=1e-12)
        sampler.record(small_pool.y_true[sampler.propose().item])  # opens the next round
        while sampler._position < len(sampler.rounds_[-1].items):
            sampler.record(small_pool.y_true[sampler.propose().item])
    assert sampler.n_labels == len(set(sampler._order))


def concentrated_pool(n=400, bulk_probability=1e-7, seed=0):
    """Eight confident items and an unlikely bulk: the proposals of static IS and AIS put
    most of their mass on the eight, so once they are labelled most draws repeat them."""
    rng = np.random.default_rng(seed)
    bulk_logit = np.log(bulk_probability / (1 - bulk_probability))
    scores = np.r_[rng.normal(8, 1, 8), rng.normal(bulk_logit, 0.1, n - 8)]
    labels = np.zeros(n, dtype=int)
    labels[:5] = 1
    labels[rng.choice(np.arange(8, n), 2, replace=False)] = 1  # two hidden false negatives
    return ec.Pool.from_arrays(scores, y_true=labels)


@pytest.mark.parametrize(
    "name, bulk_probability, options",
    [
        ("passive", 1e-7, {}),
        ("is", 1e-7, {}),
        ("ais", 1e-2, {"oracle_model": "block"}),  # the block-level model repeats most here
    ],
)
def test_batched_repeats_give_the_same_distribution_as_one_draw_at_a_time(
    name, bulk_probability, options
):
    """Two-sample KS tests over 400 seeded runs each: the estimate and the number of draws
    after 12 labels have the same distribution either way. One at a time, passive and static
    IS also keep the labelled items in their cells, as seed 003 draws. (The bulk probability
    is set per sampler so that one draw at a time costs a few hundred draws, not millions.)"""
    pool = concentrated_pool(bulk_probability=bulk_probability)
    measure = ec.get_measure("f1")
    results = {}
    for batch in (True, False):
        values, draws = [], []
        if name != "ais":
            options = {"separate_labelled": batch}
        for seed in range(400):
            sampler = build(name, pool, measure, seed=seed, batch_repeats=batch, **options)
            while sampler.n_labels < 12:
                proposal = sampler.propose()
                sampler.record(pool.y_true[proposal.item])
            values.append(ec.estimate(sampler, measure, model_variance=False).value[0])
            draws.append(sampler.n_draws)
        results[batch] = (np.nan_to_num(values, nan=-1.0), np.asarray(draws))
    for column in range(2):
        batched, single = results[True][column], results[False][column]
        assert stats.ks_2samp(batched, single, method="asymp").pvalue > 1e-3
    if name != "passive":
        assert np.median(results[True][1]) > 100  # the case that matters: many repeats


def test_the_cost_of_the_next_item_does_not_grow_with_the_repeats():
    pool = concentrated_pool(n=2000, bulk_probability=1e-9)
    sampler = build("is", pool, ec.get_measure("f1"), seed=1)
    while sampler.n_labels < 60:
        proposal = sampler.propose()
        assert proposal.known_label is None  # repeats are drawn, not proposed
        sampler.record(pool.y_true[proposal.item])
    draws = sampler.draws()
    assert sampler.n_draws == draws.count.sum() > 1000
    assert len(draws.items) <= 2 * sampler.n_labels  # one entry per new draw and per item


class CountingGenerator:
    """A numpy Generator that counts the uniform variates drawn through ``random``."""

    def __init__(self, rng):
        self.rng, self.uniforms = rng, 0

    def random(self, size=None):
        self.uniforms += 1 if size is None else int(np.prod(size))
        return self.rng.random(size)

    def __getattr__(self, name):
        return getattr(self.rng, name)


@pytest.mark.parametrize("name", ["passive", "is"])
def test_the_next_unlabelled_item_takes_one_uniform_however_sure_the_proposal(name):
    """Regression: static IS drew the next unlabelled item by rejection, 256 candidates at a
    time, so its cost grew as 1 / (1 - q(L)), the expected number of repeats (9.5 ms per new
    item after 1,000 labels on the over-confident synthetic pool)."""
    pool = concentrated_pool(n=2000, bulk_probability=1e-9)
    counted = {}
    for separate in (True, False):
        sampler = build(name, pool, ec.get_measure("f1"), seed=1, separate_labelled=separate)
        sampler.rng_ = counted[separate] = CountingGenerator(sampler.rng_)
        while sampler.n_labels < 60:
            sampler.record(pool.y_true[sampler.propose().item])
    assert counted[True].uniforms == 60  # one per new item, whatever the repeats
    assert counted[False].uniforms > 10 * 60  # the negative control: rejection


@pytest.mark.parametrize(
    "options",
    [{}, {"flat_tree": False, "block_share": None}],
    ids=["default", "as saved before the flat tree"],
)
def test_the_default_ais_proposal_mixes_the_item_and_block_proposals(options):
    """Three AIS samplers given the same answers: the default's pmf is the mixture
    (1 - lambda) q_item + lambda q_block of the item-level and block-level pmfs, item by item,
    q_block on the partition's 16 leaves under one root (or, as sessions saved before,
    on the depth-4 tree), with lambda 0.1 (or chosen in [0.1 w, 0.9], w the posterior
    probability that the classifier needs recalibrating; the weights are at most 10 times
    the item-level proposal's), and a multi-class pool falls back to the block-level model.
    (Without ``bound_find_effect``, which changes the item-level component where a find
    would saturate, and with the item-level component's linear form alone, as the
    item-level sampler has it: ``root_component`` mixes in the root form, tested below.)"""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    tree = {"depth": 4} if options else {"depth": 1, "branching": 16}
    samplers = {
        "mixture": ec.make_sampler(
            "ais",
            pool,
            measure,
            0,
            depth=4,
            bound_find_effect=False,
            root_component=False,
            **options,
        ),
        "item": ec.make_sampler("ais", pool, measure, 0, depth=4, oracle_model="item"),
        "block": ec.make_sampler("ais", pool, measure, 0, oracle_model="block", **tree),
    }
    answered = np.random.default_rng(1).choice(pool.n_pool, 40, replace=False)
    for item in answered:
        for sampler in samplers.values():
            sampler._pending = ec.samplers.Proposal(int(item), 0.5, 1.0, None)
            sampler.record(pool.y_true[item])
    pmf = {model: sampler.pmf() for model, sampler in samplers.items()}
    assert not np.allclose(pmf["item"], pmf["block"])
    share = samplers["mixture"].block_share_
    if options:
        assert 0.1 * samplers["mixture"].item_model_.recalibration_weight_ <= share <= 0.9
    else:
        assert share == 0.1
    mixed = (1 - share) * pmf["item"] + share * pmf["block"]
    np.testing.assert_allclose(pmf["mixture"], mixed, rtol=1e-12)
    three_class = multiclass_pool(n=300)
    default = ec.make_sampler("ais", three_class, ec.get_measure("macro_f1", 3), 0, depth=4)
    assert default.oracle_model == "block"


def test_bernoulli_inclusion_probabilities_are_the_mean_of_the_two_models():
    pool = synthetic_pool(n=400, positive_rate=0.05, seed=6)
    measure = ec.get_measure("f1")
    samplers = {
        model: ec.make_sampler("bernoulli", pool, measure, 0, depth=4, oracle_model=model)
        for model in ("mixture", "item", "block")
    }
    b = {  # per item: the block-level sampler's cells are coarser
        model: sampler.inclusion_probabilities(30.0)[sampler.cell_of_]
        for model, sampler in samplers.items()
    }
    np.testing.assert_allclose(b["mixture"], (b["item"] + b["block"]) / 2, rtol=1e-12)
    assert b["mixture"].sum() == pytest.approx(30.0)
    assert not np.allclose(b["item"], b["block"])


def test_the_block_share_minimizes_the_draws_estimate_of_the_second_moment():
    """With ``block_share=None`` (sessions saved before it was fixed), lambda is the grid
    point where (1/n) sum_j w_j p u_j^2 / q_lambda(x_j) is smallest, recomputed here item by
    item from the two samplers' pmfs."""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler("ais", pool, measure, 3, depth=4, block_share=None)
    while sampler.n_labels < 60:
        sampler.record(pool.y_true[sampler.propose().item])
    sampler.pmf_of(np.arange(1))  # refreshes the proposal after the last answer
    item, block = (sampler._values_under(sampler.cell_response(m)) for m in ("item", "block"))
    draws = sampler.draws()
    u2 = item[3][sampler.codes_[draws.items], draws.labels]
    position = sampler.labelled_position_[draws.items]
    grid = np.linspace(0.1 * sampler.item_model_.recalibration_weight_, 0.9, 33)
    moments = []
    for share in grid:
        q = (1 - share) * item[1][position] / item[2] + share * block[1][position] / block[2]
        needed = u2 > 0
        moments.append(np.sum((draws.count * draws.weight * u2)[needed] / q[needed]))
    assert sampler.block_share_ == pytest.approx(grid[int(np.argmin(moments))])


def test_the_next_term_criterion_evaluates_each_answer_once_under_the_unlabelled_proposal():
    """``share_criterion="next_term"``: the restricted mixture at share lambda is the pmf over
    the unlabelled items of a sampler with the tree's share fixed at lambda (and, as the
    chosen share, without ``bound_find_effect``) and the same answers; the criterion is
    (1/n) sum_s (1 - q_s(L_s)) w_s u_s^2 / q'_lambda(x_s) over the labelled items,
    recomputed here item by item, and its minimizer is the share used."""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler(
        "ais", pool, measure, 3, depth=4, block_share=None, share_criterion="next_term"
    )
    while sampler.n_labels < 60:
        sampler.record(pool.y_true[sampler.propose().item])
    sampler.pmf_of(np.arange(1))  # refreshes the proposal after the last answer
    labelled, first_weight, labelled_share = sampler.first_draws()
    unlabelled = np.flatnonzero(sampler.labels_ < 0)
    grid = np.linspace(0.1 * sampler.item_model_.recalibration_weight_, 0.9, 33)
    restricted = sampler.unlabelled_proposal(grid)
    item, _ = (sampler._values_under(sampler.cell_response(m)) for m in ("item", "block"))
    u2 = item[3][sampler.codes_[labelled], pool.y_true[labelled]]
    for k in (0, 16, 32):
        fixed = ec.make_sampler(
            "ais", pool, measure, 3, depth=4, block_share=grid[k], bound_find_effect=False
        )
        for x in labelled:  # refreshed after each answer, as a session's next proposal does
            fixed._pending = ec.samplers.Proposal(int(x), 0.5, 1.0, None)
            fixed.record(pool.y_true[x])
            fixed.pmf_of(np.arange(1))  # the fitted block sd takes one EM step per answer
        q = fixed.pmf()[unlabelled]
        per_item = restricted[k][sampler.cell_of_[unlabelled]]
        np.testing.assert_allclose(per_item, q / q.sum(), rtol=1e-9)
    moments = [
        np.sum(
            (first_weight * (1 - labelled_share) * u2)[u2 > 0]
            / restricted[k][sampler.cell_of_[labelled[u2 > 0]]]
        )
        / len(labelled)
        for k in range(len(grid))
    ]
    np.testing.assert_allclose(sampler.share_moments(grid), moments, rtol=1e-9)
    assert sampler.block_share_ == pytest.approx(grid[int(np.argmin(moments))])
    variances = ec.diagnostics.next_term_variance_by_share(sampler, [sampler.block_share_])
    assert variances[0] == pytest.approx(ec.diagnostics.next_term_variance(sampler), rel=1e-9)


def test_the_block_intercepts_prior_sd_is_the_samplers_own():
    """``block_sd`` widens one sampler's prior on the block intercepts, not every model's: with
    sd 6 the same answers move the intercepts further from 0, and a sampler built after it
    keeps sd 1."""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    offsets = {}
    for sd in (6.0, None):
        sampler = ec.make_sampler("ais", pool, measure, 3, depth=4, block_sd=sd)
        for x in range(0, 300, 5):
            sampler._pending = ec.samplers.Proposal(x, 0.5, 1.0, None)
            sampler.record(pool.y_true[x])
        sampler.pmf_of(np.arange(1))  # fits the item-level model to the answers
        offsets[sd] = np.abs(sampler.item_model_.offset_).max()
    assert sampler.item_model_.block_sd == 1.0
    assert offsets[6.0] > 1.5 * offsets[None]


def test_the_tree_explores_in_proportion_to_the_evidence_against_the_probabilities():
    """The same 4,000 items and labels, the probabilities reported calibrated or three times
    too sure in the logit. After 150 answers the over-confident pool's recalibration has the
    higher posterior weight w, and so the block-level tree the larger share of the proposal
    (both at their floor 0.1 w: no draw has shown the tree's proposal to be better). The
    share chosen after every answer on the tree of ``depth`` levels is how sessions saved
    before the fixed share replay, with the block intercepts' sd at its prior's (a fitted
    sigma of M1 alone raises w on the calibrated pool: ``ItemLevelModel``)."""
    rng = np.random.default_rng(3)
    z = rng.normal(-5.0, 3.0, 4000)
    y = (rng.random(len(z)) < expit(z)).astype(int)
    weight, share = {}, {}
    for name, reported in (("calibrated", z), ("over-confident", 3 * z)):
        pool = ec.Pool.from_arrays(reported, y_true=y, prob=expit(reported))
        sampler = ec.make_sampler(
            "ais",
            pool,
            ec.get_measure("f1"),
            0,
            depth=4,
            flat_tree=False,
            block_share=None,
            fit_block_sd="none",
        )
        while sampler.n_labels < 150:
            sampler.record(pool.y_true[sampler.propose().item])
        sampler.pmf_of(np.arange(1))  # refreshes the proposal after the last answer
        weight[name] = sampler.item_model_.recalibration_weight_
        share[name] = sampler.block_share_
        assert share[name] == pytest.approx(0.1 * weight[name])
    assert weight["calibrated"] < 0.5 < weight["over-confident"]
    assert share["calibrated"] < share["over-confident"] / 2


@pytest.mark.parametrize("measure_name", ["f1", "precision", "mcc", "pr_curve:3"])
def test_a_finds_reach_is_its_first_order_move_over_the_room_the_measure_has(measure_name):
    """Reference by central differences: a find of class y at code c moves R along
    l(c, y); its reach is the measure's rate of change along it over how far the measure can
    go before the end of its range in that direction (the range's width for measures of
    several components)."""
    pool = synthetic_pool(n=3000, positive_rate=0.02, seed=8, separation=3.0)
    measure = ec.get_measure(measure_name)
    sampler = ec.make_sampler("ais", pool, measure, 2, depth=4)
    answer(sampler, pool, 30)
    R = sampler.model_risk(sampler.cell_response("item"))
    sq_norm = measure.sq_norm_dg_loss(R, sampler.n_codes_, pool.n_classes)
    value = measure.g(R)
    low, high = measure.value_range
    table = measure.loss_table(sampler.n_codes_, pool.n_classes)
    h = 1e-7 * np.abs(R).max()
    reach = np.zeros(sampler.n_codes_)
    for c in range(sampler.n_codes_):
        for y in range(pool.n_classes):
            move = (measure.g(R + h * table[c, y]) - measure.g(R - h * table[c, y])) / (2 * h)
            if measure.m == 1:
                room = value[0] - low if move[0] < 0 else high - value[0]
            else:
                room = high - low
            if np.linalg.norm(move) > 1e-9 and room > 0:
                reach[c] = max(reach[c], np.linalg.norm(move) / room)
    assert reach.max() > 0
    np.testing.assert_allclose(sampler.find_reach(R, sq_norm), reach, rtol=1e-5)


def test_the_floored_cells_are_saturated_and_stay_calm_on_the_trees_share():
    """Recomputed item by item from the pmf: a cell is floored when a find there, one of
    t + 1 terms at the next draw's probability q(x) (the mixture restricted to the
    unlabelled items), moves F1 past its room, reach > N (t + 1) q(x), and the draws the
    model expects there (chance p of an answer with a loss) would not do so at the tree's
    part of q(x) alone: p reach <= N (t + 1) q_tree(x). With ``floor_by_cost`` the calm
    cells that are not saturated are weighed by ``costly_cells``, on their expected finds
    in the next t + 1 draws at q and at the tree's part, and their share of F1, summed here
    item by item."""
    rng = np.random.default_rng(9)
    z = np.concatenate([rng.normal(-9.0, 1.0, 2500), rng.normal(-1.0, 1.5, 500)])
    y = (rng.random(len(z)) < expit(z)).astype(int)
    pool = ec.Pool.from_arrays(z, y_true=y, prob=expit(z))
    measure = ec.get_measure("f1")
    for by_cost in (False, True):
        sampler = ec.make_sampler(
            "ais", pool, measure, 2, depth=4, bound_find_effect=False, floor_by_cost=by_cost
        )
        answer(sampler, pool, 5)
        sampler.pmf_of(np.arange(1))
        response = [sampler.cell_response(m) for m in ("item", "block")]
        item, block = (sampler._values_under(r) for r in response)
        item = sampler._with_root_values(item, block, response[0])  # the default's forms
        share = sampler.block_share_
        unlabelled = sampler.labels_ < 0
        cell = sampler.cell_of_[unlabelled]
        q = sampler.pmf()[unlabelled]  # the mixture, unbounded, item by item
        tree = share * block[0][cell] / block[2] / q.sum()
        q = q / q.sum()
        reach = sampler.find_reach(sampler.model_risk(response[0]), item[3])
        reach = reach[sampler.cell_code_[cell]]
        chance = np.where(pool.y_pred[unlabelled] == 1, 1.0, response[0][cell, 1])
        horizon = sampler.n_labels + 1
        scale = pool.n_pool * horizon
        saturated = (reach > scale * q) & (chance * reach <= scale * tree)
        floored = sampler.floored_cells(item, block, share, response[0])
        if not by_cost:
            np.testing.assert_array_equal(floored[cell], saturated)
            assert 0 < saturated.sum() < len(saturated)
            assert (reach > scale * q).sum() > saturated.sum()  # some saturated are not calm
            continue
        n_cells = len(floored)
        per_cell = [
            np.bincount(cell, weights=w, minlength=n_cells)
            for w in (horizon * q * chance, horizon * tree * chance, chance * reach / pool.n_pool)
        ]
        is_saturated = np.bincount(cell, weights=saturated, minlength=n_cells) > 0
        calm = np.bincount(cell, weights=chance * reach <= scale * tree, minlength=n_cells) > 0
        costly = ec.samplers.AISSampler.costly_cells(*per_cell, calm & ~is_saturated)
        np.testing.assert_array_equal(floored[cell], (is_saturated | costly)[cell])
        assert costly[cell].any()  # the cost floors more than the saturated cells here


def _floor_cost(floored, finds, tree_finds, bias):
    """``costly_cells``' objective, summed by hand: the missing shares of the cells with
    rho > 1 and of the floored ones, squared, less what flooring saves, b (rho - 1 / rho')."""
    rho, rho_tree = bias / finds, bias / tree_finds
    missing = bias[rho > 1].sum() + bias[floored].sum()
    return missing**2 - np.sum(bias[floored] * (rho[floored] - 1 / rho_tree[floored]))


def test_the_costly_cells_are_the_best_set_to_floor_by_brute_force():
    """``costly_cells`` against every subset of the open cells whose tree share alone would
    leave their finds past the room (rho' > 1): with equal shares b the greedy order is
    exact, so the cells it floors minimise the cost over all of them. With unequal shares
    it is never worse than flooring none, and above the best subset by at most one cell's
    move of the cost: the best prefix is within that of the fractional optimum, which no
    subset beats. Two closed cells with rho > 1 are never floored but their shares count."""
    rng = np.random.default_rng(3)
    for trial in range(40):
        n = 9
        bias = np.full(n, 0.05) if trial % 2 == 0 else rng.uniform(0.01, 0.2, n)
        rho = rng.uniform(0.05, 1.0, n)  # open: a find at Prop. 4's value stays within room
        rho_tree = rng.uniform(0.3, 30.0, n)
        bias = np.concatenate([bias, [0.03, 0.04]])
        finds = bias / np.concatenate([rho, [3.0, 2.0]])
        tree_finds = bias / np.concatenate([rho_tree, [30.0, 40.0]])
        open_cells = np.concatenate([rng.random(n) < 0.85, [False, False]])
        floored = ec.samplers.AISSampler.costly_cells(finds, tree_finds, bias, open_cells)
        eligible = np.flatnonzero(open_cells & (bias / tree_finds > 1))
        assert set(np.flatnonzero(floored)) <= set(eligible)
        costs = [
            _floor_cost(np.isin(np.arange(n + 2), subset), finds, tree_finds, bias)
            for k in range(len(eligible) + 1)
            for subset in itertools.combinations(eligible, k)
        ]
        chosen = _floor_cost(floored, finds, tree_finds, bias)
        assert chosen <= costs[0] + 1e-15  # costs[0]: flooring none
        if trial % 2 == 0:
            assert chosen == pytest.approx(min(costs), abs=1e-12)
        else:
            largest = bias.max()
            one_cell = 2 * largest * bias.sum() + largest**2 + largest
            assert chosen - min(costs) <= one_cell


def test_the_item_level_proposal_keeps_only_its_floor_where_a_find_would_saturate():
    """A sharp pool: 20,000 items, the bulk at p̂ ~ 5e-5. Early on, a find in the bulk would
    count for thousands of false negatives and move F1 past 0, so the item-level component
    leaves it its floor and the proposal there is the tree's share (and the floor); without
    ``bound_find_effect`` the item-level component follows Prop. 4 there too."""
    rng = np.random.default_rng(4)
    z = np.concatenate([rng.normal(-10.0, 1.0, 19_800), rng.normal(1.0, 2.0, 200)])
    y = (rng.random(len(z)) < expit(z)).astype(int)
    pool = ec.Pool.from_arrays(z, y_true=y, prob=expit(z))
    measure = ec.get_measure("f1")
    pmf = {}
    for bound in (True, False):
        sampler = ec.make_sampler("ais", pool, measure, 0, bound_find_effect=bound)
        answer(sampler, pool, 50)
        pmf[bound] = sampler.pmf()
        response = [sampler.cell_response(m) for m in ("item", "block")]
        item, block = (sampler._values_under(r) for r in response)
        share = sampler.block_share_
        if bound:
            cells = sampler.floored_cells(item, block, share, response[0])
            tail = cells[sampler.cell_of_] & (sampler.labels_ < 0)
            tree = share * block[0][sampler.cell_of_] / block[2]
    assert tail.sum() > 10_000
    assert pmf[True][tail].sum() < 1.001 * tree[tail].sum() + 1e-6
    assert pmf[False][tail].sum() > 5 * pmf[True][tail].sum()


def test_integrated_block_intercepts_reach_the_proposal():
    """With ``integrate_offsets`` the item-level response behind AIS's proposal is each cell's
    expectation over its block intercept's posterior (``ItemLevelModel``, tested in
    test_oracle): the same answers give the same MAP, and the predicted positives outside the
    answered blocks rise by the prior's factor, E[e^d] ~ 1.65 where p̂ is small."""
    pool = synthetic_pool(n=300, positive_rate=0.1, seed=5)
    measure = ec.get_measure("f1")
    samplers = [
        ec.make_sampler("ais", pool, measure, 3, depth=4, integrate_offsets=maps)
        for maps in ("none", "both")
    ]
    answered = np.flatnonzero(samplers[0].partition.block >= 8)[::3]
    for sampler in samplers:
        for x in answered:
            sampler._pending = ec.samplers.Proposal(int(x), 0.5, 1.0, None)
            sampler.record(pool.y_true[x])
    plain, integrated = (sampler.cell_response("item")[:, 1] for sampler in samplers)
    model = samplers[1].item_model_
    np.testing.assert_array_equal(model.offset_, samplers[0].item_model_.offset_)
    expected = model.cell_probability(samplers[1].cell_block_, samplers[1].cell_logit_)
    np.testing.assert_allclose(integrated, expected, rtol=1e-12)
    unanswered = (samplers[1].cell_block_ < 8) & (plain < 1e-3)
    assert unanswered.any()
    assert np.all(integrated[unanswered] / plain[unanswered] > 1.3)
    assert not np.allclose(samplers[0].pmf(), samplers[1].pmf())


def _forms_and_tree(sampler):
    """Per unlabelled item, the item-level component's two forms of Prop. 4 (linear, root)
    and the tree's component, each normalised over the pool, labelled items (kept apart,
    at their answer's value) included; and the model's a(x) = sum_y pi(y|x) ||Dg l(x, y)||^2
    there."""
    response = [sampler.cell_response(m) for m in ("item", "block")]
    item, block = (sampler._values_under(r) for r in response)
    cell = sampler.cell_of_[sampler.labels_ < 0]
    sq_norm = item[3][sampler.cell_code_]
    nonzero = sampler._nonzero[sampler.cell_code_]
    forms = []
    for deterministic in (True, False):
        values = ec.samplers._optimal_values(
            sq_norm, nonzero, response[0], sampler.epsilon_t, deterministic
        )
        forms.append(values[cell] / (values @ sampler.cell_unlabelled_ + item[1].sum()))
    tree = (block[0] / block[2])[cell]
    return [*forms, tree], np.sum(sq_norm * response[0], axis=1)[cell]


def test_the_root_form_minimises_the_models_expected_second_moment_of_the_next_term():
    """Where pi is the law of the unknown labels, the next term's expected second moment
    is E_pi[sum_x u(x)^2 / q(x)] = sum_x a(x) / q(x), least at q proportional to sqrt(a)
    (Cauchy-Schwarz): Prop. 4's stochastic form, which ``root_component`` mixes in. Brute
    force: it beats the linear form and every one of 200 random proposals."""
    pool = synthetic_pool(n=1500, positive_rate=0.05, seed=8)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler("ais", pool, measure, 1, depth=4)
    answer(sampler, pool, 40)
    (linear, root, _), a = _forms_and_tree(sampler)
    linear, root = linear / linear.sum(), root / root.sum()  # the unlabelled items' proposals
    np.testing.assert_allclose(root, np.sqrt(a) / np.sqrt(a).sum(), rtol=1e-6)

    def moment(q):
        return np.sum(a / q)

    assert moment(root) < 0.99 * moment(linear)
    rng = np.random.default_rng(0)
    for _ in range(200):
        other = root * rng.lognormal(0.0, 0.3, len(root))
        assert moment(root) <= moment(other / other.sum())


def test_the_root_share_is_zero_until_an_answer_has_a_loss_and_the_proposal_the_linear_forms():
    """Before any answer with a loss the answers cannot favour either form: mu = 0 and the
    proposal is Prop. 4's deterministic form's (``root_component=False``, the default before
    2026-11-29) to the bit (the same seed, the same answers)."""
    pool = synthetic_pool(n=1500, positive_rate=0.05, seed=8)
    measure = ec.get_measure("f1")
    plain, mixed = (
        ec.make_sampler("ais", pool, measure, 5, depth=4, root_component=flag)
        for flag in (False, True)
    )
    negatives = np.flatnonzero((pool.y_pred == 0) & (pool.y_true == 0))[::20]
    for sampler in (plain, mixed):
        for x in negatives:  # true negatives: F1's loss is 0
            sampler._pending = ec.samplers.Proposal(int(x), 0.5, 1.0, None)
            sampler.record(0)
    assert mixed.pmf().sum() == pytest.approx(1.0)
    assert mixed.root_mu_ == 0.0
    np.testing.assert_array_equal(mixed.pmf(), plain.pmf())


def test_the_root_share_is_the_grid_value_whose_estimated_next_term_moment_is_least():
    """On a balanced pool the answers favour the root form: mu > 0. Brute force over the
    grid: each labelled item's first draw estimates sum_x u(x)^2 / q'_mu(x) by
    w (1 - q(L)) ||Dg l||^2 / q'_mu(x_j), q'_mu the mixture restricted to the items unlabelled
    now; mu is its argmin, and the proposal is that mixture item by item."""
    pool = synthetic_pool(n=1200, positive_rate=0.4, seed=6, separation=2.0)
    measure = ec.get_measure("f1")
    sampler = ec.make_sampler("ais", pool, measure, 2, depth=4, bound_find_effect=False)
    answer(sampler, pool, 80)
    sampler.pmf()
    (linear, root, tree), _ = _forms_and_tree(sampler)
    unlabelled = np.flatnonzero(sampler.labels_ < 0)
    items, weight, share = sampler.first_draws()
    risk = sampler.model_risk(sampler.cell_response("item"))
    sq_norm = measure.sq_norm_dg_loss(risk, sampler.n_codes_, 2)
    terms = weight * (1 - share) * sq_norm[sampler.codes_[items], sampler.labels_[items]]
    # a labelled item's value under each proposal: that of an unlabelled item of its cell
    position = {c: i for i, c in enumerate(sampler.cell_of_[unlabelled])}
    at = np.array([position[c] for c in sampler.cell_of_[items]])
    lam = sampler.block_share
    moments = []
    for mu in np.linspace(0, 1, 11):
        q = (1 - lam) * ((1 - mu) * linear + mu * root) + lam * tree
        moments.append(np.sum(terms / (q / q.sum())[at]))
    expected = np.linspace(0, 1, 11)[np.argmin(moments)]
    assert sampler.root_mu_ == pytest.approx(expected)
    assert expected > 0
    mu = expected
    q = (1 - lam) * ((1 - mu) * linear + mu * root) + lam * tree
    restricted = sampler.pmf()[unlabelled]
    np.testing.assert_allclose(restricted / restricted.sum(), q / q.sum(), rtol=1e-9)


@pytest.mark.slow
def test_the_default_ais_with_its_root_component_stays_unbiased_and_covers():
    """The share mu is a function of the answers before each draw, so the proposal is still
    predictable and the estimate consistent (Theorem 1). 120 seeded runs to 150 labels on a
    balanced pool where mu leaves 0: the mean F1 estimate within three standard errors (plus
    0.005 for the ratio's O(1/n) bias) of the truth, coverage of the 95% interval at least
    0.90 (three binomial standard deviations below 0.95 over 120 runs)."""
    pool = synthetic_pool(n=1200, positive_rate=0.4, seed=6, separation=2.0)
    measure = ec.get_measure("f1")
    truth = measure.g(ec.true_risk(pool, measure))[0]
    values, hits, shares = [], [], []
    for seed in np.random.SeedSequence(2029).spawn(120):
        sampler = ec.make_sampler("ais", pool, measure, seed, depth=4)
        answer(sampler, pool, 150)
        estimate = ec.estimate(sampler)
        low, high = estimate.confidence_interval(0.95)
        values.append(estimate.value[0])
        hits.append(low[0] <= truth <= high[0])
        shares.append(sampler.root_mu_)
    values = np.array(values)
    assert np.mean(shares) > 0.2
    assert abs(values.mean() - truth) < 3 * values.std() / np.sqrt(len(values)) + 0.005
    assert np.mean(hits) >= 0.90

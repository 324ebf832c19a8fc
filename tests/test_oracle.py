"""The Dirichlet-tree model: EM against a brute-force MAP, the stochastic predictive by hand."""

import warnings

import numpy as np
import pytest
from conftest import synthetic_pool
from scipy.integrate import quad
from scipy.optimize import minimize
from scipy.special import expit, log_softmax, logsumexp

import evalcore as ec
from evalcore import oracle


def tiny_model(em_tol=1e-13, em_max_iter=5000):
    pool = synthetic_pool(n=24, positive_rate=0.4, seed=3)
    partition = ec.partition_pool(pool, depth=2, branching=2)
    prior = ec.prior_from_probabilities(pool.prob, partition)
    model = ec.DirichletTreeModel(partition, prior, em_tol=em_tol, em_max_iter=em_max_iter)
    return pool, partition, prior, model


def brute_force_response(model, prior):
    """Maximize the observed-data log posterior over theta and every node's branch
    probabilities directly (BFGS on softmax coordinates), then return pi(y|k)."""
    C = prior.shape[1]
    K = prior.shape[0]
    n_nodes = 2 + 4  # depth 2, branching 2: level 1 and level 2 (the leaves)
    beta = np.vstack([1 + prior.reshape(2, 2, C).sum(axis=1), 4 + prior])
    alpha = 1 + prior.sum(axis=0)

    def unpack(z):
        log_theta = log_softmax(z[:C])
        log_b = log_softmax(z[C:].reshape(n_nodes // 2, 2, C), axis=1).reshape(n_nodes, C)
        parent = np.repeat(log_b[:2], 2, axis=0)
        return log_theta, log_b, parent + log_b[2:]

    def negative_log_posterior(z):
        log_theta, log_b, log_psi = unpack(z)
        log_joint = log_theta + log_psi
        value = np.sum(model.observed_ * log_joint)
        value += model.unobserved_ @ np.log(np.exp(log_joint).sum(axis=1))
        value += np.sum((alpha - 1) * log_theta) + np.sum((beta - 1) * log_b)
        return -value

    z0 = np.zeros(C + n_nodes * C)
    result = minimize(negative_log_posterior, z0, method="BFGS", options={"gtol": 1e-10})
    log_theta, _, log_psi = unpack(result.x)
    joint = np.exp(log_theta + log_psi)
    assert K == 4
    return joint / joint.sum(axis=1, keepdims=True)


def test_em_reaches_the_brute_force_map_on_a_tiny_tree():
    pool, partition, prior, model = tiny_model()
    labelled = [0, 5, 11, 17, 23]
    for item in labelled:
        model.update(partition.block[item], pool.y_true[item])
    expected = brute_force_response(model, prior)
    np.testing.assert_allclose(model.response_, expected, atol=1e-5)
    # and EM's answer is a stationary point: one more EM step does not move it
    np.testing.assert_allclose(model._em_map(model.response_)[0], model.response_, atol=1e-7)


def test_a_one_level_tree_reaches_the_brute_force_map_bit_for_bit_as_through_its_paths():
    """AIS's mixture keeps a one-level tree (``flat_tree``), whose nodes are its leaves:
    ``_descend`` skips the sums over paths there (the identity). Its EM still reaches the
    MAP found directly, and the shortcut changes no bit of what the paths would give."""
    pool = synthetic_pool(n=24, positive_rate=0.4, seed=3)
    partition = ec.partition_pool(pool, depth=1, branching=4)
    prior = ec.prior_from_probabilities(pool.prob, partition)
    model = ec.DirichletTreeModel(partition, prior, em_tol=1e-13, em_max_iter=5000)
    for item in [0, 5, 11, 17, 23]:
        model.update(partition.block[item], pool.y_true[item])
    beta, alpha = 1 + prior, 1 + prior.sum(axis=0)  # depth 1: one pseudo-count per leaf

    def negative_log_posterior(z):
        log_theta, log_b = log_softmax(z[:2]), log_softmax(z[2:].reshape(4, 2), axis=0)
        log_joint = log_theta + log_b
        value = np.sum(model.observed_ * log_joint)
        value += model.unobserved_ @ np.log(np.exp(log_joint).sum(axis=1))
        return -(value + np.sum((alpha - 1) * log_theta) + np.sum((beta - 1) * log_b))

    z = minimize(negative_log_posterior, np.zeros(10), method="BFGS", options={"gtol": 1e-10}).x
    joint = np.exp(log_softmax(z[:2]) + log_softmax(z[2:].reshape(4, 2), axis=0))
    np.testing.assert_allclose(model.response_, joint / joint.sum(axis=1, keepdims=True), atol=1e-5)

    counts = model.observed_ + model.unobserved_[:, None] * model.response_
    for mode in (True, False):
        x = model.beta_ + model.ancestors_ @ counts
        x = np.maximum(x - 1.0, oracle._MODE_FLOOR) if mode else x
        log_b = np.log(x) - np.log(x.sum(axis=0))
        log_psi, shortcut_b = model._descend(counts, mode)
        assert np.array_equal(shortcut_b, log_b)
        assert np.array_equal(log_psi, model.ancestors_t_ @ log_b)


def test_em_never_lowers_the_observed_data_log_posterior():
    pool, partition, prior, model = tiny_model()
    model.update(partition.block[3], 1)
    response = prior / prior.sum(axis=1, keepdims=True)
    values = []
    for _ in range(30):
        response, value = model._em_map(response)
        values.append(value)
    assert np.all(np.diff(values) >= -1e-9)


def test_em_iteration_cap_warns():
    pool = synthetic_pool(n=24, positive_rate=0.4, seed=3)
    partition = ec.partition_pool(pool, depth=2, branching=2)
    prior = ec.prior_from_probabilities(pool.prob, partition)
    with pytest.warns(ec.EMConvergenceWarning, match="em_max_iter=1"):
        ec.DirichletTreeModel(partition, prior, em_tol=1e-15, em_max_iter=1)


def test_stochastic_posterior_predictive_matches_equation_14_by_hand():
    pool = synthetic_pool(n=40, seed=4)
    partition = ec.partition_pool(pool, depth=2, branching=2)
    prior = ec.prior_from_probabilities(pool.prob, partition)
    model = ec.DirichletTreeModel(partition, prior, deterministic=False)
    model.update(np.array([1, 1, 3]), np.array([1, 0, 1]), np.array([2.0, 0.5, 4.0]))
    counts = np.zeros((4, 2))
    np.add.at(counts, ([1, 1, 3], [1, 0, 1]), [2.0, 0.5, 4.0])
    beta_leaf = 4 + prior + counts
    beta_top = 1 + (prior + counts).reshape(2, 2, 2).sum(axis=1)
    alpha = 1 + prior.sum(axis=0) + counts.sum(axis=0)
    expected = np.empty((4, 2))
    for k in range(4):
        top, sibling = k // 2, (k // 2) * 2
        b_top = beta_top[top] / beta_top.sum(axis=0)
        b_leaf = beta_leaf[k] / beta_leaf[sibling : sibling + 2].sum(axis=0)
        expected[k] = alpha * b_top * b_leaf
    expected /= expected.sum(axis=1, keepdims=True)
    np.testing.assert_allclose(model.response_, expected, rtol=1e-12)


def test_response_keeps_support_on_every_class():
    pool = synthetic_pool(n=5000, positive_rate=0.01, seed=5)
    partition = ec.partition_pool(pool, depth=8, branching=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = ec.DirichletTreeModel(partition, ec.prior_from_probabilities(pool.prob, partition))
    assert np.all(model.response_ > 0)


def test_prior_strength_scales_the_classifier_pseudo_counts():
    pool = synthetic_pool(n=40, seed=6)
    partition = ec.partition_pool(pool, depth=2, branching=2)
    prior = ec.prior_from_probabilities(pool.prob, partition)
    single = ec.DirichletTreeModel(partition, prior, deterministic=False)
    double = ec.DirichletTreeModel(partition, prior, deterministic=False, prior_strength=2.0)
    np.testing.assert_allclose(double.alpha_ - 1, 2 * (single.alpha_ - 1))
    depth_terms = np.repeat([1.0, 4.0], [2, 4])[:, None]
    np.testing.assert_allclose(double.beta_ - depth_terms, 2 * (single.beta_ - depth_terms))
    with pytest.raises(ValueError, match="prior_strength"):
        ec.DirichletTreeModel(partition, prior, prior_strength=0)


def item_model_data(n=6000, n_blocks=6, seed=4):
    """p̂ over a wide range, blocks by p̂, and labels from a known truth: a global map
    expit(-0.5 + 0.7 logit p̂) with block 2 shifted by +1.5 in the logit."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-3.0, 2.5, n)
    p1 = 1 / (1 + np.exp(-z))
    block = np.minimum((np.argsort(np.argsort(z)) * n_blocks) // n, n_blocks - 1)
    true_logit = -0.5 + 0.7 * z + np.where(block == 2, 1.5, 0.0)
    labels = (rng.random(n) < 1 / (1 + np.exp(-true_logit))).astype(int)
    return p1, block, labels


def test_item_level_model_is_the_classifiers_probability_before_any_answer():
    p1, block, _ = item_model_data(n=500)
    model = ec.ItemLevelModel(p1, block, 6)
    model.fit(np.zeros(0, dtype=int), np.zeros(0, dtype=int))
    logits = np.log(p1 / (1 - p1))
    np.testing.assert_allclose(model.cell_probability(block, logits), p1, rtol=1e-12)
    assert np.max(model.bin_of) + 1 == model.n_bins
    for b in range(model.n_bins):  # bins of width 0.25 in logit p̂
        inside = logits[model.bin_of == b]
        assert len(inside) == 0 or np.ptp(inside) <= oracle.LOGIT_BIN_WIDTH


def test_item_level_fit_is_the_joint_map():
    """(a, b, d_1..d_K) maximize the log likelihood plus the Gaussian log priors: checked
    against scipy's BFGS on the same objective."""
    p1, block, labels = item_model_data()
    model = ec.ItemLevelModel(p1, block, 6)
    answered = np.arange(0, len(p1), 2)
    model.fit(answered, labels[answered])
    z, y, k = np.log(p1 / (1 - p1))[answered], labels[answered], block[answered]
    sd = np.r_[ec.RecalibratedProbabilities.prior_sd, np.full(6, model.block_sd)]
    centre = np.r_[0.0, 1.0, np.zeros(6)]

    def negative_log_posterior(theta):
        eta = theta[0] + theta[1] * z + theta[2:][k]
        return -(y @ eta - np.logaddexp(0, eta).sum()) + 0.5 * np.sum(((theta - centre) / sd) ** 2)

    reference = minimize(negative_log_posterior, centre, method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(np.r_[model.coef_, model.offset_], reference.x, atol=1e-4)
    # the shifted block stands out (the others' offsets are noise: few positives below p̂ 0.01)
    assert model.offset_[2] - np.max(np.delete(model.offset_, 2)) > 0.7


@pytest.mark.parametrize("decisions_only", [False, True])
def test_item_level_maps_started_from_the_last_answers_are_the_maps_from_the_identity(
    decisions_only,
):
    """With ``warm_start`` each map's Newton iterations start from its MAP on the answers
    before the last one. Fitted answer by answer, as a session fits, the maps, the
    intercepts' variances and the weight w are those of a model fitted from the identity, also
    where p̂ is exactly 0 or 1 (logits at the clip, where Newton needs many halvings); a
    refit on the same answers gives the same fit to the last bit."""
    p1, block, labels = item_model_data(n=3000)
    if decisions_only:
        p1 = (p1 >= 0.5).astype(float)
    order = np.random.default_rng(7).permutation(len(p1))[:400]
    sequential = ec.ItemLevelModel(p1, block, 6, warm_start=True)
    for n in range(1, len(order) + 1):
        sequential.fit(order[:n], labels[order[:n]])
        if n % 100:
            continue
        once = ec.ItemLevelModel(p1, block, 6)
        once.fit(order[:n], labels[order[:n]])
        np.testing.assert_allclose(sequential.coef_, once.coef_, rtol=0, atol=1e-8)
        np.testing.assert_allclose(sequential.offset_, once.offset_, rtol=0, atol=1e-8)
        np.testing.assert_allclose(
            sequential.identity_offset_, once.identity_offset_, rtol=0, atol=1e-8
        )
        np.testing.assert_allclose(sequential.offset_variance_, once.offset_variance_, rtol=1e-8)
        assert sequential.recalibration_weight_ == pytest.approx(
            once.recalibration_weight_, abs=1e-8
        )
        before = sequential.coef_.copy(), sequential.offset_.copy()
        sequential.fit(order[:n], labels[order[:n]])
        np.testing.assert_array_equal(sequential.coef_, before[0])
        np.testing.assert_array_equal(sequential.offset_, before[1])


def test_item_level_model_follows_the_answers_to_the_truth():
    """With every item answered the model's probability of an item is close to the truth
    that generated the labels (global map and block shift recovered)."""
    p1, block, labels = item_model_data(n=20000)
    model = ec.ItemLevelModel(p1, block, 6)
    model.fit(np.arange(len(p1)), labels)
    z = np.log(p1 / (1 - p1))
    truth = 1 / (1 + np.exp(-(-0.5 + 0.7 * z + np.where(block == 2, 1.5, 0.0))))
    fitted = model.cell_probability(block, z)
    assert np.median(np.abs(np.log(fitted / truth))) < 0.15


def log_evidence_ratio_by_quadrature(z, y, sd_1=1.0, sd_0=1.0):
    """log p(y | M1) - log p(y | M0) for one block, by quadrature on a fine grid. With one
    block the likelihood depends on a and d through s = a + d only, s ~ N(0, 2^2 + sd_1^2)
    under M1 (a ~ N(0, 4), b ~ N(1, 1)); M0 fixes (a, b) = (0, 1) and d ~ N(0, sd_0^2)."""
    s, b = np.linspace(-10, 10, 1001), np.linspace(-1.5, 3.5, 501)

    def log_likelihood(intercept, slope):
        eta = intercept[:, None] + slope * z[None, :]
        return eta @ y - np.logaddexp(0, eta).sum(axis=1)

    def log_normal(x, variance):
        return -0.5 * np.log(2 * np.pi * variance) - x**2 / (2 * variance)

    rows = [
        log_likelihood(s, slope) + log_normal(s, 4.0 + sd_1**2) + log_normal(slope - 1, 1.0)
        for slope in b
    ]
    log_m1 = logsumexp(np.array(rows)) + np.log((s[1] - s[0]) * (b[1] - b[0]))
    log_m0 = logsumexp(log_likelihood(s, 1.0) + log_normal(s, sd_0**2)) + np.log(s[1] - s[0])
    return log_m1 - log_m0


@pytest.mark.parametrize("seed, a, b", [(0, 0.0, 1.0), (1, 0.3, 0.8), (2, 0.5, 0.6)])
def test_the_recalibration_weight_is_the_posterior_probability_of_the_recalibrated_map(seed, a, b):
    """w = expit(log B_10) with Laplace's B_10, checked against quadrature (300 answers, one
    block; Laplace's error is below 0.01 in log B_10 here)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 2.0, 300)
    y = (rng.random(300) < expit(a + b * z)).astype(int)
    model = ec.ItemLevelModel(expit(z), np.zeros(300, dtype=int), 1)
    model.fit(np.arange(300), y)
    w = model.recalibration_weight_
    assert np.log(w / (1 - w)) == pytest.approx(log_evidence_ratio_by_quadrature(z, y), abs=0.05)


def test_model_averaging_keeps_calibrated_probabilities_and_recalibrates_wrong_ones():
    """400 answers at logit p̂ ~ N(-2, 2^2), the prediction read at logit p̂ = -16. Labels
    drawn from p̂ itself (13 pools): w stays small, and the averaged prediction stays near p̂
    in the tail, where the recalibration's MAP alone extrapolates its slope (a factor
    exp(16 |b - 1|)). Labels drawn from expit(logit p̂ / 3), p̂ over-confident: w is 1 and
    the prediction is the MAP's."""
    tail = np.zeros(1, dtype=int), np.array([-16.0])
    averaged_error, map_error = [], []
    for seed in range(7, 20):
        rng = np.random.default_rng(seed)
        z = rng.normal(-2.0, 2.0, 400)
        labels = (rng.random(len(z)) < expit(z)).astype(int)
        block = np.zeros(len(z), dtype=int)
        averaged = ec.ItemLevelModel(expit(z), block, 1)
        alone = ec.ItemLevelModel(expit(z), block, 1, model_averaging=False)
        for model in (averaged, alone):
            model.fit(np.arange(len(z)), labels)
        np.testing.assert_allclose(averaged.coef_, alone.coef_)  # M1's MAP either way
        assert averaged.recalibration_weight_ < 0.35
        averaged_error.append(abs(np.log(averaged.cell_probability(*tail)[0] / expit(-16.0))))
        map_error.append(abs(np.log(alone.cell_probability(*tail)[0] / expit(-16.0))))
    assert np.median(averaged_error) < np.median(map_error) / 2
    assert max(averaged_error) < max(map_error) / 2
    over_confident = (rng.random(len(z)) < expit(z / 3)).astype(int)
    averaged.fit(np.arange(len(z)), over_confident)
    assert averaged.recalibration_weight_ > 0.999
    assert averaged.coef_[1] == pytest.approx(1 / 3, abs=0.1)
    recalibrated = expit(averaged.coef_[0] - 16.0 * averaged.coef_[1] + averaged.offset_[0])
    assert averaged.cell_probability(*tail)[0] == pytest.approx(recalibrated, rel=1e-3)


@pytest.mark.parametrize("seed, a, b", [(3, 0.0, 1.0), (4, -0.5, 1.5), (5, 0.4, 0.5)])
def test_the_recalibrated_probabilities_weight_and_covariance_match_quadrature(seed, a, b):
    """``RecalibratedProbabilities``: w = expit(log B_10) against p̂ itself (no parameter)
    and the Laplace covariance of (a, b), both against a quadrature of the posterior on a
    grid (200 answers; measured: within 0.011 in log B_10 and 8% in the covariance)."""
    rng = np.random.default_rng(seed)
    z = rng.normal(-1.0, 2.0, 200)
    y = (rng.random(200) < expit(a + b * z)).astype(int)
    model = ec.RecalibratedProbabilities(expit(z))
    model.fit(np.arange(200), y)
    intercepts, slopes = np.linspace(-6, 6, 601), np.linspace(-2, 4, 601)
    eta = intercepts[:, None, None] + slopes[None, :, None] * z[None, None, :]
    log_joint = (
        eta @ y
        - np.logaddexp(0, eta).sum(axis=2)
        - intercepts[:, None] ** 2 / 8
        - (slopes[None, :] - 1) ** 2 / 2
        - np.log(2 * np.pi * 2.0)
    )
    cell = (intercepts[1] - intercepts[0]) * (slopes[1] - slopes[0])
    log_m1 = logsumexp(log_joint) + np.log(cell)
    log_m0 = z @ y - np.logaddexp(0, z).sum()
    w = model.recalibration_weight_
    assert np.log(w / (1 - w)) == pytest.approx(log_m1 - log_m0, abs=0.05)
    posterior = np.exp(log_joint - logsumexp(log_joint))
    grid = np.stack(np.meshgrid(intercepts, slopes, indexing="ij"))  # (2, a, b)
    mean = np.einsum("ab,kab->k", posterior, grid)
    centred = grid - mean[:, None, None]
    covariance = np.einsum("ab,kab,lab->kl", posterior, centred, centred)
    np.testing.assert_allclose(model.covariance_, covariance, rtol=0.1)


@pytest.mark.parametrize("digits", [0, 2])
def test_the_recalibration_of_rounded_probabilities_is_that_of_each_answer(digits):
    """Answers of equal p̂ enter the recalibration together (probabilities rounded to
    ``digits``: 0 is a classifier that reports only its decisions, p̂ exactly 0 or 1). Its
    log posterior, MAP and likelihood region are those of the answers one by one: the
    log posterior summed answer by answer, its gradient 0 at the MAP, and the region's
    points where it lies z^2 / 2 below the MAP's."""
    rng = np.random.default_rng(12)
    z = rng.normal(-2.0, 2.5, 600)
    p1 = np.round(expit(z), digits)
    y = (rng.random(600) < expit(0.3 + 0.5 * z)).astype(int)
    model = ec.RecalibratedProbabilities(p1)
    model.fit(np.arange(600), y)
    x = oracle.classifier_logit(p1)
    assert len(model._answers[0]) == len(np.unique(p1)) < 110

    def log_posterior(coef):
        eta = coef[0] + coef[1] * x
        prior = ((coef - model.prior_mean) / model.prior_sd) ** 2
        return y @ eta - np.logaddexp(0, eta).sum() - 0.5 * prior.sum()

    for coef in rng.normal([0.0, 1.0], 0.5, size=(5, 2)):
        assert model.log_posterior(coef) == pytest.approx(log_posterior(coef), rel=1e-10)
    eta = model.coef_[0] + model.coef_[1] * x
    residual = y - expit(eta)
    gradient = np.array([residual.sum(), residual @ x])
    gradient -= (model.coef_ - model.prior_mean) / model.prior_sd**2
    np.testing.assert_allclose(gradient, 0.0, atol=1e-6)
    level = log_posterior(model.coef_) - 1.96**2 / 2
    for point in model.likelihood_region(1.96, 16):
        assert log_posterior(point) == pytest.approx(level, abs=1e-6)


def test_the_recalibrations_likelihood_region_is_the_posteriors_level_set():
    """``likelihood_region``: its points lie where M1's log posterior is z^2 / 2 below the
    MAP's, and the largest value of any linear function of (a, b) over them is its largest
    over that region on a fine grid (the region is convex). Few positives among rare ones,
    so the region is lopsided: it is not Laplace's ellipse."""
    rng = np.random.default_rng(11)
    z = rng.normal(-4.0, 2.0, 400)
    y = (rng.random(400) < expit(-0.5 + 0.6 * z)).astype(int)
    model = ec.RecalibratedProbabilities(expit(z))
    model.fit(np.arange(400), y)
    region = model.likelihood_region(1.96, 32)
    target = model.log_posterior(model.coef_) - 1.96**2 / 2
    np.testing.assert_allclose(model.log_posterior(region), target, atol=1e-6)
    intercepts = model.coef_[0] + np.linspace(-4, 4, 401)
    slopes = model.coef_[1] + np.linspace(-1.5, 1.5, 401)
    grid = np.stack(np.meshgrid(intercepts, slopes, indexing="ij"), axis=-1).reshape(-1, 2)
    within = model.log_posterior(grid) >= target
    inside = grid[within]
    edge = np.isin(grid[:, 0], intercepts[[0, -1]]) | np.isin(grid[:, 1], slopes[[0, -1]])
    assert within.sum() > 1000 and not (within & edge).any()  # the grid holds the region
    for angle in np.linspace(0, 2 * np.pi, 12, endpoint=False):
        direction = np.array([np.cos(angle), np.sin(angle)])
        extent = np.ptp(inside @ direction)
        assert (region @ direction).max() == pytest.approx(
            (inside @ direction).max(), abs=0.02 * extent
        )
    ellipse_radius = np.sqrt(
        np.einsum(
            "ki,ij,kj->k",
            region - model.coef_,
            np.linalg.inv(model.covariance_),
            region - model.coef_,
        )
    )
    assert ellipse_radius.max() / ellipse_radius.min() > 1.1  # measured 1.19


def test_over_confident_tails_keep_their_order():
    """Regression: p̂ was clipped at 1e-9, which merged the tail of over-confident
    probabilities (85% of the synthetic over_confident pool) into one logit, so no map could
    tell its items apart. Probabilities expit(3 z) with the labels drawn from expit(z), z ~
    N(-9, 2), most of them far below 1e-9: with every item answered both models recover the
    true map over the tail (slope 1/3) item by item. The 26-107 positives leave a median error of
    0.12-0.37 in log p over seeds 5-7 and 40,000-100,000 items; with the tail merged it was
    1.09-1.27."""
    rng = np.random.default_rng(5)
    z = rng.normal(-9.0, 2.0, 40_000)
    p1, labels = expit(3 * z), (rng.random(len(z)) < expit(z)).astype(int)
    assert np.mean(p1 < 1e-9) > 0.7
    everything, truth = np.arange(len(z)), expit(z)
    recalibrated = ec.RecalibratedProbabilities(p1)
    recalibrated.fit(everything, labels)
    assert recalibrated.coef_[1] == pytest.approx(1 / 3, abs=0.06)  # merged: 0.41
    fitted = recalibrated.recalibrated_probability(recalibrated.logit_)
    assert np.median(np.abs(np.log(fitted / truth))) < 0.5
    block = np.zeros(len(z), dtype=int)
    item_level = ec.ItemLevelModel(p1, block, 1)
    item_level.fit(everything, labels)
    fitted = item_level.cell_probability(block, item_level.logit_)
    assert np.median(np.abs(np.log(fitted / truth))) < 0.5


@pytest.mark.parametrize("mean, variance", [(-15.0, 1.0), (-3.0, 4.0), (0.5, 1.0), (-30.0, 0.3)])
def test_expected_expit_matches_adaptive_quadrature(mean, variance):
    def integrand(z):
        return expit(mean + np.sqrt(variance) * z) * np.exp(-(z**2) / 2) / np.sqrt(2 * np.pi)

    reference = quad(integrand, -12, 12, epsabs=0, epsrel=1e-12, limit=200)[0]
    assert oracle.expected_expit(np.array([mean]), np.array([variance]))[0] == pytest.approx(
        reference, rel=1e-6
    )


def test_integrated_offsets_average_over_the_block_intercepts_posterior():
    """With ``integrate_offsets`` a cell's probability is E[expit(a + b logit p̂ + d_k)] over
    d_k given the MAP of (a, b). In a block without answers that is d_k's prior, N(0, 1); in
    one with answers Laplace's normal, checked against the exact conditional posterior of d_k
    on a grid (block 4: 1,000 answers, 216 of them positive)."""
    p1, block, labels = item_model_data(n_blocks=6)
    answered = np.flatnonzero(block != 5)  # block 5 is left without answers
    models = [
        ec.ItemLevelModel(p1, block, 6, model_averaging=False, integrate_offsets=integrate)
        for integrate in ("none", "recalibrated")
    ]
    for model in models:
        model.fit(answered, labels[answered])
    plain, integrated = models
    np.testing.assert_array_equal(plain.offset_, integrated.offset_)
    a, b = integrated.coef_
    z = np.log(p1 / (1 - p1))
    grid = np.linspace(-8, 8, 8001)

    def exact(logit, log_likelihood):
        log_post = log_likelihood - grid**2 / (2 * integrated.block_sd**2)
        weight = np.exp(log_post - log_post.max())
        return weight @ expit(a + b * logit + grid) / weight.sum()

    logit = -12.0
    unlabelled = integrated.cell_probability(np.array([5]), np.array([logit]))[0]
    assert unlabelled == pytest.approx(exact(logit, 0.0), rel=1e-6)
    assert unlabelled / plain.cell_probability(np.array([5]), np.array([logit]))[0] > 1.5

    k = 4
    inside = answered[block[answered] == k]
    eta = a + b * z[inside]
    log_likelihood = labels[inside] @ (eta[:, None] + grid) - np.logaddexp(
        0, eta[:, None] + grid
    ).sum(axis=0)
    for logit in (-12.0, -3.0, 0.0):
        got = integrated.cell_probability(np.array([k]), np.array([logit]))[0]
        assert got == pytest.approx(exact(logit, log_likelihood), rel=0.02)


def test_integrating_the_recalibrated_maps_intercepts_leaves_the_identity_map_at_its_map():
    """``integrate_offsets="recalibrated"`` moves the model average only by its recalibrated
    part, w (E[expit(eta_1 + e)] - expit(eta_1)); "both" moves the identity map's part too."""
    p1, block, labels = item_model_data(n_blocks=6)
    answered = np.flatnonzero(block != 5)

    def fitted(maps, model_averaging=True):
        model = ec.ItemLevelModel(p1, block, 6, model_averaging, integrate_offsets=maps)
        model.fit(answered, labels[answered])
        return model.cell_probability(cell_block, cell_logit)

    cell_block, cell_logit = np.repeat(np.arange(6), 3), np.tile([-12.0, -6.0, -3.0], 6)
    model = ec.ItemLevelModel(p1, block, 6)
    model.fit(answered, labels[answered])
    w = model.recalibration_weight_
    assert 0.1 < w < 0.99
    recalibrated_shift = fitted("recalibrated", False) - fitted("none", False)
    assert np.all(recalibrated_shift > 0)  # expit is convex where these cells lie
    np.testing.assert_allclose(
        fitted("recalibrated") - fitted("none"), w * recalibrated_shift, rtol=1e-9, atol=1e-15
    )
    assert np.all(fitted("both") > fitted("recalibrated"))
    with pytest.raises(ValueError, match="integrate_offsets"):
        ec.ItemLevelModel(p1, block, 6, integrate_offsets=True)


def offsets_data(sd, n_blocks=40, per_block=40, seed=11):
    """Answers at logit p̂ ~ N(-1, 1.5^2) in ``n_blocks`` blocks, labels drawn from the
    identity map with block intercepts d_k ~ N(0, sd^2)."""
    rng = np.random.default_rng(seed)
    block = np.repeat(np.arange(n_blocks), per_block)
    z = rng.normal(-1.0, 1.5, len(block))
    offset = sd * rng.standard_normal(n_blocks)
    labels = (rng.random(len(z)) < expit(z + offset[block])).astype(int)
    return z, block, labels


def type_two_ml_sd_by_quadrature(z, block, labels):
    """argmax over sigma of the identity map's exact marginal likelihood, prod_k of the
    integral over d_k ~ N(0, sigma^2) of its block's likelihood (blocks are independent
    given (a, b) = (0, 1)), on a grid of d and of sigma."""
    d = np.linspace(-8, 8, 4001)
    eta = z[:, None] + d[None, :]
    log_lik = labels[:, None] * eta - np.logaddexp(0, eta)
    per_block = np.vstack([log_lik[block == k].sum(axis=0) for k in np.unique(block)])
    sigmas = np.linspace(0.02, 2.0, 397)
    log_prior = -(d[None, :] ** 2) / (2 * sigmas[:, None] ** 2) - np.log(sigmas)[:, None]
    marginal = [logsumexp(per_block + row, axis=1).sum() for row in log_prior]
    return sigmas[int(np.argmax(marginal))]


@pytest.mark.parametrize("true_sd", [0.0, 0.6])
def test_fitted_block_sd_follows_the_answers_to_the_type_two_maximum_likelihood(true_sd):
    """With ``fit_block_sd`` each new answer takes one EM step for each map's sigma.
    Answers added one at a time, as a session does: the identity map's sigma ends within 0.1
    of the exact type-II maximum likelihood (quadrature), near 0 where the classifier is
    calibrated; refitting on the same answers takes no further step."""
    z, block, labels = offsets_data(true_sd)
    model = ec.ItemLevelModel(expit(z), block, 40, fit_block_sd="both")
    assert model.sd("identity") == model.sd("recalibrated") == model.block_sd
    for n in range(1, len(z) + 1):
        model.fit(np.arange(n), labels[:n])
    fitted = model.sd("identity")
    assert fitted == pytest.approx(type_two_ml_sd_by_quadrature(z, block, labels), abs=0.1)
    assert (fitted < 0.3) if true_sd == 0 else (0.35 < fitted < 0.9)
    following = dict(model.next_offset_sd_)
    model.fit(np.arange(len(z)), labels)
    assert model.sd("identity") == fitted and model.next_offset_sd_ == following
    fixed = ec.ItemLevelModel(expit(z), block, 40)
    fixed.fit(np.arange(len(z)), labels)
    assert fixed.sd("identity") == fixed.block_sd == 1.0


def test_fit_block_sd_fits_only_the_maps_it_names():
    """``fit_block_sd="recalibrated"`` steps M1's sigma and leaves M0's at ``block_sd``;
    M1's first step, from a fit at sigma = 1 either way, is the one it takes with "both".
    A bool is refused, as for ``integrate_offsets``."""
    z, block, labels = offsets_data(0.0)
    models = {
        maps: ec.ItemLevelModel(expit(z), block, 40, fit_block_sd=maps)
        for maps in ("recalibrated", "both")
    }
    for model in models.values():
        for n in range(1, 41):
            model.fit(np.arange(n), labels[:n])
    only, both = models["recalibrated"], models["both"]
    assert only.sd("identity") == only.block_sd
    assert both.sd("identity") < 0.9 * both.block_sd
    assert only.sd("recalibrated") < 0.9 * only.block_sd
    first = ec.ItemLevelModel(expit(z), block, 40, fit_block_sd="recalibrated")
    first.fit(np.arange(1), labels[:1])
    first_both = ec.ItemLevelModel(expit(z), block, 40, fit_block_sd="both")
    first_both.fit(np.arange(1), labels[:1])
    assert first.next_offset_sd_["recalibrated"] == first_both.next_offset_sd_["recalibrated"]
    with pytest.raises(ValueError, match="fit_block_sd"):
        ec.ItemLevelModel(expit(z), block, 40, fit_block_sd=True)


def test_unanswered_sd_prior_keeps_the_prior_spread_where_a_block_has_no_answers():
    """With the recalibrated map's sigma fitted and its intercepts integrated out,
    ``unanswered_sd="prior"`` integrates a block without answers over N(0, ``block_sd``^2)
    and "fitted" over N(0, sigma^2); the fits and the answered blocks' predictions are the
    same. Without ``fit_block_sd`` the two are the same everywhere."""
    z, block, labels = offsets_data(0.0)
    inside = np.flatnonzero(block < 30)  # blocks 30-39 are left without answers

    def fitted_models(fit_block_sd):
        models = {}
        for spread in ("fitted", "prior"):
            model = ec.ItemLevelModel(
                expit(z),
                block,
                40,
                model_averaging=False,
                integrate_offsets="recalibrated",
                fit_block_sd=fit_block_sd,
                unanswered_sd=spread,
            )
            for n in range(1, len(inside) + 1):
                model.fit(inside[:n], labels[inside[:n]])
            models[spread] = model
        return models

    cell_block, cell_logit = np.repeat([3, 35], 3), np.tile([-12.0, -4.0, 0.0], 2)
    models = fitted_models("recalibrated")
    fitted, prior = models["fitted"], models["prior"]
    np.testing.assert_array_equal(fitted.coef_, prior.coef_)
    np.testing.assert_array_equal(fitted.offset_, prior.offset_)
    sigma = prior.sd("recalibrated")
    assert sigma < 0.9 * prior.block_sd
    a, b = prior.coef_
    eta = a + b * cell_logit + prior.offset_[cell_block]
    by_fitted = fitted.cell_probability(cell_block, cell_logit)
    by_prior = prior.cell_probability(cell_block, cell_logit)
    np.testing.assert_array_equal(by_prior[:3], by_fitted[:3])
    np.testing.assert_allclose(
        by_prior[3:], oracle.expected_expit(eta[3:], np.full(3, prior.block_sd**2)), rtol=1e-12
    )
    np.testing.assert_allclose(
        by_fitted[3:], oracle.expected_expit(eta[3:], np.full(3, sigma**2)), rtol=1e-12
    )
    assert by_prior[3] > 1.2 * by_fitted[3]  # the tail's odds, e^(sigma^2 / 2) apart
    unfitted = fitted_models("none")
    np.testing.assert_array_equal(
        unfitted["prior"].cell_probability(cell_block, cell_logit),
        unfitted["fitted"].cell_probability(cell_block, cell_logit),
    )
    with pytest.raises(ValueError, match="unanswered_sd"):
        ec.ItemLevelModel(expit(z), block, 40, unanswered_sd="fixed")


@pytest.mark.parametrize("maps", ["recalibrated", "both"])
def test_weight_at_block_sd_weighs_the_maps_as_without_a_fitted_sd(maps):
    """``weight_at_block_sd``: the Bayes factor is that of both maps at ``block_sd``, so w
    is the unfitted model's for the same answers, while each map's fit keeps its fitted
    sigma. Without it, on calibrated answers (every d_k = 0) M1's small fitted sigma alone
    raises w."""
    z, block, labels = offsets_data(0.0)
    models = {
        name: ec.ItemLevelModel(expit(z), block, 40, **options)
        for name, options in (
            ("unfitted", {}),
            ("fitted", {"fit_block_sd": maps}),
            ("weighed", {"fit_block_sd": maps, "weight_at_block_sd": True}),
        )
    }
    for model in models.values():
        for n in range(1, len(z) + 1):
            model.fit(np.arange(n), labels[:n])
    unfitted, fitted, weighed = models["unfitted"], models["fitted"], models["weighed"]
    assert weighed.sd("recalibrated") < 0.5 * weighed.block_sd
    assert weighed.recalibration_weight_ == pytest.approx(unfitted.recalibration_weight_, rel=1e-9)
    np.testing.assert_array_equal(weighed.offset_, fitted.offset_)
    np.testing.assert_array_equal(weighed.identity_offset_, fitted.identity_offset_)
    if maps == "recalibrated":
        assert fitted.recalibration_weight_ > 2 * unfitted.recalibration_weight_


@pytest.mark.parametrize("sd_1, sd_0", [(0.5, 1.0), (1.0, 0.3), (2.0, 0.5)])
def test_the_recalibration_weight_holds_when_the_maps_block_sds_differ(sd_1, sd_0):
    """The Bayes factor keeps each map's -K log sigma (the d_k prior's normaliser), which
    cancels only where the sigmas are equal: checked against quadrature (one block, 300
    answers; under M1 a + d_1 ~ N(0, 2^2 + sd_1^2))."""
    rng = np.random.default_rng(5)
    z = rng.normal(-1.0, 2.0, 300)
    y = (rng.random(300) < expit(0.4 + 0.8 * z)).astype(int)
    model = ec.ItemLevelModel(expit(z), np.zeros(300, dtype=int), 1)
    model.next_offset_sd_ = {"recalibrated": sd_1, "identity": sd_0}  # the next fit's
    model.fit(np.arange(300), y)
    w = model.recalibration_weight_
    expected = log_evidence_ratio_by_quadrature(z, y, sd_1, sd_0)
    assert np.log(w / (1 - w)) == pytest.approx(expected, abs=0.05)

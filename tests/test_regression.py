"""Regression pools and measures (seed 003, Table 2): against scikit-learn, finite
differences, closed-form Normal moments, and in seeded Monte Carlo."""

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_pool
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score

from evalcore import regression as rg
from evalcore.pool import PoolValidationError


def heavy_tailed_pool(n=5000, seed=0, dof=3):
    """Errors N(0, 2^2) except where the prediction is above 90 (10% of the items): there
    Student t (``dof`` degrees of freedom) scaled by 20, where a uniform sample of a few
    hundred sees a handful. The model's own spread says 2 and 15 (it knows where it is
    unsure, not by how much)."""
    rng = np.random.default_rng(seed)
    prediction = rng.uniform(0, 100, n)
    risky = prediction > 90
    error = np.where(risky, 20 * rng.standard_t(dof, n), rng.normal(0, 2, n))
    spread = np.where(risky, 15.0, 2.0)
    return rg.RegressionPool(np.arange(n).astype(str), prediction, spread, prediction + error)


def truth(pool, name):
    measure = rg.get_regression_measure(name)
    return measure.g(rg.true_risk(pool, measure))[0]


def test_measures_on_the_whole_pool_equal_scikit_learns():
    pool = heavy_tailed_pool(800, seed=1)
    y, f = pool.y_true, pool.prediction
    assert truth(pool, "mae") == pytest.approx(mean_absolute_error(y, f), rel=1e-12)
    assert truth(pool, "mse") == pytest.approx(mean_squared_error(y, f), rel=1e-12)
    assert truth(pool, "rmse") == pytest.approx(np.sqrt(mean_squared_error(y, f)), rel=1e-12)
    assert truth(pool, "r2") == pytest.approx(r2_score(y, f), rel=1e-12)


@pytest.mark.parametrize("name", ["mae", "mse", "rmse", "r2"])
def test_jacobians_match_finite_differences(name):
    measure = rg.get_regression_measure(name)
    pool = heavy_tailed_pool(300, seed=2)
    R = measure.loss(pool.prediction, pool.y_true).mean(axis=0)
    J = measure.dense_jacobian(R)
    for j in range(measure.d):
        step = 1e-6 * max(1.0, abs(R[j]))
        up, down = R.copy(), R.copy()
        up[j] += step
        down[j] -= step
        slope = (measure.g(up) - measure.g(down)) / (2 * step)
        assert J[:, j] == pytest.approx(slope, rel=1e-6)


def test_the_proposals_second_moment_is_the_normal_moment():
    # y ~ N(f, s^2): E[(y - f)^2] = s^2 (MAE, Dg = 1) and E[(y - f)^4] = 3 s^4 (MSE)
    f, s = np.array([3.0, -1.0, 10.0]), np.array([0.5, 2.0, 0.0])
    mae, mse = rg.get_regression_measure("mae"), rg.get_regression_measure("mse")
    np.testing.assert_allclose(mae.second_moment(f, s), s**2, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(mse.second_moment(f, s), 3 * s**4, rtol=1e-12, atol=1e-12)
    # R^2 by brute force: Monte Carlo of ||Dg(R) l||^2 at the model's R
    r2 = rg.get_regression_measure("r2")
    R = r2.model_risk(f, s)
    np.testing.assert_allclose(R, [np.mean(s**2), f.mean(), np.mean(f**2 + s**2)], rtol=1e-12)
    draws = f + s * np.random.default_rng(0).standard_normal((400_000, 3))
    J = r2.dense_jacobian(R)
    monte_carlo = [
        np.mean((r2.loss(np.full(len(draws), f[i]), draws[:, i]) @ J.T)[:, 0] ** 2)
        for i in range(3)
    ]
    np.testing.assert_allclose(r2.second_moment(f, s), monte_carlo, rtol=0.01)


def run(pool, name, sampler_name, n_labels, seed):
    sampler = rg.make_regression_sampler(sampler_name, pool, rg.get_regression_measure(name), seed)
    while sampler.n_labels < n_labels:
        item = sampler.propose().item
        sampler.record(pool.y_true[item])
    return sampler.estimate()


@pytest.mark.parametrize("sampler_name", ["passive", "stratified", "is", "ais"])
def test_estimates_are_unbiased_for_the_mean_squared_error(sampler_name):
    pool = heavy_tailed_pool(3000, seed=3)
    values = np.array([run(pool, "mse", sampler_name, 150, seed).value[0] for seed in range(300)])
    standard_error = values.std(ddof=1) / np.sqrt(len(values))
    assert abs(values.mean() - truth(pool, "mse")) < 3.5 * standard_error


def test_importance_sampling_needs_fewer_labels_where_the_model_knows_where_it_is_unsure():
    pool = heavy_tailed_pool(3000, seed=3)
    errors = {
        name: np.mean(
            [
                (run(pool, "mse", name, 150, seed).value[0] - truth(pool, "mse")) ** 2
                for seed in range(100)
            ]
        )
        for name in ("passive", "is")
    }
    assert errors["is"] < 0.5 * errors["passive"]


def test_adaptive_sampling_learns_where_the_errors_are_without_the_models_uncertainty():
    # no spread column: AIS must find the risky tenth of the pool from the answers alone
    full = heavy_tailed_pool(3000, seed=3)
    pool = rg.RegressionPool(full.ids, full.prediction, None, full.y_true)
    target = truth(pool, "mse")
    errors = {
        name: np.mean(
            [(run(pool, "mse", name, 150, seed).value[0] - target) ** 2 for seed in range(100)]
        )
        for name in ("passive", "ais")
    }
    assert errors["ais"] < 0.7 * errors["passive"]  # measured 0.48


def test_the_adaptive_proposal_follows_the_error_model_and_keeps_its_floor():
    pool = heavy_tailed_pool(2000, seed=6)
    sampler = rg.make_regression_sampler("ais", pool, rg.get_regression_measure("mse"), 0)
    cells = np.arange(len(sampler.cell_size_))
    floor = sampler.epsilon * sampler.cell_size_ / pool.n_pool
    assert np.all(sampler._cell_mass >= floor - 1e-15)  # Theorem 1: q > 0 everywhere
    assert sampler._cell_mass.sum() == pytest.approx(1.0)
    # before any answer, Prop. 4 for MSE under N(0, s^2) errors: mass ∝ N_c s_c^2 (3^0.5 cancels)
    optimal = sampler.cell_size_ * sampler._cell_spread2 * (1 + 1 / sampler.kappa0)
    expected = 0.9 * optimal / optimal.sum() + floor
    np.testing.assert_allclose(sampler._cell_mass[cells], expected, rtol=1e-9)
    probabilities = sampler.pmf_of(np.arange(pool.n_pool))
    assert probabilities.sum() == pytest.approx(1.0)


@pytest.mark.parametrize("name, dof", [("mae", 3), ("mse", 10), ("r2", 10)])
def test_intervals_cover_near_the_nominal_level(name, dof):
    # squared errors of 3-dof t errors have no variance: the delta method's interval for
    # MSE and R^2 needs finite fourth moments (with 3 dof R^2 covered 0.85 at 300 labels)
    pool = heavy_tailed_pool(3000, seed=4, dof=dof)
    target = truth(pool, name)
    covered = []
    for seed in range(200):
        estimate = run(pool, name, "is", 300, seed)
        low, high = estimate.confidence_interval(0.95)
        covered.append(low[0] <= target <= high[0])
    assert 0.90 <= np.mean(covered) <= 0.99


def test_a_regression_table_with_bad_values_is_refused_with_the_rows_named():
    frame = pd.DataFrame({"pred": ["1.5", "2", "n/a", "4"], "label": [1, 2, 3, np.inf]})
    with pytest.raises(PoolValidationError, match="not numbers") as error:
        rg.RegressionPool.from_dataframe(frame, label="label")
    assert error.value.column == "pred" and error.value.rows == [2]
    frame["pred"] = ["1.5", "2", "3", "4"]
    with pytest.raises(PoolValidationError, match="missing or infinite") as error:
        rg.RegressionPool.from_dataframe(frame, label="label")
    assert error.value.column == "label" and error.value.rows == [3]
    frame.loc[3, "label"] = 4
    frame["sd"] = [1, -1, 0, 2]
    with pytest.raises(PoolValidationError, match="cannot be negative"):
        rg.RegressionPool.from_dataframe(frame, label="label", spread="sd")
    with pytest.raises(PoolValidationError, match="no column `truth`"):
        rg.RegressionPool.from_dataframe(frame, label="truth")
    frame.loc[1, "sd"] = 1
    pool = rg.RegressionPool.from_dataframe(frame, label="label", spread="sd")
    np.testing.assert_array_equal(pool.spread, [1, 1, 0, 2])


def test_static_importance_sampling_without_the_models_uncertainty_says_what_to_choose():
    pool = heavy_tailed_pool(100)
    pool = rg.RegressionPool(pool.ids, pool.prediction, None, pool.y_true)
    with pytest.raises(ValueError, match="choose passive or stratified"):
        rg.make_regression_sampler("is", pool, rg.get_regression_measure("mae"), 0)


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "evalcore", "simulate", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def regression_file(tmp_path_factory):
    pool = heavy_tailed_pool(2000, seed=5)
    path = tmp_path_factory.mktemp("regression") / "pool.csv"
    frame = pd.DataFrame({"id": pool.ids, "pred": pool.prediction, "sd": pool.spread})
    frame["label"] = pool.y_true
    frame.to_csv(path, index=False)
    return path, pool


def test_the_simulate_cli_takes_a_regression_measure_and_keeps_the_summarys_keys(
    regression_file, tmp_path
):
    path, pool = regression_file
    common = ["--pool", str(path), "--budget", "60", "--repeats", "4", "--every", "20"]
    done = cli(*common, "--measure", "r2", "--sampler", "is")
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    binary = synthetic_pool(n=300, seed=1)
    binary_file = tmp_path / "binary.csv"
    pd.DataFrame({"score": binary.scores, "label": binary.y_true}).to_csv(binary_file)
    classifier = cli(
        *["--pool", str(binary_file), "--budget", "20", "--repeats", "2"],
        *["--measure", "f1", "--sampler", "passive"],
    )
    assert summary.keys() == json.loads(classifier.stdout.strip().splitlines()[-1]).keys()
    assert summary["true"] == pytest.approx(r2_score(pool.y_true, pool.prediction), rel=1e-12)
    assert summary["repeats"] == 4 and summary["undefined"] == 0.0
    refused = cli(*common, "--measure", "mae", "--sampler", "oasis")
    assert refused.returncode == 2
    assert "a regression measure takes passive, stratified, is, ais" in refused.stderr
    adaptive = cli(*common, "--measure", "mae", "--sampler", "ais")
    assert adaptive.returncode == 0, adaptive.stderr
    listing = cli("--help").stdout
    assert "r2                     Regression: 1 − MSE / Var(y)" in listing
    unnamed = cli(*common, "--measure", "mae", "--sampler", "is", "--pred-column", "guess")
    assert unnamed.returncode == 2 and "no column 'guess'" in unnamed.stderr


def test_error_measures_have_log_scale_limits_and_r2_those_of_one_minus_r2():
    z = 1.959963984540054
    pool = heavy_tailed_pool(2000, seed=7)
    for name, a, b in (("mae", 0.0, 1.0), ("r2", 1.0, -1.0)):
        estimate = run(pool, name, "is", 100, 0)
        value, se = estimate.value[0], estimate.std_error[0]
        u = a + b * value
        spread = np.exp(z * se / u)
        expected = sorted([(u / spread - a) / b, (u * spread - a) / b])
        low, high = estimate.confidence_interval(0.95)
        np.testing.assert_allclose([low[0], high[0]], expected, rtol=1e-12)
        assert high[0] - value > value - low[0] if b > 0 else value - low[0] > high[0] - value
        normal = estimate.confidence_interval(0.95, method="normal")
        np.testing.assert_allclose([normal[0][0], normal[1][0]], [value - z * se, value + z * se])


@pytest.mark.parametrize("sampler_name", ["passive", "stratified", "is", "ais", "bernoulli"])
def test_a_regression_session_replays_undoes_and_round_trips_to_the_identical_estimate(
    sampler_name,
):
    import evalcore as ec

    pool = heavy_tailed_pool(1500, seed=8)
    session = ec.Session(pool, "mae", sampler_name, seed=4, budget=60)
    while not session.done:
        item = session.next_item().item
        session.record(item, pool.y_true[item])
    assert all(isinstance(answer, float) for _, answer in session.log)
    replayed = ec.Session(pool, "mae", sampler_name, seed=4, budget=60, log=list(session.log))
    np.testing.assert_array_equal(replayed.estimate().value, session.estimate().value)
    loaded = ec.Session.from_json(session.to_json(), pool)
    assert loaded.log == session.log
    np.testing.assert_array_equal(loaded.estimate().value, session.estimate().value)
    shorter = ec.Session(pool, "mae", sampler_name, seed=4, budget=60, log=session.log[:41])
    while session.n_labels > 41:  # Bernoulli's round holds about 60 items, not exactly
        session.undo()  # from the checkpoints at 25 and 50 answers
    np.testing.assert_array_equal(session.estimate().value, shorter.estimate().value)
    # sample reuse: the same answers estimate the MSE
    direct = shorter.estimate("mse").value[0]
    assert direct == pytest.approx(
        rg.get_regression_measure("mse").g(shorter.sampler.estimate(rg.MeanSquaredError()).risk)[0]
    )
    assert ec.session.log_digest(session.log) != ec.session.log_digest(
        [(item, answer + 0.5) for item, answer in session.log]
    )


def test_a_regression_answer_must_be_a_finite_number():
    import evalcore as ec

    pool = heavy_tailed_pool(200, seed=9)
    session = ec.Session(pool, "mse", "ais", seed=0, budget=10)
    item = session.next_item().item
    for bad in ("n/a", float("nan"), float("inf"), None):
        with pytest.raises(ValueError, match="must be a finite number"):
            session.record(item, bad)
    assert session.log == []
    session.record(item, "12.5")
    assert session.log == [(item, 12.5)]


def test_a_regression_session_is_saved_answer_by_answer_and_resumed_exactly(tmp_path):
    import evalcore as ec

    pool = heavy_tailed_pool(400, seed=10)
    frame = pd.DataFrame({"pred": pool.prediction, "sd": pool.spread, "label": pool.y_true})
    frame["note"] = [f"house {i}" for i in range(len(frame))]
    data = frame.to_csv(index=False).encode()
    store = ec.Store(tmp_path / "sessions.db")
    mapping = rg.RegressionMapping("pred", label="label", spread="sd", content=("note",))
    key = store.save_pool("heavy", "heavy.csv", data, mapping)
    stored, name = store.load_pool(key)
    assert isinstance(stored, rg.RegressionPool) and name == "heavy"
    assert stored.content.note.iloc[7] == "house 7"
    np.testing.assert_array_equal(stored.prediction, pool.prediction)  # the CSV kept every bit
    session = ec.Session(stored, "r2", "ais", seed=1, budget=30)
    session_id = store.create_session(key, session)
    for position in range(30):
        item = session.next_item().item
        answer = [12.0, -3.25, 1e-9 + 7][position % 3]  # a whole number, a fraction, a tiny one
        digest = ec.session.log_digest(session.log)
        store.append_answer(session_id, position, item, answer, expected=digest)
        session.record(item, answer)
    saved = store.answers(session_id)
    assert [answer for _, answer in saved] == [answer for _, answer in session.log]
    resumed = store.load_session(session_id, stored)
    assert resumed.log == session.log
    np.testing.assert_array_equal(resumed.estimate().value, session.estimate().value)
    with pytest.raises(ec.store.SessionConflict):  # a stale window's digest is refused
        store.append_answer(session_id, 30, 0, 1.0, expected=ec.session.log_digest(saved[:-1]))


def test_a_suspicious_regression_pool_is_named_in_plain_words():
    frame = pd.DataFrame({"pred": [3.0, 3.0, 3.0], "sd": [0.0, 0.0, 0.0], "label": [1, 2, 4]})
    pool = rg.RegressionPool.from_dataframe(frame, label="label", spread="sd")
    warnings = rg.regression_warnings(pool)
    assert warnings[0].startswith("Every prediction is 3:")
    assert warnings[1].startswith("The spread column is 0 for every item")
    sampler = rg.make_regression_sampler("is", pool, rg.get_regression_measure("mae"), 0)
    np.testing.assert_allclose(sampler.q, 1 / 3)  # nothing to go on: uniform
    assert rg.regression_warnings(heavy_tailed_pool(50)) == []


def test_bernoulli_sampling_is_unbiased_and_plans_its_budget():
    pool = heavy_tailed_pool(3000, seed=3)
    measure = rg.get_regression_measure("mse")
    values, sizes = [], []
    for seed in range(300):
        sampler = rg.make_regression_sampler("bernoulli", pool, measure, seed, budget=150)
        assert sampler.pi_.sum() == pytest.approx(150)
        assert sampler.pi_[pool.spread == 15].min() > sampler.pi_[pool.spread == 2].max()
        while not sampler.finished:
            sampler.record(pool.y_true[sampler.propose().item])
        values.append(sampler.estimate().value[0])
        sizes.append(sampler.n_labels)
    values = np.asarray(values)
    assert abs(np.mean(sizes) - 150) < 3 * np.std(sizes) / np.sqrt(300)
    standard_error = values.std(ddof=1) / np.sqrt(len(values))
    assert abs(values.mean() - truth(pool, "mse")) < 3.5 * standard_error
    with pytest.raises(ValueError, match="give one"):
        rg.make_regression_sampler("bernoulli", pool, measure, 0)


def test_the_optimal_proposal_of_a_regression_pool_and_the_kl_of_adaptive_sampling():
    from evalcore.diagnostics import optimal_proposal

    pool = heavy_tailed_pool(500, seed=11)
    errors = pool.y_true - pool.prediction
    mse, mae = rg.get_regression_measure("mse"), rg.get_regression_measure("mae")
    np.testing.assert_allclose(optimal_proposal(pool, mse), errors**2 / np.sum(errors**2))
    np.testing.assert_allclose(optimal_proposal(pool, mae), abs(errors) / np.sum(abs(errors)))
    target = optimal_proposal(pool, mse)
    sampler = rg.make_regression_sampler("ais", pool, mse, 0)
    q = sampler.pmf()
    assert q.sum() == pytest.approx(1.0)
    assert sampler.kl_from(target) == pytest.approx(np.sum(target * np.log(target / q)))

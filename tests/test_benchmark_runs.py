"""The default-sampler benchmark's stored runs (``benchmarks/default_sampler.py``): its rows
are ``simulate``'s summary of the same runs, and an interrupted configuration resumes by
computing only the runs it lacks."""

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import synthetic_pool

import evalcore as ec

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import default_sampler  # noqa: E402
import synthetic  # noqa: E402

CHECKPOINTS, REPEATS = (20, 40), 4


@pytest.fixture
def small(monkeypatch, tmp_path):
    monkeypatch.setattr(default_sampler, "CHECKPOINTS", CHECKPOINTS)
    return synthetic_pool(n=1500, positive_rate=0.03, seed=5), tmp_path / "runs.csv"


def test_the_rows_are_simulates_summary_of_the_same_runs(small):
    pool, path = small
    rows = pd.DataFrame(default_sampler.rows_for("small", pool, "is", REPEATS, 1, path))
    result = ec.simulate(pool, "f1", "is", max(CHECKPOINTS), REPEATS, seed=2021, record_every=20)
    summary = result.summary().set_index("n_labels").loc[list(CHECKPOINTS)]
    for column in ("mse", "mse_low", "mse_high", "coverage", "width"):
        np.testing.assert_allclose(rows[column], summary[column], rtol=1e-12, err_msg=column)
    assert list(rows.repeats) == [REPEATS] * len(CHECKPOINTS)


def test_an_interrupted_configuration_computes_only_the_runs_it_lacks(small, monkeypatch):
    pool, path = small
    first = default_sampler.runs_for("small", pool, "is", REPEATS, 1, path)
    stored = pd.read_csv(path)
    stored[stored.run != 2].to_csv(path, index=False)  # run 2 lost, as if interrupted
    computed = []
    one_run = default_sampler.one_run

    def counted(pool, name, index, truth):
        computed.append(index)
        return one_run(pool, name, index, truth)

    monkeypatch.setattr(default_sampler, "one_run", counted)
    again = default_sampler.runs_for("small", pool, "is", REPEATS + 1, 1, path)
    assert computed == [2, REPEATS]
    same = again[again.run < REPEATS].reset_index(drop=True)
    pd.testing.assert_frame_equal(same.drop(columns="seconds"), first.drop(columns="seconds"))


def test_runs_of_other_code_are_dropped_not_reused(small, monkeypatch):
    pool, path = small
    default_sampler.runs_for("small", pool, "is", 2, 1, path)
    monkeypatch.setattr(default_sampler, "code_version", lambda name, pool: "other")
    again = default_sampler.runs_for("small", pool, "is", 2, 1, path)
    assert set(pd.read_csv(path, dtype={"code": str}).code) == {"other"}
    assert len(again) == 2 * len(CHECKPOINTS)


def test_a_pools_runs_are_keyed_by_its_data_not_by_the_source_that_makes_it(
    small, monkeypatch, tmp_path
):
    """Regression: the digest read benchmarks/synthetic.py whole, so adding a pool there
    dropped every stored run of every pool at the next run, hours of them."""
    pool, _ = small
    code = default_sampler.code_version("is", pool)
    elsewhere = tmp_path / "benchmarks"
    elsewhere.mkdir()
    (elsewhere / "synthetic.py").write_text("NEW_POOL = 1\n")
    monkeypatch.setattr(default_sampler, "HERE", elsewhere)
    same_items = dataclasses.replace(pool, y_true=pool.y_true.copy())
    assert default_sampler.code_version("is", same_items) == code
    flipped = pool.y_true.copy()
    flipped[0] = 1 - flipped[0]
    one_label_other = dataclasses.replace(pool, y_true=flipped)
    assert default_sampler.code_version("is", one_label_other) != code
    assert default_sampler.code_version("ais-1", pool) != code


def test_the_ratios_interval_needs_every_samplers_runs_and_holds_the_ratio(small):
    pool, path = small
    for name in ("is", "ais-1"):
        default_sampler.runs_for("small", pool, name, REPEATS, 1, path)
    runs = default_sampler.read_runs(path)
    repeats = {"is": REPEATS, "ais-1": REPEATS, "ais-block": REPEATS}
    low, high = default_sampler.ratio_interval(runs, "is", ["ais-1"], 40, repeats)
    at = runs[runs.n_labels == 40]
    mse = {name: ((g.estimate - g.truth) ** 2).mean() for name, g in at.groupby("sampler")}
    assert low <= mse["is"] / mse["ais-1"] <= high
    assert default_sampler.ratio_interval(runs, "is", ["ais-1", "ais-block"], 40, repeats) is None


def test_the_ratios_interval_does_not_hang_on_the_order_of_the_files_rows(small):
    """Regression: the baselines were resampled in the order of the results file's rows, so
    rewriting the file in another order moved the intervals (tweets100k at 500 labels:
    0.717-0.995, "ahead", then 0.725-1.005, "cannot tell", from the same runs)."""
    pool, path = small
    for name in ("ais", "is", "ais-1", "ais-block"):
        default_sampler.runs_for("small", pool, name, REPEATS, 1, path)
    runs = default_sampler.read_runs(path)
    rows = (
        runs[runs.n_labels == 40]
        .assign(sq=lambda at: (at.estimate - at.truth) ** 2)
        .groupby("sampler", as_index=False)
        .agg(mse=("sq", "mean"), repeats=("run", "size"))
        .assign(n_labels=40)
    )
    _, ratio, interval = default_sampler.versus_best(rows, "ais", runs)
    _, again, shuffled = default_sampler.versus_best(rows.iloc[::-1], "ais", runs)
    assert again == ratio
    np.testing.assert_array_equal(shuffled, interval)


def test_a_run_stored_twice_counts_once(small):
    """Regression: merging two processes' runs files stored 24 runs of the block-level AIS on
    rare_calibrated twice, and its MSE at 1000 labels read 2.62e-2 for 2.56e-2."""
    pool, path = small
    once = pd.DataFrame(default_sampler.rows_for("small", pool, "is", REPEATS, 1, path))
    stored = pd.read_csv(path)
    pd.concat([stored, stored[stored.run == 1]]).to_csv(path, index=False)
    twice = pd.DataFrame(default_sampler.rows_for("small", pool, "is", REPEATS, 1, path))
    pd.testing.assert_frame_equal(once, twice)


def test_the_model_estimates_runs_are_default_samplers_and_combine_as_documented(
    small, monkeypatch
):
    """``model_estimate.py``'s design estimates are ``default_sampler.py``'s run for run, and
    its precision-weighted combination is phi D + (1 - phi) M, phi = V_M / (V_D + V_M)."""
    import model_estimate

    monkeypatch.setattr(model_estimate, "CHECKPOINTS", CHECKPOINTS)
    pool, path = small
    runs = default_sampler.runs_for("small", pool, "is", 2, 1, path)
    truth = float(runs.truth.iloc[0])
    for index in range(2):
        rows = pd.DataFrame(
            model_estimate.one_run(pool, "small", "is", index, truth),
            columns=model_estimate.RUN_COLUMNS,
        )
        assert list(rows.n_labels) == list(CHECKPOINTS)
        for labels in CHECKPOINTS:
            mine = rows[rows.n_labels == labels]
            theirs = runs[(runs.run == index) & (runs.n_labels == labels)]
            np.testing.assert_allclose(mine.design, theirs.estimate, rtol=1e-12)
    z = 1.959963984540054
    runs = pd.DataFrame(
        {"design": [0.5, 0.4, 0.9], "design_se": [0.1, np.nan, 0.1], "model": [0.3, 0.2, 0.3]}
        | {"model_low": [0.3 - 0.2 * z, 0.1, 0.3 - 0.2 * z]}
        | {"model_high": [0.3 + 0.2 * z, 0.3, 0.3 + 0.2 * z]}
    )
    # V_D = 0.01, V_M = 0.04: phi = 0.8; no design variance: the design's value
    np.testing.assert_allclose(model_estimate.combined(runs, "precision"), [0.46, 0.4, 0.78])
    # (D - M)^2 = 0.04 is within V_D + V_M: no bias; 0.36 is not: V_M = 0.04 + 0.31
    composite = [0.46, 0.4, 0.35 / 0.36 * 0.9 + 0.01 / 0.36 * 0.3]
    np.testing.assert_allclose(model_estimate.combined(runs, "composite"), composite)


def test_issue_13s_count_reads_each_cells_ratio_and_interval(monkeypatch):
    """``standing``: the default's MSE over the best baseline's per pool and budget, its
    interval where every run is stored, and the count, which leaves out a reference pool's
    cells; worked out by hand from runs whose squared errors are constant, so every
    bootstrap resample has the same MSE."""
    error = {  # (pool, sampler) -> the error of every run at 20 and at 40 labels
        ("p", "ais"): (0.1, 0.2),
        ("p", "is"): (0.2, 0.1),
        ("p", "ais-1"): (0.3, 0.3),
        ("p", "ais-block"): (0.3, 0.3),
        ("q", "ais"): (0.1, 0.1),
        ("q", "is"): (0.1, 0.125),  # ratio 1 at 20 labels: at or below, not 20% below
    }
    runs = pd.DataFrame(
        [
            [pool, sampler, "c", run, labels, 0.5 + e, 0.0, 1.0, 0.5, 1.0]
            for (pool, sampler), errors in error.items()
            for run in range(5)
            for labels, e in zip((20, 40), errors, strict=True)
        ],
        columns=default_sampler.RUN_COLUMNS,
    )
    runs = runs[~((runs.pool == "q") & (runs.sampler == "is") & (runs.run == 4))]
    table = (
        runs.assign(sq=(runs.estimate - runs.truth) ** 2)
        .groupby(["pool", "sampler", "n_labels"], as_index=False)
        .agg(mse=("sq", "mean"), repeats=("run", "size"))
        .assign(coverage=0.95, width=0.5)
    )
    table.loc[table.pool == "q", "repeats"] = 5  # q's static IS lacks a stored run
    cells = default_sampler.standing(table, runs).set_index(["pool", "n_labels"])
    assert cells.loc[("p", 20), "ratio"] == pytest.approx(0.01 / 0.04)
    assert cells.loc[("p", 20), ["low", "high"]].tolist() == pytest.approx([0.25, 0.25])
    assert cells.loc[("p", 40), "ratio"] == pytest.approx(0.04 / 0.01)
    assert cells.loc[("p", 40), "best"] == "is"
    assert cells.loc[("q", 20), "ratio"] == pytest.approx(1.0)
    assert cells.loc[("q", 40), "ratio"] == pytest.approx(0.01 / 0.125**2)
    assert np.isnan(cells.loc[("q", 20), "low"])
    assert cells.at_or_below.tolist() == [True, False, True, True]
    assert cells.below_20pct.tolist() == [True, False, False, True]

    lines = default_sampler.standing_lines(default_sampler.standing(table, runs), ["p", "q", "r"])
    rows = [line for line in lines if line.startswith(("| p |", "| q |"))]
    same = "| 0.950 | 0.500 | is |"
    assert rows[0] == f"| p | 20 | 5 | 1.00e-02 {same} 4.00e-02 | 0.25 (0.250-0.250) | ahead |"
    assert rows[1] == f"| p | 40 | 5 | 4.00e-02 {same} 1.00e-02 | 4.00 (4.000-4.000) | behind |"
    assert rows[2] == f"| q | 20 | 5 | 1.00e-02 {same} 1.00e-02 | 1.00 | not all runs stored |"
    text = "\n".join(lines)
    assert "at 3 of these 4 pool-budgets and at least 20% below at 2" in text
    assert "without the default's rows: r." in text
    assert "Not counted" not in text

    monkeypatch.setattr(default_sampler, "REFERENCE_POOLS", ("q",))
    text = "\n".join(default_sampler.standing_lines(default_sampler.standing(table, runs), []))
    assert "| q | 40 | 5 |" in text  # shown
    assert "at 1 of these 2 pool-budgets and at least 20% below at 1" in text
    assert "Not counted, as references rather than the issue's pools: q." in text


def test_a_familys_realisations_store_their_runs_apart(small):
    """Regression: ``realisations.py`` called ``default_sampler.rows_for`` without the runs
    file it has needed since the runs were stored, and failed before its first run. Each
    realisation's runs are stored under their own pool name, so two realisations of a family
    never reuse each other's runs."""
    import realisations

    pool, path = small
    other = synthetic_pool(n=1500, positive_rate=0.03, seed=6)
    first = realisations.rows_for("small", 1, pool, "is", REPEATS, 1, path)
    second = realisations.rows_for("small", 2, other, "is", REPEATS, 1, path)
    stored = default_sampler.read_runs(path)
    assert set(stored.pool) == {"small #1", "small #2"}
    assert len(stored) == 2 * REPEATS * len(CHECKPOINTS)
    assert [row["pool"] for row in first + second] == ["small"] * 2 * len(CHECKPOINTS)
    assert [row["realisation"] for row in first + second] == [1, 1, 2, 2]
    alone = default_sampler.rows_for("small #2", other, "is", REPEATS, 1, path.with_name("b"))
    assert [row["mse"] for row in second] == [row["mse"] for row in alone]
    assert first[0]["mse"] != second[0]["mse"]


def test_the_familys_ratio_interval_resamples_realisations_and_takes_the_best_per_resample():
    """``realisations.ratio_of_means_interval``, worked out by hand: where the default's MSE
    is half static IS's on every realisation, every resample gives 0.5; where the best
    baseline changes with the resample, its ends are the two resamples' ratios."""
    import realisations

    halves = pd.DataFrame({"ais": [1.0, 2.0, 3.0], "is": [2.0, 4.0, 6.0], "ais-1": [10.0] * 3})
    low, high = realisations.ratio_of_means_interval(halves, "ais", ["is", "ais-1"])
    assert (low, high) == pytest.approx((0.5, 0.5))
    # resampled (0, 0): is's mean 1 is the best, ratio 1; (1, 1) or (0, 1): ais-1's 2, ratio 0.5
    switch = pd.DataFrame({"ais": [1.0, 1.0], "is": [1.0, 3.0], "ais-1": [2.0, 2.0]})
    low, high = realisations.ratio_of_means_interval(switch, "ais", ["is", "ais-1"])
    assert (low, high) == pytest.approx((0.5, 1.0))


def test_the_model_estimates_runs_of_other_code_are_dropped_not_reused(small, monkeypatch):
    """Regression: ``model_estimate.py`` reused whatever runs its file held, whatever engine
    had made them; they are now keyed as ``default_sampler.py`` keys its runs."""
    import model_estimate

    monkeypatch.setattr(model_estimate, "CHECKPOINTS", CHECKPOINTS)
    pool, path = small
    monkeypatch.setattr(model_estimate, "load", lambda name: pool)
    first = model_estimate.runs_for("small", "is", 2, path)
    assert set(first.code) == {default_sampler.code_version("is", pool)}
    computed = []
    one_run = model_estimate.one_run

    def counted(pool, pool_name, name, index, truth):
        computed.append(index)
        return one_run(pool, pool_name, name, index, truth)

    monkeypatch.setattr(model_estimate, "one_run", counted)
    again = model_estimate.runs_for("small", "is", 2, path)
    assert computed == []
    pd.testing.assert_frame_equal(again, first)
    monkeypatch.setattr(model_estimate, "code_version", lambda name, pool: "other")
    model_estimate.runs_for("small", "is", 2, path)
    assert computed == [0, 1]
    assert set(pd.read_csv(path, dtype={"code": str}).code) == {"other"}


def test_the_worst_runs_share_and_the_others_mse_by_hand(tmp_path):
    """``error_tails.py``: squared errors 0.01, 0.04, 0.09 (and a run whose estimate is not
    defined, left out as the MSE leaves it) give MSE 0.14 / 3, median 0.04, the worst run's
    share 0.09 / 0.14 and the others' MSE 0.025; the default's figures over the best
    baseline's are written beside it."""
    import error_tails

    errors = {"ais": [0.1, 0.2, 0.3, np.nan], "is": [0.1, 0.1, 0.1, 0.1], "ais-1": [1, 1, 1, 1]}
    runs = pd.DataFrame(
        [
            ["p", sampler, "c", run, 20, 0.5 + e, 0.0, 1.0, 0.5, 1.0]
            for sampler, sampler_errors in errors.items()
            for run, e in enumerate(sampler_errors)
        ],
        columns=default_sampler.RUN_COLUMNS,
    )
    table = error_tails.tails(runs, worst=1).set_index("sampler")
    assert table.loc["ais", "runs"] == 3
    assert table.loc["ais", "mse"] == pytest.approx(0.14 / 3)
    assert table.loc["ais", "median"] == pytest.approx(0.04)
    assert table.loc["ais", "worst_share"] == pytest.approx(0.09 / 0.14)
    assert table.loc["ais", "others"] == pytest.approx(0.025)
    assert table.loc["is", "others"] == pytest.approx(0.01)
    path = error_tails.write_markdown(table.reset_index(), tmp_path / "x_runs.csv", worst=1)
    assert path.name == "x_runs_worst1.md"
    (line,) = [
        line for line in path.read_text().splitlines() if line.startswith("| p | 20 | ais |")
    ]
    ratios = (0.14 / 3 / 0.01, 0.04 / 0.01, 0.025 / 0.01)
    assert line == (
        f"| p | 20 | ais | 3 | 4.67e-02 (x{ratios[0]:.2f} of is) | 4.00e-02 (x{ratios[1]:.2f}) "
        f"| 0.64 | 2.50e-02 (x{ratios[2]:.2f}) |"
    )

    # a family's realisations pooled: "p #1" and "p #2" hold the ais runs above between them
    split = runs.assign(pool=np.where(runs.run < 2, "p #1", "p #2"))
    pooled = error_tails.tails(split, worst=1, family=True).set_index("sampler")
    pd.testing.assert_frame_equal(pooled, table)
    assert set(error_tails.tails(split, worst=1).pool) == {"p #1", "p #2"}


def test_proposal_forms_next_term_variance_is_the_des_raj_terms_variance_by_enumeration():
    """``proposal_forms.next_term_variance`` against the law of the next Des Raj term,
    projected on Dg(R) at the truth, enumerated item by item: z(x) = (S + u(x) / q'(x)) / N
    with probability q'(x) over the unlabelled items."""
    import proposal_forms

    pool = synthetic_pool(n=400, positive_rate=0.1, seed=3)
    measure = ec.get_measure("f1")
    truth = ec.true_risk(pool, measure)
    u = measure.loss(measure.codes(pool), pool.y_true) @ measure.dense_jacobian(truth)[0]
    sampler = ec.make_sampler("ais", pool, measure, 4, depth=3)
    while sampler.n_labels < 30:
        sampler.record(pool.y_true[sampler.propose().item])
    unlabelled = sampler.labels_ < 0
    q = sampler.pmf()[unlabelled]
    q = q / q.sum()
    z = (u[~unlabelled].sum() + u[unlabelled] / q) / pool.n_pool
    mean = q @ z
    assert mean == pytest.approx(0.0, abs=1e-12)  # F1 is homogeneous of degree 0
    expected = q @ (z - mean) ** 2
    got = proposal_forms.next_term_variance(u, unlabelled, sampler.pmf())
    assert got == pytest.approx(expected, rel=1e-9)
    assert got > 0


def test_exact_variance_reads_a_familys_realisation_by_the_name_its_runs_are_stored_under():
    """``exact_variance.load_pool``: "<family> #<k>" is realisation k of a family of
    ``realisations.py`` (its labels redrawn), any other name default_sampler.py's pool."""
    import exact_variance
    import realisations

    pool = exact_variance.load_pool("over_confident #2")
    expected = realisations.make_pool("over_confident", 2)
    for field in ("scores", "y_pred", "prob", "y_true"):
        np.testing.assert_array_equal(getattr(pool, field), getattr(expected, field))
    other = exact_variance.load_pool("over_confident #3")
    assert not np.array_equal(other.y_true, pool.y_true)
    named = exact_variance.load_pool("over_confident (prob)")
    np.testing.assert_array_equal(
        named.y_true, default_sampler.load("over_confident (prob)").y_true
    )
    assert not np.array_equal(named.y_true, pool.y_true)


def test_the_band_miscalibrated_pool_hides_its_false_negatives_in_one_band_of_the_score():
    """synthetic.py's pool outside the family the model assumes: calibrated but around logit
    p̂ = -6, where the false negatives gather beyond what p̂ expects, and where no map
    a + b logit p̂ reaches the true probabilities."""
    frame = synthetic.make_pool("band_miscalibrated")
    logit = frame.score.to_numpy()
    true_logit = np.log(frame.true_prob / (1 - frame.true_prob)).to_numpy()
    false_negative = ((frame.label == 1) & (frame.pred == 0)).to_numpy()
    band = (logit > -8) & (logit < -4)
    assert false_negative[band].sum() > 3 * frame.prob[band].sum()  # 43 against 9.7
    rest = ~band & (frame.pred == 0).to_numpy()
    expected = frame.prob[rest].sum()  # elsewhere as many as p̂ expects, within 3 sd
    assert abs(false_negative[rest].sum() - expected) < 3 * np.sqrt(expected)
    where = (logit > -12) & (logit < 0)  # the best straight line in the logit misses the band
    slope, intercept = np.polyfit(logit[where], true_logit[where], 1)
    assert np.max(np.abs(true_logit[where] - (intercept + slope * logit[where]))) > 1.0

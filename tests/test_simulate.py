"""Simulation, its summaries and the command-line contract."""

import io
import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from conftest import at_most, synthetic_pool

import evalcore as ec
from evalcore.simulate import Run, SimulationResult


@pytest.fixture(scope="module")
def pool():
    return synthetic_pool(n=2000, positive_rate=0.05, seed=31)


def test_results_do_not_depend_on_jobs(pool):
    one = ec.simulate(pool, "f1", "ais", 60, 4, seed=7, jobs=1, options={"depth": 4})
    two = ec.simulate(pool, "f1", "ais", 60, 4, seed=7, jobs=2, options={"depth": 4})
    for a, b in zip(one.runs, two.runs, strict=True):
        np.testing.assert_array_equal(a.estimate, b.estimate)
        np.testing.assert_array_equal(a.kl, b.kl)
    assert one.final()["mse"] == two.final()["mse"]


def test_every_label_is_recorded_and_progress_is_reported(pool):
    calls = []
    result = ec.simulate(
        pool,
        "accuracy",
        "is",
        25,
        3,
        seed=1,
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls == [(1, 3), (2, 3), (3, 3)]
    for run in result.runs:
        np.testing.assert_array_equal(run.n_labels, np.arange(1, 26))
        assert np.all(np.isfinite(run.kl))


def test_designs_without_a_proposal_record_nan_kl(pool):
    result = ec.simulate(pool, "f1", "stratified", 30, 2, seed=1)
    assert np.all(np.isnan(result.runs[0].kl))


def fake_result():
    """Two runs by hand: truth 0.5; estimates at labels 1 and 2."""
    run_a = Run(
        np.array([1, 2]),
        np.array([[np.nan], [0.7]]),
        np.array([[np.nan], [0.6]]),
        np.array([[np.nan], [0.8]]),
        np.array([1.0, 0.5]),
    )
    run_b = Run(
        np.array([1, 2]),
        np.array([[0.4], [0.5]]),
        np.array([[0.3], [0.45]]),
        np.array([[0.6], [0.55]]),
        np.array([2.0, 1.5]),
    )
    return SimulationResult("f1", "ais", 2, (run_a, run_b), np.array([0.5]), ("f1",), 0.95, 1.0)


def test_summaries_match_hand_computed_values():
    table = fake_result().summary(n_boot=200)
    first, second = table.iloc[0], table.iloc[1]
    # labels 1: only run b is defined, error 0.01, covered, bias -0.1; half undefined
    assert first["mse"] == pytest.approx(0.01)
    assert first["coverage"] == 1.0 and first["undefined"] == 0.5
    assert first["bias"] == pytest.approx(-0.1)
    assert first["kl"] == pytest.approx(1.5)
    # labels 2: errors 0.04 and 0; run a's interval [0.6, 0.8] misses 0.5
    assert second["mse"] == pytest.approx(0.02)
    assert second["coverage"] == 0.5 and second["undefined"] == 0.0
    assert second["bias"] == pytest.approx(0.1)
    assert second["mse_low"] >= 0.0 and second["mse_high"] <= 0.04
    final = fake_result().final()
    assert final["mse"] == pytest.approx(0.02) and final["coverage"] == 0.5
    assert final["bias"] == pytest.approx(0.1) and final["undefined"] == 0.0


def test_undefined_runs_are_counted_not_averaged():
    run = Run(
        np.array([3]),
        np.array([[np.nan]]),
        np.array([[np.nan]]),
        np.array([[np.nan]]),
        np.array([np.nan]),
    )
    ok = Run(
        np.array([3]), np.array([[0.5]]), np.array([[0.4]]), np.array([[0.6]]), np.array([np.nan])
    )
    result = SimulationResult(
        "f1", "passive", 3, (run, ok, ok, ok), np.array([0.5]), ("f1",), 0.95, 0.0
    )
    assert result.final()["undefined"] == 0.25 and result.final()["mse"] == 0.0


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "evalcore", "simulate", *args], capture_output=True, text=True
    )


@pytest.fixture(scope="module")
def pool_file(tmp_path_factory, pool):
    path = tmp_path_factory.mktemp("pool") / "pool.csv.gz"
    pd.DataFrame(
        {"item_id": np.arange(pool.n_pool), "score": pool.scores, "label": pool.y_true}
    ).to_csv(path, index=False)
    return path


def test_cli_writes_the_trace_and_ends_with_the_json_summary(pool_file, tmp_path):
    out = tmp_path / "trace.csv"
    done = cli(
        "--pool",
        str(pool_file),
        "--measure",
        "f1",
        "--sampler",
        "ais",
        "--budget",
        "20",
        "--repeats",
        "3",
        "--seed",
        "4",
        "--jobs",
        "2",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(summary) == {
        "measure",
        "sampler",
        "budget",
        "repeats",
        "true",
        "mse",
        "mse_ci",
        "bias",
        "coverage",
        "coverage_ci",
        "width",
        "undefined",
        "seconds",
    }
    assert summary["repeats"] == 3 and summary["budget"] == 20
    low, high = summary["coverage_ci"]
    assert 0 <= low <= summary["coverage"] <= high <= 1 and summary["width"] >= 0
    trace = pd.read_csv(out)
    assert list(trace.columns) == [
        "repeat",
        "n_labels",
        "estimate",
        "ci_low",
        "ci_high",
        "kl",
        "true_value",
    ]
    assert len(trace) == 3 * 20
    assert trace["true_value"].iloc[0] == pytest.approx(summary["true"])


def test_cli_vector_measure_has_a_component_column(pool_file, tmp_path):
    out = tmp_path / "pr.csv"
    done = cli(
        "--pool",
        str(pool_file),
        "--measure",
        "pr_curve:4",
        "--sampler",
        "passive",
        "--budget",
        "10",
        "--repeats",
        "2",
        "--every",
        "5",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    trace = pd.read_csv(out)
    assert "component" in trace.columns
    assert len(trace) == 2 * 2 * 8  # repeats x records x components


@pytest.mark.parametrize(
    "args, words",
    [
        (["--measure", "f1", "--sampler", "ais", "--budget", "5", "--repeats", "1"], "--pool"),
        (
            [
                "--pool",
                "missing.csv",
                "--measure",
                "f1",
                "--sampler",
                "ais",
                "--budget",
                "5",
                "--repeats",
                "1",
            ],
            "does not exist",
        ),
        (["--measure", "f9", "--sampler", "ais", "--budget", "5", "--repeats", "1"], "--measure"),
        (["--measure", "f1", "--sampler", "nope", "--budget", "5", "--repeats", "1"], "--sampler"),
        (["--measure", "f1", "--sampler", "ais", "--budget", "-3", "--repeats", "1"], "--budget"),
        (
            [
                "--measure",
                "f1",
                "--sampler",
                "ais",
                "--budget",
                "5",
                "--repeats",
                "1",
                "--confidence",
                "2",
            ],
            "--confidence",
        ),
    ],
)
def test_cli_bad_arguments_exit_2_with_one_line(pool_file, args, words):
    if "--pool" not in args:
        args = ["--pool", str(pool_file), *args] if words != "--pool" else args
    done = cli(*args)
    assert done.returncode == 2
    assert len(done.stderr.strip().splitlines()) == 1
    assert words in done.stderr


def test_cli_pool_without_labels_is_refused(tmp_path):
    path = tmp_path / "nolabels.csv"
    pd.DataFrame({"score": [0.1, 0.9, -1.0]}).to_csv(path, index=False)
    done = cli(
        "--pool",
        str(path),
        "--measure",
        "f1",
        "--sampler",
        "ais",
        "--budget",
        "2",
        "--repeats",
        "1",
    )
    assert done.returncode == 2 and "label" in done.stderr


def test_a_run_that_ended_earlier_is_not_counted_as_undefined():
    # regression: Bernoulli plans end at a random label count; a run without a record at a
    # count must not be reported as an undefined estimate there
    short = Run(
        np.array([1]), np.array([[0.5]]), np.array([[0.4]]), np.array([[0.6]]), np.array([np.nan])
    )
    long = Run(
        np.array([1, 2]),
        np.array([[0.5], [0.6]]),
        np.array([[0.4], [0.5]]),
        np.array([[0.6], [0.7]]),
        np.array([np.nan, np.nan]),
    )
    result = SimulationResult(
        "f1", "bernoulli", 2, (short, long), np.array([0.5]), ("f1",), 0.95, 0.0
    )
    at_two = result.summary(n_boot=50).iloc[1]
    assert at_two["runs"] == 1 and at_two["undefined"] == 0.0
    assert at_two["mse"] == pytest.approx(0.01)


@pytest.mark.parametrize("sampler", ["ais", "is"])
def test_a_precision_run_ends_exact_once_every_predicted_positive_is_labelled(sampler):
    # regression: the proposal had no mass left on an unlabelled item, and the run drew
    # labelled items until memory ran out
    pool = synthetic_pool(n=1500, positive_rate=0.02, seed=5, separation=5.0)
    predicted = int(pool.y_pred.sum())
    with at_most(60):
        result = ec.simulate(pool, "precision", sampler, 10 * predicted, 2, seed=1)
    truth = pool.y_true[pool.y_pred == 1].mean()
    for run in result.runs:
        assert run.n_labels[-1] == predicted
        np.testing.assert_allclose(run.estimate[-1], [truth])
        np.testing.assert_allclose([run.ci_low[-1], run.ci_high[-1]], [[truth], [truth]])
    final = result.final()
    assert final["mse"] == pytest.approx(0.0, abs=1e-24) and final["coverage"] == 1.0


def test_cli_help_lists_every_measure_and_sampler_with_a_line_each():
    done = cli("--help")
    assert done.returncode == 0
    for name in [*ec.MEASURE_DEFINITIONS, *ec.SAMPLER_NAMES]:
        if name in ("fbeta", "pr_curve"):
            name += ":<"
        assert f"\n  {name}" in done.stdout, name


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_cli_shows_progress_on_a_terminal_and_keeps_stdout_for_the_summary(
    pool_file, monkeypatch, capsys
):
    from evalcore import cli as command

    args = ["simulate", "--pool", str(pool_file), "--measure", "f1", "--sampler", "passive"]
    args += ["--budget", "10", "--repeats", "4"]
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert command.main(args) == 0
    shown = terminal.getvalue()
    assert "4/4" in shown and "run" in shown  # repeats done, with elapsed and time left
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["repeats"] == 4
    quiet = cli(*args[1:])  # a pipe is not a terminal: nothing but the summary
    assert quiet.returncode == 0 and quiet.stderr == ""


@pytest.mark.parametrize("sampler", ["ais", "ais-1", "bernoulli", "oasis"])
def test_cli_simulates_a_pool_smaller_than_the_papers_256_blocks(sampler, tmp_path):
    """Regression: "Error: the tree has 256 leaves but the pool only 120 items; use a smaller
    `depth` or `branching`", options the command line does not have."""
    small = synthetic_pool(n=120, positive_rate=0.2, seed=3)
    path = tmp_path / "small.csv"
    frame = {"item_id": np.arange(120), "score": small.scores, "label": small.y_true}
    pd.DataFrame(frame).to_csv(path, index=False)
    done = cli(*f"--pool {path} --measure f1 --sampler {sampler} --budget 50 --repeats 2".split())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["repeats"] == 2

"""Measures against direct counts, Jacobians against finite differences."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import multiclass_pool, synthetic_pool
from sklearn import metrics

import evalcore as ec

BINARY = [
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "fbeta:2",
    "mcc",
    "fowlkes_mallows",
    "brier",
    "pr_curve:7",
]
MULTI = ["macro_f1", "macro_f1_harmonic", "micro_f1", "per_class_recall", "accuracy"]


def direct(name, y, f, p1=None):
    """The measure counted directly from the confusion matrix (reference values)."""
    tp = np.sum((y == 1) & (f == 1))
    fp = np.sum((y == 0) & (f == 1))
    fn = np.sum((y == 1) & (f == 0))
    tn = np.sum((y == 0) & (f == 0))
    n = len(y)
    if name == "accuracy":
        return (tp + tn) / n
    if name == "balanced_accuracy":
        return (tp / (tp + fn) + tn / (tn + fp)) / 2
    if name == "precision":
        return tp / (tp + fp)
    if name == "recall":
        return tp / (tp + fn)
    if name == "f1":
        return 2 * tp / (2 * tp + fp + fn)
    if name == "fbeta:2":
        return 5 * tp / (5 * tp + 4 * fn + fp)
    if name == "mcc":
        return (tp * tn - fp * fn) / np.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    if name == "fowlkes_mallows":
        return tp / np.sqrt((tp + fp) * (tp + fn))
    if name == "brier":
        return np.mean((p1 - y) ** 2)
    raise KeyError(name)


def pool_value(pool, measure):
    return measure.g(ec.true_risk(pool, measure))


@pytest.mark.parametrize("name", [n for n in BINARY if not n.startswith("pr_curve")])
def test_binary_measures_match_direct_counts(name):
    pool = synthetic_pool(n=500, positive_rate=0.2, seed=1)
    measure = ec.get_measure(name)
    expected = direct(name, pool.y_true, pool.y_pred, pool.prob[:, 1])
    np.testing.assert_allclose(pool_value(pool, measure), [expected], rtol=1e-12)


def test_pr_curve_matches_direct_counts_at_each_threshold():
    pool = synthetic_pool(n=400, positive_rate=0.3, seed=2)
    measure = ec.get_measure("pr_curve:9")
    value = pool_value(pool, measure)
    for i, t in enumerate(measure.thresholds):
        f = (pool.scores >= t).astype(int)
        tp = np.sum(f & pool.y_true)
        if f.sum():
            assert value[i] == pytest.approx(tp / f.sum(), rel=1e-12)
        else:
            assert np.isnan(value[i])
        assert value[9 + i] == pytest.approx(tp / pool.y_true.sum(), rel=1e-12)


def test_multiclass_measures_match_direct_counts():
    pool = multiclass_pool(n=300, n_classes=3, seed=3)
    y, f, C = pool.y_true, pool.y_pred, 3
    recall = [np.sum((y == c) & (f == c)) / np.sum(y == c) for c in range(C)]
    precision = [np.sum((y == c) & (f == c)) / np.sum(f == c) for c in range(C)]
    P, R = np.mean(precision), np.mean(recall)
    np.testing.assert_allclose(pool_value(pool, ec.get_measure("per_class_recall", 3)), recall)
    np.testing.assert_allclose(pool_value(pool, ec.get_measure("micro_f1", 3)), [np.mean(y == f)])
    f1 = [2 * p * r / (p + r) for p, r in zip(precision, recall, strict=True)]
    np.testing.assert_allclose(pool_value(pool, ec.get_measure("macro_f1", 3)), [np.mean(f1)])
    np.testing.assert_allclose(
        pool_value(pool, ec.get_measure("macro_f1_harmonic", 3)), [2 * P * R / (P + R)]
    )


def _interior_risk(measure, rng):
    """A risk vector where g is smooth: from expected losses under random soft labels."""
    n_codes = {"pr_curve:7": 8, "brier": 5}.get(measure.name, getattr(measure, "C", 2))
    if measure.name == "brier":
        measure._prob_values = np.linspace(0.1, 0.9, n_codes)
    C = getattr(measure, "C", 2)
    mass = rng.random((n_codes, C)) + 0.1
    return measure.expected_risk(mass / mass.sum())


@pytest.mark.parametrize("name", BINARY + MULTI)
def test_jacobian_matches_finite_differences(name):
    measure = ec.get_measure(name, n_classes=3)
    rng = np.random.default_rng(4)
    R = _interior_risk(measure, rng)
    J = measure.dense_jacobian(R)
    assert J.shape == (measure.m, measure.d)
    h = 1e-6
    numeric = np.empty_like(J)
    for j in range(measure.d):
        step = np.zeros(measure.d)
        step[j] = h
        numeric[:, j] = (measure.g(R + step) - measure.g(R - step)) / (2 * h)
    # central differences: error O(h^2) times third derivatives of O(1/R^3) here
    np.testing.assert_allclose(J, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["pr_curve:7", "f1", "mcc", "macro_f1", "macro_f1_harmonic"])
def test_fast_squared_norm_matches_dense_computation(name):
    measure = ec.get_measure(name, n_classes=3)
    rng = np.random.default_rng(5)
    R = _interior_risk(measure, rng)
    n_codes, C = (8, 2) if name.startswith("pr") else (getattr(measure, "C", 2),) * 2
    table = measure.loss_table(n_codes, C)
    dense = np.sum((table @ measure.dense_jacobian(R).T) ** 2, axis=2)
    np.testing.assert_allclose(measure.sq_norm_dg_loss(R, n_codes, C), dense, rtol=1e-10)
    mass = rng.random((n_codes, C))
    np.testing.assert_allclose(
        measure.expected_risk(mass), np.tensordot(mass, table, axes=([0, 1], [0, 1]))
    )


def test_undefined_measure_says_why():
    measure = ec.get_measure("precision")
    assert measure.undefined_reason(np.array([0.0, 0.0])) == "no predicted positive labelled yet"
    assert measure.undefined_reason(np.array([0.1, 0.2])) is None


@pytest.mark.parametrize("bad", ["f2", "fbeta:x", "fbeta:-1", "pr_curve:1", "accuracy:3", ""])
def test_unknown_or_malformed_names_are_rejected_with_a_message(bad):
    with pytest.raises(ec.MeasureError, match="`"):
        ec.get_measure(bad)


def test_binary_measure_refuses_a_multiclass_pool():
    with pytest.raises(ec.MeasureError, match="binary measure"):
        ec.get_measure("f1").check_pool(multiclass_pool())


def test_single_predicted_class_is_rejected_for_measures_that_need_both():
    pool = ec.Pool.from_arrays([-3.0, -2.0, -1.0, -0.5], y_true=[0, 1, 0, 1])
    with pytest.raises(ec.MeasureError, match="predicts no item as class 1"):
        ec.get_measure("precision").check_pool(pool)
    ec.get_measure("recall").check_pool(pool)  # recall is defined without predicted positives


SKLEARN = {  # our measure -> scikit-learn's function of (y_true, y_pred, positive probability)
    "f1": lambda m, y, f, p: m.f1_score(y, f),
    "fbeta:2": lambda m, y, f, p: m.fbeta_score(y, f, beta=2),
    "precision": lambda m, y, f, p: m.precision_score(y, f),
    "recall": lambda m, y, f, p: m.recall_score(y, f),
    "accuracy": lambda m, y, f, p: m.accuracy_score(y, f),
    "balanced_accuracy": lambda m, y, f, p: m.balanced_accuracy_score(y, f),
    "mcc": lambda m, y, f, p: m.matthews_corrcoef(y, f),
    # scikit-learn's fowlkes_mallows_score compares clusterings (pairs of items), not this
    "fowlkes_mallows": lambda m, y, f, p: np.sqrt(m.precision_score(y, f) * m.recall_score(y, f)),
    "brier": lambda m, y, f, p: m.brier_score_loss(y, p),
}


def _abt_buy_pool():
    # ../shared sits beside the project wherever the suite runs (CI included)
    frame = pd.read_csv(Path(__file__).resolve().parents[2] / "shared" / "data" / "abt-buy.csv.gz")
    mapping = ec.ColumnMapping(score="score", id="item_id", pred="pred", label="label", prob="prob")
    return ec.Pool.from_dataframe(frame, mapping)


@pytest.mark.parametrize("name", list(SKLEARN))
def test_binary_measures_equal_scikit_learns_on_a_real_pool(name):
    pool = _abt_buy_pool()
    expected = SKLEARN[name](metrics, pool.y_true, pool.y_pred, pool.prob[:, 1])
    np.testing.assert_allclose(pool_value(pool, ec.get_measure(name)), [expected], rtol=1e-12)


def test_multiclass_measures_equal_scikit_learns_on_the_three_class_demo():
    frame = pd.read_csv(Path(__file__).resolve().parents[1] / "sample_data" / "sentiment3.csv")
    pool = ec.Pool.from_dataframe(frame, ec.detect_mapping(frame))
    y, f = pool.y_true, pool.y_pred
    expected = {
        "macro_f1": [metrics.f1_score(y, f, average="macro")],
        "micro_f1": [metrics.f1_score(y, f, average="micro")],
        "accuracy": [metrics.accuracy_score(y, f)],
        "per_class_recall": metrics.recall_score(y, f, average=None),
    }
    for name, value in expected.items():
        np.testing.assert_allclose(pool_value(pool, ec.get_measure(name, 3)), value, rtol=1e-12)
    macro = pool_value(pool, ec.get_measure("macro_f1", 3))[0]
    harmonic = pool_value(pool, ec.get_measure("macro_f1_harmonic", 3))[0]
    assert abs(macro - harmonic) > 1e-4  # the two definitions really differ on this pool

"""Measures by name: ``get_measure("f1")``, ``"fbeta:2"``, ``"pr_curve:1024"``, ..."""

from __future__ import annotations

from .measures import (
    Accuracy,
    BalancedAccuracy,
    BrierScore,
    FBeta,
    FowlkesMallows,
    MatthewsCorrelation,
    Measure,
    MeasureError,
    Precision,
    Recall,
)
from .multiclass import MacroF1, MacroF1Harmonic, MicroF1, PerClassRecall
from .pr_curve import PRCurve

__all__ = ["get_measure", "MEASURE_NAMES", "MEASURE_DEFINITIONS"]

_BINARY = {
    "accuracy": Accuracy,
    "balanced_accuracy": BalancedAccuracy,
    "precision": Precision,
    "recall": Recall,
    "f1": FBeta,
    "mcc": MatthewsCorrelation,
    "fowlkes_mallows": FowlkesMallows,
    "brier": BrierScore,
}
_MULTI = {
    "macro_f1": MacroF1,
    "macro_f1_harmonic": MacroF1Harmonic,
    "micro_f1": MicroF1,
    "per_class_recall": PerClassRecall,
}
MEASURE_NAMES = (*_BINARY, "fbeta:<beta>", "pr_curve:<n_thresholds>", *_MULTI)

# How each measure is defined, in one line for the set-up page and the command line's help
# (scikit-learn's names where they agree, so a user can check a figure against it).
MEASURE_DEFINITIONS = {
    "f1": "2 TP / (2 TP + FP + FN), as scikit-learn's f1_score.",
    "fbeta": "(1 + beta²) TP / ((1 + beta²) TP + beta² FN + FP), as scikit-learn's fbeta_score.",
    "precision": "TP / (TP + FP), as scikit-learn's precision_score.",
    "recall": "TP / (TP + FN), as scikit-learn's recall_score.",
    "accuracy": "The share of items whose predicted class is the true one.",
    "balanced_accuracy": "The mean of the recalls of the classes, as scikit-learn's "
    "balanced_accuracy_score.",
    "mcc": "Matthews correlation coefficient, as scikit-learn's matthews_corrcoef.",
    "fowlkes_mallows": "TP / √((TP + FP)(TP + FN)), the geometric mean of precision and recall "
    "(not scikit-learn's fowlkes_mallows_score, which compares clusterings).",
    "brier": "The mean of (p − y)² over items, p the probability of the positive class, as "
    "scikit-learn's brier_score_loss (half of Brier's 1950 sum over both classes).",
    "pr_curve": "Precision and recall at every threshold on the score.",
    "macro_f1": "The mean over classes of each class's F1, as scikit-learn's "
    'f1_score(average="macro").',
    "macro_f1_harmonic": "The harmonic mean of macro precision and macro recall (Yilmaz et al.'s "
    "definition); differs from the mean of per-class F1 when classes differ.",
    "micro_f1": "F1 over all classes pooled; for one label per item it equals accuracy.",
    "per_class_recall": "For each class, the share of its items predicted as it.",
}


def get_measure(name: str, n_classes: int = 2) -> Measure:
    """Look a measure up by name: ``"f1"``, ``"fbeta:2"``, ``"pr_curve:1024"``, ``"macro_f1"``...

    ``n_classes`` is needed by the multi-class measures only.
    """
    key, _, arg = str(name).strip().lower().partition(":")
    try:
        if key == "fbeta":
            return FBeta(float(arg))
        if key == "pr_curve":
            return PRCurve(int(arg) if arg else 100)
    except ValueError as exc:
        if isinstance(exc, MeasureError):
            raise
        raise MeasureError(f"`{name}`: the part after ':' must be a number.") from None
    if arg:
        raise MeasureError(f"`{name}`: only fbeta and pr_curve take a parameter after ':'.")
    if key in _BINARY:
        return _BINARY[key]()
    if key in _MULTI:
        return _MULTI[key](n_classes)
    raise MeasureError(f"Unknown measure `{name}`; choose one of: {', '.join(MEASURE_NAMES)}.")

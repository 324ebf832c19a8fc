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

__all__ = ["get_measure", "MEASURE_NAMES"]

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

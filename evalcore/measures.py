"""Generalized performance measures G = g(R), R = E[loss(x, y)] (seed 003, Definition 1).

A measure is a vector loss, a map ``g`` and its Jacobian. The loss of an item depends on the
item only through an integer *code* (its predicted class, its threshold bin, ...), so a
measure tabulates its loss per (code, true class); samplers and estimators work with codes,
which keeps a labelling step independent of the pool size.

Jacobian orientation: ``jacobian(R)[i, j] = d g_i / d R_j``, shape ``(m, d)``.
This module holds the base class and the binary scalar measures of Table 1; the PR curve,
the multi-class measures and the lookup by name have modules of their own.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .frozen import frozen
from .pool import Pool

__all__ = [
    "Measure",
    "MeasureError",
    "Accuracy",
    "BalancedAccuracy",
    "Precision",
    "Recall",
    "FBeta",
    "MatthewsCorrelation",
    "FowlkesMallows",
    "BrierScore",
]


class MeasureError(ValueError):
    """A measure cannot be built or does not apply to a pool."""


class Measure:
    """Base class: a vector loss (d entries), a map g to m components and its Jacobian.

    Subclasses set ``name``, ``d``, ``component_names`` and implement ``loss``, ``g`` and
    ``jacobian``. ``codes`` defaults to the predicted class.
    """

    name: str = ""
    d: int = 1
    binary_only: bool = True
    bounded: bool = True  # every component lies in [0, 1], so Beta limits apply
    value_range: tuple[float, float] = (0.0, 1.0)  # the range every component can take
    # (a, b): intervals on the scale of log(a + b G) (``Estimate.confidence_interval``)
    log_scale: tuple[float, float] | None = None
    # g is a ratio of functions linear in the counts per (code, class), so its extremes over
    # the unlabelled items' labellings lie at vertices (``intervals.measure_bounds``)
    linear_fractional: bool = False
    needs_predicted: tuple[int, ...] = ()  # predicted classes without which g is undefined
    # binary classes that must have been answered at least once before an interval means
    # anything (hidden positives are the whole risk until one is found)
    needs_labels: tuple[int, ...] = ()
    component_names: tuple[str, ...] = ()

    # -- the three functions that define a measure -------------------------------------
    def loss(self, codes: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """Loss vectors, shape ``(n, d)``, of items with ``codes`` and true ``labels``."""
        raise NotImplementedError

    def g(self, R: np.ndarray) -> np.ndarray:
        """The measure, shape ``(m,)``, from the risk vector ``R`` of shape ``(d,)``."""
        raise NotImplementedError

    def jacobian(self, R: np.ndarray) -> np.ndarray:
        """``Dg(R)``, shape ``(m, d)``."""
        raise NotImplementedError

    def undefined_reason(self, R: np.ndarray) -> str | None:
        """Why ``g(R)`` is not defined (a zero denominator), or None when it is."""
        return None

    def evidence_reason(self, known: np.ndarray) -> str | None:
        """Why the answers, counted by code and class in ``known`` (codes, C), do not yet
        support an interval, or None. Until then the delta method linearizes g where it is
        flattest (e.g. F1 = 0 before a true positive is found) and its interval is false
        certainty; ``estimate`` reports the bounds instead."""
        for c in self.needs_labels:
            if known[:, c].sum() == 0:
                return f"no {('negative', 'positive')[c]} found yet"
        return None

    def dense_jacobian(self, R: np.ndarray) -> np.ndarray:
        """``jacobian(R)`` as a dense array (some measures return a sparse matrix)."""
        J = self.jacobian(R)
        return J.toarray() if sparse.issparse(J) else np.asarray(J)

    # -- derived helpers -----------------------------------------------------------------
    @property
    def m(self) -> int:
        return len(self.component_names)

    def codes(self, pool: Pool) -> np.ndarray:
        """Integer code per item, shape ``(N,)``: equal codes mean equal loss for every y."""
        return pool.y_pred

    def n_codes(self, pool: Pool) -> int:
        return pool.n_classes

    def check_pool(self, pool: Pool) -> None:
        """Raise MeasureError when the measure cannot be estimated on ``pool``."""
        if self.binary_only and pool.n_classes != 2:
            raise MeasureError(
                f"`{self.name}` is a binary measure but the pool has {pool.n_classes} classes; "
                "choose a multi-class measure (macro_f1, micro_f1, per_class_recall)."
            )
        predicted = np.bincount(pool.y_pred, minlength=pool.n_classes) > 0
        for code in self.needs_predicted:
            if not predicted[code]:
                raise MeasureError(
                    f"the classifier predicts no item as class {pool.classes[code]!r}, so "
                    f"`{self.name}` is undefined on this pool; check the predicted-label column "
                    "or the decision threshold, or choose another measure."
                )

    def loss_table(self, n_codes: int, n_classes: int) -> np.ndarray:
        """Loss of every (code, class) pair, shape ``(n_codes, n_classes, d)``, read-only:
        made once per shape (a labelling step reads it a dozen times)."""
        tables = self.__dict__.setdefault("_loss_tables", {})
        if (n_codes, n_classes) not in tables:
            codes = np.repeat(np.arange(n_codes), n_classes)
            labels = np.tile(np.arange(n_classes), n_codes)
            table = self.loss(codes, labels).reshape(n_codes, n_classes, self.d)
            tables[n_codes, n_classes] = frozen(np.array(table))
        return tables[n_codes, n_classes]

    def expected_risk(self, mass: np.ndarray) -> np.ndarray:
        """``sum_{c,y} mass[c, y] * loss(c, y)``, shape ``(d,)``; ``mass`` is ``(n_codes, C)``."""
        table = self.loss_table(*mass.shape)
        return np.tensordot(mass, table, axes=([0, 1], [0, 1]))

    def sq_norm_dg_loss(self, R: np.ndarray, n_codes: int, n_classes: int) -> np.ndarray:
        """``||Dg(R) loss(c, y)||^2`` for every code and class, shape ``(n_codes, C)``.

        This is the integrand of the optimal proposal (seed 003, Prop. 3, eq. 5).
        """
        table = self.loss_table(n_codes, n_classes)
        projected = table @ self.dense_jacobian(R).T
        return np.einsum("cym,cym->cy", projected, projected)

    def informative_codes(self, n_codes: int, n_classes: int) -> np.ndarray:
        """Whether an answer can change the measure at each code, shape ``(n_codes,)``: its
        loss differs between the classes (precision's predicted negatives add nothing,
        whatever their label)."""
        table = self.loss_table(n_codes, n_classes)
        return np.any(table != table[:, :1], axis=(1, 2))

    def nonzero_loss(self, n_codes: int, n_classes: int) -> np.ndarray:
        """Whether ``loss(c, y) != 0``, shape ``(n_codes, C)`` (the epsilon floor's indicator)."""
        return np.any(self.loss_table(n_codes, n_classes) != 0, axis=2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def first_zero_reason(checks: list[tuple[float, str]]) -> str | None:
    """The reason of the first denominator that is zero (or not finite), else None."""
    for value, reason in checks:
        if not np.isfinite(value) or value <= 0:
            return reason
    return None


NO_PREDICTED_POSITIVE = "no predicted positive labelled yet"
NO_POSITIVE = "no positive labelled yet"
NO_NEGATIVE = "no negative labelled yet"
NO_PREDICTED_NEGATIVE = "no predicted negative labelled yet"


class _Ratio(Measure):
    """g(R) = R1 / R2 with a two-entry loss (precision, recall, F-beta)."""

    d = 2
    _reason = ""
    linear_fractional = True
    needs_labels = (1,)

    def g(self, R):
        return np.array([R[0] / R[1]]) if R[1] > 0 else np.array([np.nan])

    def jacobian(self, R):
        return np.array([[1.0 / R[1], -R[0] / R[1] ** 2]])

    def undefined_reason(self, R):
        return first_zero_reason([(R[1], self._reason)])

    def evidence_reason(self, known):
        if known[:, 1].sum() == 0:
            return "no positive found yet"
        if known[1, 1] == 0:
            return "no true positive found yet"
        return None


class Accuracy(Measure):
    """Accuracy: loss 1[y != f(x)], g(R) = 1 - R (seed 003, Table 1)."""

    name = "accuracy"
    d = 1
    binary_only = False
    linear_fractional = True
    component_names = ("accuracy",)

    def loss(self, codes, labels):
        return (codes != labels).astype(float)[:, None]

    def g(self, R):
        return np.array([1.0 - R[0]])

    def jacobian(self, R):
        return np.array([[-1.0]])


class BalancedAccuracy(Measure):
    """Balanced accuracy: loss [y f, y, f], g = (R1 + R2 (1 - R2 - R3)) / (2 R2 (1 - R2))."""

    name = "balanced_accuracy"
    d = 3
    needs_labels = (0, 1)
    component_names = ("balanced_accuracy",)

    def loss(self, codes, labels):
        y, f = labels.astype(float), codes.astype(float)
        return np.column_stack([y * f, y, f])

    def g(self, R):
        if self.undefined_reason(R):
            return np.array([np.nan])
        r1, r2, r3 = R
        return np.array([(r1 + r2 * (1 - r2 - r3)) / (2 * r2 * (1 - r2))])

    def jacobian(self, R):
        r1, r2, r3 = R
        den = 2 * r2 * (1 - r2)
        num = r1 + r2 * (1 - r2 - r3)
        d_num_r2 = 1 - 2 * r2 - r3
        d_den_r2 = 2 - 4 * r2
        return np.array([[1 / den, (d_num_r2 * den - num * d_den_r2) / den**2, -r2 / den]])

    def undefined_reason(self, R):
        return first_zero_reason([(R[1], NO_POSITIVE), (1 - R[1], NO_NEGATIVE)])


class Precision(_Ratio):
    """Precision: loss [y f, f], g = R1 / R2."""

    needs_predicted = (1,)
    name = "precision"
    component_names = ("precision",)
    _reason = NO_PREDICTED_POSITIVE

    def loss(self, codes, labels):
        y, f = labels.astype(float), codes.astype(float)
        return np.column_stack([y * f, f])


class Recall(_Ratio):
    """Recall: loss [y f, y], g = R1 / R2."""

    name = "recall"
    component_names = ("recall",)
    _reason = NO_POSITIVE

    def loss(self, codes, labels):
        y, f = labels.astype(float), codes.astype(float)
        return np.column_stack([y * f, y])


class FBeta(_Ratio):
    """F-beta: loss [y f, (beta^2 y + f) / (1 + beta^2)], g = R1 / R2."""

    _reason = "no positive and no predicted positive labelled yet"
    needs_predicted = (1,)

    def __init__(self, beta: float = 1.0):
        if not np.isfinite(beta) or beta <= 0:
            raise MeasureError(f"`beta` must be a positive number, got {beta!r}.")
        self.beta = float(beta)
        self.name = "f1" if self.beta == 1 else f"fbeta:{self.beta:g}"
        self.component_names = (self.name,)

    def loss(self, codes, labels):
        y, f = labels.astype(float), codes.astype(float)
        b2 = self.beta**2
        return np.column_stack([y * f, (b2 * y + f) / (1 + b2)])


class MatthewsCorrelation(Measure):
    """Matthews correlation: loss [y f, y, f], g = (R1 - R2 R3) / sqrt(R2 R3 (1-R2)(1-R3))."""

    name = "mcc"
    d = 3
    needs_predicted = (0, 1)
    needs_labels = (0, 1)
    bounded = False
    value_range = (-1.0, 1.0)
    component_names = ("mcc",)

    def loss(self, codes, labels):
        return BalancedAccuracy.loss(self, codes, labels)

    def g(self, R):
        if self.undefined_reason(R):
            return np.array([np.nan])
        r1, r2, r3 = R
        return np.array([(r1 - r2 * r3) / np.sqrt(r2 * r3 * (1 - r2) * (1 - r3))])

    def jacobian(self, R):
        r1, r2, r3 = R
        s = np.sqrt(r2 * r3 * (1 - r2) * (1 - r3))
        num = r1 - r2 * r3
        # d s / d r2 = s (1 - 2 r2) / (2 r2 (1 - r2)), likewise for r3
        ds2 = s * (1 - 2 * r2) / (2 * r2 * (1 - r2))
        ds3 = s * (1 - 2 * r3) / (2 * r3 * (1 - r3))
        return np.array([[1 / s, (-r3 * s - num * ds2) / s**2, (-r2 * s - num * ds3) / s**2]])

    def undefined_reason(self, R):
        return first_zero_reason(
            [
                (R[1], NO_POSITIVE),
                (1 - R[1], NO_NEGATIVE),
                (R[2], NO_PREDICTED_POSITIVE),
                (1 - R[2], NO_PREDICTED_NEGATIVE),
            ],
        )


class FowlkesMallows(Measure):
    """Fowlkes-Mallows index: loss [y f, y, f], g = R1 / sqrt(R2 R3)."""

    name = "fowlkes_mallows"
    d = 3
    needs_predicted = (1,)
    needs_labels = (1,)
    component_names = ("fowlkes_mallows",)

    def loss(self, codes, labels):
        return BalancedAccuracy.loss(self, codes, labels)

    def g(self, R):
        if self.undefined_reason(R):
            return np.array([np.nan])
        return np.array([R[0] / np.sqrt(R[1] * R[2])])

    def jacobian(self, R):
        r1, r2, r3 = R
        s = np.sqrt(r2 * r3)
        return np.array([[1 / s, -r1 / (2 * r2 * s), -r1 / (2 * r3 * s)]])

    def undefined_reason(self, R):
        return first_zero_reason([(R[1], NO_POSITIVE), (R[2], NO_PREDICTED_POSITIVE)])

    evidence_reason = _Ratio.evidence_reason


class BrierScore(Measure):
    """Brier score of a binary classifier as scikit-learn's ``brier_score_loss`` defines it:
    loss (p1(x) - y)^2, g = R, the mean squared error of the positive-class probability.
    Brier (1950) sums the squared error over both classes, which is exactly twice this.
    Codes index the distinct probabilities."""

    name = "brier"
    d = 1
    bounded = False  # a mean of squares, not a proportion: no Beta limits
    value_range = (0.0, 1.0)
    linear_fractional = True
    component_names = ("brier",)

    def __init__(self):
        self._prob_values = np.zeros(0)

    def codes(self, pool):
        self._prob_values, inverse = np.unique(pool.prob[:, 1], return_inverse=True)
        return inverse

    def n_codes(self, pool):
        return len(np.unique(pool.prob[:, 1]))

    def loss(self, codes, labels):
        p1 = self._prob_values[codes]
        return ((p1 - labels) ** 2)[:, None]

    def g(self, R):
        return np.array([R[0]])

    def jacobian(self, R):
        return np.array([[1.0]])

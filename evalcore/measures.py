"""Generalized performance measures G = g(R), R = E[loss(x, y)] (seed 003, Definition 1).

A measure is a vector loss, a map ``g`` and its Jacobian. The loss of an item depends on the
item only through an integer *code* (its predicted class, its threshold bin, ...), so a
measure tabulates its loss per (code, true class); samplers and estimators work with codes,
which keeps a labelling step independent of the pool size.

Jacobian orientation: ``jacobian(R)[i, j] = d g_i / d R_j``, shape ``(m, d)``.
"""

from __future__ import annotations

import numpy as np
from scipy import sparse

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
    "PRCurve",
    "MacroF1",
    "MicroF1",
    "PerClassRecall",
    "get_measure",
    "MEASURE_NAMES",
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
    needs_predicted: tuple[int, ...] = ()  # predicted classes without which g is undefined
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
        predicted = set(np.unique(pool.y_pred).tolist())
        for code in self.needs_predicted:
            if code not in predicted:
                raise MeasureError(
                    f"the classifier predicts no item as class {pool.classes[code]!r}, so "
                    f"`{self.name}` is undefined on this pool; check the predicted-label column "
                    "or the decision threshold, or choose another measure."
                )

    def loss_table(self, n_codes: int, n_classes: int) -> np.ndarray:
        """Loss of every (code, class) pair, shape ``(n_codes, n_classes, d)``."""
        codes = np.repeat(np.arange(n_codes), n_classes)
        labels = np.tile(np.arange(n_classes), n_codes)
        return self.loss(codes, labels).reshape(n_codes, n_classes, self.d)

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

    def nonzero_loss(self, n_codes: int, n_classes: int) -> np.ndarray:
        """Whether ``loss(c, y) != 0``, shape ``(n_codes, C)`` (the epsilon floor's indicator)."""
        return np.any(self.loss_table(n_codes, n_classes) != 0, axis=2)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def _zero(R: np.ndarray, checks: list[tuple[float, str]]) -> str | None:
    for value, reason in checks:
        if not np.isfinite(value) or value <= 0:
            return reason
    return None


_NO_PRED_POS = "no predicted positive labelled yet"
_NO_POS = "no positive labelled yet"
_NO_NEG = "no negative labelled yet"
_NO_PRED_NEG = "no predicted negative labelled yet"


class _Ratio(Measure):
    """g(R) = R1 / R2 with a two-entry loss (precision, recall, F-beta)."""

    d = 2
    _reason = ""

    def g(self, R):
        return np.array([R[0] / R[1]]) if R[1] > 0 else np.array([np.nan])

    def jacobian(self, R):
        return np.array([[1.0 / R[1], -R[0] / R[1] ** 2]])

    def undefined_reason(self, R):
        return _zero(R, [(R[1], self._reason)])


class Accuracy(Measure):
    """Accuracy: loss 1[y != f(x)], g(R) = 1 - R (seed 003, Table 1)."""

    name = "accuracy"
    d = 1
    binary_only = False
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
        return _zero(R, [(R[1], _NO_POS), (1 - R[1], _NO_NEG)])


class Precision(_Ratio):
    """Precision: loss [y f, f], g = R1 / R2."""

    needs_predicted = (1,)
    name = "precision"
    component_names = ("precision",)
    _reason = _NO_PRED_POS

    def loss(self, codes, labels):
        y, f = labels.astype(float), codes.astype(float)
        return np.column_stack([y * f, f])


class Recall(_Ratio):
    """Recall: loss [y f, y], g = R1 / R2."""

    name = "recall"
    component_names = ("recall",)
    _reason = _NO_POS

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
    bounded = False
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
        return _zero(
            R,
            [(R[1], _NO_POS), (1 - R[1], _NO_NEG), (R[2], _NO_PRED_POS), (1 - R[2], _NO_PRED_NEG)],
        )


class FowlkesMallows(Measure):
    """Fowlkes-Mallows index: loss [y f, y, f], g = R1 / sqrt(R2 R3)."""

    name = "fowlkes_mallows"
    d = 3
    needs_predicted = (1,)
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
        return _zero(R, [(R[1], _NO_POS), (R[2], _NO_PRED_POS)])


class BrierScore(Measure):
    """Brier score: loss 2 (p1(x) - y)^2, g = R. Codes index the distinct probabilities."""

    name = "brier"
    d = 1
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
        return (2 * (p1 - labels) ** 2)[:, None]

    def g(self, R):
        return np.array([R[0]])

    def jacobian(self, R):
        return np.array([[1.0]])


class PRCurve(Measure):
    """Precision-recall curve on L thresholds (seed 003, Example 2).

    loss = [1[s >= t_1..L], y 1[s >= t_1..L], y] (d = 2L + 1);
    g = [R_{L+l} / R_l (precision), R_{L+l} / R_{2L+1} (recall)] (m = 2L).
    The code of an item is the number of thresholds at or below its score. The thresholds are
    an equal-width grid over the pool's scores, fixed by ``codes(pool)``.
    """

    name = "pr_curve"
    binary_only = True

    def __init__(self, n_thresholds: int = 100):
        if int(n_thresholds) != n_thresholds or n_thresholds < 2:
            raise MeasureError(f"`n_thresholds` must be an integer >= 2, got {n_thresholds!r}.")
        self.L = int(n_thresholds)
        self.name = f"pr_curve:{self.L}"
        self.d = 2 * self.L + 1
        self.thresholds = np.linspace(0.0, 1.0, self.L)
        self.component_names = tuple(f"precision@{i}" for i in range(self.L)) + tuple(
            f"recall@{i}" for i in range(self.L)
        )

    def set_thresholds(self, scores: np.ndarray) -> None:
        self.thresholds = np.linspace(scores.min(), scores.max(), self.L)

    def codes(self, pool):
        scores = pool.binary_scores
        self.set_thresholds(scores)
        return np.searchsorted(self.thresholds, scores, side="right")

    def n_codes(self, pool):
        return self.L + 1

    def loss(self, codes, labels):
        above = codes[:, None] > np.arange(self.L)[None, :]
        y = labels.astype(float)[:, None]
        return np.hstack([above, y * above, y]).astype(float)

    def g(self, R):
        L = self.L
        with np.errstate(divide="ignore", invalid="ignore"):
            precision = np.where(R[:L] > 0, R[L : 2 * L] / R[:L], np.nan)
            recall = R[L : 2 * L] / R[2 * L] if R[2 * L] > 0 else np.full(L, np.nan)
        return np.concatenate([precision, recall])

    def jacobian(self, R):
        """Sparse (CSR): each component depends on two entries of R."""
        L = self.L
        idx = np.arange(L)
        with np.errstate(divide="ignore", invalid="ignore"):
            pp = np.where(R[:L] > 0, R[:L], np.inf)
            values = np.concatenate(
                [
                    -R[L : 2 * L] / pp**2,
                    1 / pp,
                    np.full(L, 1 / R[2 * L]),
                    -R[L : 2 * L] / R[2 * L] ** 2,
                ]
            )
        rows = np.concatenate([idx, idx, L + idx, L + idx])
        cols = np.concatenate([idx, L + idx, L + idx, np.full(L, 2 * L)])
        return sparse.csr_matrix((values, (rows, cols)), shape=(2 * L, self.d))

    def undefined_reason(self, R):
        return _zero(R, [(R[2 * self.L], _NO_POS), (R[0], _NO_PRED_POS)])

    def expected_risk(self, mass):
        # mass[c, y]: items with c thresholds at or below their score; entry l counts c > l.
        L = self.L
        above = np.cumsum(mass[::-1], axis=0)[::-1]  # above[c] = sum over codes >= c
        pred_pos = above[1 : L + 1].sum(axis=1)
        true_pos = above[1 : L + 1, 1]
        return np.concatenate([pred_pos, true_pos, [mass[:, 1].sum()]])

    def sq_norm_dg_loss(self, R, n_codes, n_classes):
        # Dg loss for an item with code c and label y:
        #   precision_l: (y - P_l) 1[l < c] / R_l,  recall_l: y (1[l < c] - Rec_l) / R_{2L+1}.
        # Its squared norm is a cumulative sum over l, O(L) for all codes.
        L = self.L
        G = self.g(R)
        P, Rec = np.nan_to_num(G[:L]), np.nan_to_num(G[L:])
        pp = np.where(R[:L] > 0, R[:L], np.inf)
        pos = R[2 * L] if R[2 * L] > 0 else np.inf
        out = np.zeros((L + 1, 2))
        for y in (0, 1):
            prec_terms = np.concatenate([[0.0], np.cumsum((y - P) ** 2 / pp**2)])
            if y == 0:
                rec = np.zeros(L + 1)
            else:
                below = np.concatenate([[0.0], np.cumsum((1 - Rec) ** 2)])
                above = np.concatenate([np.cumsum((Rec**2)[::-1])[::-1], [0.0]])
                rec = (below + above) / pos**2
            out[:, y] = prec_terms + rec
        return out

    def nonzero_loss(self, n_codes, n_classes):
        nz = np.ones((n_codes, n_classes), dtype=bool)
        nz[0, 0] = False
        return nz


class _MultiClass(Measure):
    binary_only = False

    def __init__(self, n_classes: int):
        self.C = int(n_classes)

    def check_pool(self, pool):
        if pool.n_classes != self.C:
            raise MeasureError(
                f"`{self.name}` was built for {self.C} classes but the pool has {pool.n_classes}."
            )


class PerClassRecall(_MultiClass):
    """Recall of every class: loss [1[y=c, f=c] (C), 1[y=c] (C)], g_c = R_c / R_{C+c}."""

    name = "per_class_recall"

    def __init__(self, n_classes: int):
        super().__init__(n_classes)
        self.d = 2 * self.C
        self.component_names = tuple(f"recall[{c}]" for c in range(self.C))

    def loss(self, codes, labels):
        onehot_y = np.eye(self.C)[labels]
        return np.hstack([onehot_y * (codes == labels)[:, None], onehot_y])

    def g(self, R):
        C = self.C
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(R[C:] > 0, R[:C] / R[C:], np.nan)

    def jacobian(self, R):
        C = self.C
        J = np.zeros((C, self.d))
        idx = np.arange(C)
        with np.errstate(divide="ignore"):
            J[idx, idx] = 1 / R[C:]
            J[idx, C + idx] = -R[:C] / R[C:] ** 2
        return J

    def undefined_reason(self, R):
        missing = [c for c in range(self.C) if R[self.C + c] <= 0]
        return f"no item of class {missing[0]} labelled yet" if missing else None


class MicroF1(_MultiClass):
    """Micro-F1 (seed 004, eq. 90 with alpha = 1/2): loss [sum_c TP_c, (1[f] + 1[y]) / 2].

    For single-label classification the denominator is 1 and micro-F1 equals accuracy.
    """

    name = "micro_f1"
    d = 2
    component_names = ("micro_f1",)

    def loss(self, codes, labels):
        return np.column_stack([(codes == labels).astype(float), np.ones(len(codes))])

    def g(self, R):
        return np.array([R[0] / R[1]])

    def jacobian(self, R):
        return np.array([[1 / R[1], -R[0] / R[1] ** 2]])


class MacroF1(_MultiClass):
    """Macro-F1 as in seed 004 (App. D.3, eqs. 98-102): the harmonic mean of macro precision
    P = mean_c TP_c / (TP_c + FP_c) and macro recall R = mean_c TP_c / (TP_c + FN_c).

    loss = [1[y=c, f=c] (C), 1[f=c] (C), 1[y=c] (C)]. Note: scikit-learn's ``f1_score(...,
    average="macro")`` is the mean of per-class F1, a different number.
    """

    name = "macro_f1"

    def __init__(self, n_classes: int):
        super().__init__(n_classes)
        self.d = 3 * self.C
        self.component_names = ("macro_f1",)

    def loss(self, codes, labels):
        onehot_y = np.eye(self.C)[labels]
        onehot_f = np.eye(self.C)[codes]
        return np.hstack([onehot_y * onehot_f, onehot_f, onehot_y])

    def _parts(self, R):
        C = self.C
        tp, pp, ap = R[:C], R[C : 2 * C], R[2 * C :]
        return tp, pp, ap

    def g(self, R):
        if self.undefined_reason(R):
            return np.array([np.nan])
        tp, pp, ap = self._parts(R)
        P, Rc = np.mean(tp / pp), np.mean(tp / ap)
        return np.array([2 * P * Rc / (P + Rc)])

    def jacobian(self, R):
        C = self.C
        tp, pp, ap = self._parts(R)
        P, Rc = np.mean(tp / pp), np.mean(tp / ap)
        dF_dP = 2 * Rc**2 / (P + Rc) ** 2
        dF_dR = 2 * P**2 / (P + Rc) ** 2
        J = np.zeros((1, self.d))
        J[0, :C] = (dF_dP / pp + dF_dR / ap) / C
        J[0, C : 2 * C] = -dF_dP * tp / pp**2 / C
        J[0, 2 * C :] = -dF_dR * tp / ap**2 / C
        return J

    def undefined_reason(self, R):
        tp, pp, ap = self._parts(R)
        for c in range(self.C):
            if pp[c] <= 0:
                return f"no item predicted as class {c} labelled yet"
            if ap[c] <= 0:
                return f"no item of class {c} labelled yet"
        if tp.sum() <= 0:
            return "no correctly predicted item labelled yet"
        return None


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
_MULTI = {"macro_f1": MacroF1, "micro_f1": MicroF1, "per_class_recall": PerClassRecall}
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

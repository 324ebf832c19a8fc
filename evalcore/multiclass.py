"""Multi-class measures: per-class recall, micro-F1 and two macro-F1s (seed 004, App. D)."""

from __future__ import annotations

import numpy as np

from .measures import Measure, MeasureError

__all__ = ["PerClassRecall", "MicroF1", "MacroF1", "MacroF1Harmonic"]


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
    linear_fractional = True

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
    linear_fractional = True
    component_names = ("micro_f1",)

    def loss(self, codes, labels):
        return np.column_stack([(codes == labels).astype(float), np.ones(len(codes))])

    def g(self, R):
        return np.array([R[0] / R[1]])

    def jacobian(self, R):
        return np.array([[1 / R[1], -R[0] / R[1] ** 2]])


class MacroF1(_MultiClass):
    """Macro-F1 as scikit-learn's ``f1_score(..., average="macro")`` defines it: the mean over
    classes of F1_c = TP_c / ((PP_c + AP_c) / 2), with PP_c and AP_c the predicted and actual
    counts of class c (seed 004, eq. 90 with alpha = 1/2, per class, then averaged).

    loss = [1[y=c, f=c] (C), (1[f=c] + 1[y=c]) / 2 (C)], g = mean_c R_c / R_{C+c}.
    """

    name = "macro_f1"
    linear_fractional = False  # a mean of ratios: its extremes need not lie at vertices

    def __init__(self, n_classes: int):
        super().__init__(n_classes)
        self.d = 2 * self.C
        self.component_names = ("macro_f1",)

    def loss(self, codes, labels):
        onehot_y = np.eye(self.C)[labels]
        onehot_f = np.eye(self.C)[codes]
        return np.hstack([onehot_y * onehot_f, (onehot_f + onehot_y) / 2])

    def g(self, R):
        if self.undefined_reason(R):
            return np.array([np.nan])
        C = self.C
        return np.array([np.mean(R[:C] / R[C:])])

    def jacobian(self, R):
        C = self.C
        tp, half_sum = R[:C], R[C:]
        J = np.zeros((1, self.d))
        with np.errstate(divide="ignore", invalid="ignore"):
            J[0, :C] = 1 / (C * half_sum)
            J[0, C:] = -tp / (C * half_sum**2)
        return J

    def undefined_reason(self, R):
        for c in range(self.C):
            if R[self.C + c] <= 0:
                return f"no item predicted as or of class {c} labelled yet"
        return None


class MacroF1Harmonic(_MultiClass):
    """Macro-F1 as seed 004 defines it (App. D.3, eqs. 98-102): the harmonic mean of macro
    precision P = mean_c TP_c / (TP_c + FP_c) and macro recall R = mean_c TP_c / (TP_c + FN_c).
    It differs from ``MacroF1`` (the mean of per-class F1) whenever classes differ.

    loss = [1[y=c, f=c] (C), 1[f=c] (C), 1[y=c] (C)].
    """

    name = "macro_f1_harmonic"

    def __init__(self, n_classes: int):
        super().__init__(n_classes)
        self.d = 3 * self.C
        self.component_names = ("macro_f1_harmonic",)

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

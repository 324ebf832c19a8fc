"""The precision-recall curve as a generalized measure (seed 003, Example 2)."""

from __future__ import annotations

import numpy as np
from scipy import sparse

from .measures import NO_POSITIVE, NO_PREDICTED_POSITIVE, Measure, MeasureError, first_zero_reason

__all__ = ["PRCurve"]


class PRCurve(Measure):
    """Precision-recall curve on L thresholds (seed 003, Example 2).

    loss = [1[s >= t_1..L], y 1[s >= t_1..L], y] (d = 2L + 1);
    g = [R_{L+l} / R_l (precision), R_{L+l} / R_{2L+1} (recall)] (m = 2L).
    The code of an item is the number of thresholds at or below its score. The thresholds are
    an equal-width grid over the pool's scores, fixed by ``codes(pool)``.
    """

    name = "pr_curve"
    binary_only = True
    linear_fractional = True
    needs_labels = (1,)

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
        return first_zero_reason([(R[2 * self.L], NO_POSITIVE), (R[0], NO_PREDICTED_POSITIVE)])

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

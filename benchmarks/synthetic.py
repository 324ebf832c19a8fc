"""Synthetic pools for the failure modes of interval estimation (made here, never copied).

* ``rare_calibrated``: positives about 1 in 5,000, the classifier's probabilities calibrated
  (every label is drawn from its item's probability) and sharp: a small confident cluster and
  a bulk whose tail holds a few false negatives at moderate probability;
* ``over_confident``: positives about 1 in 1,000 drawn from true probabilities, while the
  pool's probability column reports expit(3 logit), far too sure in both directions.

Scores are the reported logits; predictions are reported probability >= 0.5.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

POOLS = ("rare_calibrated", "over_confident")


def _mixture_logits(rng, n_pool, share, confident, bulk) -> np.ndarray:
    """True logits: a ``share`` of items around ``confident`` (mean, sd), the rest ``bulk``."""
    in_cluster = rng.random(n_pool) < share
    means = np.where(in_cluster, confident[0], bulk[0])
    sds = np.where(in_cluster, confident[1], bulk[1])
    return means + sds * rng.standard_normal(n_pool)


def make_pool(name: str, n_pool: int = 50_000, seed: int = 0) -> pd.DataFrame:
    """A pool as a table with item_id, score, pred, prob and label columns."""
    rng = np.random.default_rng(seed)
    if name == "rare_calibrated":
        true_logit = _mixture_logits(rng, n_pool, 1.6e-4, (4.0, 1.5), (-11.0, 2.5))
        reported = true_logit
    elif name == "over_confident":
        true_logit = _mixture_logits(rng, n_pool, 8e-4, (1.0, 1.5), (-9.0, 2.0))
        reported = 3.0 * true_logit
    else:
        raise ValueError(f"unknown synthetic pool {name!r}; choose one of {POOLS}.")
    label = (rng.random(n_pool) < expit(true_logit)).astype(int)
    prob = expit(reported)
    return pd.DataFrame(
        {
            "item_id": np.arange(n_pool),
            "score": reported,
            "pred": (prob >= 0.5).astype(int),
            "prob": prob,
            "label": label,
        }
    )


if __name__ == "__main__":
    for pool_name in POOLS:
        frame = make_pool(pool_name)
        print(
            pool_name,
            f"N={len(frame)} positives={frame.label.sum()} predicted={frame.pred.sum()} "
            f"expected={frame.prob.sum():.1f}",
        )

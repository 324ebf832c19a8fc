"""Synthetic pools for the failure modes of interval estimation (made here, never copied).

* ``rare_calibrated``: positives about 1 in 5,000, the classifier's probabilities calibrated
  (every label is drawn from its item's probability) and sharp: a small confident cluster and
  a bulk whose tail holds a few false negatives at moderate probability;
* ``over_confident``: positives about 1 in 1,000 drawn from true probabilities, while the
  pool's probability column reports expit(3 logit), far too sure in both directions;
* ``sharp_calibrated``: 54,000 items, 24 positives (1 in 2,250), calibrated and sharp: a
  cluster of about 18 confident items (the 22 predicted positives are all true), about 12
  items at moderate probability (logit -1.5 +- 1) that hold the 2 false negatives (at 0.12
  and 0.15), and a bulk at logit -16 that holds none (issue 13's held-out entity-resolution
  pool, in miniature);
* ``band_miscalibrated``: positives about 1 in 500, the probabilities calibrated but for one
  band of the score: around logit p̂ = -6 (p̂ 0.25%) the true odds are up to 8 times the
  reported ones, exp(ln 8 exp(-(logit p̂ + 6)^2 / 2)) times. The false negatives gather
  there (43 of the 48 lie in logit p̂ (-8, -4), where p̂ expects 10), as abt-buy's gather
  in p̂ [1e-3, 1e-2), and neither p̂ nor any map a + b logit p̂ describes it: a pool
  outside the family the item-level model and the model's interval assume;
* ``hard_classifier``: 20,000 items, positives about 1 in 100, a classifier that reports no
  probabilities, only its decisions: ``prob`` is exactly 0 or 1 (score >= 0), so the
  predicted negatives, which hold a few false negatives, have probability 0. Here the
  samplers' floor for a class of probability 0 (``samplers.RULED_OUT``) and the defensive
  share of the unlabelled items (``LEAST_UNLABELLED_SHARE``) decide whether a session ever
  looks among the predicted negatives.

Scores are the reported logits (``hard_classifier``: the score behind its decisions);
predictions are reported probability >= 0.5. ``true_prob`` holds the probabilities the labels
were drawn from (the same as ``prob`` on the calibrated pools; on ``hard_classifier``, Bayes'
rule from the score): what a perfectly calibrated classifier with the same ranking would
report.

``make_regression_pool`` makes a regression pool (issue 11): predictions uniform on
[0, 100], errors N(0, 2^2) except above 90 (a tenth of the items), where they are Student t
with 3 degrees of freedom scaled by 20 (heavy tails a uniform sample of a few hundred sees a
handful of); the ``sd`` column, the model's own uncertainty, says 2 and 15 there: it knows
where it is unsure, not by how much.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit

POOLS = ("rare_calibrated", "over_confident", "sharp_calibrated", "hard_classifier")
POOLS += ("band_miscalibrated",)


def _mixture_logits(rng, n_pool, shares, components) -> np.ndarray:
    """True logits from a Normal mixture: ``components`` (mean, sd) pairs, the first ones with
    the given ``shares`` of the items, the last one (the bulk) with the rest."""
    component = np.searchsorted(np.cumsum(shares), rng.random(n_pool), side="right")
    means, sds = np.array(components, dtype=float).T
    return means[component] + sds[component] * rng.standard_normal(n_pool)


def make_pool(name: str, n_pool: int | None = None, seed: int = 0) -> pd.DataFrame:
    """A pool as a table with item_id, score, pred, prob and label columns (``n_pool``:
    50,000 by default, 54,000 for sharp_calibrated, 20,000 for hard_classifier)."""
    rng = np.random.default_rng(seed)
    n_pool = n_pool or {"sharp_calibrated": 54_000, "hard_classifier": 20_000}.get(name, 50_000)
    label = None
    if name == "rare_calibrated":
        true_logit = _mixture_logits(rng, n_pool, [1.6e-4], [(4.0, 1.5), (-11.0, 2.5)])
        reported = true_logit
    elif name == "over_confident":
        true_logit = _mixture_logits(rng, n_pool, [8e-4], [(1.0, 1.5), (-9.0, 2.0)])
        reported = 3.0 * true_logit
    elif name == "sharp_calibrated":
        shares = [18 / 54_000, 12 / 54_000]
        true_logit = _mixture_logits(rng, n_pool, shares, [(7.0, 1.0), (-1.5, 1.0), (-16.0, 1.5)])
        reported = true_logit
    elif name == "band_miscalibrated":
        reported = _mixture_logits(rng, n_pool, [1e-3], [(4.0, 1.5), (-11.0, 2.5)])
        true_logit = reported + np.log(8.0) * np.exp(-((reported + 6.0) ** 2) / 2)
    elif name == "hard_classifier":  # the labels first, then the scores behind the decisions
        label = rng.random(n_pool) < 0.01
        reported = rng.normal(3.0 * label - 1.5, 1.0)
        true_logit = np.log(0.01 / 0.99) + 3.0 * reported  # Bayes' rule
    else:
        raise ValueError(f"unknown synthetic pool {name!r}; choose one of {POOLS}.")
    if label is None:
        label = rng.random(n_pool) < expit(true_logit)
    # a classifier without probabilities reports its decisions as 0 or 1
    prob = (reported >= 0).astype(float) if name == "hard_classifier" else expit(reported)
    return pd.DataFrame(
        {
            "item_id": np.arange(n_pool),
            "score": reported,
            "pred": (prob >= 0.5).astype(int),
            "prob": prob,
            "label": label.astype(int),
            "true_prob": expit(true_logit),
        }
    )


def make_regression_pool(n_pool: int = 20_000, seed: int = 0) -> pd.DataFrame:
    """A regression pool as a table with item_id, pred, sd and label columns."""
    rng = np.random.default_rng(seed)
    pred = rng.uniform(0, 100, n_pool)
    risky = pred > 90
    error = np.where(risky, 20 * rng.standard_t(3, n_pool), rng.normal(0, 2, n_pool))
    return pd.DataFrame(
        {
            "item_id": np.arange(n_pool),
            "pred": pred,
            "sd": np.where(risky, 15.0, 2.0),
            "label": pred + error,
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

"""The unlabelled test pool, built from a table of classifier outputs, with validation.

Every item has an id, a score (a binary margin or probability, or one score per class), a
predicted class, the classifier's probability p̂(y|x) (given, or derived from the scores: expit
of a binary margin, softmax of per-class scores), optionally content to show the expert and
optionally a true label (which enables simulation).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import expit, softmax

__all__ = ["Pool", "ColumnMapping", "PoolValidationError", "detect_mapping", "pool_warnings"]

_ID_NAMES = ("item_id", "id", "uid", "key")
_SCORE_NAMES = ("score", "scores", "margin", "decision", "logit")
_PRED_NAMES = ("pred", "y_pred", "prediction", "predicted", "predicted_label")
_PROB_NAMES = ("prob", "probability", "proba", "p_pos", "p1")
_LABEL_NAMES = ("label", "y_true", "true_label", "truth", "target", "gold")
_SCORE_PREFIXES = ("score_", "score:", "prob_", "prob:")
_MAX_ROWS_SHOWN = 5


class PoolValidationError(ValueError):
    """An uploaded table cannot be used as a pool.

    Attributes name the offending ``column`` (or None), the first offending ``rows`` (0-based
    data rows), the ``reason`` and the ``fix``.
    """

    def __init__(self, reason: str, fix: str, column: str | None = None, rows=()):
        self.column = column
        self.rows = [int(r) for r in rows]
        self.reason = reason
        self.fix = fix
        where = f"column `{column}`" if column else "the table"
        shown = ", ".join(str(r) for r in self.rows[:_MAX_ROWS_SHOWN])
        more = f" (and {len(self.rows) - _MAX_ROWS_SHOWN} more)" if len(self.rows) > 5 else ""
        at_rows = f", rows {shown}{more}" if self.rows else ""
        super().__init__(f"In {where}{at_rows}: {reason} Fix: {fix}")


@dataclass(frozen=True)
class ColumnMapping:
    """Which column holds what. ``score`` is one column name, or one per class (multi-class).

    ``pred`` or ``threshold`` gives the predicted class of a binary pool (``pred`` wins; with
    neither, the threshold is 0 for margins and 0.5 for scores in [0, 1]).
    """

    score: str | tuple[str, ...]
    id: str | None = None
    pred: str | None = None
    threshold: float | None = None
    prob: str | None = None
    label: str | None = None
    content: tuple[str, ...] = ()
    classes: tuple[str, ...] | None = None  # class names of a multi-class pool


@dataclass(frozen=True, eq=False)
class Pool:
    """N items with uniform p(x) = 1/N.

    Arrays: ``ids`` (N,), ``scores`` (N,) or (N, C), ``y_pred`` (N,) int class codes,
    ``prob`` (N, C) classifier probabilities, ``y_true`` (N,) int codes or None.
    ``classes`` holds the original class names in code order.
    """

    ids: np.ndarray
    scores: np.ndarray
    y_pred: np.ndarray
    prob: np.ndarray
    classes: tuple
    y_true: np.ndarray | None = None
    content: pd.DataFrame | None = field(default=None, repr=False)

    @property
    def n_pool(self) -> int:
        return len(self.y_pred)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def binary_scores(self) -> np.ndarray:
        """One real score per item, larger meaning more positive (binary pools)."""
        return self.scores if self.scores.ndim == 1 else self.prob[:, 1]

    @classmethod
    def from_arrays(
        cls,
        scores,
        y_pred=None,
        y_true=None,
        prob=None,
        ids=None,
        threshold: float | None = None,
    ) -> Pool:
        """A binary pool from arrays (the programmatic entry point used by tests and scripts)."""
        frame = pd.DataFrame({"score": np.asarray(scores, dtype=float)})
        mapping = dict(score="score", threshold=threshold)
        for name, values in (("pred", y_pred), ("label", y_true), ("prob", prob), ("id", ids)):
            if values is not None:
                frame[name] = np.asarray(values)
                mapping[name] = name
        return cls.from_dataframe(frame, ColumnMapping(**mapping))

    @classmethod
    def from_dataframe(cls, frame: pd.DataFrame, mapping: ColumnMapping | None = None) -> Pool:
        """Validate ``frame`` and build a pool; ``mapping`` defaults to ``detect_mapping``."""
        if not isinstance(frame, pd.DataFrame) or frame.shape[0] == 0:
            raise PoolValidationError(
                "the table has no rows.", "upload a file with one row per pool item."
            )
        if frame.shape[0] < 2:
            raise PoolValidationError(
                "the table has a single row; a pool needs at least two items.",
                "upload the classifier's outputs for the whole test pool.",
            )
        mapping = mapping or detect_mapping(frame)
        frame = frame.reset_index(drop=True)
        for name in _mapped_columns(mapping):
            if name not in frame.columns:
                raise PoolValidationError(
                    "the column does not exist (columns are: "
                    + ", ".join(map(str, frame.columns))
                    + ").",
                    "choose an existing column in the mapping.",
                    column=name,
                )
        ids = _ids(frame, mapping.id)
        if isinstance(mapping.score, str):
            scores = _finite_numbers(frame, mapping.score)
            prob, classes, y_pred = _binary_outputs(frame, mapping, scores)
        else:
            scores = np.column_stack([_finite_numbers(frame, c) for c in mapping.score])
            classes = mapping.classes or tuple(_class_name(c) for c in mapping.score)
            prob = _probabilities_from_matrix(scores)
            y_pred = (
                _class_codes(frame, mapping.pred, classes)
                if mapping.pred
                else np.argmax(scores, axis=1)
            )
        y_true = _class_codes(frame, mapping.label, classes) if mapping.label else None
        content = frame[list(mapping.content)].astype(str) if mapping.content else None
        return cls(
            ids=ids,
            scores=scores,
            y_pred=y_pred.astype(np.int64),
            prob=prob,
            classes=tuple(classes),
            y_true=None if y_true is None else y_true.astype(np.int64),
            content=content,
        )


def detect_mapping(frame: pd.DataFrame, require_score: bool = True) -> ColumnMapping:
    """The obvious column mapping, by column name (case-insensitive). Without a score column
    it raises, or with ``require_score=False`` returns the other columns and score None."""
    lower = {str(c).lower(): c for c in frame.columns}

    def find(names):
        return next((lower[n] for n in names if n in lower), None)

    per_class = tuple(c for c in frame.columns if str(c).lower().startswith(_SCORE_PREFIXES))
    score = find(_SCORE_NAMES)
    if score is None and len(per_class) >= 2:
        score = per_class
    if score is None and require_score:
        raise PoolValidationError(
            "no score column was found (looked for: "
            + ", ".join(_SCORE_NAMES)
            + ", or score_<class> columns).",
            "name the classifier's score column `score`, or map it explicitly.",
        )
    id_col, pred, prob, label = (
        find(_ID_NAMES),
        find(_PRED_NAMES),
        find(_PROB_NAMES),
        find(_LABEL_NAMES),
    )
    used = {id_col, pred, prob, label, *(score if isinstance(score, tuple) else (score,))}
    if len(frame.columns) == 1 and score is None:
        raise PoolValidationError(
            f"the table has a single column, {str(frame.columns[0])[:60]!r}: its delimiter "
            "was not recognised.",
            "separate the columns with commas, semicolons, tabs or vertical bars.",
        )
    content = tuple(
        c for c in frame.columns if c not in used and not pd.api.types.is_numeric_dtype(frame[c])
    )
    return ColumnMapping(score=score, id=id_col, pred=pred, prob=prob, label=label, content=content)


def _mapped_columns(mapping: ColumnMapping):
    scores = mapping.score if isinstance(mapping.score, tuple) else (mapping.score,)
    optional = (mapping.id, mapping.pred, mapping.prob, mapping.label)
    return [*scores, *(c for c in optional if c), *mapping.content]


def _ids(frame, column):
    if column is None:
        return np.arange(frame.shape[0])
    ids = frame[column]
    if ids.isna().any():
        raise PoolValidationError(
            "some ids are missing.", "give every item an id.", column, np.flatnonzero(ids.isna())
        )
    duplicated = np.flatnonzero(ids.duplicated(keep=False).to_numpy())
    if len(duplicated):
        raise PoolValidationError(
            f"ids are not unique: duplicate ids (e.g. '{ids.iloc[duplicated[0]]}' appears "
            "more than once).",
            "give every item a distinct id, or map no id column to number the rows.",
            column,
            duplicated,
        )
    return ids.to_numpy()


def _finite_numbers(frame, column) -> np.ndarray:
    raw = frame[column]
    values = pd.to_numeric(raw, errors="coerce")
    not_numeric = np.flatnonzero((values.isna() & raw.notna()).to_numpy())
    if len(not_numeric):
        raise PoolValidationError(
            f"values are not numbers (e.g. '{raw.iloc[not_numeric[0]]}').",
            "map a numeric score column, or clean these rows.",
            column,
            not_numeric,
        )
    values = values.to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        kind = "missing (NaN)" if np.isnan(values[bad[0]]) else "infinite"
        raise PoolValidationError(
            f"scores are missing or not finite (e.g. row {bad[0]} is {kind}).",
            "give every item a finite score, or remove these rows.",
            column,
            bad,
        )
    return values


def _binary_outputs(frame, mapping, scores):
    is_probability = scores.min() >= 0 and scores.max() <= 1
    if mapping.prob:
        p1 = _finite_numbers(frame, mapping.prob)
        outside = np.flatnonzero((p1 < 0) | (p1 > 1))
        if len(outside):
            raise PoolValidationError(
                "probabilities must lie in [0, 1].",
                "map a probability column, or none (expit of the score is then used).",
                mapping.prob,
                outside,
            )
    else:
        p1 = scores if is_probability else expit(scores)
    classes = (0, 1)
    if mapping.pred:
        y_pred = _class_codes(frame, mapping.pred, classes)
    else:
        threshold = mapping.threshold
        if threshold is None:
            threshold = 0.5 if is_probability else 0.0
        y_pred = (scores >= threshold).astype(np.int64)
    return np.column_stack([1 - p1, p1]), classes, y_pred


def _probabilities_from_matrix(scores):
    rows_sum_to_one = np.all(scores >= 0) and np.allclose(scores.sum(axis=1), 1.0)
    return scores if rows_sum_to_one else softmax(scores, axis=1)


def _class_name(column) -> str:
    text = str(column)
    for prefix in _SCORE_PREFIXES:
        if text.lower().startswith(prefix):
            return text[len(prefix) :]
    return text


def _class_codes(frame, column, classes) -> np.ndarray:
    raw = frame[column]
    missing = np.flatnonzero(raw.isna().to_numpy())
    if len(missing):
        raise PoolValidationError(
            "labels are missing.", "give every item a class, or remove these rows.", column, missing
        )
    if pd.api.types.is_numeric_dtype(raw) and all(isinstance(c, int) for c in classes):
        values = raw.to_numpy()
        codes = np.full(len(values), -1, dtype=np.int64)
        for code, name in enumerate(classes):
            codes[values == name] = code
        unknown = np.flatnonzero(codes < 0)
        if len(unknown) == 0:
            return codes
    lookup = {}
    for code, name in enumerate(classes):
        lookup[str(name)] = code
        if isinstance(name, int):
            lookup[str(float(name))] = code
            lookup[str(bool(name))] = code
    text = raw.astype(str).str.strip()
    codes = text.map(lookup)
    unknown = np.flatnonzero(codes.isna().to_numpy())
    if len(unknown):
        examples = sorted(set(text.iloc[unknown[:20]]))[:3]
        raise PoolValidationError(
            f"values {examples} are not among the classes {list(map(str, classes))}.",
            "use the class names of the score columns (0/1 for a binary pool).",
            column,
            unknown,
        )
    return codes.to_numpy(dtype=np.int64)


def pool_warnings(pool: Pool) -> list[str]:
    """What makes a valid pool a poor one to evaluate on, in plain words (may be empty)."""
    found = []
    scores = pool.binary_scores if pool.n_classes == 2 else pool.prob
    if np.ptp(scores, axis=0).max() == 0:
        found.append(
            "Every item has the same score: the samplers cannot tell items apart, so they "
            "sample at random and save no labels."
        )
    if pool.n_classes == 2:
        sure = np.count_nonzero((pool.prob[:, 1] == 0) | (pool.prob[:, 1] == 1))
        if sure >= 0.01 * pool.n_pool:
            found.append(
                f"{sure:,} items ({sure / pool.n_pool:.0%}) have a probability of exactly 0 or "
                "1, as rounded probabilities or a classifier without them do. Static "
                "importance sampling, which trusts the probabilities, looks at those items "
                "last, and Neyman allocation gives strata of them few labels. AIS learns "
                "from your answers where they are wrong."
            )
    predicted = np.bincount(pool.y_pred, minlength=pool.n_classes)
    if pool.n_classes == 2 and predicted[1] == 0:
        found.append(
            "The classifier predicts no item as positive: precision and F1 stay undefined. "
            "Check the predicted-label column or the threshold."
        )
    elif pool.n_classes == 2 and predicted[0] == 0:
        found.append(
            "The classifier predicts every item as positive. Check the predicted-label "
            "column or the threshold."
        )
    elif pool.n_classes > 2 and (predicted == 0).any():
        missing = [str(pool.classes[c]) for c in np.flatnonzero(predicted == 0)]
        found.append(f"No item is predicted as class {', '.join(missing)}.")
    if pool.y_true is not None:
        present = np.bincount(pool.y_true, minlength=pool.n_classes)
        if (present == 0).any():
            missing = [str(pool.classes[c]) for c in np.flatnonzero(present == 0)]
            found.append(
                f"The true-label column never holds class {', '.join(missing)}: simulations "
                "on this pool cannot show how the measure behaves for it."
            )
    return found

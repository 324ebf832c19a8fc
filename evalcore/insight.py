"""What the insight pages show, computed from a session: its trace (estimate, interval, KL,
ESS against labels), the weights, every applicable measure, the PR curve with bootstrap
curves and threshold finders, the answer log and the estimate report. No plotting here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .bernoulli import BernoulliSampler
from .diagnostics import effective_sample_size, kl_divergence, optimal_proposal, true_risk
from .estimators import estimate, rao_blackwell_terms
from .measures import MeasureError
from .pr_curve import PRCurve
from .regression import REGRESSION_MEASURES, RegressionImportanceSampler
from .samplers import ImportanceSampler
from .session import CHECKPOINT_EVERY, Session
from .stratified import StratifiedSampler

__all__ = [
    "trace",
    "design_weights",
    "measure_table",
    "pr_curve_table",
    "bootstrap_pr_curves",
    "lowest_threshold_with_precision",
    "highest_threshold_with_recall",
    "true_pr_curve",
    "answer_log",
    "report",
]

BINARY_MEASURES = (
    "accuracy",
    "balanced_accuracy",
    "precision",
    "recall",
    "f1",
    "mcc",
    "fowlkes_mallows",
    "brier",
)
MULTICLASS_MEASURES = ("accuracy", "macro_f1", "macro_f1_harmonic", "micro_f1", "per_class_recall")


TRACE_COLUMNS = [
    "n_labels",
    "n_draws",
    "component",
    "estimate",
    "ci_low",
    "ci_high",
    "kl_consecutive",
    "kl_optimal",
    "ess",
    "true_value",
]


def trace(session: Session, confidence_level: float = 0.95, max_points: int = 200) -> pd.DataFrame:
    """The session replayed from its log, one row per (checkpoint, component).

    Checkpoints are every ``stride``-th answer (stride = ceil(answers / max_points)) and the
    last. Columns: ``n_labels``, ``n_draws``, ``component``, ``estimate``, ``ci_low``,
    ``ci_high``, ``kl_consecutive`` (D_KL(q_prev || q) between the proposals at consecutive
    checkpoints), ``kl_optimal`` (D_KL(q* || q), seed 003 Fig. 2, when the pool has true
    labels), ``ess`` (Kish's effective sample size of the weights), ``true_value``.
    KL columns are NaN for designs without a proposal (Bernoulli, stratified).
    """
    stride = max(1, -(-len(session.log) // max_points))
    builder = Trace(session, confidence_level, stride)
    builder.extend(session.log)
    return builder.table()


class Trace:
    """A session's trace built answer by answer: ``extend`` replays only the answers after
    those already traced, so a longer log (the expert labelled on) costs its new answers,
    not a replay from the seed. Rows at every ``stride``-th answer, and the last."""

    def __init__(
        self,
        session: Session,
        confidence_level: float = 0.95,
        stride: int = 1,
        replay: Session | None = None,
    ):
        self.replay = (
            replay
            if replay is not None
            else Session(
                session.pool,
                session.measure_name,
                session.sampler_name,
                session.seed,
                session.budget,
                session.options,
            )
        )
        self.level, self.stride = confidence_level, stride
        self.has_proposal = isinstance(
            self.replay.sampler, ImportanceSampler | RegressionImportanceSampler
        )
        truth = session.pool.y_true is not None
        self.q_star = (
            optimal_proposal(session.pool, session.measure) if truth and self.has_proposal else None
        )
        self.true_values = _true_values(session) if truth else None
        self.rows: list[dict] = []
        self.previous = None  # the proposal at the last stride checkpoint

    @classmethod
    def following(
        cls, session: Session, answers: list[tuple[int, int]], confidence_level: float, stride: int
    ) -> Trace:
        """Replay ``answers`` into ``session`` (``Session.replay_log``: from the seed, keeping
        its checkpoints) and trace them on the way: one replay where loading a session and
        then tracing it took two. The trace goes on in a copy of the session."""
        builder = cls(session, confidence_level, stride, replay=session)
        session.replay_log(answers, observe=builder._observe)
        builder.replay = session.copy()
        return builder

    @property
    def log(self) -> list[tuple[int, int]]:
        return self.replay.log

    def extend(self, log: list[tuple[int, int]]) -> bool:
        """Trace the answers of ``log`` after those traced. Traced answers that ``log`` does
        not have (an undo, another window's answers) are forgotten first when the replay has
        a checkpoint before them (``Session.rewind``; the replay keeps one at the log's last
        two checkpoint positions); False (nothing done) when that would be a replay from the
        seed."""
        shared = 0
        for old, new in zip(self.log, log, strict=False):
            if old != new:
                break
            shared += 1
        if shared < len(self.log) and not self._rewind(shared):
            return False
        # copies of the sampler at the log's last two checkpoint positions only, so that a
        # later undo rewinds from there (a copy at every one would slow a long replay)
        last = len(log) - len(log) % CHECKPOINT_EVERY
        wanted = {last, last - CHECKPOINT_EVERY}
        for position in range(len(self.log), len(log)):
            item, label = log[position]
            self.replay.record(item, label, checkpoint=position + 1 in wanted)
            self._observe()
        return True

    def _rewind(self, n_labels: int) -> bool:
        kept = n_labels - n_labels % self.stride  # to the last row on the stride
        if self.replay.rewind_start(kept) == 0:
            return False
        self.replay.rewind(kept)
        self.rows = [row for row in self.rows if row["n_labels"] <= kept]
        self.previous = self.replay.sampler.pmf() if self.has_proposal else None
        return True

    def _observe(self) -> None:
        if self.replay.n_labels % self.stride == 0:
            self.rows += self._rows(keep_proposal=True)

    def table(self) -> pd.DataFrame:
        rows = list(self.rows)
        if self.log and self.replay.n_labels % self.stride:
            rows += self._rows(keep_proposal=False)  # the last answer, off the stride
        return pd.DataFrame(rows, columns=TRACE_COLUMNS)

    def _rows(self, keep_proposal: bool) -> list[dict]:
        replay = self.replay
        est = replay.estimate()
        low, high = est.confidence_interval(self.level)
        kl_consecutive = kl_optimal = ess = np.nan
        if self.has_proposal:
            current = replay.sampler.pmf()
            if self.previous is not None:
                kl_consecutive = kl_divergence(self.previous, current)
            if keep_proposal:
                self.previous = current
            if self.q_star is not None:
                kl_optimal = replay.sampler.kl_from(self.q_star)
        weights = design_weights(replay)
        if len(weights):
            ess = effective_sample_size(weights)
        return [
            {
                "n_labels": replay.n_labels,
                "n_draws": est.n_draws,
                "component": name,
                "estimate": est.value[index],
                "ci_low": low[index],
                "ci_high": high[index],
                "kl_consecutive": kl_consecutive,
                "kl_optimal": kl_optimal,
                "ess": ess,
                "true_value": np.nan if self.true_values is None else self.true_values[index],
            }
            for index, name in enumerate(est.component_names)
        ]


def _true_values(session: Session) -> np.ndarray:
    return session.measure.g(true_risk(session.pool, session.measure))


def design_weights(session: Session) -> np.ndarray:
    """The weight of every observation in the current estimate: p/q per draw (importance
    sampling), 1/pi per sampled item (Bernoulli), N_h/n_h per labelled item (stratified)."""
    sampler = session.sampler
    if session.regression:
        return sampler.design_weights()
    if isinstance(sampler, ImportanceSampler):
        draws = sampler.draws()
        return np.repeat(draws.weight, draws.count)
    if isinstance(sampler, BernoulliSampler):
        return 1.0 / _bernoulli_pi(sampler)
    if isinstance(sampler, StratifiedSampler):
        items, _ = sampler.labelled()
        strata = sampler.stratum_[items]
        return sampler.stratum_size_[strata] / np.bincount(strata)[strata]
    return np.zeros(0)


def _bernoulli_pi(sampler: BernoulliSampler) -> np.ndarray:
    """Inclusion probabilities of the answered items, in answer order."""
    pieces = [r.pi for r in sampler.rounds_[:-1]]
    if sampler.rounds_:
        pieces.append(sampler.rounds_[-1].pi[: sampler._position])
    return np.concatenate(pieces) if pieces else np.zeros(0)


def measure_table(session: Session, confidence_level: float = 0.95) -> pd.DataFrame:
    """Every applicable scalar measure re-estimated from the session's answers (sample
    reuse, seed 003 Sec. 3.3.1): measure, component, estimate, ci_low, ci_high, note."""
    if session.regression:
        names = tuple(REGRESSION_MEASURES)
    else:
        names = BINARY_MEASURES if session.pool.n_classes == 2 else MULTICLASS_MEASURES
        own = session.measure.name
        if own not in names and session.measure.m == 1:  # F-beta: the session's own beta
            names = (*names, own)
    rows = []
    for name in names:
        try:
            est = session.estimate(name)
        except MeasureError as error:
            rows.append({"measure": name, "component": name, "note": str(error)})
            continue
        low, high = est.confidence_interval(confidence_level)
        for index, component in enumerate(est.component_names):
            rows.append(
                {
                    "measure": name,
                    "component": component,
                    "estimate": est.value[index],
                    "ci_low": low[index],
                    "ci_high": high[index],
                    "note": (est.interval_note() if est.caveat and len(est.value) == 1 else "")
                    or est.reason
                    or ("the session's target" if name == session.measure.name else ""),
                }
            )
    return pd.DataFrame(
        rows, columns=["measure", "component", "estimate", "ci_low", "ci_high", "note"]
    )


def pr_curve_table(
    session: Session, n_thresholds: int = 100, confidence_level: float = 0.95
) -> pd.DataFrame:
    """The estimated PR curve from the session's answers, one row per threshold:
    threshold, precision, precision_low, precision_high, recall, recall_low, recall_high."""
    measure = PRCurve(n_thresholds)
    est = estimate(session.sampler, measure)
    low, high = est.confidence_interval(confidence_level)
    L = measure.L
    return pd.DataFrame(
        {
            "threshold": measure.thresholds,
            "precision": est.value[:L],
            "precision_low": low[:L],
            "precision_high": high[:L],
            "recall": est.value[L:],
            "recall_low": low[L:],
            "recall_high": high[L:],
        }
    )


def true_pr_curve(session: Session, n_thresholds: int = 100) -> pd.DataFrame:
    """The pool's true PR curve on the same thresholds (pools with true labels)."""
    measure = PRCurve(n_thresholds)
    values = measure.g(true_risk(session.pool, measure))
    L = measure.L
    return pd.DataFrame(
        {"threshold": measure.thresholds, "precision": values[:L], "recall": values[L:]}
    )


def bootstrap_pr_curves(
    session: Session, n_thresholds: int = 100, n_curves: int = 30, seed: int = 0
) -> list[pd.DataFrame]:
    """PR curves re-estimated from bootstrap resamples of the importance-sampling terms,
    resampled with replacement: Des Raj's terms z_s with their weights a_s where the
    estimate replaces repeated draws by their expectation (``estimate_is_rao_blackwellised``),
    else the draws' w l (the ratio estimator of eq. 1). Empty for designs without draws
    (Bernoulli, stratified)."""
    sampler = session.sampler
    if not isinstance(sampler, ImportanceSampler) or sampler.n_draws == 0:
        return []
    measure = PRCurve(n_thresholds)
    codes = measure.codes(session.pool)
    if sampler.repeats_by_expectation:
        items, weight, share = sampler.first_draws()
        losses = measure.loss(codes[items], sampler.labels_[items])
        terms, a = rao_blackwell_terms(losses, weight, share, session.pool.n_pool)
    else:
        draws = sampler.draws()
        weighted = draws.weight[:, None] * measure.loss(codes[draws.items], draws.labels)
        terms = weighted[np.repeat(np.arange(len(weighted)), draws.count)]  # one row per draw
        a = np.ones(len(terms))
    rng = np.random.default_rng(seed)
    curves, L = [], measure.L
    for _ in range(n_curves):
        resample = rng.integers(len(terms), size=len(terms))
        values = measure.g(a[resample] @ terms[resample] / a[resample].sum())
        curves.append(
            pd.DataFrame(
                {"threshold": measure.thresholds, "precision": values[:L], "recall": values[L:]}
            )
        )
    return curves


def lowest_threshold_with_precision(curve: pd.DataFrame, target: float, column="precision"):
    """The lowest threshold whose estimated precision (or ``column``, e.g. its interval's
    lower limit ``precision_low``) is at least ``target`` at it and at every higher
    threshold where it is defined; None when there is none."""
    values = curve[column].to_numpy()
    ok = np.where(np.isnan(values), True, values >= target)
    # the run of thresholds, from the top, where the condition holds throughout
    failing = np.flatnonzero(~ok)
    start = failing[-1] + 1 if len(failing) else 0
    defined = start + np.flatnonzero(~np.isnan(values[start:]))
    return None if len(defined) == 0 else float(curve.threshold.iloc[defined[0]])


def highest_threshold_with_recall(curve: pd.DataFrame, target: float, column="recall"):
    """The highest threshold whose estimated recall (or ``column``) is at least ``target``;
    recall falls with the threshold, so every lower threshold qualifies too."""
    values = curve[column].to_numpy()
    ok = np.flatnonzero(~np.isnan(values) & (values >= target))
    return None if len(ok) == 0 else float(curve.threshold.iloc[ok[-1]])


def answer_log(session: Session, answered: list[str] | None = None) -> pd.DataFrame:
    """The expert's answers in order: position, item_id, label, proposal_probability (q of
    the draw that asked, importance sampling) or inclusion_probability (Bernoulli), weight,
    answered (time, when given)."""
    pool, sampler = session.pool, session.sampler
    items = np.array([item for item, _ in session.log], dtype=np.int64)
    labels = [label for _, label in session.log]
    n = len(items)
    q = np.full(n, np.nan)
    pi = np.full(n, np.nan)
    weight = np.full(n, np.nan)
    if session.regression:
        weight = sampler.answer_weights()
    elif isinstance(sampler, ImportanceSampler):
        draws = sampler.draws()
        asked = _answer_draws(draws.items, items, sampler.deterministic)
        q, weight = draws.q[asked], draws.weight[asked]
    elif isinstance(sampler, BernoulliSampler):
        pi = _bernoulli_pi(sampler)[:n]
        weight = 1.0 / pi
    elif isinstance(sampler, StratifiedSampler):
        weight = design_weights(session)
    frame = pd.DataFrame(
        {
            "position": np.arange(1, n + 1),
            "item_id": pool.ids[items] if n else [],
            "label": labels if session.regression else [pool.classes[c] for c in labels],
            "proposal_probability": q,
            "inclusion_probability": pi,
            "weight": weight,
        }
    )
    if answered is not None:
        frame["answered"] = list(answered)[:n]
    return frame


def _answer_draws(drawn: np.ndarray, answered: np.ndarray, deterministic: bool) -> np.ndarray:
    """Index of the draw that asked each answer: the first draw of each new item
    (deterministic oracle, reused draws ask nothing) or every draw (stochastic)."""
    if not deterministic:
        return np.arange(len(answered))
    _, first = np.unique(drawn, return_index=True)
    first = np.sort(first)
    if not np.array_equal(drawn[first], answered):
        raise ValueError("the draws do not match the answer log.")
    return first


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe_csv(frame: pd.DataFrame) -> str:
    """``frame`` as CSV text in which no cell runs as a spreadsheet formula: a text cell that
    starts with = + - @, a tab or a carriage return (and is not a number) gets a leading
    apostrophe, as OWASP recommends against CSV injection. Numeric columns are untouched."""

    def neutral(value):
        if isinstance(value, str) and value.startswith(_FORMULA_START):
            try:
                float(value)
            except ValueError:
                return "'" + value
        return value

    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(neutral)
    safe.columns = [neutral(str(c)) for c in safe.columns]
    return safe.to_csv(index=False)


def report(session: Session, confidence_level: float = 0.95, **context) -> dict:
    """The estimate report: measure, sampler, settings, seed, estimate, interval, labels used,
    plus ``context`` (e.g. pool name, session id)."""
    est = session.estimate()
    low, high = est.confidence_interval(confidence_level)
    components = [
        {
            "component": name,
            "estimate": None if np.isnan(est.value[i]) else float(est.value[i]),
            "ci_low": None if np.isnan(low[i]) else float(low[i]),
            "ci_high": None if np.isnan(high[i]) else float(high[i]),
        }
        for i, name in enumerate(est.component_names)
    ]
    return {
        **context,
        "measure": session.measure_name,
        "sampler": session.sampler_name,
        "settings": {"budget": session.budget, **session.options},
        "seed": session.seed,
        "confidence_level": confidence_level,
        "labels_used": session.n_labels,
        "draws": est.n_draws,
        "defined": est.defined,
        "reason": est.reason,
        "interval_note": est.interval_note(),
        "components": components,
    }

"""A labelling session: pool + measure + sampler + the ordered log of answers.

The log and the seed are the only state: the sampler is rebuilt and the log replayed to undo,
resume or load, which reproduces the identical proposals and estimate. Draws of items a
deterministic oracle already answered are recorded from the stored answer without asking.
Copies of the sampler taken every ``CHECKPOINT_EVERY`` answers (the last two are kept) only
shorten the replay of an undo; they hold nothing the log does not determine.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .bernoulli import BernoulliSampler
from .catalog import get_measure
from .estimators import Estimate, estimate
from .measures import Measure
from .pool import Pool
from .regression import (
    RegressionBernoulliSampler,
    RegressionPool,
    checked_value,
    get_regression_measure,
    make_regression_sampler,
)
from .samplers import (
    AISSampler,
    ImportanceSampler,
    OASISSampler,
    PassiveSampler,
    Proposal,
    StaticISSampler,
)
from .strata import fitting_depth
from .stratified import StratifiedSampler

__all__ = [
    "Session",
    "make_sampler",
    "SAMPLER_NAMES",
    "SessionError",
    "informative_items",
    "pool_fingerprint",
    "log_digest",
    "ReplayError",
]

SAMPLER_NAMES = ("ais", "ais-1", "bernoulli", "is", "stratified", "neyman", "passive", "oasis")
_FORMAT_VERSION = 2
CHECKPOINT_EVERY = 10  # answers between copies of the sampler (an undo replays fewer)
_CHECKPOINTS_KEPT = 2
# Measures whose name changed meaning, with the name of what a session saved before meant:
# in format 1 and in databases before user_version 1, ``macro_f1`` was seed 004's harmonic mean.
RENAMED_MEASURES = {"macro_f1": "macro_f1_harmonic"}


class SessionError(ValueError):
    """A session cannot be built, replayed or loaded."""


class ReplayError(SessionError):
    """The answer at ``position`` (0-based) of a log does not fit the replay: the answers
    before it replay; from it on the log is inconsistent."""

    def __init__(self, message: str, position: int):
        super().__init__(message)
        self.position = position


# Options added after sessions were first saved, per sampler: option -> (the default of a new
# session, the behaviour of a session saved without it). Both are saved with a new session, so
# its log replays the same draws whatever the defaults become.
_LATER_OPTIONS = {
    "passive": {"batch_repeats": (True, False), "separate_labelled": (True, False)},
    "is": {"batch_repeats": (True, False), "separate_labelled": (True, False)},
    "ais": {
        "batch_repeats": (True, False),
        "oracle_model": ("mixture", "block"),
        "model_averaging": (True, False),
        "block_share": (0.1, None),
        "flat_tree": (True, False),
        "bound_find_effect": (True, False),
        "floor_by_cost": (True, False),
        "integrate_offsets": ("recalibrated", "none"),
        "fit_block_sd": ("recalibrated", "none"),
        "unanswered_sd": ("prior", "fitted"),
        "warm_start": (True, False),
        "root_component": (True, False),
        "hindsight_weights": (True, False),
    },
    "ais-1": {"batch_repeats": (True, False)},
    "bernoulli": {"oracle_model": ("mixture", "block"), "model_averaging": (True, False)},
}


def saved_options(sampler_name: str, options: dict, pool=None) -> dict:
    """The options of a saved session as they were when it was saved: sessions saved before
    repeated draws were batched replay one draw at a time, passive and static IS sessions saved
    before labelled items were kept apart draw the next unlabelled item by rejection, AIS
    and Bernoulli sessions saved before the item-level model replay with the Dirichlet tree's
    block-level one, and AIS sessions saved before the mixture's tree was flat and its share
    fixed replay with the share chosen after every answer on the tree of ``depth`` levels,
    AIS sessions saved before ``bound_find_effect`` with Prop. 4's values everywhere, AIS
    sessions saved before ``floor_by_cost`` with only the saturated cells floored, AIS
    sessions saved before ``integrate_offsets`` with the item-level model at its MAP, AIS
    sessions saved before ``fit_block_sd`` with its block intercepts' sd at ``block_sd``,
    AIS sessions saved before ``warm_start`` with the item-level model fitted from the
    identity after every answer, AIS sessions saved before ``root_component`` with Prop.
    4's deterministic form alone in the item-level component, and AIS sessions saved before
    ``hindsight_weights`` with their terms weighed by the models of their own stages alone.
    Regression sessions (``pool`` a ``RegressionPool``) came later than all of these."""
    if isinstance(pool, RegressionPool):
        return dict(options)
    later = _LATER_OPTIONS.get(sampler_name, {})
    return {**{name: old for name, (_, old) in later.items()}, **options}


def informative_items(pool: Pool | RegressionPool, measure) -> np.ndarray:
    """Whether each item's answer can change the measure, (N,) bool: its code's loss differs
    between the classes (``Measure.informative_codes``); every item of a regression pool.
    Once a deterministic oracle has answered all of them the estimate is the measure itself,
    and no importance-sampling proposal has mass left on an unlabelled item (Prop. 4's q is
    zero where the loss is zero for every label)."""
    if isinstance(pool, RegressionPool):
        return np.ones(pool.n_pool, dtype=bool)
    return measure.informative_codes(measure.n_codes(pool), pool.n_classes)[measure.codes(pool)]


def make_sampler(name: str, pool: Pool, measure: Measure, seed: int, **options):
    """Build a sampler by name (see ``SAMPLER_NAMES``); ``options`` go to its constructor.

    Blocks and strata not given in ``options`` are the papers' (2^8 blocks, seed 003 Sec.
    5.2; 10 strata) where the pool can fill each with an item, else as many as it can
    (``fitting_depth``): a pool of 200 items gets a tree of depth 7."""
    options = _fitting(name, pool, options)
    rng = np.random.default_rng(seed)
    deterministic = options.pop("deterministic", True)
    batch = options.pop("batch_repeats", True)  # ignored by designs that never repeat a draw
    if name == "passive":
        return PassiveSampler(pool, measure, deterministic, rng, batch_repeats=batch, **options)
    if name == "is":
        return StaticISSampler(pool, measure, deterministic, rng, batch_repeats=batch, **options)
    if name == "ais":
        return AISSampler(pool, measure, deterministic, rng, batch_repeats=batch, **options)
    if name == "ais-1":
        n_blocks = options.pop("n_blocks")
        return AISSampler(
            pool,
            measure,
            deterministic,
            rng,
            depth=1,
            branching=n_blocks,
            batch_repeats=batch,
            oracle_model=options.pop("oracle_model", "block"),  # seed 003's variant
            **options,
        )
    if name == "oasis":
        return OASISSampler(pool, measure, deterministic, rng, **options)
    if name in ("stratified", "neyman"):
        allocation = "neyman" if name == "neyman" else "proportional"
        return StratifiedSampler(pool, measure, rng=rng, allocation=allocation, **options)
    if name == "bernoulli":
        return BernoulliSampler(pool, measure, rng=rng, **options)
    raise SessionError(f"Unknown sampler `{name}`; choose one of: {', '.join(SAMPLER_NAMES)}.")


def _fitting(name: str, pool: Pool, options: dict) -> dict:
    """``options`` with the blocks or strata ``make_sampler`` fits to the pool where not given."""
    options = dict(options)
    n = pool.n_pool
    if name in ("ais", "bernoulli") and "partition" not in options:
        options.setdefault("depth", fitting_depth(n, options.get("branching", 2)))
    elif name == "ais-1":
        options.setdefault("n_blocks", 2 ** fitting_depth(n))
    elif name == "oasis":
        options.setdefault("n_strata", 2 ** fitting_depth(n))
    elif name in ("stratified", "neyman"):
        options.setdefault("n_strata", min(10, n))
    return options


def pool_fingerprint(pool: Pool | RegressionPool) -> str:
    """A short hash of the pool's ids, scores and predictions, to refuse a mismatched pool."""
    digest = hashlib.sha256()
    if isinstance(pool, RegressionPool):
        arrays = (np.asarray(pool.ids).astype(str), pool.prediction)
    else:
        arrays = (np.asarray(pool.ids).astype(str), pool.scores, pool.y_pred)
    for array in arrays:
        digest.update(np.ascontiguousarray(array).tobytes())
    return digest.hexdigest()[:16]


def log_digest(log) -> str:
    """A short hash of an ordered answer log [(item, label), ...]: the exact state a write
    is made against (two logs of one length differ in their digest). A class label is an
    integer; a regression answer a number (``repr``: every float exactly)."""
    digest = hashlib.sha256()
    for item, label in log:
        digest.update(f"{int(item)}:{stored_answer(label)!r};".encode())
    return digest.hexdigest()[:16]


def _logged(label, pool) -> int | float:
    """A saved answer as a log entry: a number for a regression pool, else a class code."""
    return float(label) if isinstance(pool, RegressionPool) else int(label)


def stored_answer(label) -> int | float:
    """An answer as digests and the database keep it: an integer when it is one (a class
    code, or a whole regression answer), else the float itself."""
    return label if isinstance(label, float) and not float(label).is_integer() else int(label)


def first_component(estimate: Estimate, confidence_level: float) -> tuple[float, float, float]:
    """The first component's value and interval (NaN when undefined), for a history."""
    if not estimate.defined:
        return (np.nan, np.nan, np.nan)
    low, high = estimate.confidence_interval(confidence_level)
    return (float(estimate.value[0]), float(low[0]), float(high[0]))


@dataclass
class Session:
    """Pool, measure, sampler and the answer log; ``log`` holds (item index, label) pairs of
    the answers the expert gave (reused answers are derived, not logged)."""

    pool: Pool
    measure_name: str
    sampler_name: str
    seed: int = 0
    budget: int | None = None
    options: dict = field(default_factory=dict)
    log: list[tuple[int, int]] = field(default_factory=list)

    def __post_init__(self):
        self.regression = isinstance(self.pool, RegressionPool)
        if self.regression:
            self.measure = get_regression_measure(self.measure_name)
        else:
            self.measure = get_measure(self.measure_name, self.pool.n_classes)
        later = {} if self.regression else _LATER_OPTIONS.get(self.sampler_name, {})
        self.options = {**{name: new for name, (new, _) in later.items()}, **self.options}
        self._checkpoints: dict[int, object] = {}  # answers recorded -> a copy of the sampler
        self._fresh = False  # the sampler is as built from the seed (nothing drawn yet)
        # ``informative_items`` and their count, when ``exhausted`` is first asked
        self._informative: tuple[np.ndarray, int] | None = None
        self.taken: list[int] = []  # positions of answers ``record`` took on replay
        self._replay(list(self.log))

    def _replay(
        self,
        answers: list[tuple[int, int]],
        start: int = 0,
        observe: Callable[[], None] | None = None,
        checkpoints: bool = True,
    ) -> None:
        """Record ``answers[start:]`` again, from the seed (``start`` 0) or from the checkpoint
        after ``start`` answers; only the last checkpoints on the way are taken (none without
        ``checkpoints``). ``observe`` is called after each answer."""
        if start:
            self.sampler = self._copy_sampler(self._checkpoints[start])
            self._fresh = False
        elif not self._fresh:
            self._rebuild()
        self.log = list(answers[:start])
        self._checkpoints = {n: c for n, c in self._checkpoints.items() if n <= start}
        boundaries = range(CHECKPOINT_EVERY, len(answers) + 1, CHECKPOINT_EVERY)
        wanted = set(boundaries[-_CHECKPOINTS_KEPT:]) if checkpoints else set()
        self.taken = [position for position in self.taken if position < start]
        for position in range(start, len(answers)):
            item, label = answers[position]
            try:
                self.record(item, label, checkpoint=position + 1 in wanted, replay=True)
            except (SessionError, ValueError) as error:
                raise ReplayError(
                    f"answer {position + 1} of {len(answers)} (item {item}, label {label}) "
                    f"does not fit the answers before it: {error}",
                    position,
                ) from None
            if observe is not None:
                observe()

    def _copy_sampler(self, sampler):
        """A deep copy of ``sampler`` that shares the pool and the measure (never changed)."""
        return copy.deepcopy(
            sampler, memo={id(self.pool): self.pool, id(self.measure): self.measure}
        )

    def copy(self) -> Session:
        """An independent session in the same state, without replaying the log."""
        return self._twin(self._copy_sampler(self.sampler))

    def snapshot(self) -> Session:
        """A session in the same state for others to ``copy()``, never to change: it shares
        the checkpoint taken after the last answer when there is one (no copying), else it
        is a copy."""
        checkpoint = self._checkpoints.get(len(self.log))
        return self._twin(
            checkpoint if checkpoint is not None else self._copy_sampler(self.sampler)
        )

    def _twin(self, sampler) -> Session:
        twin = copy.copy(self)
        twin.log = list(self.log)
        twin.taken = list(self.taken)
        twin.sampler = sampler
        twin._checkpoints = dict(self._checkpoints)  # checkpoints are never changed, only replaced
        return twin

    def _rebuild(self) -> None:
        options = dict(self.options)
        if self.sampler_name == "bernoulli" and self.budget is not None:
            options.setdefault("budget", self.budget)
        build = make_regression_sampler if self.regression else make_sampler
        self.sampler = build(self.sampler_name, self.pool, self.measure, self.seed, **options)
        self._fresh = True

    @property
    def n_labels(self) -> int:
        return len(self.log)

    @property
    def exhausted(self) -> bool:
        """Every item whose answer can change the measure is labelled (``informative_items``;
        a deterministic oracle): the estimate is exact, and no further answer could move it.
        Precision reaches it once the predicted positives are labelled, whatever the budget."""
        if not self.options.get("deterministic", True):
            return False
        if self._informative is None:
            mask = informative_items(self.pool, self.measure)
            self._informative = (mask, np.count_nonzero(mask))
        mask, count = self._informative
        if len(self.log) < count:  # O(1) while too few answers: every measure but precision
            return False
        # a deterministic oracle is asked about each item once, so the log's items are distinct
        return np.count_nonzero(mask[[item for item, _ in self.log]]) == count

    @property
    def done(self) -> bool:
        """The budget is used (distinct labels for the importance-sampling and stratified
        designs; for Bernoulli sampling all planned rounds, the budget being their expected
        size), or the session is ``exhausted``."""
        if isinstance(self.sampler, BernoulliSampler | RegressionBernoulliSampler):
            return self.sampler.finished or self.exhausted
        return (self.budget is not None and self.n_labels >= self.budget) or self.exhausted

    def next_item(self) -> Proposal:
        """The next item that needs the expert's answer; reused answers are recorded here."""
        if self.exhausted:
            raise SessionError(
                f"every item whose answer can change the {self.measure_name} is labelled; "
                "the estimate is exact."
            )
        if self.done:
            raise SessionError("the label budget is used up.")
        self._fresh = False
        while True:
            proposal = self.sampler.propose()
            if proposal.known_label is None:
                return proposal
            self.sampler.record(proposal.known_label)

    def record(
        self, item: int, label: int, checkpoint: bool | None = None, replay: bool = False
    ) -> None:
        """Record the expert's ``label`` for ``item`` (which must be the proposed item).

        ``checkpoint``: keep a copy of the sampler after this answer (default: after every
        ``CHECKPOINT_EVERY``-th); a replay that will never undo passes False. ``replay``:
        the answer comes from the saved log. Where this machine's proposal drew another item
        than the log's (a log made where arithmetic differs in its last bits), an
        importance-sampling design takes the logged one (``ImportanceSampler.take``) and its
        position goes to ``taken``; other designs, and a live answer, must match.
        """
        if checkpoint is None:
            checkpoint = (len(self.log) + 1) % CHECKPOINT_EVERY == 0
        proposal = self.next_item()
        if int(item) != proposal.item:
            if not (replay and isinstance(self.sampler, ImportanceSampler)):
                raise SessionError(
                    f"the answer is for item {item} but the sampler proposed item "
                    f"{proposal.item}; the log does not belong to this pool, seed or sampler."
                )
            self.sampler.take(item)
            self.taken.append(len(self.log))
        answer = checked_value(label) if self.regression else int(label)
        self.sampler.record(answer)
        self.log.append((int(item), answer))
        if checkpoint:
            self._checkpoints[len(self.log)] = self._copy_sampler(self.sampler)
            for old in sorted(self._checkpoints)[:-_CHECKPOINTS_KEPT]:
                del self._checkpoints[old]

    def undo(self) -> None:
        """Forget the last answer: replay the shorter log from the latest checkpoint within
        it, or from the seed."""
        if not self.log:
            raise SessionError("there is no answer to undo.")
        self.rewind(len(self.log) - 1)

    def rewind(self, n_labels: int) -> None:
        """Keep the first ``n_labels`` answers and forget the rest: replay them from the
        latest checkpoint within them (``rewind_start``), or from the seed."""
        self._replay(self.log[:n_labels], self.rewind_start(n_labels))

    def rewind_start(self, n_labels: int) -> int:
        """The answers a rewind to ``n_labels`` starts from: its latest checkpoint within
        them, or 0 (the seed)."""
        return max((n for n in self._checkpoints if n <= n_labels), default=0)

    def estimate(self, measure_name: str | None = None) -> Estimate:
        """The estimate of the session's measure, or of another one (sample reuse)."""
        if self.regression:
            other = measure_name and get_regression_measure(measure_name)
            return self.sampler.estimate(other or None)
        if measure_name is None:
            return estimate(self.sampler)
        return estimate(self.sampler, get_measure(measure_name, self.pool.n_classes))

    def history(
        self, confidence_level: float = 0.95, max_points: int | None = None
    ) -> list[tuple[int, float, float, float]]:
        """(labels, estimate, interval low, interval high) of the first component after each
        answer in the log, from a replay of a copy (NaN where the measure is not defined).
        With ``max_points``, only after every ``ceil(answers / max_points)``-th answer and
        the last (an estimate costs more than a replayed step)."""
        replay = Session(
            self.pool, self.measure_name, self.sampler_name, self.seed, self.budget, self.options
        )
        return replay.replay_log(self.log, confidence_level, max_points, checkpoints=False)

    def replay_log(
        self,
        answers: list[tuple[int, int]],
        confidence_level: float | None = None,
        max_points: int | None = None,
        checkpoints: bool = True,
        observe: Callable[[], None] | None = None,
    ) -> list[tuple[int, float, float, float]]:
        """Replace the log by ``answers``, replayed from the seed. With ``confidence_level``,
        return their history (as ``history``) on the way: one replay where loading a session
        and then asking for its history took two; ``observe`` is called after each answer
        (``insight.Trace.following`` traces the replay with it). ``ReplayError`` names an
        answer that does not fit."""
        n = len(answers)
        stride = max(1, -(-n // max_points)) if max_points else 1
        rows = []

        def watch() -> None:
            if confidence_level is not None and (self.n_labels % stride == 0 or self.n_labels == n):
                point = first_component(self.estimate(), confidence_level)
                rows.append((self.n_labels, *point))
            if observe is not None:
                observe()

        self._replay(list(answers), observe=watch, checkpoints=checkpoints)
        return rows

    def to_json(self) -> str:
        return json.dumps(
            {
                "version": _FORMAT_VERSION,
                "pool": pool_fingerprint(self.pool),
                "measure": self.measure_name,
                "sampler": self.sampler_name,
                "seed": self.seed,
                "budget": self.budget,
                "options": self.options,
                "log": [[item, label] for item, label in self.log],
            }
        )

    @classmethod
    def from_json(cls, text: str, pool: Pool) -> Session:
        """Load a session saved by ``to_json`` onto ``pool`` and replay its log."""
        try:
            data = json.loads(text)
            if data.get("version") not in (1, _FORMAT_VERSION):
                raise SessionError(f"unsupported session format {data.get('version')!r}.")
            if data["version"] == 1:
                data["measure"] = RENAMED_MEASURES.get(data["measure"], data["measure"])
            if data["pool"] != pool_fingerprint(pool):
                raise SessionError("the session was saved for a different pool.")
            return cls(
                pool,
                data["measure"],
                data["sampler"],
                int(data["seed"]),
                data["budget"],
                saved_options(data["sampler"], data["options"], pool),
                [(int(i), _logged(y, pool)) for i, y in data["log"]],
            )
        except (KeyError, TypeError, json.JSONDecodeError) as exc:
            raise SessionError(f"the session file is malformed ({exc}).") from None

"""What the pages share: the session database, cached pools, the open session, and the
texts that turn engine names into words. No page logic lives here."""

from __future__ import annotations

import os
import re
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

import evalcore as ec
from evalcore import figures, insight, regression

SAMPLE_DIR = Path(__file__).resolve().parents[1] / "sample_data"
SAMPLES = {
    "products.csv": (
        "Product record pairs",
        "2,000 pairs of product records; does the pair describe the same product? "
        "Binary, 1 match in 24, readable records.",
    ),
    "needle.csv.gz": (
        "Needle in a haystack",
        "60,000 items, 12 positives (1 in 5,000): where a random sample fails.",
    ),
    "sentiment3.csv": (
        "Three-class sentiment",
        "1,500 short reviews, negative / neutral / positive, one score per class.",
    ),
}
REGRESSION_SAMPLES = {
    "deliveries.csv": (
        "Delivery times (regression)",
        "3,000 predicted delivery times in minutes with the model's own uncertainty; the "
        "errors are heavy-tailed on the longest routes.",
    ),
}
SAMPLER_LABELS = {
    "ais": "Adaptive importance sampling (AIS)",
    "bernoulli": "Bernoulli sampling",
    "is": "Static importance sampling",
    "stratified": "Stratified, proportional",
    "neyman": "Stratified, Neyman",
    "passive": "Passive (uniform random)",
    "oasis": "OASIS (F-measures, binary)",
}
MEASURE_LABELS = {
    "f1": "F1 score",
    "fbeta": "F-beta score",
    "precision": "Precision",
    "recall": "Recall",
    "accuracy": "Accuracy",
    "balanced_accuracy": "Balanced accuracy",
    "mcc": "Matthews correlation",
    "fowlkes_mallows": "Fowlkes-Mallows index",
    "brier": "Brier score",
    "pr_curve": "Precision-recall curve",
    "macro_f1": "Macro-averaged F1",
    "macro_f1_harmonic": "Macro F1, harmonic mean of macro precision and recall",
    "micro_f1": "Micro-averaged F1",
    "per_class_recall": "Recall of every class",
    "mae": "Mean absolute error",
    "mse": "Mean squared error",
    "rmse": "Root mean squared error",
    "r2": "Coefficient of determination (R²)",
}
REGRESSION_MEASURES = ["mae", "rmse", "mse", "r2"]
SAMPLE_UNITS = {"deliveries.csv": "minutes"}
REGRESSION_SAMPLERS = ["ais", "is", "bernoulli", "stratified", "passive"]
BINARY_MEASURES = [
    "f1",
    "fbeta",
    "precision",
    "recall",
    "accuracy",
    "balanced_accuracy",
    "mcc",
    "fowlkes_mallows",
    "brier",
    "pr_curve",
]
MULTICLASS_MEASURES = ["macro_f1", "macro_f1_harmonic", "micro_f1", "accuracy", "per_class_recall"]
_IMAGE_URL = re.compile(r"^https?://\S+\.(png|jpe?g|gif|webp|svg)(\?\S*)?$", re.IGNORECASE)


def database_path() -> Path:
    """``EVAL_DB`` or ``evaluation_sessions.db`` in the working directory."""
    return Path(os.environ.get("EVAL_DB", "evaluation_sessions.db"))


@st.cache_resource
def open_store(path: str) -> ec.Store:
    return ec.Store(path)


def store() -> ec.Store:
    return open_store(str(database_path()))


@st.cache_resource(max_entries=4, show_spinner="Loading the pool…")
def load_pool(key: str, path: str) -> tuple[ec.Pool, str]:
    return open_store(path).load_pool(key)


def stored_pool(key: str) -> tuple[ec.Pool, str]:
    return load_pool(key, str(database_path()))


def class_label(pool: ec.Pool, code: int) -> str:
    """A button label for class ``code``: binary 0/1 pools say what 0 and 1 mean."""
    name = str(pool.classes[code])
    if pool.n_classes == 2 and tuple(map(str, pool.classes)) == ("0", "1"):
        return ("Negative", "Positive")[code] + f" ({name})"
    return plain(name)


def measure_label(measure_name: str) -> str:
    """'F1 score' for "f1", 'F-beta score' for "fbeta:2": the measure in words."""
    return MEASURE_LABELS.get(measure_name.split(":")[0], measure_name)


def describe(measure_name: str, sampler_name: str) -> str:
    """'F1 score by Adaptive importance sampling (AIS)', for titles and lists."""
    return f"{measure_label(measure_name)} by {SAMPLER_LABELS.get(sampler_name, sampler_name)}"


# How every figure is drawn: the shared template without Streamlit's restyling, as exported.
CHART = {"width": "stretch", "theme": None, "config": figures.CONFIG}


def component_label(pool: ec.Pool, measure_name: str, component: str) -> str:
    """What to call one component of a measure: the measure's name for a scalar measure
    ("F1 score"), the class's name for a per-class one, the component's id otherwise
    ("recall@50")."""
    per_class = re.fullmatch(r"\w+\[(\d+)\]", component)
    if per_class:
        return f"Recall of class {pool.classes[int(per_class.group(1))]}"
    measure, _, parameter = measure_name.partition(":")
    if component not in (measure, measure_name):
        return component
    label = MEASURE_LABELS.get(measure, measure_name)
    return f"{label} (beta = {parameter})" if measure == "fbeta" and parameter else label


def figure_files(session: ec.Session, trace: pd.DataFrame, pool_name: str, level: float) -> dict:
    """Each figure of the session as a self-contained HTML page (name -> text), titled with
    the pool, measure, sampler and labels so that the file says what it shows on its own."""
    component = trace.component.iloc[0]
    name = component_label(session.pool, session.measure_name, component)
    built = {"estimate": figures.estimate_figure(trace, component, name)}
    if trace.kl_consecutive.notna().any() or trace.kl_optimal.notna().any():
        built["proposal-kl"] = figures.kl_figure(trace)  # Bernoulli sampling has no proposal
    built["effective-sample-size"] = figures.ess_figure(trace)
    built["weights"] = figures.weights_figure(insight.design_weights(session))
    if not session.regression and session.pool.n_classes == 2:
        truth = insight.true_pr_curve(session, 100) if session.pool.y_true is not None else None
        samples = insight.bootstrap_pr_curves(session, 100, n_curves=30, seed=0)
        curve = insight.pr_curve_table(session, 100, level)
        built["pr-curve"] = figures.pr_curve_figure(curve, truth, samples)
    context = (
        f"{pool_name} · {describe(session.measure_name, session.sampler_name)}"
        f" · {session.n_labels} labels · {level:.0%} intervals"
    )
    return {key: figures.to_html(figures.titled(figure, context)) for key, figure in built.items()}


def is_regression(pool) -> bool:
    return isinstance(pool, regression.RegressionPool)


def measure_choices(pool: ec.Pool) -> list[str]:
    if is_regression(pool):
        return REGRESSION_MEASURES
    return BINARY_MEASURES if pool.n_classes == 2 else MULTICLASS_MEASURES


def regression_sampler_uses(sampler_name: str, pool) -> str:
    """One line: what a regression sampler draws on."""
    spread = pool.spread is not None
    uses = {
        "ais": "Learns where the errors are large from your answers"
        + (", starting from the model's own uncertainty." if spread else "."),
        "is": "Uses the model's own uncertainty as given; your answers never change its proposal."
        if spread
        else "Needs the model's own uncertainty (a spread column); this pool has none.",
        "bernoulli": "Includes each item with a probability from the model's own uncertainty."
        if spread
        else "Includes every item with the same probability (this pool has no spread).",
        "stratified": "Uses the "
        + ("model's uncertainty" if spread else "predictions")
        + " for its strata (equal ranges by the CSF rule).",
        "passive": "Uses nothing from the model: every item is equally likely.",
    }
    return uses[sampler_name]


def sampler_uses(sampler_name: str, pool: ec.Pool) -> str:
    """One line: which of the classifier's outputs the sampler draws on."""
    if is_regression(pool):
        return regression_sampler_uses(sampler_name, pool)
    probabilities = "the classifier's probabilities (the probability column, or expit(score))"
    if pool.n_classes != 2:
        probabilities = "the classifier's class probabilities"
    uses = {
        "ais": (
            f"Uses {probabilities} item by item, recalibrated on your answers, mixed with a "
            "model of the scores' blocks that keeps looking where the classifier is sure."
            if pool.n_classes == 2
            else f"Uses the scores' order for its blocks and {probabilities} as the blocks' "
            "prior, corrected by your answers."
        ),
        "bernoulli": f"Uses {probabilities} as its model, corrected by your answers.",
        "is": f"Uses {probabilities} as given; your answers never change its proposal.",
        "stratified": "Uses the scores only (strata of equal score range by the CSF rule).",
        "neyman": f"Uses the scores for its strata and {probabilities} for the allocation.",
        "passive": "Uses nothing from the classifier: every item is equally likely.",
        "oasis": f"Uses the scores for its strata and {probabilities} as their prior.",
    }
    return uses[sampler_name]


def sampler_choices(pool: ec.Pool) -> list[str]:
    if is_regression(pool):
        return [n for n in REGRESSION_SAMPLERS if n != "is" or pool.spread is not None]
    return [name for name in SAMPLER_LABELS if pool.n_classes == 2 or name != "oasis"]


def plain(text) -> str:
    """``text`` with Markdown's special characters escaped, for widget labels."""
    return re.sub(r"([\\`*_{}\[\]()#+\-.!|<>~$:])", r"\\\1", str(text))


def is_image_url(value: str) -> bool:
    return bool(_IMAGE_URL.match(value.strip()))


def open_session(session_id: str) -> tuple[ec.Session, ec.store.SessionRecord] | None:
    """The session ``session_id``, in step with the database.

    Kept in ``st.session_state`` so a label costs one step, not a replay; reloaded from the
    database when another window changed its log (compared whole: another window may have
    undone an answer and given another, to the same length).
    """
    try:
        record = store().session_record(session_id)
        saved = store().answers(session_id)
    except ec.StoreError as error:
        st.error(plain(error))
        return None
    cached = st.session_state.get("open_session")
    if cached is not None and cached[0] == session_id and cached[1].log == saved:
        return cached[1], record
    pool, _ = stored_pool(record.pool_key)
    try:
        with st.spinner("Replaying the saved answers…"):
            session = _restored(record, pool, saved)
    except ec.ReplayError as error:
        offer_repair(session_id, error)
        return None
    if session.taken:
        st.info(
            plain(
                "This session was labelled on a machine whose arithmetic differs slightly "
                f"from this server's: from answer {session.taken[0] + 1} on, this server "
                f"would have shown other items. All {len(saved)} answers are kept; "
                f"{len(session.taken)} of them are weighted by this server's sampling "
                "probabilities, so the estimate may differ slightly from the one shown there."
            )
        )
    st.session_state.open_session = (session_id, session)
    return session, record


@st.cache_resource
def _snapshots() -> dict:
    """Session id -> a copy of the session as some tab of this server last published it.
    Nobody changes a snapshot: a tab that opens the session copies it, so a reload replays
    the answers since the snapshot, not the whole log."""
    return {}


def publish(session_id: str, session: ec.Session) -> None:
    """Keep a snapshot of ``session`` for the next tab that opens it (after a replay, after an
    undo, and at every checkpoint, where it costs no copy)."""
    _snapshots()[session_id] = session.snapshot()


TRACE_POINTS = 200  # a replayed history or trace estimates at most this many times


@st.cache_resource
def histories() -> dict:
    """(session id, level) -> (log, rows): the estimate after each answer of ``log`` for the
    label page's sparkline, shared by every tab of this server so that a reload does not
    replay the log for it. An entry is replaced, never changed in place."""
    return {}


def _restored(record: ec.store.SessionRecord, pool: ec.Pool, saved: list) -> ec.Session:
    """The session of the ``saved`` log from a snapshot whose answers begin it (plus the
    answers after it) or whose answers it begins (less the answers undone since); else
    replayed from the seed, traced on the way for the sparkline and the Convergence page
    (one replay, not three)."""
    session_id = record.id
    snapshot = _snapshots().get(session_id)
    shared = min(len(saved), len(snapshot.log)) if snapshot is not None else 0
    if (
        snapshot is not None
        and snapshot.log[:shared] == saved[:shared]
        and (
            snapshot.pool is pool or ec.pool_fingerprint(snapshot.pool) == ec.pool_fingerprint(pool)
        )
    ):
        session = snapshot.copy()
        try:
            while session.n_labels > len(saved):
                session.undo()  # from the snapshot's checkpoints
            for item, label in saved[session.n_labels :]:
                session.record(item, label)
            return session
        except (ec.SessionError, ValueError):
            pass  # the replay from the seed below names the answer that does not fit
    session = store().unanswered_session(record, pool)
    key = (session_id, record.confidence)
    stride = max(1, -(-len(saved) // TRACE_POINTS))
    builder = insight.Trace.following(session, saved, record.confidence, stride)
    histories()[key] = (list(saved), sparkline_rows(builder.table()))
    if saved:  # a trace at stride 1 for a new session would cost an estimate per answer
        keep_trace(key, builder)
    publish(session_id, session)
    return session


def sparkline_rows(trace: pd.DataFrame) -> list[tuple[float, float, float, float]]:
    """The first component's rows of ``trace`` as ``Session.history`` gives them: no
    interval where the estimate is not defined."""
    first = trace[trace.component == trace.component.iloc[0]] if len(trace) else trace
    return [
        (n, value, low, high) if np.isfinite(value) else (n, np.nan, np.nan, np.nan)
        for n, value, low, high in first[["n_labels", "estimate", "ci_low", "ci_high"]].itertuples(
            index=False, name=None
        )
    ]


def offer_repair(session_id: str, error: ec.ReplayError) -> None:
    """A saved log that no longer replays: say which answer, keep the ones before it on
    request, and let the whole log be downloaded first."""
    st.error(
        plain(
            f"The saved answers of this session cannot be replayed: {error} "
            f"The first {error.position} answers are consistent."
        )
    )
    log = store().answers(session_id)
    csv = "position,item,label\n" + "".join(
        f"{position},{item},{label}\n" for position, (item, label) in enumerate(log)
    )
    st.download_button(
        "Download the whole answer log (CSV)",
        csv,
        file_name=f"answers-{session_id}.csv",
        mime="text/csv",
        key="repair_download",
        on_click="ignore",
    )
    if st.button(f"Keep the first {error.position} answers and delete the rest", key="repair_keep"):
        store().truncate_answers(session_id, error.position)
        forget_open_session()
        st.rerun()


def current_session_id() -> str | None:
    """The session the tab is about: ``?session=`` when it names a saved session, else the one
    last opened in this tab, else None."""
    from_url = st.query_params.get("session")
    if from_url:
        try:
            return store().session_record(from_url).id
        except ec.StoreError:
            pass
    return st.session_state.get("session_id")


def require_session() -> tuple[str, ec.Session, ec.store.SessionRecord]:
    """The session the page is about: ``?session=`` in the URL, else the one last opened in
    this browser tab; stops the page with a pointer to the start page when there is none."""
    session_id = st.query_params.get("session") or st.session_state.get("session_id")
    if not session_id:
        st.info(
            "Open a session first: start one on the set-up page or resume one on the start page."
        )
        st.page_link(
            "views/start_page.py", label="Go to the start page", icon=":material/arrow_back:"
        )
        st.stop()
    opened = open_session(session_id)
    if opened is None:
        st.stop()
    st.query_params["session"] = session_id
    st.session_state.session_id = session_id
    return session_id, *opened


@st.cache_resource
def _traces() -> tuple[dict, threading.RLock]:
    """(session id, level) -> ``insight.Trace``, shared by the tabs of this server, and the
    lock that keeps two tabs from extending one trace at once."""
    return {}, threading.RLock()


@st.cache_resource
def _trace_replays() -> tuple[ThreadPoolExecutor, dict]:
    """The worker thread that replays sessions for their traces, and the replay under way per
    (session id, level): (the log it replays, its future)."""
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="trace"), {}


TRACE_WAIT = 0.5  # seconds a page waits for a replay before it shows what it has meanwhile


def session_trace(
    session_id: str, session: ec.Session, level: float, wait: float | None = None
) -> pd.DataFrame | None:
    """The session's trace, or None while it is being replayed. The traced answers are kept
    per server: coming back after more answers traces only the new ones, and after a few
    undos replays from the trace's checkpoint. An undo further back, another window's
    answers or twice the planned points need a new trace, a replay of the log; it runs in a
    worker thread, and when it takes longer than ``wait`` seconds (None: no limit)
    the caller gets None and shows what it has meanwhile (the replay goes on; look again)."""
    traces, lock = _traces()
    key = (session_id, level)
    with lock:
        builder = traces.get(key)
        if (
            builder is not None
            and len(builder.rows) <= 2 * TRACE_POINTS * builder.replay.measure.m
            and builder.extend(session.log)
        ):
            return builder.table()
    executor, replays = _trace_replays()
    log = list(session.log)
    with lock:
        running = replays.get(key)
        if running is None or running[0] != log[: len(running[0])]:
            stride = max(1, -(-len(log) // TRACE_POINTS))
            replays[key] = running = (log, executor.submit(_traced, session, level, stride, log))
    try:
        builder = running[1].result(timeout=wait)
    except FutureTimeout:
        return None
    with lock:
        if replays.get(key) is running:
            del replays[key]
        builder.extend(log)  # the answers given since the replay began, if any
        keep_trace(key, builder)
        return builder.table()


def keep_trace(key: tuple[str, float], builder: insight.Trace) -> None:
    """Keep ``builder`` as the trace of (session id, level) for the pages of this server."""
    traces, lock = _traces()
    with lock:
        traces[key] = builder
        while len(traces) > 4:  # each holds a replayed sampler: keep the latest few
            del traces[next(iter(traces))]


def trace_ready(session_id: str, level: float) -> bool:
    """Whether the replay for the session's trace has finished (or none is under way)."""
    running = _trace_replays()[1].get((session_id, level))
    return running is None or running[1].done()


def _traced(session: ec.Session, level: float, stride: int, log: list) -> insight.Trace:
    builder = insight.Trace(session, level, stride)
    builder.extend(log)
    return builder


def history_trace(session_id: str, session: ec.Session, level: float) -> pd.DataFrame | None:
    """The estimate's rows the label page keeps for its sparkline (first component), as a
    trace without the proposal's columns; None when this server has none for the session."""
    entry = histories().get((session_id, level))
    if entry is None or len(entry[1]) < 2:
        return None
    rows = pd.DataFrame(entry[1], columns=["n_labels", "estimate", "ci_low", "ci_high"])
    rows = rows.reindex(columns=insight.TRACE_COLUMNS)
    rows["component"] = session.measure.component_names[0]
    truth = true_value(session_id, session)
    if truth is not None:
        rows["true_value"] = truth
    return rows


@st.cache_resource
def _true_values() -> dict:
    """Session id -> the first component of its measure on the whole pool (O(N) to compute;
    a session's pool and measure never change), for every tab of this server."""
    return {}


def true_value(session_id: str, session: ec.Session) -> float | None:
    """The session's measure on the whole pool when the true labels are known (demo pools)."""
    if session.pool.y_true is None:
        return None
    values = _true_values()
    if session_id not in values:
        values[session_id] = float(
            session.measure.g(ec.true_risk(session.pool, session.measure))[0]
        )
    return values[session_id]


def forget_open_session() -> None:
    st.session_state.pop("open_session", None)

"""Label: answer the item the sampler picked; the estimate tightens as you go.

Everything that changes with an answer lives in one fragment, so a label key reruns only
the fragment. Each answer is saved to the database before the next item is shown.

A press is bound to the item on screen twice over. In the browser, ``PRESS_GUARD`` drops key
auto-repeat and any answer or undo press (key or click) made while the item that an earlier
press answered is still shown, or within 300 ms of a new item appearing (quicker than anyone
can see an item and choose an answer): the expert has not seen the next item yet. A press is
timed by when it was made (its event's time stamp), not by when the page handled it: a busy
page can handle a double click's second click after the next item has been up for 300 ms.
On the server, the answer and undo buttons' keys name the answer count (and the item), so
a press made on the page as it was before an answer, arriving after the run that showed the
next item, is for a widget that run no longer has, and Streamlit drops it; one arriving
during that run carries the item it was shown with and the digest of the log, and the
store refuses a write made against any other log.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

import evalcore as ec
from evalcore import figures
from views import common

session_id = st.query_params.get("session") or st.session_state.get("session_id")
if not session_id:
    st.title("Label")
    st.info("Start a session on the set-up page, or resume one on the start page.")
    st.page_link("views/start_page.py", label="Go to the start page", icon=":material/arrow_back:")
    st.stop()
if common.open_session(session_id) is None:
    st.page_link("views/start_page.py", label="Go to the start page", icon=":material/arrow_back:")
    st.stop()


def history(session: ec.Session, level: float) -> list:
    """The estimate after each answer. The rows of the log's unchanged beginning are kept (an
    undo drops the last), the row of one new answer is the estimate now; anything else (a
    new session, several answers at once, another window's answers) is a replay."""
    key = (session_id, level)
    log, rows = common.histories().get(key, ([], []))
    kept = 0
    for old, new in zip(log, session.log, strict=False):
        if old != new:
            break
        kept += 1
    if kept >= session.n_labels - 1:
        rows = [row for row in rows if row[0] <= kept]
        if kept == session.n_labels - 1:  # one answer given since
            rows.append((session.n_labels, *ec.session.first_component(session.estimate(), level)))
    else:
        rows = session.history(level, max_points=common.TRACE_POINTS)
    common.histories()[key] = (list(session.log), rows)
    return rows


# Our own constant script (no user input in it): runs in the page, in the capture phase of
# window, so it sees a press before Streamlit's shortcut and button handlers do.
PRESS_GUARD = """
<script>
(() => {
  if (window.__evalPressGuard) return;
  window.__evalPressGuard = true;
  const HOLD_MS = 2500;  // an answered item still on screen this long after: let a press by
  // quicker than anyone can see a new item and choose an answer; at 200 ms a double press
  // 270 ms apart answered the next item (the server shows it about 70 ms after the first)
  const MIN_SEEN_MS = 300;
  const ANSWER = '[class*="st-key-label_"] button, [class*="st-key-undo_"] button';
  const shownItem = () => {
    const heading = [...document.querySelectorAll("h4")].find(
      (h) => h.textContent.startsWith("Item "));
    return heading ? heading.textContent : null;
  };
  let last = null;
  let shown = shownItem();
  window.__evalItemShownAt = performance.now();
  new MutationObserver(() => {
    const now = shownItem();
    if (now !== shown) {
      shown = now;
      window.__evalItemShownAt = performance.now();
    }
  }).observe(document.body, { subtree: true, childList: true, characterData: true });
  const labelling = () => document.querySelector('[class*="st-key-label_"]') !== null;
  // when the press was made, not when a busy page got round to handling it
  const madeAt = (event) => Math.min(event.timeStamp, performance.now());
  const tooSoon = (event) => {
    const at = madeAt(event);
    if (at - window.__evalItemShownAt < MIN_SEEN_MS) return true;
    return last !== null && shownItem() === last.item && at - last.at < HOLD_MS;
  };
  const drop = (event) => { event.preventDefault(); event.stopImmediatePropagation(); };
  const remember = (event) => { last = { item: shownItem(), at: madeAt(event) }; };
  window.addEventListener("keydown", (event) => {
    if (!labelling() || event.ctrlKey || event.metaKey || event.altKey) return;
    if (!/^[1-9u]$/i.test(event.key)) return;
    const target = event.target;
    if (target && (target.isContentEditable || ["INPUT", "TEXTAREA", "SELECT"].includes(
      target.tagName))) return;
    if (event.repeat || tooSoon(event)) return drop(event);
    remember(event);
  }, true);
  window.addEventListener("click", (event) => {
    if (!event.target.closest || !event.target.closest(ANSWER)) return;
    if (tooSoon(event)) return drop(event);
    remember(event);
  }, true);
})();
</script>
"""

CHANGED_ELSEWHERE = "Another tab or window changed this session since this one showed it; "
SHOWS_SAVED = "This page now shows the saved state: answer the item it shows."


def own_log() -> str | None:
    """The digest of the log this window last showed (before any reload from the database)."""
    cached = st.session_state.get("open_session")
    if cached is None or cached[0] != session_id:
        return None
    return ec.log_digest(cached[1].log)


def save_answer(label: int, shown_item: int | None = None, shown_log: str | None = None) -> None:
    """Save, then record: the answer reaches the database before the next item is shown.

    A press carries the item on screen and the digest of the log it was shown after. The
    store refuses the write unless the saved log is
    still that log; a press that arrives after this window already answered is dropped as a
    repeat, and one that lost to another window is told so.
    """
    own = own_log()
    opened = common.open_session(session_id)
    if opened is None:
        return
    session, _ = opened
    if session.done:
        return
    current = ec.log_digest(session.log)
    if shown_log is not None and shown_log != current:
        st.session_state.flash = (
            "A key was pressed again before the next item appeared; that press was ignored. "
            "Answer the item shown now."
            if own != shown_log
            else CHANGED_ELSEWHERE + "your answer was not saved. " + SHOWS_SAVED
        )
        return
    proposal = session.next_item()
    if shown_item is not None and proposal.item != shown_item:
        st.session_state.flash = "That press was for an item no longer shown; it was ignored."
        return
    try:
        common.store().append_answer(
            session_id, session.n_labels, proposal.item, label, expected=current
        )
    except ec.SessionConflict:
        common.forget_open_session()
        st.session_state.flash = CHANGED_ELSEWHERE + "your answer was not saved. " + SHOWS_SAVED
        return
    except ec.StoreError as error:
        st.session_state.flash = str(error)
        return
    session.record(proposal.item, label)
    if session.n_labels % ec.session.CHECKPOINT_EVERY == 0:
        common.publish(session_id, session)  # a reload replays at most that many answers


def undo(shown_log: str | None = None) -> None:
    own = own_log()
    opened = common.open_session(session_id)
    if opened is None:
        return
    session, _ = opened
    current = ec.log_digest(session.log)
    if shown_log is not None and shown_log != current:
        st.session_state.flash = (
            "Undo was pressed again before the page caught up; that press was ignored."
            if own != shown_log
            else CHANGED_ELSEWHERE + "nothing was undone. " + SHOWS_SAVED
        )
        return
    if not session.n_labels:
        return
    try:
        common.store().remove_last_answer(session_id, session.n_labels - 1, expected=current)
    except ec.SessionConflict:
        common.forget_open_session()
        st.session_state.flash = CHANGED_ELSEWHERE + "nothing was undone. " + SHOWS_SAVED
        return
    except ec.StoreError as error:
        common.forget_open_session()
        st.session_state.flash = str(error)
        return
    session.undo()
    common.publish(session_id, session)  # a reload now copies it and replays nothing


def auto_label(count: int) -> None:
    """Demo: answer ``count`` items from the pool's true labels, each saved like a click."""
    for _ in range(count):
        opened = common.open_session(session_id)
        if opened is None or opened[0].done:
            return
        session = opened[0]
        truth = session.pool.y_true[session.next_item().item]
        save_answer(float(truth) if session.regression else int(truth))
        if "flash" in st.session_state:
            return


def save_typed_value(item: int, shown_log: str) -> None:
    """The value typed for a regression item: saved when it is a number, else said why."""
    text = str(st.session_state.get(f"value_{item}", "")).strip()
    try:
        value = ec.regression.checked_value(text)
    except ValueError:
        shown = common.plain(text if len(text) <= 40 else text[:40] + "…")  # typed: as text
        st.session_state.flash = (
            f"“{shown}” is not a number: type the true value in digits with a decimal point "
            "(e.g. 42.5). Nothing was saved."
            if text
            else "Type the true value first. Nothing was saved."
        )
        return
    save_answer(value, item, shown_log)


def value_field(item: int, shown_log: str, unit: str | None) -> None:
    """A regression answer: a number field in a form, so that Enter submits."""
    with st.form(key=f"answer_{item}", border=False, enter_to_submit=True):
        st.text_input(
            common.plain(f"True value ({unit})" if unit else "True value"),
            key=f"value_{item}",
            placeholder="a number, e.g. 42.5",
            help="Press Enter to save it; the undo button (or u outside the field) takes "
            "the last answer back.",
        )
        st.form_submit_button(
            "Save answer",
            type="primary",
            on_click=save_typed_value,
            args=(item, shown_log),
        )


def show_item(session: ec.Session, item: int, show_model: bool) -> None:
    pool = session.pool
    st.markdown(f"#### Item {common.plain(pool.ids[item])}")
    if pool.content is not None:
        with st.container(border=True):
            for column in pool.content.columns:
                value = str(pool.content.iloc[item][column])
                if common.is_image_url(value):
                    st.caption(column)
                    st.image(value.strip(), width=320)
                else:
                    st.text(f"{column}: {value}")
    else:
        st.caption("This pool has no content columns; the item is known by its id only.")
    if show_model and session.regression:
        unit = f" {pool.unit}" if pool.unit else ""
        spread = "" if pool.spread is None else f" (its own SD {pool.spread[item]:.3g}{unit})"
        st.caption(common.plain(f"Model: predicted {pool.prediction[item]:.4g}{unit}{spread}"))
    elif show_model:
        score = pool.scores[item]
        shown = f"{score:.4g}" if np.ndim(score) == 0 else ", ".join(f"{s:.3g}" for s in score)
        st.caption(
            f"Model: score {shown}, predicted {common.plain(pool.classes[pool.y_pred[item]])}"
        )


def sparkline(rows: list, truth: float | None) -> go.Figure:
    """Estimate and interval against labels; built in one call (add_hline and per-trace
    updates cost tens of milliseconds on every answer)."""
    labels = [r[0] for r in rows]
    traces = [
        go.Scatter(
            x=labels + labels[::-1],
            y=[r[3] for r in rows] + [r[2] for r in rows][::-1],
            fill="toself",
            line_width=0,
            fillcolor="rgba(31,119,180,0.2)",
            hoverinfo="skip",
            name="interval",
        ),
        go.Scatter(x=labels, y=[r[1] for r in rows], name="estimate"),
    ]
    if truth is not None:
        traces.append(
            go.Scatter(
                x=[labels[0], labels[-1]],
                y=[truth, truth],
                line=dict(dash="dot", color="gray"),
                name="true value",
            )
        )
    # room above and below what is drawn: a line or band at 1.0 was cut by the frame
    drawn = [v for r in rows for v in r[1:] if np.isfinite(v)] + (
        [truth] if truth is not None else []
    )
    low, high = (min(drawn), max(drawn)) if drawn else (0.0, 1.0)
    pad = max(0.02, 0.08 * (high - low))
    layout = dict(
        template=figures.TEMPLATE,
        height=190,
        margin=dict(l=50, r=10, t=10, b=40),
        legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom", font_size=12),
        xaxis_title="labels",
        yaxis=dict(title="estimate", range=[low - pad, high + pad]),
    )
    return go.Figure(data=traces, layout=layout)


@st.fragment
def labelling() -> None:
    opened = common.open_session(session_id)
    if opened is None:
        return
    session, record = opened
    level = record.confidence
    flash = st.session_state.pop("flash", None)
    if flash:
        st.error(flash)

    # The item is drawn (recording reused answers) and rendered first: it is what the
    # expert waits for; the estimate below includes the reused answers.
    item_side, estimate_side = st.columns([3, 2], gap="large")
    with item_side:
        if session.budget:
            st.progress(
                min(session.n_labels / session.budget, 1.0),
                text=f"{session.n_labels} of {session.budget} labels",
            )
        if session.sampler_name == "bernoulli":
            st.caption(
                "Bernoulli sampling: the budget is the expected number of labels; the rounds "
                "drawn decide the exact count. The estimate is valid at any point in a round."
            )
        shown_log = ec.log_digest(session.log)
        if session.exhausted:
            st.success(
                f"{common.measure_label(session.measure_name)}: every item whose answer can "
                "change it is labelled, so the estimate is exact and no further answer could "
                "change it."
            )
        elif session.done:
            st.success("The label budget is used: the estimate and its interval are final.")
        else:
            proposal = session.next_item()
            show_item(session, proposal.item, st.session_state.get("show_model", False))
            if session.regression:
                value_field(proposal.item, shown_log, session.pool.unit)
        # keys that name the answer count: a late press on an earlier page's button is
        # dropped by Streamlit (the module docstring)
        if not session.done and not session.regression:
            buttons = st.columns(min(session.pool.n_classes, 6))
            for code in range(session.pool.n_classes):
                # Streamlit shows the shortcut key on the button itself.
                buttons[code % len(buttons)].button(
                    common.class_label(session.pool, code),
                    key=f"label_{code}_{session.n_labels}_{proposal.item}",
                    on_click=save_answer,
                    args=(code, proposal.item, shown_log),
                    shortcut=str(code + 1) if code < 9 else None,
                    width="stretch",
                )
        st.button(
            "Undo last answer",
            key=f"undo_{session.n_labels}",
            on_click=undo,
            args=(shown_log,),
            shortcut="u",
            disabled=session.n_labels == 0,
        )
    with estimate_side:
        estimate = session.estimate()
        name = common.component_label(
            session.pool, session.measure_name, estimate.component_names[0]
        )
        counts = f"{estimate.n_draws} draws, {estimate.n_labels} labelled items"
        if estimate.defined and estimate.caveat is None:
            low, high = estimate.confidence_interval(level)
            st.metric(common.plain(f"Estimated {name}"), f"{estimate.value[0]:.3f}")
            st.caption(f"{level:.0%} interval: {low[0]:.3f} to {high[0]:.3f} · {counts}")
            from_model = [side[0] for side in estimate.limits_from_model(level)]
            if any(from_model):
                direction = "down" if from_model[0] else "up"
                st.caption(
                    f"The interval reaches {direction} to what the classifier's "
                    "probabilities imply",
                    help=common.plain(
                        "Corrected by your answers, the classifier's probabilities put the "
                        f"{name or 'measure'} at {estimate.model_value[0]:.3f}: the unlabelled "
                        "items may hold more or fewer of the rare cases (hidden false "
                        "negatives, say) than the sample has met so far, so the interval "
                        "includes that value until the answers rule it out."
                    ),
                )
        else:
            # no number with a degenerate band: the range the measure can still take, in words
            shown = f"{estimate.value[0]:.3f}" if estimate.defined else "not yet defined"
            st.metric(common.plain(f"Estimated {name}"), shown)
            st.caption(common.plain(f"{estimate.interval_note(name or None)} · {counts}"))
        rows = history(session, level)
        if len(rows) >= 2:
            # Redrawn every 5th answer only: an unchanged chart is not re-rendered, and
            # the chart is the costliest part of a step in the browser (~50 ms).
            shown = rows[: max(2, len(rows) - len(rows) % 5)]
            cached = st.session_state.get("sparkline")
            if cached is None or cached[:2] != (session_id, shown[-1]):
                cached = (
                    session_id,
                    shown[-1],
                    sparkline(shown, common.true_value(session_id, session)),
                )
                st.session_state.sparkline = cached
            st.plotly_chart(
                cached[2],
                width="stretch",
                theme=None,
                key="spark",
                config={"displayModeBar": False},
            )
        if session.pool.y_true is not None and not session.done:
            count = st.number_input("Items", 1, 1000, 10, key="auto_count")
            st.button(
                f"Auto-label {int(count)} items from the true labels (demo)",
                key="auto",
                on_click=auto_label,
                args=(int(count),),
            )


session, record = common.open_session(session_id)
st.session_state.session_id = session_id
st.query_params["session"] = session_id
st.title("Label")
st.caption(
    f"{common.describe(session.measure_name, session.sampler_name)} · session `{session_id}` "
    "(bookmark this page to come back)"
)
st.toggle(
    "Show the model's score and prediction",
    key="show_model",
    help="Hidden by default so that the model does not anchor your answer.",
)
st.html(PRESS_GUARD, unsafe_allow_javascript=True)
labelling()

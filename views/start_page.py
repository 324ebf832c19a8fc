"""Start: open a built-in pool or upload one, map its columns, check it; resume a session."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import evalcore as ec
from evalcore import figures, regression
from views import common

st.title("Label-efficient evaluation")
st.write(
    "Estimate how well a classifier performs on a large unlabelled test pool by labelling a "
    "few hundred items that a sampler picks for you."
)


def open_pool(name: str, file_name: str, data: bytes, mapping) -> None:
    """Validate, store and select a pool (a ``ColumnMapping`` or a regression one), then go
    to the set-up page."""
    frame = ec.frame_from_bytes(data, file_name)
    pool_from(frame, mapping)  # raises PoolValidationError
    key = common.store().save_pool(name, file_name, data, mapping)
    st.session_state.pool_key = key
    st.switch_page("views/setup_page.py")


def pool_from(frame, mapping):
    if isinstance(mapping, regression.RegressionMapping):
        return regression.RegressionPool.from_dataframe(frame, **dataclasses.asdict(mapping))
    return ec.Pool.from_dataframe(frame, mapping)


# -- saved sessions --------------------------------------------------------------------
try:
    saved = common.store().sessions()
except ec.StoreError as error:
    st.error(common.plain(error))
    st.stop()
if saved:
    st.subheader("Resume a session")
    st.caption(f"{len(saved)} saved, the most recently changed first.")
    # a box of its own that scrolls beyond a few sessions: with many saved, the pools and the
    # upload below were screens away
    listing = st.container(height=260 if len(saved) > 4 else "content", border=len(saved) > 4)
    with listing:
        for record in saved:
            budget = f" / {record.budget}" if record.budget else ""
            left, resume, delete = st.columns([6, 1, 1], vertical_alignment="center")
            changed = record.updated[:16].replace("T", " ")
            left.markdown(
                f"**{common.plain(record.pool_name)}** · "
                f"{common.describe(record.measure, record.sampler)} · "
                f"{record.n_answers}{budget} labels · last changed {changed} UTC"
            )
            if resume.button("Resume", key=f"resume_{record.id}"):
                common.forget_open_session()
                st.switch_page("views/label_page.py", query_params={"session": record.id})
            if delete.button("Delete", key=f"delete_{record.id}"):
                st.session_state.confirm_delete = record.id
            if st.session_state.get("confirm_delete") == record.id:
                st.warning(
                    f"Delete this session and its {record.n_answers} answers? "
                    "This cannot be undone."
                )
                yes, no = st.columns(2)
                if yes.button("Yes, delete", key=f"confirm_{record.id}", type="primary"):
                    common.store().delete_session(record.id)
                    st.session_state.pop("confirm_delete")
                    st.rerun()
                if no.button("Keep it", key=f"keep_{record.id}"):
                    st.session_state.pop("confirm_delete")
                    st.rerun()
    st.divider()

# -- built-in pools --------------------------------------------------------------------
st.subheader("Try a built-in pool")
samples = {**common.SAMPLES, **common.REGRESSION_SAMPLES}
columns = st.columns(len(samples))
for column, (file_name, (title, description)) in zip(columns, samples.items(), strict=True):
    with column.container(border=True):
        st.markdown(f"**{title}**")
        st.caption(description)
        if st.button("Open", key=f"sample_{file_name}", type="primary"):
            path = common.SAMPLE_DIR / file_name
            data = path.read_bytes()
            frame = ec.read_table(path)
            if file_name in common.REGRESSION_SAMPLES:
                mapping = dataclasses.replace(
                    regression.detect_regression_mapping(frame),
                    unit=common.SAMPLE_UNITS.get(file_name),
                )
            else:
                mapping = ec.detect_mapping(frame)
            open_pool(title, file_name, data, mapping)

# -- upload ----------------------------------------------------------------------------
st.subheader("Or upload your model's outputs")
st.caption(
    "CSV, CSV.gz or Parquet, one row per pool item: an id, a score (or one score column per "
    "class), optionally the predicted label, the classifier's probability, content to show "
    "while labelling, and a true-label column (which enables simulated labelling). For a "
    "regression model: the numeric prediction, optionally its own standard deviation and the "
    "true value."
)
upload = st.file_uploader("Pool file", key="upload")  # any name: the content decides
if upload is None:
    st.stop()

file_name = common.plain(upload.name)
try:
    frame = ec.frame_from_bytes(upload.getvalue(), upload.name)
except ec.PoolValidationError as error:
    st.error(f"**{file_name} cannot be read.** {common.plain(error)}")
    st.stop()
st.caption(f"{file_name}: read as {ec.table_format(frame).describe()}.")

columns = [str(c) for c in frame.columns]
NONE = "(none)"
# widget keys carry the upload's id, so every upload starts from its own detected columns
upload_key = upload.file_id
KINDS = [
    "One score per item (binary)",
    "One score column per class",
    "A regression model's numeric predictions",
]
try:
    detected = ec.detect_mapping(frame)
    detected_kind = KINDS[1] if isinstance(detected.score, tuple) else KINDS[0]
except ec.PoolValidationError as error:
    detected = ec.detect_mapping(frame, require_score=False)
    try:
        regression.detect_regression_mapping(frame)
        detected_kind = KINDS[2]
    except ec.PoolValidationError:
        detected_kind = KINDS[0]
        reason = common.plain(error.reason[0].upper() + error.reason[1:])
        st.warning(f"**{reason}** Choose it below. ({common.plain(error.fix)})")


def pick(label, default, key):
    options = [NONE, *columns]
    index = options.index(str(default)) if default is not None and str(default) in options else 0
    choice = st.selectbox(label, options, index=index, key=f"{key}_{upload_key}")
    return None if choice == NONE else choice


def pick_content(used: set, guessed, key: str) -> list:
    """The columns shown while labelling: any not already mapped (``used``)."""
    return st.multiselect(
        "Content shown while labelling",
        [c for c in columns if c not in used],
        default=[c for c in guessed if c not in used],
        key=f"{key}_{upload_key}",
    )


def refuse(error: ec.PoolValidationError) -> None:
    """Say why the mapped table is no pool yet, with its first offending rows, and stop."""
    st.error(f"**This table cannot be used yet.** {common.plain(error)}")
    if error.column is not None and error.rows:
        shown = frame.iloc[error.rows[:10]]
        st.caption(
            f"The first offending rows (data rows, counted from 0) of {common.plain(error.column)}:"
        )
        st.dataframe(shown, width="stretch")
    st.stop()


def offer(mapping) -> None:
    """The table's first rows and the button that stores the pool."""
    st.dataframe(pd.DataFrame(frame.head(5)), width="stretch")
    if st.button("Use this pool", type="primary", key="use_upload"):
        try:
            open_pool(upload.name.rsplit(".", 1)[0], upload.name, upload.getvalue(), mapping)
        except ec.StoreError as error:
            st.error(common.plain(error))


st.markdown("**Columns** (the detected choice is preselected)")
multi_default = isinstance(detected.score, tuple)
kind = st.radio(
    "Model output",
    KINDS,
    index=KINDS.index(detected_kind),
    horizontal=True,
    key=f"score_kind_{upload_key}",
)
if kind == KINDS[2]:
    try:
        guess = regression.detect_regression_mapping(frame)
    except ec.PoolValidationError:
        guess = regression.RegressionMapping(prediction=None)
    left, right = st.columns(2)
    with left:
        prediction = pick("Prediction", guess.prediction, key="map_prediction")
        spread = pick("The model's own standard deviation", guess.spread, key="map_spread")
    with right:
        item_id = pick("Item id", guess.id, key="map_rid")
        truth = pick("True value (for simulation)", guess.label, key="map_truth")
        unit = st.text_input(
            "Unit (optional)",
            key=f"map_unit_{upload_key}",
            max_chars=20,
            placeholder="e.g. minutes, EUR",
            help="Shown beside the values on the label page; it changes no number.",
        )
        used = {prediction, spread, item_id, truth}
        content = pick_content(used, guess.content, "map_rcontent")
    mapping = regression.RegressionMapping(
        prediction, truth, spread, item_id, tuple(content), unit.strip() or None
    )
    try:
        if prediction is None:
            raise ec.PoolValidationError(
                "no prediction column is chosen.", "choose the column with the predictions."
            )
        pool = pool_from(frame, mapping)
    except ec.PoolValidationError as error:
        refuse(error)
    for warning in regression.regression_warnings(pool):
        st.warning(common.plain(warning))
    st.markdown("**Preview**")
    a, b, c, d = st.columns(4)
    a.metric("Items", f"{pool.n_pool:,}")
    b.metric("Predictions", f"{pool.prediction.min():.4g} to {pool.prediction.max():.4g}")
    c.metric("Own uncertainty", "yes" if pool.spread is not None else "no")
    d.metric("True values", "yes" if pool.y_true is not None else "no")
    figure = go.Figure(go.Histogram(x=pool.prediction, nbinsx=60))
    figure.update_layout(
        template=figures.TEMPLATE, height=260, title="Predictions", yaxis_title="items"
    )
    st.plotly_chart(figure, **common.CHART)
    offer(mapping)
    st.stop()
left, right = st.columns(2)
with left:
    if kind.startswith("One score per item"):
        score = pick(
            "Score (larger = more positive)",
            None if multi_default else detected.score,
            key="map_score",
        )
        prob = pick("Probability of the positive class", detected.prob, key="map_prob")
    else:
        default = list(detected.score) if multi_default else []
        score = tuple(
            st.multiselect(
                "Score columns, one per class",
                columns,
                default=default,
                key=f"map_scores_{upload_key}",
            )
        )
        prob = None
    pred = pick("Predicted label", detected.pred, key="map_pred")
with right:
    item_id = pick("Item id", detected.id, key="map_id")
    label = pick("True label (for simulation)", detected.label, key="map_label")
    used = {score if isinstance(score, str) else None, prob, pred, item_id, label, *(score or ())}
    content = pick_content(used, detected.content, "map_content")
mapping = ec.ColumnMapping(
    score=score, id=item_id, pred=pred, prob=prob, label=label, content=tuple(content)
)

try:
    if not score:
        raise ec.PoolValidationError(
            "no score column is chosen.", "choose the column with the classifier's scores."
        )
    pool = ec.Pool.from_dataframe(frame, mapping)
except ec.PoolValidationError as error:
    refuse(error)

for warning in ec.pool_warnings(pool):
    st.warning(common.plain(warning))
st.markdown("**Preview**")
a, b, c, d, e = st.columns(5)
a.metric("Items", f"{pool.n_pool:,}")
b.metric("Classes", ", ".join(map(str, pool.classes)))
if pool.n_classes == 2:
    predicted = int(np.sum(pool.y_pred == 1))
    c.metric("Predicted positive", f"{predicted:,} ({predicted / pool.n_pool:.2%})")
    d.metric(
        "Expected positives",
        f"{pool.prob[:, 1].sum():,.1f}",
        help="The sum of the classifier's probabilities (the probability column, or "
        "expit(score) when none is mapped): the number of positives they predict. Far from "
        "the predicted-positive count, the probabilities are probably not calibrated.",
    )
else:
    c.metric("Most predicted class", str(pool.classes[np.bincount(pool.y_pred).argmax()]))
    d.metric(
        "Expected of that class", f"{pool.prob[:, np.bincount(pool.y_pred).argmax()].sum():,.1f}"
    )
e.metric("True labels", "yes" if pool.y_true is not None else "no")
scores = pool.binary_scores if pool.n_classes == 2 else pool.prob.max(axis=1)
figure = go.Figure(go.Histogram(x=scores, nbinsx=60))
figure.update_layout(
    template=figures.TEMPLATE,
    height=260,
    title="Score distribution" if pool.n_classes == 2 else "Highest class probability",
    yaxis_title="items",
)
figure.update_yaxes(type="log", dtick=1, exponentformat="e")
st.plotly_chart(figure, **common.CHART)
offer(mapping)

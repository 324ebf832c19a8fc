"""Start: open a built-in pool or upload one, map its columns, check it; resume a session."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

import evalcore as ec
from evalcore import figures
from views import common

st.title("Label-efficient evaluation")
st.write(
    "Estimate how well a classifier performs on a large unlabelled test pool by labelling a "
    "few hundred items that a sampler picks for you."
)


def open_pool(name: str, file_name: str, data: bytes, mapping: ec.ColumnMapping) -> None:
    """Validate, store and select a pool, then go to the set-up page."""
    frame = ec.frame_from_bytes(data, file_name)
    ec.Pool.from_dataframe(frame, mapping)  # raises PoolValidationError
    key = common.store().save_pool(name, file_name, data, mapping)
    st.session_state.pool_key = key
    st.switch_page("views/setup_page.py")


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
columns = st.columns(len(common.SAMPLES))
for column, (file_name, (title, description)) in zip(columns, common.SAMPLES.items(), strict=True):
    with column.container(border=True):
        st.markdown(f"**{title}**")
        st.caption(description)
        if st.button("Open", key=f"sample_{file_name}", type="primary"):
            path = common.SAMPLE_DIR / file_name
            data = path.read_bytes()
            open_pool(title, file_name, data, ec.detect_mapping(ec.read_table(path)))

# -- upload ----------------------------------------------------------------------------
st.subheader("Or upload your classifier's outputs")
st.caption(
    "CSV, CSV.gz or Parquet, one row per pool item: an id, a score (or one score column per "
    "class), optionally the predicted label, the classifier's probability, content to show "
    "while labelling, and a true-label column (which enables simulated labelling)."
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

try:
    detected = ec.detect_mapping(frame)
except ec.PoolValidationError as error:
    reason = common.plain(error.reason[0].upper() + error.reason[1:])
    st.warning(f"**{reason}** Choose it below. ({common.plain(error.fix)})")
    detected = ec.detect_mapping(frame, require_score=False)
columns = [str(c) for c in frame.columns]
NONE = "(none)"
# widget keys carry the upload's id, so every upload starts from its own detected columns
upload_key = upload.file_id


def pick(label, default, key):
    options = [NONE, *columns]
    index = options.index(str(default)) if default is not None and str(default) in options else 0
    choice = st.selectbox(label, options, index=index, key=f"{key}_{upload_key}")
    return None if choice == NONE else choice


st.markdown("**Columns** (the detected choice is preselected)")
multi_default = isinstance(detected.score, tuple)
kind = st.radio(
    "Classifier output",
    ["One score per item (binary)", "One score column per class"],
    index=1 if multi_default else 0,
    horizontal=True,
    key=f"score_kind_{upload_key}",
)
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
    content = st.multiselect(
        "Content shown while labelling",
        [c for c in columns if c not in used],
        default=[c for c in detected.content if c not in used],
        key=f"map_content_{upload_key}",
    )
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
    st.error(f"**This table cannot be used yet.** {common.plain(error)}")
    if error.column is not None and error.rows:
        shown = frame.iloc[error.rows[:10]]
        st.caption(
            f"The first offending rows (data rows, counted from 0) of {common.plain(error.column)}:"
        )
        st.dataframe(shown, width="stretch")
    st.stop()

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
st.dataframe(pd.DataFrame(frame.head(5)), width="stretch")
if st.button("Use this pool", type="primary", key="use_upload"):
    try:
        open_pool(upload.name.rsplit(".", 1)[0], upload.name, upload.getvalue(), mapping)
    except ec.StoreError as error:
        st.error(common.plain(error))

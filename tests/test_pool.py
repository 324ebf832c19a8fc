"""Pool construction, auto-detected mappings and validation messages."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, softmax

import evalcore as ec


def frame(**columns):
    base = {"item_id": ["a", "b", "c", "d"], "score": [-1.0, 0.5, 2.0, -0.2], "label": [0, 1, 1, 0]}
    base.update(columns)
    return pd.DataFrame({k: v for k, v in base.items() if v is not None})


def test_auto_detected_binary_pool_derives_probability_and_prediction():
    pool = ec.Pool.from_dataframe(frame(text=["w", "x", "y", "z"]))
    np.testing.assert_allclose(pool.prob[:, 1], expit([-1.0, 0.5, 2.0, -0.2]))
    np.testing.assert_array_equal(pool.y_pred, [0, 1, 1, 0])  # margin threshold 0
    np.testing.assert_array_equal(pool.y_true, [0, 1, 1, 0])
    assert list(pool.ids) == ["a", "b", "c", "d"]
    assert list(pool.content.columns) == ["text"]


def test_probability_scores_use_threshold_one_half_and_are_their_own_probability():
    pool = ec.Pool.from_dataframe(frame(score=[0.1, 0.6, 0.9, 0.5]))
    np.testing.assert_array_equal(pool.y_pred, [0, 1, 1, 1])
    np.testing.assert_allclose(pool.prob[:, 1], [0.1, 0.6, 0.9, 0.5])


def test_multiclass_scores_use_softmax_and_argmax():
    logits = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 0.0], [0.1, 0.2, 0.3]])
    data = pd.DataFrame(
        {
            "score_cat": logits[:, 0],
            "score_dog": logits[:, 1],
            "score_eel": logits[:, 2],
            "label": ["cat", "dog", "dog"],
        }
    )
    pool = ec.Pool.from_dataframe(data)
    assert pool.classes == ("cat", "dog", "eel")
    np.testing.assert_allclose(pool.prob, softmax(logits, axis=1))
    np.testing.assert_array_equal(pool.y_pred, [0, 1, 2])
    np.testing.assert_array_equal(pool.y_true, [0, 1, 1])


@pytest.mark.parametrize(
    "data, column, rows, words",
    [
        (frame(score=[0.1, np.nan, 0.3, np.nan]), "score", [1, 3], "missing or not finite"),
        (frame(score=[0.1, np.inf, 0.3, 0.2]), "score", [1], "missing or not finite"),
        (frame(score=["0.1", "high", 0.3, 0.2]), "score", [1], "not numbers"),
        (frame(item_id=["a", "b", "a", "d"]), "item_id", [0, 2], "not unique"),
        (frame(label=[0, 1, 2, "yes"]), "label", [2, 3], "not among the classes"),
    ],
)
def test_bad_columns_name_column_rows_and_fix(data, column, rows, words):
    with pytest.raises(ec.PoolValidationError) as info:
        ec.Pool.from_dataframe(data)
    error = info.value
    assert error.column == column
    assert error.rows == rows
    assert words in error.reason
    assert "Fix:" in str(error) and error.fix


def test_table_without_score_column_is_rejected():
    with pytest.raises(ec.PoolValidationError, match="no score column"):
        ec.Pool.from_dataframe(pd.DataFrame({"x": [1, 2], "label": [0, 1]}))


@pytest.mark.parametrize("rows", [0, 1])
def test_empty_and_single_row_tables_are_rejected(rows):
    with pytest.raises(ec.PoolValidationError, match="no rows|single row"):
        ec.Pool.from_dataframe(frame().head(rows))


def test_mapping_to_a_missing_column_is_rejected():
    with pytest.raises(ec.PoolValidationError, match="does not exist"):
        ec.Pool.from_dataframe(frame(), ec.ColumnMapping(score="confidence"))


def test_boolean_and_float_labels_are_accepted_for_binary_pools():
    pool = ec.Pool.from_dataframe(frame(label=[True, False, True, False]))
    np.testing.assert_array_equal(pool.y_true, [1, 0, 1, 0])
    pool = ec.Pool.from_dataframe(frame(label=[1.0, 0.0, 1.0, 0.0]))
    np.testing.assert_array_equal(pool.y_true, [1, 0, 1, 0])


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_read_table_round_trips_every_format(tmp_path, suffix):
    data = frame()
    path = tmp_path / f"pool{suffix}"
    if suffix == ".parquet":
        data.to_parquet(path)
    else:
        data.to_csv(path, index=False)
    pd.testing.assert_frame_equal(ec.read_table(path), data)


def test_empty_file_is_reported_not_raised_as_a_parser_error(tmp_path):
    path = tmp_path / "empty.csv"
    path.write_text("")
    with pytest.raises(ec.PoolValidationError, match="empty"):
        ec.read_table(path)


def test_a_pool_of_probabilities_of_exactly_0_or_1_is_warned_about():
    rng = np.random.default_rng(0)
    score = rng.normal(size=400)
    frame = pd.DataFrame({"score": score, "prob": np.round(expit(3 * score), 2)})
    rounded = ec.Pool.from_dataframe(frame, ec.ColumnMapping(score="score", prob="prob"))
    sure = int(np.sum((frame.prob == 0) | (frame.prob == 1)))
    assert sure > 4
    (warning,) = [w for w in ec.pool_warnings(rounded) if w.startswith(f"{sure:,} items (")]
    assert "Static importance sampling" in warning and "Neyman allocation" in warning
    frame["prob"] = expit(3 * score)
    exact = ec.Pool.from_dataframe(frame, ec.ColumnMapping(score="score", prob="prob"))
    assert not any("exactly 0 or 1" in w for w in ec.pool_warnings(exact))

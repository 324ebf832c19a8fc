"""Hostile pool files through ``python -m evalcore check`` and the app's upload path."""

from __future__ import annotations

import io
import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import evalcore as ec
from evalcore import insight
from evalcore.cli import main
from tests.hostile_pools import corpus, write_corpus
from tests.test_app import app, errors, upload

LIMITS = {"EVALCORE_MAX_ROWS": "2000", "EVALCORE_MAX_MB": "10"}
CORPUS = corpus()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(autouse=True)
def small_limits(monkeypatch):
    for name, value in LIMITS.items():
        monkeypatch.setenv(name, value)


def test_the_corpus_is_large_and_mixed():
    outcomes = [outcome for _, outcome, _ in CORPUS.values()]
    assert len(CORPUS) >= 40
    assert outcomes.count("ok") >= 15 and outcomes.count("error") >= 20


@pytest.mark.parametrize("name", list(CORPUS))
def test_check_accepts_or_names_the_problem(name, files, capsys):
    path, outcome, expected = files[name]
    status = main(["check", "--pool", str(path)])
    out, err = capsys.readouterr()
    assert status == (0 if outcome == "ok" else 2), out + err
    assert expected in out + err
    assert "Traceback" not in out + err
    if outcome == "ok":
        assert out.startswith(f"ok: {path}") and "rows: " in out
    else:
        assert err.startswith("error: ") and "Fix: " in err and not out


FORMAT_VARIANTS = [
    name
    for name in CORPUS
    if name.startswith(("good", "csv_named", "gzip_named", "parquet_named", "tabs", "semicolon"))
    or name in ("bars.csv", "utf16.csv", "utf16le_no_bom.csv", "utf8_bom.csv")
]


@pytest.mark.parametrize("name", FORMAT_VARIANTS)
def test_every_format_variant_reads_the_same_table(name, files):
    frame = ec.read_table(files[name][0])
    reference = ec.read_table(files["good.csv"][0])
    pd.testing.assert_frame_equal(frame, reference)


def test_the_format_is_described_by_content():
    latin = ec.frame_from_bytes(CORPUS["latin1.csv"][0])
    assert ec.table_format(latin).describe() == (
        "CSV, Windows-1252, comma-separated, decimal point"
    )
    assert latin["text"].iloc[0] == "café n°0 ± ß"
    decimal = ec.frame_from_bytes(CORPUS["semicolons_decimal_comma.csv"][0])
    assert ec.table_format(decimal).describe() == "CSV, UTF-8, semicolon-separated, decimal comma"
    assert ec.table_format(ec.frame_from_bytes(CORPUS["csv_named.parquet"][0])).kind == "csv"
    assert ec.table_format(ec.frame_from_bytes(CORPUS["gzip_named.csv"][0])).kind == "csv.gz"


def test_a_decompression_bomb_stops_at_the_limit_without_expanding_it_all():
    content = CORPUS["bomb.csv.gz"][0]
    assert len(content) < 100_000  # megabytes of rows in a few kilobytes
    with pytest.raises(ec.PoolValidationError, match="limit of 10 MB.*EVALCORE_MAX_MB"):
        ec.frame_from_bytes(content)


def test_the_row_limit_is_raised_by_its_variable(monkeypatch):
    content = CORPUS["many_rows.csv"][0]
    with pytest.raises(ec.PoolValidationError, match="2,000 rows"):
        ec.frame_from_bytes(content)
    monkeypatch.setenv("EVALCORE_MAX_ROWS", "5000")
    assert len(ec.frame_from_bytes(content)) == 3000


def test_check_reports_a_missing_file_and_a_missing_column(tmp_path, files, capsys):
    assert main(["check", "--pool", str(tmp_path / "nope.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
    status = main(["check", "--pool", str(files["good.csv"][0]), "--label-column", "truth"])
    assert status == 2
    assert "no column 'truth'" in capsys.readouterr().err


def test_check_runs_as_a_module_without_a_traceback(files):
    for name in ("good.csv.gz", "truncated.csv.gz", "semicolons_decimal_comma.csv"):
        path, outcome, _ = files[name]
        done = subprocess.run(
            [sys.executable, "-m", "evalcore", "check", "--pool", str(path)],
            capture_output=True,
            text=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert done.returncode == (0 if outcome == "ok" else 2)
        assert "Traceback" not in done.stderr


@pytest.mark.parametrize("name", list(CORPUS))
def test_the_app_accepts_or_names_the_problem(name):
    content, outcome, expected = CORPUS[name]
    at = upload(content, name)
    shown = (errors(at) + " ".join(w.value for w in at.warning)).replace("\\", "")
    can_use = any(b.key == "use_upload" for b in at.button)
    assert can_use == (outcome == "ok"), shown
    assert expected in shown, shown


def test_a_new_upload_starts_from_its_own_detected_columns():
    at = upload(CORPUS["no_score.csv"][0], "first.csv")
    assert "score column was found" in " ".join(w.value for w in at.warning)
    [content] = [s for s in at.multiselect if s.key.startswith("map_content")]
    assert content.value == ["text"]  # a failed detection keeps the other columns
    at.file_uploader(key="upload").upload("second.csv", CORPUS["good.csv"][0]).run()
    assert not at.exception
    assert not errors(at), errors(at)
    [score] = [s for s in at.selectbox if s.key.startswith("map_score")]
    assert score.value == "score"
    assert any(b.key == "use_upload" for b in at.button)


def test_user_text_in_messages_is_shown_as_text_not_markdown():
    at = upload(CORPUS["markdown_score_cell.csv"][0], "[click](https://evil.example).csv")
    rendered = errors(at) + " ".join(c.value for c in at.caption)
    assert "](https://evil" not in rendered  # no Markdown link or image survives
    assert "\\]\\(https\\:" in rendered  # the characters are there, escaped


def test_exported_csv_cells_never_run_as_formulas():
    frame = ec.frame_from_bytes(CORPUS["formula_cells.csv"][0])
    pool = ec.Pool.from_dataframe(frame, ec.detect_mapping(frame))
    session = ec.Session(pool, "f1", "passive", seed=1)
    for _ in range(3):
        item = session.next_item().item
        session.record(item, int(pool.y_true[item]))
    log = insight.answer_log(session)
    log["note"] = ["+1+1", "-5", "@SUM(A1)"]
    text = insight.spreadsheet_safe_csv(log)
    back = pd.read_csv(io.StringIO(text))
    assert all(value.startswith("'=HYPERLINK(") for value in back.item_id)
    assert list(back.note) == ["'+1+1", "-5", "'@SUM(A1)"]  # a number stays a number
    pd.testing.assert_series_equal(back.label, log.label)


MARKDOWN_PAYLOADS = [
    "[Session expired - click here](https://evil.example/login)",
    "![t](https://evil.example/pixel.png)",
    "<img src=https://evil.example/x.png onerror=alert(1)>",
    ":red[**urgent**] `code` # heading",
]
PAGES = [
    "views/label_page.py",
    "views/convergence_page.py",
    "views/measures_page.py",
    "views/compare_page.py",
    "views/export_page.py",
    "views/pr_explorer_page.py",
]


def rendered_markdown(at) -> str:
    """Every Markdown source the page sent: messages, captions, text and headings."""
    kinds = ("error", "warning", "info", "success", "caption", "markdown", "title", "subheader")
    return " ".join(str(element.value) for kind in kinds for element in at.get(kind))


@pytest.mark.parametrize("payload", MARKDOWN_PAYLOADS)
@pytest.mark.parametrize("page", PAGES)
def test_a_hostile_session_parameter_is_shown_as_text_on_every_page(page, payload):
    at = app().run()
    at.query_params["session"] = payload
    at.switch_page(page).run()
    assert not at.exception, at.exception
    shown = rendered_markdown(at)
    for raw in ("](https://evil", "<img", ":red[", "`code`"):
        # every special character arrives escaped: none without a backslash before it
        assert not re.search("(?<!\\\\)" + re.escape(raw), shown), shown

"""A corpus of hostile pool files, generated here: what a user may upload by mistake or malice.

``corpus()`` maps a file name to ``(content, outcome, expected)``: ``outcome`` is ``"ok"`` (the
pool is usable; ``expected`` is a warning that must be shown, or "") or ``"error"`` (``expected``
is a phrase of the message). ``python tests/hostile_pools.py DIR`` writes the files to DIR.
"""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROWS = 40


def _frame(**overrides) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    score = np.round(rng.normal(size=ROWS), 4)
    frame = pd.DataFrame(
        {
            "item_id": [f"item-{i}" for i in range(ROWS)],
            "score": score,
            "label": (score + rng.normal(size=ROWS) > 0.5).astype(int),
            "text": [f"record {i}" for i in range(ROWS)],
        }
    )
    for column, values in overrides.items():
        frame[column] = values
    return frame


def _csv(frame: pd.DataFrame, **options) -> bytes:
    return frame.to_csv(index=False, **options).encode(options.pop("encoding", "utf-8"))


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer)
    return buffer.getvalue()


def corpus() -> dict[str, tuple[bytes, str, str]]:
    good = _frame()
    plain = _csv(good)
    text = plain.decode()
    bomb = gzip.compress(b"item_id,score\n" + b"1,0.5\n" * 3_000_000, compresslevel=9)
    many_rows = b"item_id,score\n" + b"".join(b"%d,0.5\n" % i for i in range(3_000))
    files = {
        # formats identified by content, whatever the name says
        "good.csv": (plain, "ok", ""),
        "good.csv.gz": (gzip.compress(plain), "ok", ""),
        "good.parquet": (_parquet(good), "ok", ""),
        "csv_named.parquet": (plain, "ok", ""),
        "csv_named.csv.gz": (plain, "ok", ""),
        "gzip_named.csv": (gzip.compress(plain), "ok", ""),
        "parquet_named.csv": (_parquet(good), "ok", ""),
        "truncated.csv.gz": (gzip.compress(plain)[:-30], "error", "truncated"),
        "damaged.csv.gz": (b"\x1f\x8b\x08\x00" + b"garbage" * 20, "error", "damaged"),
        "double.csv.gz": (gzip.compress(gzip.compress(plain)), "error", "compressed twice"),
        "damaged.parquet": (b"PAR1" + b"\x00" * 50 + b"PAR1", "error", "Parquet file is damaged"),
        "workbook.xlsx": (b"PK\x03\x04" + b"\x00" * 100, "error", "Excel workbook"),
        "old_workbook.xls": (b"\xd0\xcf\x11\xe0" + b"\x00" * 100, "error", "Excel workbook"),
        "image.png": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "error", "NUL bytes"),
        "nul_bytes.csv": (plain[:60] + b"\x00\x00" + plain[60:], "error", "NUL bytes"),
        # delimiters, decimal marks and encodings
        "tabs.tsv": (_csv(good, sep="\t"), "ok", ""),
        "semicolons.csv": (_csv(good, sep=";"), "ok", ""),
        "semicolons_decimal_comma.csv": (_csv(good, sep=";", decimal=","), "ok", ""),
        "bars.csv": (_csv(good, sep="|"), "ok", ""),
        "utf16.csv": (text.encode("utf-16"), "ok", ""),
        "utf16le_no_bom.csv": (text.encode("utf-16-le"), "ok", ""),
        "utf8_bom.csv": (text.encode("utf-8-sig"), "ok", ""),
        "latin1.csv": (
            _csv(_frame(text=[f"café n°{i} ± ß" for i in range(ROWS)]), encoding="latin-1"),
            "ok",
            "",
        ),
        "windows_line_ends.csv": (text.replace("\n", "\r\n").encode(), "ok", ""),
        # limits
        "bomb.csv.gz": (bomb, "error", "EVALCORE_MAX"),
        "many_rows.csv": (many_rows, "error", "EVALCORE_MAX_ROWS"),
        # broken tables
        "empty.csv": (b"", "error", "empty"),
        "blank_lines.csv": (b"\n\n  \n", "error", "empty"),
        "header_only.csv": (b"item_id,score,label\n", "error", "no data rows"),
        "one_row.csv": (b"item_id,score,label\n1,0.5,1\n", "error", "single row"),
        "ragged.csv": (b"item_id,score\n1,0.5\n2,0.1,7,8\n3,0.2\n", "error", "line 3"),
        "no_score.csv": (_csv(good.drop(columns="score")), "error", "no score column"),
        "text_scores.csv": (
            _csv(_frame(score=["high"] * ROWS)),
            "error",
            "not numbers",
        ),
        "nan_scores.csv": (_csv(_frame(score=[np.nan] + [0.1] * (ROWS - 1))), "error", "NaN"),
        "inf_scores.csv": (_csv(_frame(score=[np.inf] + [0.1] * (ROWS - 1))), "error", "infinite"),
        "duplicate_ids.csv": (_csv(_frame(item_id=["x"] * ROWS)), "error", "not unique"),
        "missing_ids.csv": (_csv(_frame(item_id=[None] + ["a"] * (ROWS - 1))), "error", "missing"),
        "unknown_labels.csv": (_csv(_frame(label=["maybe"] * ROWS)), "error", "not among"),
        "probability_out_of_range.csv": (
            _csv(_frame(prob=np.linspace(-0.5, 1.5, ROWS))),
            "error",
            "[0, 1]",
        ),
        # usable but degenerate: warned about
        "constant_scores.csv": (_csv(_frame(score=[0.3] * ROWS)), "ok", "same score"),
        "one_class.csv": (_csv(_frame(label=[0] * ROWS)), "ok", "never holds class"),
        "no_predicted_positive.csv": (
            _csv(_frame(score=-np.abs(good.score) - 1)),
            "ok",
            "predicts no item as positive",
        ),
        # user text that must stay text
        "markdown_cells.csv": (
            _csv(
                _frame(
                    text=["[Session expired - click here](https://evil.example/login)"] * ROWS,
                    item_id=[f"![t](https://evil.example/pixel{i}.png)" for i in range(ROWS)],
                )
            ),
            "ok",
            "",
        ),
        "markdown_score_cell.csv": (
            _csv(_frame(score=["![t](https://evil.example/pixel.png)"] + [0.1] * (ROWS - 1))),
            "error",
            "not numbers",
        ),
        "formula_cells.csv": (
            _csv(
                _frame(
                    text=['=HYPERLINK("https://evil.example","click")'] * ROWS,
                    item_id=[f'=HYPERLINK("https://evil.example/{i}","x")' for i in range(ROWS)],
                )
            ),
            "ok",
            "",
        ),
        "html_column_names.csv": (
            _csv(good.rename(columns={"text": "<img src=x onerror=alert(1)>"})),
            "ok",
            "",
        ),
    }
    return files


def write_corpus(directory: Path) -> dict[str, tuple[Path, str, str]]:
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for name, (content, outcome, expected) in corpus().items():
        path = directory / name
        path.write_bytes(content)
        written[name] = (path, outcome, expected)
    return written


if __name__ == "__main__":
    for name in write_corpus(Path(sys.argv[1])):
        print(name)

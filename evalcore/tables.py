"""Reading an uploaded table: the format by content, the encoding, the delimiter, limits.

A file is identified by its first bytes, not by its name: Parquet (``PAR1``), gzip (``1f 8b``,
whose content is identified again), a ZIP archive or Excel workbook (refused with a message),
else delimited text. Text is decoded by its byte-order mark, else as UTF-8, else as
Windows-1252 (which reads Latin-1 text too); the delimiter (comma, semicolon, tab or bar) is
sniffed from the first lines and the decimal mark is a comma where the delimiter is not and
numbers are written that way. Decompressed size and row count are capped; the caps are
raised with the environment variables named in the messages. Every failure is a
``PoolValidationError`` in plain words; nothing is evaluated or unpickled.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .pool import PoolValidationError

__all__ = ["TableFormat", "read_table", "frame_from_bytes", "table_format", "max_rows", "max_bytes"]

ROWS_VARIABLE = "EVALCORE_MAX_ROWS"
BYTES_VARIABLE = "EVALCORE_MAX_MB"
DEFAULT_MAX_ROWS = 5_000_000
DEFAULT_MAX_MB = 1024
_SNIFF_BYTES = 64 * 1024
_DELIMITERS = ",;\t|"
_DELIMITER_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
_COMMA_DECIMAL = re.compile(r"^[+-]?\d+,\d+(?:[eE][+-]?\d+)?$")
_POINT_DECIMAL = re.compile(r"^[+-]?\d*\.\d+(?:[eE][+-]?\d+)?$")
_FORMATS = "a CSV file (optionally gzipped) or a Parquet file"


@dataclass(frozen=True)
class TableFormat:
    """How a table was read: ``kind`` (csv, csv.gz, parquet), and for text its encoding,
    delimiter and decimal mark."""

    kind: str
    encoding: str | None = None
    delimiter: str | None = None
    decimal: str | None = None

    def describe(self) -> str:
        if self.kind == "parquet":
            return "Parquet"
        delimiter = _DELIMITER_NAMES.get(self.delimiter, repr(self.delimiter))
        decimal = "decimal comma" if self.decimal == "," else "decimal point"
        return f"{self.kind.upper()}, {self.encoding}, {delimiter}-separated, {decimal}"


def max_rows() -> int:
    return _limit(ROWS_VARIABLE, DEFAULT_MAX_ROWS)


def max_bytes() -> int:
    return _limit(BYTES_VARIABLE, DEFAULT_MAX_MB) * 1024 * 1024


def _limit(variable: str, default: int) -> int:
    text = os.environ.get(variable, "")
    try:
        value = int(text)
    except ValueError:
        return default
    return value if value > 0 else default


def read_table(source) -> pd.DataFrame:
    """A table from a path or a file-like object (CSV, gzipped CSV or Parquet, by content).

    ``table_format(frame)`` says how it was read.
    """
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise PoolValidationError(f"the file {path} does not exist.", "check the path.")
        with path.open("rb") as handle:
            data = handle.read(max_bytes() + 1)
    else:
        data = source.getvalue() if hasattr(source, "getvalue") else source.read()
    return frame_from_bytes(data)


def frame_from_bytes(data: bytes, name: str | None = None) -> pd.DataFrame:
    """Parse an uploaded file's bytes (the app's entry point). ``name`` is not used to
    decide the format (content is); it is accepted so callers can pass what they have."""
    frame, found = _parse(bytes(data), compressed=False)
    frame.attrs["format"] = dataclasses.asdict(found)  # attrs stay JSON-serialisable
    return frame


def table_format(frame: pd.DataFrame) -> TableFormat | None:
    """How ``frame`` was read by ``read_table`` or ``frame_from_bytes`` (None otherwise)."""
    found = frame.attrs.get("format")
    return TableFormat(**found) if found else None


def _parse(data: bytes, compressed: bool) -> tuple[pd.DataFrame, TableFormat]:
    _check_size(len(data), "the file")
    if not data.strip():
        raise PoolValidationError("the file is empty.", f"upload {_FORMATS} with a header row.")
    if data.startswith(b"PAR1"):
        return _parquet(data), TableFormat("parquet")
    if data.startswith(b"\x1f\x8b"):
        if compressed:
            raise PoolValidationError(
                "the file is gzip-compressed twice.", "compress the CSV file once."
            )
        frame, inner = _parse(_gunzip(data), compressed=True)
        kind = "parquet" if inner.kind == "parquet" else "csv.gz"
        return frame, TableFormat(kind, inner.encoding, inner.delimiter, inner.decimal)
    if data.startswith(b"PK\x03\x04") or data.startswith(b"\xd0\xcf\x11\xe0"):
        raise PoolValidationError(
            "the file is a ZIP archive or an Excel workbook, not a table of text.",
            "save the sheet as CSV (File > Save as > CSV), or unpack the archive.",
        )
    text, encoding = _decode(data)
    return _csv(text, encoding)


def _check_size(n_bytes: int, what: str) -> None:
    if n_bytes > max_bytes():
        raise PoolValidationError(
            f"{what} is larger than the limit of {max_bytes() // 2**20:,} MB.",
            f"upload a smaller pool, or raise the limit with the environment variable "
            f"{BYTES_VARIABLE} (in MB) before starting the app.",
        )


def _check_rows(n_rows: int) -> None:
    if n_rows > max_rows():
        raise PoolValidationError(
            f"the table has more than the limit of {max_rows():,} rows.",
            f"upload a sample of the pool, or raise the limit with the environment variable "
            f"{ROWS_VARIABLE} before starting the app.",
        )


def _gunzip(data: bytes) -> bytes:
    """Decompress at most the byte limit (a small file can expand to gigabytes)."""
    limit = max_bytes()
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        out = inflater.decompress(data, limit + 1)
    except zlib.error:
        raise PoolValidationError(
            "the gzip file is damaged (its compressed data cannot be read).",
            "compress the CSV file again, or upload it uncompressed.",
        ) from None
    _check_size(len(out), "the decompressed file")
    if not inflater.eof:
        raise PoolValidationError(
            "the gzip file is truncated (it ends before its compressed data does).",
            "upload the complete file; compress the CSV file again if it was cut off.",
        )
    return out


def _parquet(data: bytes) -> pd.DataFrame:
    import pyarrow.parquet as pq  # pandas' own Parquet engine

    try:
        file = pq.ParquetFile(io.BytesIO(data))
        _check_rows(file.metadata.num_rows)
        frame = file.read().to_pandas()
    except PoolValidationError:
        raise
    except Exception as exc:  # pyarrow raises many types for a damaged file
        raise PoolValidationError(
            f"the Parquet file is damaged or unsupported ({type(exc).__name__}).",
            "write the Parquet file again, or upload the table as CSV.",
        ) from None
    _check_not_empty(frame)
    return frame


def _decode(data: bytes) -> tuple[str, str]:
    for bom, encoding in (
        (b"\xef\xbb\xbf", "utf-8-sig"),
        (b"\xff\xfe\x00\x00", "utf-32"),
        (b"\x00\x00\xfe\xff", "utf-32"),
        (b"\xff\xfe", "utf-16"),
        (b"\xfe\xff", "utf-16"),
    ):
        if data.startswith(bom):
            return _decoded(data, encoding), encoding.upper().replace("-SIG", "")
    head = data[:_SNIFF_BYTES]
    if b"\x00" in head:
        even, odd = head[0::2].count(0), head[1::2].count(0)
        if odd > 0.3 * len(head) / 2 and even == 0:
            return _decoded(data, "utf-16-le"), "UTF-16"
        if even > 0.3 * len(head) / 2 and odd == 0:
            return _decoded(data, "utf-16-be"), "UTF-16"
        raise PoolValidationError(
            f"the file holds NUL bytes (the first at byte {data.index(0)}): it is binary, "
            "not a table of text.",
            f"upload {_FORMATS}; remove the NUL bytes if the file is text.",
        )
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError:
        pass
    try:
        return data.decode("cp1252"), "Windows-1252"
    except UnicodeDecodeError:
        return data.decode("latin-1"), "Latin-1"


def _decoded(data: bytes, encoding: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        raise PoolValidationError(
            f"the file starts like {encoding.upper()} text but is not valid {encoding.upper()}.",
            "save the file again as UTF-8 CSV.",
        ) from None


def _csv(text: str, encoding: str) -> tuple[pd.DataFrame, TableFormat]:
    if "\x00" in text:
        raise PoolValidationError(
            f"the file holds NUL characters (the first at character {text.index(chr(0))}).",
            f"upload {_FORMATS}; remove the NUL characters if the file is text.",
        )
    sample = text[:_SNIFF_BYTES]
    if len(text) > _SNIFF_BYTES and "\n" in sample:
        sample = sample[: sample.rindex("\n")]  # whole lines only
    delimiter = _sniff_delimiter(sample)
    decimal = _decimal_mark(sample, delimiter)
    table_format = TableFormat("csv", encoding, delimiter, decimal)
    try:
        frame = pd.read_csv(io.StringIO(text), sep=delimiter, decimal=decimal, nrows=max_rows() + 1)
    except pd.errors.EmptyDataError:
        raise PoolValidationError(
            "the file has no header row.", f"upload {_FORMATS} with a header row."
        ) from None
    except (pd.errors.ParserError, ValueError) as exc:
        detail = str(exc).strip().splitlines()[-1] if str(exc).strip() else ""
        found = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", detail)
        where = (
            f" (line {found[2]} has {found[3]} fields where the header has {found[1]})"
            if found
            else ""
        )
        raise PoolValidationError(
            f"the file cannot be read as a {table_format.describe()} table{where}.",
            "give every row as many fields as the header; quote fields that contain the delimiter.",
        ) from None
    _check_rows(len(frame))
    _check_not_empty(frame)
    return frame, table_format


def _check_not_empty(frame: pd.DataFrame) -> None:
    if frame.shape[0] == 0:
        raise PoolValidationError(
            "the file holds a header row but no data rows.",
            "add one row per pool item below the header.",
        )


def _sniff_delimiter(sample: str) -> str:
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        header = sample.split("\n", 1)[0]
        counts = {d: header.count(d) for d in _DELIMITERS}
        best = max(counts, key=counts.get)
        return best if counts[best] > 0 else ","


def _decimal_mark(sample: str, delimiter: str) -> str:
    """A comma where the delimiter is not a comma and numbers are written 0,5 (never 0.5)."""
    if delimiter == ",":
        return "."
    fields = [
        f.strip().strip('"') for line in sample.splitlines()[1:] for f in line.split(delimiter)
    ]
    comma = sum(bool(_COMMA_DECIMAL.match(f)) for f in fields)
    point = sum(bool(_POINT_DECIMAL.match(f)) for f in fields)
    return "," if comma > 0 and point == 0 else "."

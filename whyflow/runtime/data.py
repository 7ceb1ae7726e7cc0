"""Reading tables: the one place that turns a path into a DataFrame, with clear errors."""

from __future__ import annotations

import contextlib
import difflib
import functools
import gc
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from whyflow.core.errors import AgentError, DataError
from whyflow.runtime.compressed import COMPRESSED_SUFFIXES, COMPRESSION_NAMES, READ_ERRORS, compression_of, head_of
from whyflow.runtime.csv_header import placeholder_header

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "read_table",
    "check_columns",
    "suggest",
    "describe_read",
    "write_parquet",
    "hand_over",
    "release_unused_memory",
    "long_lived_frozen",
    "unmap_large_blocks",
    "NA_TOKENS",
]

_PARQUET = (".parquet", ".pq")
_SEPARATORS = {".csv": ",", ".tsv": "\t"}


def suggest(name: str, options: list[str] | tuple[str, ...]) -> str:
    """A "did you mean" hint for a misspelt name, or an empty string."""
    same = [o for o in options if o.casefold() == name.casefold()]
    if same:  # `--outcome Y` for a column `y`
        return f" (did you mean '{same[0]}'?)"
    folded = {o.casefold(): o for o in reversed(list(options))}
    match = difflib.get_close_matches(name.casefold(), list(folded), n=1, cutoff=0.6)
    return f" (did you mean '{folded[match[0]]}'?)" if match else ""


NA_TOKENS = (
    "?",
    "-",
    "--",
    ".",
    "n/a",
    "na",
    "NA",
    "missing",
    "Missing",
    "MISSING",
    "#N/A",
    "#NA",
    "#VALUE!",
    "#DIV/0!",
)
"""Cells read as missing besides pandas' own (empty, NA, NaN, null, None...): common export conventions."""

_DELIMITERS = (",", ";", "\t", "|")
_ENCODINGS = ("utf-8", "cp1252", "latin-1")


def _encoding(head: bytes) -> str:
    """UTF-8 (with or without BOM) when the bytes decode as such, else Windows-1252/Latin-1."""
    for enc in _ENCODINGS:
        try:
            head.decode("utf-8-sig" if enc == "utf-8" else enc)
        except UnicodeDecodeError as exc:
            if enc == "utf-8" and exc.start >= len(head) - 4:  # a character cut by the sample's end
                return "utf-8"
            continue
        return enc
    return "latin-1"  # pragma: no cover - latin-1 decodes any byte


def _delimiter(text: str, default: str | None) -> str:
    """The delimiter that splits the first lines into the same number (> 1) of fields."""
    import csv
    import io

    lines = [line for line in text.splitlines()[:50] if line.strip()]
    if len(lines) > 1 and not text.endswith("\n"):
        lines = lines[:-1]  # the sample may end inside a line
    best, best_n = default or ",", 1
    for sep in ([default] if default else []) + [d for d in _DELIMITERS if d != default]:
        widths = {len(row) for row in csv.reader(io.StringIO("\n".join(lines)), delimiter=sep)}
        if len(widths) == 1 and (n := widths.pop()) > best_n:
            if sep == default:
                return sep
            best, best_n = sep, n
    return best


_HANDED: dict[tuple[str, int, int], pd.DataFrame] = {}
"""At most one frame :func:`hand_over` kept for the next :func:`read_table` of its unchanged file."""


def _file_key(p: Path) -> tuple[str, int, int]:
    st = p.stat()
    return str(p.resolve()), st.st_size, st.st_mtime_ns


def hand_over(path: str | Path, frame: pd.DataFrame) -> None:
    """Give ``frame``, as :func:`read_table` returned it for ``path`` and unmodified, to the next reader.

    ``whyflow run`` reads the user's file to check it before the job exists, and the data
    profiler reads it again as the run's first step, and parsing a CSV of a million rows takes
    seconds. The next :func:`read_table` of the same file, unchanged
    (same size and modification time), takes the frame instead of parsing it again; it is kept
    at most until the next :func:`read_table` of any file (which lets it go unless it is that
    file's) or the end of the run's first step (:func:`release_unused_memory`).
    """
    _HANDED.clear()
    _HANDED[_file_key(Path(path))] = frame


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame, raising :class:`DataError` on bad input.

    CSV files as spreadsheets write them are accepted: the delimiter (comma, semicolon, tab,
    bar), a semicolon file's decimal mark (comma or point), the compression (gzip, bzip2, zip of
    one file, xz, Zstandard: recognised by the first bytes) and the encoding (UTF-8, else
    Windows-1252/Latin-1) are detected, lines may end in LF, CRLF or a bare CR (old Mac
    exports), and the common
    missing-value tokens (``?``, ``-``, ``n/a``, ``missing``...) read as missing. What was
    used is in ``frame.attrs["whyflow_read"]`` so the caller can say so. A frame given with
    :func:`hand_over` for this file, unchanged since, is returned instead of reading it again.
    """
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise DataError(f"data file not found: {p}")
    if p.is_dir():
        raise DataError(f"data path is a folder, not a file: {p}")
    if p.stat().st_size == 0:
        raise DataError(f"data file is empty: {p}")
    if _HANDED:
        handed = _HANDED.pop(_file_key(p), None)
        _HANDED.clear()
        if handed is not None:
            return handed
    info: dict[str, object] = {}
    try:
        suffix = p.suffix.lower()
        if suffix in COMPRESSED_SUFFIXES:
            suffix = Path(p.stem).suffix.lower()  # data.tsv.gz: a tab-separated file
        if suffix in _PARQUET:
            # A column per block, each keeping Arrow's buffer, Arrow's table freed as it converts: a
            # lower peak and a quicker read than copying every column into one consolidated block.
            frame = pd.read_parquet(p, to_pandas_kwargs={"split_blocks": True, "self_destruct": True})
            _release_arrow_memory()
        else:
            frame, info = _read_csv(p, _SEPARATORS.get(suffix))
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"data file has no columns: {p}") from exc
    except pd.errors.ParserError as exc:
        detail = str(exc).strip().splitlines()[-1]
        raise DataError(f"malformed CSV {p}: {detail}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(f"data file {p} is not text in a known encoding: {exc.reason} at byte {exc.start}") from exc
    except READ_ERRORS as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"cannot read {p}: {first}") from exc
    if frame.shape[1] == 0:
        raise DataError(f"data file has no columns: {p}")
    if frame.shape[0] == 0:
        raise DataError(f"data file has a header but no rows: {p}")
    unnamed = [c for c in frame.columns if str(c).startswith("Unnamed: ")]
    if unnamed and len(unnamed) == frame.shape[1]:
        raise DataError(f"data file {p} has no header row")
    frame.columns = [str(c) for c in frame.columns]
    frame.attrs["whyflow_read"] = info
    return frame


_COMMA_NUMBER = re.compile(r"[-+]?\d*,\d+")
_POINT_NUMBER = re.compile(r"[-+]?(\d+\.\d*|\.\d+)([eE][-+]?\d+)?")
_THOUSANDS = re.compile(r"[-+]?\d{1,3}(\.\d{3})+")
"""``1.234``: a thousand written with a point where the comma is the decimal mark, or 1.234; it decides nothing."""


def _decimal(text: str, sep: str) -> str:
    """The decimal mark of a file's numbers: a comma where its fields are separated by semicolons
    and its numbers are written ``0,94`` (the spreadsheet convention), else a point (``0.94``)."""
    if sep != ";":
        return "."
    fields = [f.strip().strip('"') for line in text.splitlines()[1:200] for f in line.split(sep)]
    commas = sum(1 for f in fields if _COMMA_NUMBER.fullmatch(f))
    points = sum(1 for f in fields if _POINT_NUMBER.fullmatch(f) and not _THOUSANDS.fullmatch(f))
    return "." if points > commas else ","


def _read_csv(p: Path, default_sep: str | None) -> tuple[pd.DataFrame, dict[str, object]]:
    import pandas as pd

    compression = compression_of(p)
    head = head_of(p, compression)
    if b"\x00" in head:
        what = f"{COMPRESSION_NAMES[compression]}-compressed data" if compression else "binary"
        raise DataError(f"data file {p} is {what}, not a CSV or Parquet file")
    encoding = _encoding(head)
    text = head.decode("utf-8-sig" if encoding == "utf-8" else encoding, errors="replace")
    sep = _delimiter(text, default_sep)
    decimal = _decimal(text, sep)
    _check_header(p, text, sep)
    options: dict[str, Any] = {
        "sep": sep,
        "encoding": "utf-8-sig" if encoding == "utf-8" else encoding,
        "low_memory": False,
        "decimal": decimal,
        "compression": compression,
    }
    frame = pd.read_csv(p, **options)
    placeholders = placeholder_header(frame)
    if placeholders:
        _check_header(p, "\n".join(text.splitlines()[1:]), sep)
        frame = pd.read_csv(p, skiprows=1, **options)  # read again so that the columns get their types
    if not frame.index.equals(pd.RangeIndex(len(frame))):
        # pandas turns the first column into the index when the first data line has more fields
        # than the header: every column would silently shift one place to the left.
        raise pd.errors.ParserError(
            f"Expected {len(frame.columns)} fields in line 2 (the header's count), saw {len(frame.columns) + 1}"
        )
    info: dict[str, object] = {"encoding": encoding, "delimiter": sep, "decimal": decimal}
    if placeholders:
        info["placeholder_header"] = placeholders
    if compression:
        info["compression"] = compression
    found = _missing_tokens(frame, decimal)
    if found:
        info["na_tokens"] = found
    return frame, info


def _missing_tokens(frame: pd.DataFrame, decimal: str) -> dict[str, int]:
    """Set the :data:`NA_TOKENS` cells of text columns to missing (in place); count them.

    Only text columns can hold them (pandas reads a clean number column as numbers), so a
    column of numbers with a few ``?`` becomes a number column again.
    """
    import pandas as pd

    found: dict[str, int] = {}
    for col in frame.columns:
        values = frame[col]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            continue
        text = values.astype("string").str.strip()
        mask = text.isin(NA_TOKENS)
        if not mask.any():
            continue
        for token, n in text[mask].value_counts().items():
            found[str(token)] = found.get(str(token), 0) + int(n)
        kept = values.mask(mask)
        numbers = pd.to_numeric(
            kept.astype("string").str.strip().str.replace(",", ".", regex=False) if decimal == "," else kept,
            errors="coerce",
        ).astype("float64")
        frame[col] = numbers if int(numbers.notna().sum()) == int(kept.notna().sum()) else kept
    return found


def _check_header(p: Path, text: str, sep: str) -> None:
    """A header naming one column twice is refused: which of the two would the user mean?"""
    import csv
    import io

    header = next(csv.reader(io.StringIO(text, newline=None), delimiter=sep), [])  # \r-only (old Mac) lines too
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        key = name.strip()
        if key and key in seen:
            raise DataError(
                f"data file {p}: the header names column '{key}' twice (columns {seen[key]} and {i}); "
                f"rename one so that every column has its own name"
            )
        seen[key] = i


def describe_read(frame: pd.DataFrame) -> str:
    """What reading the file assumed, in one clause ("" for a plain UTF-8 comma CSV)."""
    info = frame.attrs.get("whyflow_read") or {}
    parts = []
    if info.get("compression"):
        parts.append(f"{COMPRESSION_NAMES[str(info['compression'])]}-compressed")
    if info.get("encoding") not in (None, "utf-8"):
        parts.append(f"not UTF-8: read as {'Windows-1252' if info['encoding'] == 'cp1252' else 'Latin-1'}")
    if info.get("delimiter") not in (None, ",", "\t"):
        if info["delimiter"] != ";":
            parts.append(f"columns separated by {info['delimiter']!r}")
        elif info.get("decimal", ",") == ",":
            parts.append("columns separated by semicolons, decimal commas")
        else:
            parts.append("columns separated by semicolons, decimal points")
    placeholders = info.get("placeholder_header")
    if isinstance(placeholders, list) and placeholders:
        shown = ", ".join(str(n) for n in placeholders)
        parts.append(f"column names from line 2 (line 1 holds the placeholders {shown})")
    tokens = info.get("na_tokens") or {}
    if tokens:
        parts.append(
            "read as missing: " + ", ".join(f"{n:,} '{t}'" for t, n in sorted(tokens.items(), key=lambda kv: -kv[1]))
        )
    return "; ".join(parts)


def check_columns(
    frame: pd.DataFrame, columns: dict[str, str | None] | list[tuple[str, str | None]], source: str
) -> None:
    """Raise one :class:`DataError` naming every requested column missing from ``frame``.

    ``columns`` maps a role ("treatment", "outcome", ...) to a column name or ``None`` (as a dict,
    or as (role, column) pairs when a role names several columns, as the controls do).
    """
    names = [str(c) for c in frame.columns]
    pairs = list(columns.items()) if isinstance(columns, dict) else list(columns)
    missing = [
        f"{role} column '{col}' is not in {source}{suggest(col, names)}"
        for role, col in pairs
        if col is not None and col not in names
    ]
    if missing:
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise DataError("; ".join(missing) + f". Columns: {shown}")


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """Write ``frame`` to Parquet atomically, turning mixed-type text columns into strings if Arrow refuses them.

    A failed write (a full disk) leaves no partial file behind and raises :class:`AgentError`
    with the reason, so the job ends FAILED with space freed for its state.
    """
    import pandas as pd

    tmp = path.with_name(f".{path.name}.tmp")
    try:
        try:
            frame.to_parquet(tmp, index=False)
        except (TypeError, ValueError):  # pyarrow's ArrowTypeError / ArrowInvalid
            fixed = frame.copy()
            for col in fixed.columns:
                if pd.api.types.is_object_dtype(fixed[col]):
                    fixed[col] = fixed[col].astype("string")
            fixed.to_parquet(tmp, index=False)
        tmp.replace(path)
        _release_arrow_memory()
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise AgentError(f"cannot write {path}: {exc.strerror or exc}") from exc
    finally:
        tmp.unlink(missing_ok=True)
    return path


def _release_arrow_memory() -> None:
    """Hand Arrow's freed buffers back to the system after a Parquet read or write.

    Arrow's allocator keeps them for reuse: after reading a 153 MB frame the process held
    about 260 MB more than the frame, for as long as it ran (the whole job, the executed
    notebook included).
    """
    import pyarrow as pa

    pa.default_memory_pool().release_unused()


def release_unused_memory() -> None:
    """Hand memory the process freed back to the system: Arrow's pool and glibc's heaps.

    A frame :func:`hand_over` kept and no reader took is let go first.

    Both allocators keep freed blocks for reuse. Between agents that is memory no agent holds
    but the process still occupies: after the propensity diagnostics on 1M rows, 156 MB in
    Arrow's pool and 167 MB in glibc's heaps. A no-op where there is no glibc (macOS) or Arrow
    was never imported.

    Garbage in reference cycles is collected first: Great Expectations' validation leaves its
    context, batch and metrics in cycles (201 MB at 1M x 20), which Python's own collector
    would free only at its next full collection, often while the notebook runs. Inside
    :func:`long_lived_frozen` what survives is frozen, so the next collection scans only the
    objects made since, not all of a run's ~600,000 objects that a full collection would scan.
    """
    import sys

    _HANDED.clear()  # a frame handed over and not taken by the first step
    gc.collect()
    if _frozen:  # a flag of our own: gc.get_freeze_count() would walk every frozen object
        gc.freeze()
    if "pyarrow" in sys.modules:
        _release_arrow_memory()
    trim = _libc_function("malloc_trim")
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Keep the objects alive now, and those surviving each :func:`release_unused_memory`, out of collections.

    A job's process holds about 600,000 objects once its libraries are imported (modules,
    classes, Prefect's and pandas' caches); every full collection, Python's own included,
    scans them all. Frozen (:func:`gc.freeze`) they are skipped; they are still freed when no
    longer referenced, only a cycle among them waits until the end of the block, when they
    are unfrozen (a process running many jobs, as the web server does, loses nothing).
    """
    global _frozen
    gc.freeze()
    _frozen += 1
    try:
        yield
    finally:
        _frozen -= 1
        if not _frozen:
            gc.unfreeze()


_frozen = 0
"""How many :func:`long_lived_frozen` blocks are open (runs in threads of one process may overlap)."""


MMAP_THRESHOLD = 1 << 20
"""Blocks of this many bytes or more get a mapping of their own from glibc (see :func:`unmap_large_blocks`)."""


LARGE_DATA_CELLS = 5_000_000
"""Data of this many cells (rows x columns) or more is large enough for :func:`unmap_large_blocks` (250k x 20)."""


def unmap_large_blocks(cells: int) -> None:
    """On large data, have glibc give every block of :data:`MMAP_THRESHOLD` bytes or more back when freed.

    glibc serves a block above its mmap threshold from a mapping of its own, unmapped when
    freed; but it raises the threshold to the size of each such block freed (up to 32 MB), after
    which a column of a million floats (8 MB) comes from a heap that keeps it when freed, and
    worker threads each grow a heap of their own. At 1M rows x 20 columns the job's process held
    about 190 MB more at its peak than with a fixed threshold (which also ends the raising).

    Called when a job's run starts (``cells``: its data's rows x columns); below
    :data:`LARGE_DATA_CELLS` it does nothing, as the heaps' reuse of freed blocks is faster there
    and what they keep is small. The notebook's kernel and the
    figure worker, started after, get it through ``MALLOC_MMAP_THRESHOLD_``. A threshold the user
    set in the environment is kept; a no-op where there is no glibc. It lasts for the process: a
    server that ran one large job keeps it for the next (glibc's raising cannot be turned back on).
    """
    import os

    if cells < LARGE_DATA_CELLS or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return  # small data, or the user's threshold, applied by glibc when the process started
    os.environ["MALLOC_MMAP_THRESHOLD_"] = str(MMAP_THRESHOLD)
    mallopt = _libc_function("mallopt")
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)


_M_MMAP_THRESHOLD = -3  # glibc's malloc.h


@functools.lru_cache(maxsize=4)
def _libc_function(name: str) -> Any:
    """A function of glibc (``malloc_trim``, ``mallopt``), or None where there is none."""
    import ctypes
    import ctypes.util
    import sys

    lib = ctypes.util.find_library("c") if sys.platform.startswith("linux") else None
    try:
        return getattr(ctypes.CDLL(lib), name, None) if lib else None
    except OSError:
        return None

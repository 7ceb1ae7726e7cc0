"""Reading tables: the one place that turns a path into a DataFrame, with clear errors."""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import TYPE_CHECKING

from agents.base.errors import DataError

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["read_table", "check_columns", "suggest"]

_PARQUET = (".parquet", ".pq")
_SEPARATORS = {".csv": ",", ".tsv": "\t"}


def suggest(name: str, options: list[str] | tuple[str, ...]) -> str:
    """A "did you mean" hint for a misspelt name, or an empty string."""
    match = difflib.get_close_matches(name, list(options), n=1, cutoff=0.6)
    return f" (did you mean '{match[0]}'?)" if match else ""


def read_table(path: str | Path) -> pd.DataFrame:
    """Read a CSV or Parquet file into a DataFrame, raising :class:`DataError` on bad input."""
    import pandas as pd

    p = Path(path)
    if not p.exists():
        raise DataError(f"data file not found: {p}")
    if p.is_dir():
        raise DataError(f"data path is a folder, not a file: {p}")
    if p.stat().st_size == 0:
        raise DataError(f"data file is empty: {p}")
    try:
        suffix = p.suffix.lower()
        if suffix in _PARQUET:
            frame = pd.read_parquet(p)
        elif suffix in _SEPARATORS:
            frame = pd.read_csv(p, sep=_SEPARATORS[suffix])
        else:  # .txt, no extension...: let pandas sniff the delimiter
            frame = pd.read_csv(p, sep=None, engine="python")
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"data file has no columns: {p}") from exc
    except pd.errors.ParserError as exc:
        detail = str(exc).strip().splitlines()[-1]
        raise DataError(f"malformed CSV {p}: {detail}") from exc
    except UnicodeDecodeError as exc:
        raise DataError(
            f"data file {p} is not UTF-8 text (is it really a CSV?): {exc.reason} at byte {exc.start}"
        ) from exc
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {p}: {exc}") from exc
    if frame.shape[1] == 0:
        raise DataError(f"data file has no columns: {p}")
    if frame.shape[0] == 0:
        raise DataError(f"data file has a header but no rows: {p}")
    unnamed = [c for c in frame.columns if str(c).startswith("Unnamed: ")]
    if unnamed and len(unnamed) == frame.shape[1]:
        raise DataError(f"data file {p} has no header row")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def check_columns(frame: pd.DataFrame, columns: dict[str, str | None], source: str) -> None:
    """Raise one :class:`DataError` naming every requested column missing from ``frame``.

    ``columns`` maps a role ("treatment", "outcome", ...) to a column name or ``None``.
    """
    names = [str(c) for c in frame.columns]
    missing = [
        f"{role} column '{col}' is not in {source}{suggest(col, names)}"
        for role, col in columns.items()
        if col is not None and col not in names
    ]
    if missing:
        shown = ", ".join(names[:20]) + (" ..." if len(names) > 20 else "")
        raise DataError("; ".join(missing) + f". Columns: {shown}")

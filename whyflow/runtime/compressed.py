"""Compressed CSV files as pandas reads them: which compression a file has, and its first bytes.

A file is recognised by its first bytes, whatever its name says (``data.csv`` that is gzip
data, ``data.csv.gz`` that is not); :func:`whyflow.runtime.data.read_table` then hands the method
to pandas and sniffs the delimiter, decimal mark and encoding in :func:`head_of`'s bytes.
"""

from __future__ import annotations

import lzma
import zipfile
import zlib
from pathlib import Path
from typing import Any

from whyflow.core.errors import DataError

__all__ = [
    "COMPRESSED_SUFFIXES",
    "COMPRESSION_NAMES",
    "MAGIC",
    "READ_ERRORS",
    "compression_of",
    "head_of",
    "zip_member",
]

COMPRESSED_SUFFIXES = {".gz": "gzip", ".bz2": "bz2", ".zip": "zip", ".xz": "xz", ".zst": "zstd"}
"""A compressed CSV's last suffix and its method, as pandas names both (``data.csv.gz``)."""
MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bz2"),
    (b"PK\x03\x04", "zip"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
)
"""The first bytes of each compressed format: what the file is, whatever its name says."""
COMPRESSION_NAMES = {"gzip": "gzip", "bz2": "bzip2", "zip": "zip", "xz": "xz", "zstd": "Zstandard"}
READ_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    lzma.LZMAError,
    zlib.error,
)
"""What an unreadable file raises while it is read, a damaged archive's errors included."""


def compression_of(p: Path) -> str | None:
    """The compression of ``p`` (``gzip``, ``bz2``, ``zip``, ``xz``, ``zstd``) from its first bytes, or None."""
    with p.open("rb") as fh:
        magic = fh.read(6)
    return next((name for start, name in MAGIC if magic.startswith(start)), None)


def zip_member(p: Path) -> str:
    """The one file in a zip archive; a workbook or an archive of several files is refused in one line."""
    with zipfile.ZipFile(p) as archive:
        names = [n for n in archive.namelist() if not n.endswith("/") and not n.startswith("__MACOSX/")]
    if "[Content_Types].xml" in names:
        raise DataError(f"data file {p} is an Office document (an Excel workbook?), not a CSV: save the sheet as CSV")
    if len(names) != 1:
        shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
        raise DataError(f"zip archive {p} holds {len(names)} files ({shown or 'none'}); give a zip of one CSV file")
    return names[0]


def head_of(p: Path, compression: str | None, size: int = 1 << 16) -> bytes:
    """The first ``size`` bytes of the file's content (decompressed)."""
    import bz2
    import gzip

    if compression is None:
        with p.open("rb") as fh:
            return fh.read(size)
    if compression == "zip":
        with zipfile.ZipFile(p) as archive, archive.open(zip_member(p)) as fh:
            return fh.read(size)
    if compression == "zstd":
        try:
            import zstandard
        except ImportError as exc:
            raise DataError(
                f"data file {p} is Zstandard-compressed; reading it needs the zstandard package "
                "(pip install zstandard), or decompress it first (unzstd)"
            ) from exc
        with p.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as fh:
            return fh.read(size)
    opener: Any = {"gzip": gzip.open, "bz2": bz2.open, "xz": lzma.open}[compression]
    with opener(p, "rb") as fh:
        return fh.read(size)

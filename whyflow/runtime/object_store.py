"""Files in object stores (``s3://``, ``gs://``, ``az://``, ``file://``), fetched through fsspec.

``--data s3://bucket/exports/latest.parquet`` is copied once into the job folder, then read as a
local file: the run, a resume and the notebook analyse that copy whatever the object holds by
then. Credentials come from the environment as each store's own library reads them
(``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_ENDPOINT_URL`` for S3...), or, in a
deployment, from a Prefect block whose options :func:`store_options` hands to fsspec for the
read alone; never from the URL, so no key reaches the job folder. The object's ETag or version, where the store has one, is
part of the fingerprint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from pathlib import Path, PurePosixPath
from typing import Any

from whyflow.core.errors import DataError

__all__ = ["ObjectStoreError", "is_object_url", "probe", "fetch", "store_options"]

_SCHEMES = {"s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "az": "adlfs", "abfs": "adlfs", "file": ""}


class ObjectStoreError(DataError):
    """An object that cannot be read: no such object or bucket, no permission, the store's library missing."""


_options: ContextVar[Mapping[str, Any] | None] = ContextVar("whyflow_store_options", default=None)


@contextlib.contextmanager
def store_options(options: Mapping[str, Any]) -> Iterator[None]:
    """Within the block, objects are probed and copied with these fsspec options (for S3: ``key``,
    ``secret``, ``endpoint_url``, ...). They live in memory for the read alone: nothing stores them."""
    token = _options.set(dict(options))
    try:
        yield
    finally:
        _options.reset(token)


def _filesystem(url: str) -> tuple[Any, str]:
    import fsspec

    return fsspec.core.url_to_fs(url, **(_options.get() or {}))


def is_object_url(text: str) -> bool:
    """Whether ``text`` names a file in an object store (or a ``file://`` URL)."""
    scheme, sep, _ = text.partition("://")
    return bool(sep) and scheme.lower() in _SCHEMES


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def probe(url: str) -> dict[str, Any]:
    """What the store says of the object (size, ETag, version), raising :class:`ObjectStoreError` if it cannot be read."""
    try:
        fs, path = _filesystem(url)
        info = fs.info(path)
    except ImportError as exc:
        package = _SCHEMES.get(url.partition("://")[0].lower()) or "fsspec"
        raise ObjectStoreError(f"reading {url} needs the {package} package (pip install {package})") from exc
    except FileNotFoundError as exc:
        raise ObjectStoreError(f"object not found: {url} ({_first_line(exc)})") from None
    except PermissionError as exc:
        raise ObjectStoreError(f"no permission to read {url} ({_first_line(exc)})") from None
    except Exception as exc:  # noqa: BLE001 - every store's failure becomes one line naming the object
        raise ObjectStoreError(f"cannot read {url}: {_first_line(exc)}") from None
    if info.get("type") == "directory":
        raise ObjectStoreError(f"{url} is a folder (a prefix), not a file: name one object")
    if not info.get("size"):
        raise ObjectStoreError(f"object is empty: {url}")
    identity: dict[str, Any] = {"source": url, "size": int(info["size"])}
    for key, name in (("ETag", "etag"), ("etag", "etag"), ("VersionId", "version"), ("generation", "version")):
        if info.get(key) and name not in identity:
            identity[name] = str(info[key]).strip('"')
    modified = info.get("LastModified") or info.get("mtime") or info.get("updated")
    if modified is not None:
        identity["modified"] = str(modified)
    return identity


def fetch(url: str, folder: Path) -> Path:
    """Copy the object into ``folder`` (as ``source-NAME``); the path of the copy."""
    target = folder / f"source-{PurePosixPath(url.partition('://')[2]).name or 'data'}"
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        fs, path = _filesystem(url)
        fs.get_file(path, str(target))
    except Exception as exc:  # noqa: BLE001 - the copy failing after the probe: one line, no partial copy
        target.unlink(missing_ok=True)
        raise ObjectStoreError(f"cannot copy {url}: {_first_line(exc)}") from None
    return target

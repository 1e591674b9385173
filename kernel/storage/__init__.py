"""File storage: one ``Storage`` interface, a local and an S3 backend, chosen by SVC_STORAGE.

``make_storage(settings)`` reads ``settings.storage``:

- empty: ``LocalStorage(<data dir>/files)``, the embedded default;
- ``file:///absolute/path``: ``LocalStorage`` at that path;
- ``s3://bucket[/prefix]``: ``S3Storage``, against ``SVC_S3_ENDPOINT_URL`` when set.

The contract every backend passes is ``tests/storage/test_storage_contract.py``.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlsplit

from kernel.storage.base import (
    ObjectNotFound,
    Storage,
    StorageError,
    StorageFull,
    no_room,
    validate_key,
    validate_prefix,
)
from kernel.storage.local import LocalStorage

__all__ = [
    "LocalStorage",
    "ObjectNotFound",
    "S3Storage",
    "Storage",
    "StorageError",
    "StorageFull",
    "make_storage",
    "no_room",
    "validate_key",
    "validate_prefix",
]


def make_storage(settings: Any) -> Storage:
    """The storage backend named by ``settings.storage``; ``ValueError`` naming SVC_STORAGE if bad."""
    raw = (settings.storage or "").strip()
    if not raw:
        return LocalStorage(settings.data_path / "files")
    parts = urlsplit(raw)
    # Echo the URL in errors, but never a user:password@ part someone pasted into it.
    url = raw.replace(parts.netloc, parts.netloc.rpartition("@")[2]) if "@" in parts.netloc else raw
    if parts.scheme == "file":
        path = unquote(parts.path)
        # file://relative/path would put 'relative' in the host part; insist on three slashes.
        if parts.netloc not in ("", "localhost") or not path.startswith("/"):
            raise ValueError(f"SVC_STORAGE={url!r}: a file URL needs an absolute path (file:///path)")
        return LocalStorage(path)
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"SVC_STORAGE={url!r}: an S3 URL needs a bucket (s3://bucket[/prefix])")
        if parts.query or parts.fragment or "@" in parts.netloc:
            raise ValueError(
                f"SVC_STORAGE={url!r}: put no credentials or options in the URL; "
                "use the AWS_* environment variables"
            )
        from kernel.storage.s3 import S3Storage  # boto3 costs ~0.3 s of imports: only for S3

        try:
            return S3Storage(
                parts.netloc,
                prefix=unquote(parts.path).strip("/"),
                endpoint_url=getattr(settings, "s3_endpoint_url", "") or None,
            )
        except StorageError as exc:
            raise ValueError(f"SVC_STORAGE={url!r}: {exc}") from exc
    raise ValueError(
        f"SVC_STORAGE={url!r} is not supported: use empty (local files in the data dir), "
        "file:///absolute/path or s3://bucket[/prefix]"
    )


def __getattr__(name: str) -> Any:
    if name == "S3Storage":  # imported on first use (boto3 is a heavy import)
        from kernel.storage.s3 import S3Storage

        return S3Storage
    raise AttributeError(name)

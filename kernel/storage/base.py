"""The storage contract: what every file backend promises, and the key rules they share.

A key is a relative, ``/``-separated path such as ``site-1/2024/photo.jpg``. The same rules
apply on every backend, so a key accepted by local storage is accepted by S3 and names the
same object on both.
"""

from __future__ import annotations

import abc
import asyncio
import errno
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

MAX_KEY_LENGTH = 1024

# Local storage stages writes under this directory inside its root so that os.replace stays
# on one filesystem; the name is refused as a first segment everywhere so that keys stay
# portable between backends.
RESERVED_SEGMENT = ".svc-tmp"


class StorageError(ValueError):
    """A key or prefix the storage refuses (malformed, escaping the root, reserved)."""


class StorageFull(Exception):
    """The storage has no room for the bytes (no space, a quota, a file-size limit); nothing
    was stored. The kernel answers it 507 ``INSUFFICIENT_STORAGE`` (``kernel/http/errors.py``)."""


# No space left, a quota used up, a file-size limit reached (RLIMIT_FSIZE, the file system's
# largest file): each means "these bytes do not fit", not a bug.
NO_ROOM = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def no_room(exc: BaseException) -> bool:
    """Whether ``exc`` is an ``OSError`` saying the bytes do not fit (``NO_ROOM``)."""
    return isinstance(exc, OSError) and exc.errno in NO_ROOM


def check_range(start: int, length: int | None) -> tuple[int, int | None]:
    """``(start, length)`` of ``iter_chunks`` if they are whole numbers; ``ValueError`` otherwise."""
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ValueError(f"start must be an integer >= 0, not {start!r}")
    if length is not None and (isinstance(length, bool) or not isinstance(length, int) or length < 0):
        raise ValueError(f"length must be None or an integer >= 0, not {length!r}")
    return start, length


class ObjectNotFound(LookupError):
    """No object is stored under the key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"no object stored under {self.key!r}"


def _check_characters(value: str, what: str) -> None:
    if len(value) > MAX_KEY_LENGTH:
        raise StorageError(f"{what} is longer than {MAX_KEY_LENGTH} characters")
    if value.startswith("/"):
        raise StorageError(f"{what} must be relative, not start with '/'")
    if "\\" in value:
        raise StorageError(f"{what} must use '/' as separator, not a backslash")
    # Control characters (NUL above all) break file systems and, via Content-Disposition,
    # response headers.
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value):
        raise StorageError(f"{what} must not contain control characters")


def validate_key(key: str) -> str:
    """Return ``key`` unchanged if it is a valid object key; raise ``StorageError`` otherwise."""
    if not isinstance(key, str) or not key:
        raise StorageError("key must be a non-empty string")
    _check_characters(key, "key")
    segments = key.split("/")
    # Empty and '.' segments are refused as well as '..': a file system folds 'a//b' and
    # 'a/./b' into 'a/b' while S3 keeps them apart, so allowing them would break the contract.
    for segment in segments:
        if segment in ("", ".", ".."):
            raise StorageError(f"key {key!r} has an empty, '.' or '..' segment")
    if segments[0] == RESERVED_SEGMENT:
        raise StorageError(f"keys under {RESERVED_SEGMENT}/ are reserved")
    return key


def validate_prefix(prefix: str) -> str:
    """Return ``prefix`` if it may start keys (empty, or a key's beginning; may end with '/')."""
    if not isinstance(prefix, str):
        raise StorageError("prefix must be a string")
    if not prefix:
        return prefix
    _check_characters(prefix, "prefix")
    # The last segment may be partial ('img/ph' matches 'img/photo.jpg'), so only complete
    # segments are held to the key rules.
    for segment in prefix.split("/")[:-1]:
        if segment in ("", ".", ".."):
            raise StorageError(f"prefix {prefix!r} has an empty, '.' or '..' segment")
    if prefix.split("/")[-1] == "..":
        raise StorageError(f"prefix {prefix!r} has a '..' segment")
    return prefix


class Storage(abc.ABC):
    """A flat store of byte objects under validated keys. All methods are coroutines."""

    @abc.abstractmethod
    async def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        """Store ``data`` under ``key``, replacing any object there, atomically."""

    async def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None, *,
                       move: bool = False) -> None:
        """Store the contents of the local file ``path`` under ``key``, like ``put``. Backends
        override it to stream (large uploads never sit whole in memory); this default reads it.
        ``move=True``: the caller gives the file up; it is gone afterwards (local storage renames
        it into place when it can, instead of copying)."""
        validate_key(key)
        data = await asyncio.to_thread(Path(path).read_bytes)
        await self.put(key, data, content_type)
        if move:
            Path(path).unlink(missing_ok=True)

    @abc.abstractmethod
    async def get(self, key: str) -> bytes:
        """The object's bytes; ``ObjectNotFound`` when there is none."""

    async def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, *, start: int = 0,
                          length: int | None = None) -> AsyncIterator[bytes]:
        """The object's bytes in chunks of at most ``chunk_size`` (a large object is served
        without holding it whole); ``ObjectNotFound`` before the first chunk when there is none.
        ``start`` and ``length`` select bytes ``[start, start + length)`` (``length`` None: to the
        end), clipped to the object as a slice is: a start at or past the end yields nothing.
        Backends override it to stream and to read only the range; this default reads it whole."""
        start, length = check_range(start, length)
        data = await self.get(key)
        end = len(data) if length is None else min(len(data), start + length)
        for offset in range(start, end, chunk_size):
            yield data[offset:min(offset + chunk_size, end)]

    @abc.abstractmethod
    async def delete(self, key: str) -> None:
        """Remove the object; deleting a missing key is not an error."""

    @abc.abstractmethod
    async def exists(self, key: str) -> bool:
        """Whether an object is stored under ``key``."""

    @abc.abstractmethod
    async def size(self, key: str) -> int:
        """The object's length in bytes; ``ObjectNotFound`` when there is none."""

    @abc.abstractmethod
    async def list(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix`` (a plain string prefix), sorted."""

    async def presigned_put_url(
        self, key: str, expires: int = 900, content_type: str | None = None
    ) -> str | None:
        """A URL a client may PUT the object to directly, or None when the backend has none."""
        validate_key(key)
        return None

    async def check(self) -> str:
        """Health check: write, read back and delete a tiny object; "ok" or an exception."""
        key = f".health/{uuid.uuid4().hex}"
        payload = b"ok"
        await self.put(key, payload, "text/plain")
        try:
            if await self.get(key) != payload:
                raise RuntimeError(f"storage {self.describe()} returned different bytes")
        finally:
            await self.delete(key)
        return "ok"

    def room(self) -> tuple[int, int] | None:
        """``(free bytes, total bytes)`` of the volume holding the objects, or None where the
        backend has no such bound (S3). Read at scrape time (``svc_storage_free_bytes``)."""
        return None

    @abc.abstractmethod
    def describe(self) -> str:
        """Where the objects live, for logs and health output (never credentials)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"

"""Local file storage: one file per object under a root directory.

Writes go to a temporary file in ``<root>/.svc-tmp`` and are moved into place with
``os.replace``, so a reader sees the old object or the new one, never half of one. Every path
is resolved (symlinks included) and checked to lie inside the root before it is touched.
Blocking calls run in a worker thread.

Unlike S3, a file system cannot hold both ``a`` and ``a/b``; storing one when the other exists
raises ``StorageError``.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO

from kernel.storage.base import (
    RESERVED_SEGMENT,
    ObjectNotFound,
    Storage,
    StorageError,
    StorageFull,
    check_range,
    no_room,
    validate_key,
    validate_prefix,
)


def volume_room(path: Path) -> tuple[int, int] | None:
    """``(free bytes, total bytes)`` of the file system holding ``path`` or its nearest existing
    parent; None when none can be read."""
    for candidate in (path, *path.parents):
        try:
            stat = os.statvfs(candidate)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError:
            return None
        return stat.f_bavail * stat.f_frsize, stat.f_blocks * stat.f_frsize
    return None


class LocalStorage(Storage):
    """Objects as files under ``root``; the directory is created on first write."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root).expanduser().resolve()

    def describe(self) -> str:
        return f"local:{self.root}"

    def room(self) -> tuple[int, int] | None:
        """Free and total bytes of the file system under the root (or its nearest existing
        parent, before the first write), as an unprivileged writer sees them."""
        return volume_room(self.root)

    def _path(self, key: str) -> Path:
        validate_key(key)
        path = (self.root / key).resolve()
        # resolve() follows symlinks, so a link inside the root pointing elsewhere is caught too.
        if path == self.root or not path.is_relative_to(self.root):
            raise StorageError(f"key {key!r} resolves outside the storage root")
        return path

    # -- blocking helpers, run through asyncio.to_thread ----------------------------------

    def _put_sync(self, path: Path, data: bytes | Path) -> None:
        staging = self.root / RESERVED_SEGMENT
        try:
            staging.mkdir(parents=True, exist_ok=True)
            fd, tmp_name = tempfile.mkstemp(dir=staging, prefix="put-")
        except OSError as exc:
            if no_room(exc):  # no inode or block left even for the empty staging file
                raise StorageFull(f"{self.describe()} has no room: {exc.strerror}") from exc
            raise
        try:
            with os.fdopen(fd, "wb") as fh:
                if isinstance(data, Path):  # put_file: copied in chunks, never whole in memory
                    with data.open("rb") as source:
                        shutil.copyfileobj(source, fh, 1024 * 1024)
                else:
                    fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            # A concurrent delete may prune the parent directory between mkdir and replace;
            # one retry covers that race.
            for attempt in (1, 2):
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    os.replace(tmp_name, path)
                    return
                except FileNotFoundError:
                    if attempt == 2:
                        raise
        except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
            raise StorageError(f"{path.relative_to(self.root)} conflicts with an existing object") from exc
        except OSError as exc:
            if no_room(exc):  # the staged part is removed below: nothing half-written stays
                raise StorageFull(f"{self.describe()} has no room: {exc.strerror}") from exc
            raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp_name)

    def _read_sync(self, path: Path, key: str) -> bytes:
        try:
            return path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise ObjectNotFound(key) from None

    def _size_sync(self, path: Path, key: str) -> int:
        if not path.is_file():
            raise ObjectNotFound(key)
        return path.stat().st_size

    def _delete_sync(self, path: Path) -> None:
        try:
            path.unlink()
        except (FileNotFoundError, NotADirectoryError):
            return
        except IsADirectoryError:
            return  # 'a' when only 'a/b' exists: there is no object 'a' to delete
        # Prune directories left empty so that deleted prefixes do not accumulate.
        parent = path.parent
        while parent != self.root and parent.is_relative_to(self.root):
            try:
                parent.rmdir()
            except OSError:
                break
            parent = parent.parent

    def _list_sync(self, prefix: str) -> list[str]:
        # Walk only the deepest directory the prefix names, not the whole tree.
        base = self.root / prefix.rpartition("/")[0] if "/" in prefix else self.root
        base = base.resolve()
        if not base.is_relative_to(self.root) or not base.is_dir():
            return []
        keys: list[str] = []
        for dirpath, dirnames, filenames in os.walk(base):
            if Path(dirpath) == self.root and RESERVED_SEGMENT in dirnames:
                dirnames.remove(RESERVED_SEGMENT)
            rel_dir = Path(dirpath).relative_to(self.root).as_posix()
            for name in filenames:
                key = name if rel_dir == "." else f"{rel_dir}/{name}"
                if key.startswith(prefix):
                    keys.append(key)
        return sorted(keys)

    # -- the Storage interface -------------------------------------------------------------

    async def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        """Store ``data`` under ``key`` (content type is not kept by local storage)."""
        path = self._path(key)
        await asyncio.to_thread(self._put_sync, path, bytes(data))

    def _move_sync(self, path: Path, source: Path) -> bool:
        """Rename ``source`` into place after syncing it; False when it is on another file system."""
        fd = os.open(source, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        for attempt in (1, 2):  # a concurrent delete may prune the parent between mkdir and replace
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                os.replace(source, path)
                return True
            except FileNotFoundError:
                if attempt == 2 or not source.exists():
                    raise
            except (NotADirectoryError, IsADirectoryError, FileExistsError) as exc:
                raise StorageError(f"{path.relative_to(self.root)} conflicts with an existing object") from exc
            except OSError as exc:
                if exc.errno == errno.EXDEV:
                    return False
                if no_room(exc):  # a new directory on a full file system; the source stays the caller's
                    raise StorageFull(f"{self.describe()} has no room: {exc.strerror}") from exc
                raise
        return False

    async def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None, *,
                       move: bool = False) -> None:
        """Store the local file ``path`` under ``key``, atomically: copied in chunks, or with
        ``move=True`` synced and renamed into place (a copy when it is on another file system)."""
        target = self._path(key)
        source = Path(path)
        if move and await asyncio.to_thread(self._move_sync, target, source):
            return
        await asyncio.to_thread(self._put_sync, target, source)
        if move:
            source.unlink(missing_ok=True)

    async def get(self, key: str) -> bytes:
        """The object's bytes; ``ObjectNotFound`` when there is none."""
        path = self._path(key)
        return await asyncio.to_thread(self._read_sync, path, key)

    async def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, *, start: int = 0,
                          length: int | None = None) -> AsyncIterator[bytes]:
        """The file (or ``length`` bytes of it from ``start``) in chunks, each read in a worker
        thread after one seek."""
        start, length = check_range(start, length)
        path = self._path(key)

        def open_file() -> BinaryIO:
            try:
                fh = path.open("rb")
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
                raise ObjectNotFound(key) from None
            if start:
                fh.seek(start)
            return fh

        fh = await asyncio.to_thread(open_file)
        left = length
        try:
            while left is None or left > 0:
                want = chunk_size if left is None else min(chunk_size, left)
                chunk = await asyncio.to_thread(fh.read, want)
                if not chunk:
                    break
                if left is not None:
                    left -= len(chunk)
                yield chunk
        finally:
            fh.close()

    async def delete(self, key: str) -> None:
        """Remove the object if present."""
        path = self._path(key)
        await asyncio.to_thread(self._delete_sync, path)

    async def exists(self, key: str) -> bool:
        """Whether a file is stored under ``key``."""
        path = self._path(key)
        return await asyncio.to_thread(path.is_file)

    async def size(self, key: str) -> int:
        """The file's length in bytes."""
        path = self._path(key)
        return await asyncio.to_thread(self._size_sync, path, key)

    async def list(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted."""
        validate_prefix(prefix)
        return await asyncio.to_thread(self._list_sync, prefix)

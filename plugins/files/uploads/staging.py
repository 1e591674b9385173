"""Staging an upload's bytes on local disk while counting them against the cap.

The body is read chunk by chunk into a temporary file under ``<data dir>/.upload-staging``:
the true byte length is counted as it arrives and the upload is refused (413
``FILE_TOO_LARGE``) the moment it passes the cap, so a body is never buffered whole in memory
and an oversized one is never read to its end. The SHA-256 is computed on the way.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kernel.storage import StorageFull, no_room
from plugins.files.errors import refuse

WRITE_BUFFER = 1024 * 1024


@dataclass
class Staged:
    """A staged upload: its local ``path``, ``size`` in bytes and ``sha256`` (hex)."""

    path: Path
    size: int
    sha256: str

    def discard(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()


def staging_dir(kernel: Any) -> Path:
    path = kernel.settings.data_path / ".upload-staging"
    path.mkdir(parents=True, exist_ok=True)
    return path


def too_large(limit: int) -> Exception:
    return refuse("FILE_TOO_LARGE", f"The upload is larger than the policy's {limit} bytes", maxBytes=limit)


async def stage(kernel: Any, chunks: AsyncIterator[bytes], limit: int) -> Staged:
    """Write ``chunks`` to a staging file, refusing more than ``limit`` bytes; the caller
    discards the ``Staged`` file when done (on refusal it is already gone). A full data dir is
    ``StorageFull`` (507), with nothing left behind."""
    try:
        fd, name = tempfile.mkstemp(dir=staging_dir(kernel), prefix="up-")
    except OSError as exc:
        if no_room(exc):
            raise StorageFull(f"the upload staging directory has no room: {exc.strerror}") from exc
        raise
    path = Path(name)
    digest = hashlib.sha256()
    size = 0
    pending: list[bytes] = []
    buffered = 0
    try:
        with os.fdopen(fd, "wb") as fh:
            async for chunk in chunks:
                if not chunk:
                    continue
                size += len(chunk)
                if size > limit:
                    raise too_large(limit)
                digest.update(chunk)
                pending.append(chunk)
                buffered += len(chunk)
                if buffered >= WRITE_BUFFER:
                    fh.write(b"".join(pending))
                    pending, buffered = [], 0
            fh.write(b"".join(pending))
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        if no_room(exc):
            raise StorageFull(f"the upload staging directory has no room: {exc}") from exc
        raise
    return Staged(path, size, digest.hexdigest())

"""A storage with no room: a real write refused by the operating system, in a child process
whose file-size limit (``RLIMIT_FSIZE``) is below the object, so ``write`` fails with ``EFBIG``
as it would with ``ENOSPC`` on a full disk. ``LocalStorage`` and the files plugin's upload
staging raise ``StorageFull`` (answered 507 ``INSUFFICIENT_STORAGE``) and leave no partial file;
what fits is still stored. ``bench/faults/disk_full.py`` does the same on a real full tmpfs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kernel.storage import StorageFull, no_room

resource = pytest.importorskip("resource")  # POSIX only

CHILD = r"""
import asyncio, json, os, resource, signal, sys
from pathlib import Path
from types import SimpleNamespace

from kernel.storage import LocalStorage, StorageFull
from plugins.files.uploads.staging import stage

root, source, data_dir = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # write() then fails with EFBIG instead of a signal
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))
storage = LocalStorage(root)
out = {}

async def main():
    for name, call in (("put", lambda: storage.put("s/files/big", b"x" * 200_000)),
                       ("put_file", lambda: storage.put_file("s/files/copied", source))):
        try:
            await call()
            out[name] = "stored"
        except StorageFull as exc:
            out[name] = "full: " + str(exc)
    await storage.put("s/files/small", b"fits")
    out["small"] = (await storage.get("s/files/small")).decode()

    async def chunks():
        for _ in range(4):
            yield b"y" * 50_000

    kernel = SimpleNamespace(settings=SimpleNamespace(data_path=data_dir))
    try:
        await stage(kernel, chunks(), 10_000_000)
        out["stage"] = "stored"
    except StorageFull as exc:
        out["stage"] = "full: " + str(exc)

asyncio.run(main())
print(json.dumps(out))
"""


def test_a_write_past_the_room_is_storage_full_and_leaves_nothing(tmp_path):
    root, data_dir = tmp_path / "files", tmp_path / "data"
    source = tmp_path / "source.bin"
    source.write_bytes(b"z" * 200_000)  # written here, before the child's limit
    done = subprocess.run([sys.executable, "-c", CHILD, str(root), str(source), str(data_dir)],
                          capture_output=True, text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert out["put"].startswith("full: ") and out["put_file"].startswith("full: ")
    assert out["stage"].startswith("full: ")
    assert out["small"] == "fits"
    # Nothing half-written: only the small object, no staged part, no staged upload.
    stored = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    assert stored == ["s/files/small"]
    assert [p for p in data_dir.rglob("*") if p.is_file()] == []


def test_only_running_out_of_room_counts():
    import errno

    assert no_room(OSError(errno.ENOSPC, "No space left on device"))
    assert no_room(OSError(errno.EDQUOT, "Disk quota exceeded"))
    assert no_room(OSError(errno.EFBIG, "File too large"))
    assert not no_room(OSError(errno.EACCES, "Permission denied"))
    assert not no_room(ValueError("not an OSError"))
    assert issubclass(StorageFull, Exception) and not issubclass(StorageFull, OSError)

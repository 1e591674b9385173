"""Importing an installed bundle: where it is unpacked and under which module name.

A bundle is unpacked under ``<data dir>/extensions/<name>-<version>-<sha256[:16]>/`` (written to
a temporary folder and renamed, so a half-written folder is never imported; a folder that
exists is reused only when its ``.sha256`` marker matches) and its entry package is imported
with ``importlib`` under a module name of its own, ``svc_ext_<name>_<sha256[:16]>``: two
versions never share a module, and unloading drops that name and its submodules from
``sys.modules``. Relative imports inside the package work; the package's own top-level name
is not importable (``import hello_ext`` inside it would find nothing, use ``from . import x``).
"""

from __future__ import annotations

import importlib
import importlib.util
import shutil
import sys
import tempfile
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

from extensions_sdk.bundle import unpack

_LOCK = threading.Lock()
_USERS: dict[str, int] = {}  # module name -> apps of this process that loaded it (tests run several)


def module_name(name: str, sha256: str) -> str:
    return f"svc_ext_{name.replace('-', '_')}_{sha256[:16]}"


def _folder(data_path: Path, row: Any) -> Path:
    return data_path / "extensions" / f"{row['name']}-{row['version']}-{row['sha256'][:16]}"


def remove_unpacked(data_path: Path, row: Any) -> None:
    """Delete this worker's unpacked copy (uninstall; other hosts keep theirs until their data dir goes)."""
    shutil.rmtree(_folder(data_path, row), ignore_errors=True)


def unpacked_dir(data_path: Path, row: Any) -> Path:
    """The bundle's folder, unpacked now when missing or not the same bytes."""
    target = _folder(data_path, row)
    base = target.parent
    marker = target / ".sha256"
    if marker.is_file() and marker.read_text().strip() == row["sha256"]:
        return target
    base.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=base))
    try:
        unpack(row["bundle"], staging)
        (staging / ".sha256").write_text(row["sha256"])
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target


def import_entry(data_path: Path, row: Any) -> tuple[str, ModuleType]:
    """(module name, the entry module) of an installed extension."""
    unique = module_name(row["name"], row["sha256"])
    package, _, rest = row["manifest"]["entry"].partition(".")
    with _LOCK:
        module = sys.modules.get(unique)
        if module is None:
            folder = unpacked_dir(data_path, row)
            init = folder / package / "__init__.py"
            if init.is_file():
                spec = importlib.util.spec_from_file_location(unique, init,
                                                              submodule_search_locations=[str(init.parent)])
            else:
                spec = importlib.util.spec_from_file_location(unique, folder / f"{package}.py")
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot import the entry package {package!r}")
            module = importlib.util.module_from_spec(spec)
            sys.modules[unique] = module
            try:
                spec.loader.exec_module(module)
            except BaseException:
                _drop(unique)
                raise
        _USERS[unique] = _USERS.get(unique, 0) + 1
    try:
        entry = importlib.import_module(f"{unique}.{rest}") if rest else module
    except BaseException:
        release(unique)
        raise
    return unique, entry


def _drop(unique: str) -> None:
    for name in [n for n in sys.modules if n == unique or n.startswith(unique + ".")]:
        sys.modules.pop(name, None)


def release(unique: str) -> None:
    """This app no longer uses the module; the last user drops it from ``sys.modules``."""
    with _LOCK:
        left = _USERS.get(unique, 0) - 1
        if left > 0:
            _USERS[unique] = left
            return
        _USERS.pop(unique, None)
        _drop(unique)

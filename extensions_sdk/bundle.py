"""Extension manifests and bundles: a zip holding ``manifest.json`` and the package it names.

The server checks an upload with the same functions (``read_manifest``), so what ``svc-ext
build`` accepts is what ``POST /extensions/upload`` accepts:

- the manifest is ``{ name, version, publisher, entry, capabilities, description?, ui?,
  settings? }``; ``capabilities`` name only known kinds (``CAPABILITY_KINDS``); ``ui`` entries
  are ``{ id, type, label, icon?, source? }`` (``source``: a panel's script in the bundle, required
  on a ``panel``, which the
  studio loads in a sandboxed frame, docs/extensions.md#ui-panels); ``settings`` names the site settings the extension reads
  and writes (``SETTING``, stored as ``ext.<name>.<key>``; they need ``settings``);
- the zip holds no absolute path, no ``..`` part, no backslash, no symlink, no duplicate name,
  at most ``MAX_FILES`` files, ``MAX_BUNDLE_BYTES`` packed and ``MAX_UNPACKED_BYTES`` unpacked,
  and no member whose compression ratio exceeds ``MAX_RATIO`` (a zip bomb).
"""

from __future__ import annotations

import io
import json
import re
import stat
import zipfile
from pathlib import Path, PurePosixPath
from typing import Any

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
VERSION = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
CAPABILITY = re.compile(r"^([a-z][a-z-]*)(?::([A-Za-z0-9_*][A-Za-z0-9_.*-]{0,99}))?$")
COLLECTION = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
EVENT = re.compile(r"^[A-Za-z0-9_*][A-Za-z0-9_.*-]{0,99}$")
# kind -> whether it takes a value (``items:<collection>``, ``events:<event pattern>``).
CAPABILITY_KINDS = {"routes": False, "items": True, "network": False, "events": True, "jobs": False,
                    "flows": False, "ui": False, "settings": False, "files": False}
UI_TYPES = ("module", "panel", "interface", "display", "layout")
UI_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")
# -- ext_ui: a panel's script (``source``): a .js file of the bundle, served inline in its own
# document (plugins/extensions/panels.py), so it may not close its <script> element.
UI_SOURCE = re.compile(r"^[A-Za-z0-9_-]+(/[A-Za-z0-9_-]+)*\.js$")
MAX_UI_SOURCE_BYTES = 256 * 1024
# -- end ext_ui
MANIFEST_KEYS = {"name", "version", "publisher", "entry", "capabilities", "description", "ui", "settings"}
SETTING = re.compile(r"^[a-z0-9][a-z0-9_-]{0,39}$")
MAX_SETTINGS = 50
RESERVED_PREFIX = "svc-"
MAX_BUNDLE_BYTES = 5 * 1024 * 1024
MAX_UNPACKED_BYTES = 20 * 1024 * 1024
MAX_FILES = 500
MAX_RATIO = 100
MAX_MANIFEST_BYTES = 64 * 1024


class ManifestError(ValueError):
    """The manifest or bundle is not acceptable; ``path`` names the offending part.

    ``unsafe`` is true for a hostile archive (traversal, symlink, bomb, caps) rather than a
    malformed manifest."""

    def __init__(self, message: str, path: list[str], *, unsafe: bool = False) -> None:
        super().__init__(message)
        self.path = path
        self.unsafe = unsafe


def check_capability(value: Any) -> str:
    """One capability name, checked against ``CAPABILITY_KINDS``; ValueError names the problem."""
    match = CAPABILITY.match(value) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f"{value!r} is not a capability name")
    kind, arg = match.group(1), match.group(2)
    if kind not in CAPABILITY_KINDS:
        raise ValueError(f"unknown capability {kind!r} (known: {', '.join(sorted(CAPABILITY_KINDS))})")
    if CAPABILITY_KINDS[kind] != (arg is not None):
        form = f"'{kind}:<value>'" if CAPABILITY_KINDS[kind] else f"'{kind}' without a value"
        raise ValueError(f"capability {value!r} must be {form}")
    if kind == "items" and not COLLECTION.match(arg or ""):
        raise ValueError(f"capability {value!r} must name one collection")
    if kind == "events" and not EVENT.match(arg or ""):
        raise ValueError(f"capability {value!r} must name an event or pattern")
    return value


def _check_ui(entries: Any) -> None:
    if not isinstance(entries, list) or len(entries) > 50:
        raise ManifestError("manifest 'ui' must be a list of at most 50 entries", ["ui"])
    seen: set[str] = set()
    for i, entry in enumerate(entries):
        where = ["ui", str(i)]
        if not isinstance(entry, dict) or set(entry) - {"id", "type", "label", "icon", "source"}:
            raise ManifestError("a ui entry is { id, type, label, icon?, source? }", where)
        if not isinstance(entry.get("id"), str) or not UI_ID.match(entry["id"]) or entry["id"] in seen:
            raise ManifestError("a ui entry needs a unique lowercase 'id'", [*where, "id"])
        seen.add(entry["id"])
        if entry.get("type") not in UI_TYPES:
            raise ManifestError(f"a ui entry's 'type' is one of {', '.join(UI_TYPES)}", [*where, "type"])
        for key in ("label", "icon"):
            value = entry.get(key)
            if (key == "label" or value is not None) and (not isinstance(value, str) or not 0 < len(value) <= 100):
                raise ManifestError(f"a ui entry's '{key}' is a string of 1 to 100 characters", [*where, key])
        if entry["type"] == "panel" and "source" not in entry:  # it would be listed and never load
            raise ManifestError("a 'panel' ui entry needs a 'source': the path of its .js file in the bundle",
                                [*where, "source"])
        if "source" in entry and (entry["type"] != "panel" or not isinstance(entry["source"], str)
                                  or not UI_SOURCE.match(entry["source"])):
            raise ManifestError("a ui entry's 'source' is the path of a .js file in the bundle "
                                "(letters, digits, '-', '_' and '/'), on a 'panel' entry", [*where, "source"])


def panel_source(archive: zipfile.ZipFile, by_name: dict[str, zipfile.ZipInfo], entry: dict[str, Any],
                 where: list[str]) -> str:
    """-- ext_ui: the text of a panel's ``source`` (UTF-8, at most ``MAX_UI_SOURCE_BYTES``, never
    closing its ``<script>`` element); ManifestError names the entry."""
    info = by_name.get(entry["source"])
    if info is None or info.is_dir():
        raise ManifestError(f"bundle does not contain the panel source {entry['source']!r}", [*where, "source"])
    if info.file_size > MAX_UI_SOURCE_BYTES:
        raise ManifestError(f"a panel source is at most {MAX_UI_SOURCE_BYTES} bytes", [*where, "source"])
    try:
        text = _read_capped(archive, info, MAX_UI_SOURCE_BYTES).decode("utf-8")
    except UnicodeDecodeError:
        raise ManifestError("a panel source is UTF-8 text", [*where, "source"]) from None
    if re.search(r"</script|<!--", text, re.IGNORECASE):
        raise ManifestError("a panel source may not contain '</script' or '<!--' (it is served inline)",
                            [*where, "source"])
    return text


def validate_manifest(manifest: Any) -> dict[str, Any]:
    """Check ``{ name, version, publisher, entry, capabilities, description?, ui?, settings? }``;
    returns it."""
    if not isinstance(manifest, dict):
        raise ManifestError("manifest must be a JSON object", [])
    for key in manifest:
        if key not in MANIFEST_KEYS:
            raise ManifestError(f"unknown manifest key {key!r}", [key])
    checks = {"name": NAME, "version": VERSION, "publisher": NAME, "entry": ENTRY}
    for key, pattern in checks.items():
        value = manifest.get(key)
        if not isinstance(value, str) or not pattern.match(value):
            raise ManifestError(f"manifest '{key}' is missing or malformed", [key])
    caps = manifest.get("capabilities", [])
    if not isinstance(caps, list) or len(caps) > 100:
        raise ManifestError("manifest 'capabilities' must be a list of capability names", ["capabilities"])
    for i, cap in enumerate(caps):
        try:
            check_capability(cap)
        except ValueError as exc:
            raise ManifestError(f"manifest 'capabilities': {exc}", ["capabilities", str(i)]) from exc
    if len(set(caps)) != len(caps):
        raise ManifestError("manifest 'capabilities' names a capability twice", ["capabilities"])
    description = manifest.get("description")
    if description is not None and (not isinstance(description, str) or len(description) > 500):
        raise ManifestError("manifest 'description' is a string of at most 500 characters", ["description"])
    if "ui" in manifest:
        _check_ui(manifest["ui"])
        if manifest["ui"] and "ui" not in caps:
            raise ManifestError("manifest 'ui' entries need the 'ui' capability", ["ui"])
    if "settings" in manifest:
        _check_settings(manifest["settings"], caps)
    return manifest


def _check_settings(names: Any, caps: list[Any]) -> None:
    if not isinstance(names, list) or len(names) > MAX_SETTINGS:
        raise ManifestError(f"manifest 'settings' must be a list of at most {MAX_SETTINGS} names", ["settings"])
    for i, name in enumerate(names):
        if not isinstance(name, str) or not SETTING.match(name):
            raise ManifestError("a setting name matches ^[a-z0-9][a-z0-9_-]{0,39}$", ["settings", str(i)])
    if len(set(names)) != len(names):
        raise ManifestError("manifest 'settings' names a setting twice", ["settings"])
    if names and "settings" not in caps:
        raise ManifestError("manifest 'settings' need the 'settings' capability", ["settings"])


def _unsafe(message: str, name: str) -> ManifestError:
    return ManifestError(message, [name], unsafe=True)


def check_archive(archive: zipfile.ZipFile) -> list[zipfile.ZipInfo]:
    """The members of a bundle, refusing anything an unpacker could be tricked by."""
    infos = archive.infolist()
    if len(infos) > MAX_FILES:
        raise ManifestError(f"bundle holds more than {MAX_FILES} files", [], unsafe=True)
    total = 0
    seen: set[str] = set()
    for info in infos:
        name = info.filename
        parts = PurePosixPath(name).parts
        if (not name or name.startswith("/") or "\\" in name or ".." in parts or "\x00" in name
                or (len(name) > 1 and name[1] == ":")):
            raise _unsafe(f"bundle holds an unsafe path {name!r}", name)
        kind = stat.S_IFMT(info.external_attr >> 16)  # 0 when the zip records no file type
        if kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
            raise _unsafe(f"bundle holds a link or special file {name!r}", name)
        if name.rstrip("/") in seen:
            raise _unsafe(f"bundle holds {name!r} twice", name)
        seen.add(name.rstrip("/"))
        if info.flag_bits & 0x1:
            raise _unsafe(f"bundle member {name!r} is encrypted", name)
        total += info.file_size
        if total > MAX_UNPACKED_BYTES:
            raise ManifestError(f"bundle unpacks to more than {MAX_UNPACKED_BYTES} bytes", [], unsafe=True)
        if info.file_size > 1024 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise _unsafe(f"bundle member {name!r} is compressed more than {MAX_RATIO}:1", name)
    return infos


def _read_capped(archive: zipfile.ZipFile, info: zipfile.ZipInfo, cap: int) -> bytes:
    """A member's bytes, never more than ``cap`` whatever its header claims."""
    with archive.open(info) as handle:
        data = handle.read(cap + 1)
    if len(data) > cap or len(data) != info.file_size:
        raise _unsafe(f"bundle member {info.filename!r} is not the size its header says", info.filename)
    return data


def open_bundle(bundle: bytes) -> zipfile.ZipFile:
    if len(bundle) > MAX_BUNDLE_BYTES:
        raise ManifestError(f"bundle is larger than {MAX_BUNDLE_BYTES} bytes", [], unsafe=True)
    try:
        return zipfile.ZipFile(io.BytesIO(bundle))
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ManifestError("bundle is not a zip file", []) from exc


def read_manifest(bundle: bytes) -> dict[str, Any]:
    """The validated manifest of a bundle, checking the archive is safe and holds the entry package."""
    with open_bundle(bundle) as archive:
        infos = check_archive(archive)
        by_name = {i.filename: i for i in infos}
        if "manifest.json" not in by_name:
            raise ManifestError("bundle has no manifest.json", ["manifest.json"])
        try:
            raw = _read_capped(archive, by_name["manifest.json"], MAX_MANIFEST_BYTES)
            manifest = validate_manifest(json.loads(raw))
        except ManifestError:
            raise
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise ManifestError("manifest.json is not valid JSON", ["manifest.json"]) from exc
        package = manifest["entry"].split(".")[0]
        if not any(n == f"{package}.py" or n.startswith(f"{package}/") for n in by_name):
            raise ManifestError(f"bundle does not contain the entry package {package!r}", ["entry"])
        for i, entry in enumerate(manifest.get("ui") or ()):  # -- ext_ui: every panel's script is there
            if "source" in entry:
                panel_source(archive, by_name, entry, ["ui", str(i)])
    return manifest


def unpack(bundle: bytes, target: Path) -> None:
    """Write the checked members of ``bundle`` under ``target`` (regular files only)."""
    with open_bundle(bundle) as archive:
        root = target.resolve()
        for info in check_archive(archive):
            if info.is_dir():
                continue
            dest = (root / info.filename).resolve()
            if root not in dest.parents:
                raise _unsafe(f"bundle holds an unsafe path {info.filename!r}", info.filename)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(_read_capped(archive, info, MAX_UNPACKED_BYTES))


class CompileError(ValueError):
    """A module of the extension does not compile; the message names the file and line."""


def _bundled(source: Path) -> list[Path]:
    return sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink()
                  and "__pycache__" not in p.relative_to(source).parts and p.suffix != ".pyc")


def compile_package(source: Path) -> int:
    """Compile every ``.py`` file of the folder ``source`` (nothing is written); returns how many.

    A syntax error raises ``CompileError`` naming the file (relative to ``source``) and line, so
    a typo fails the build rather than the server's load after an upload."""
    count = 0
    for path in _bundled(source):
        if path.suffix != ".py":
            continue
        rel = path.relative_to(source).as_posix()
        try:
            compile(path.read_bytes(), rel, "exec", dont_inherit=True)
        except SyntaxError as exc:
            raise CompileError(f"{rel}:{exc.lineno}: {exc.msg}") from None
        except ValueError as exc:  # NUL bytes in the source
            raise CompileError(f"{rel}: {exc}") from None
        count += 1
    return count


def build_bundle(source: Path) -> bytes:
    """Zip ``source`` (a folder with manifest.json and the entry package), deterministically,
    after compiling every module (``compile_package``)."""
    validate_manifest(json.loads((source / "manifest.json").read_text(encoding="utf-8")))
    compile_package(source)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in _bundled(source):
            rel = path.relative_to(source).as_posix()
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = (stat.S_IFREG | 0o644) << 16
            archive.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    read_manifest(data)  # the bundle we built must pass the same checks as an upload
    return data

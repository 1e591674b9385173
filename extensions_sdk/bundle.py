"""Extension manifests and bundles: a zip holding ``manifest.json`` and the package it names."""

from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path
from typing import Any

NAME = re.compile(r"^[a-z0-9][a-z0-9-]{1,62}$")
VERSION = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")
ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
CAPABILITY = re.compile(r"^[a-z][a-z0-9_-]*(:[a-z0-9_*-]+)?$")
MANIFEST_KEYS = {"name", "version", "publisher", "entry", "capabilities", "description"}
MAX_BUNDLE_BYTES = 20 * 1024 * 1024


class ManifestError(ValueError):
    """The manifest or bundle is not acceptable; ``path`` names the offending part."""

    def __init__(self, message: str, path: list[str]) -> None:
        super().__init__(message)
        self.path = path


def validate_manifest(manifest: Any) -> dict[str, Any]:
    """Check ``{ name, version, publisher, entry, capabilities }``; returns it unchanged."""
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
    if not isinstance(caps, list) or not all(isinstance(c, str) and CAPABILITY.match(c) for c in caps):
        raise ManifestError("manifest 'capabilities' must be a list of capability names", ["capabilities"])
    return manifest


def read_manifest(bundle: bytes) -> dict[str, Any]:
    """The validated manifest of a bundle, checking the entry package is inside and no path escapes."""
    if len(bundle) > MAX_BUNDLE_BYTES:
        raise ManifestError("bundle is too large", [])
    try:
        archive = zipfile.ZipFile(io.BytesIO(bundle))
    except zipfile.BadZipFile as exc:
        raise ManifestError("bundle is not a zip file", []) from exc
    with archive:
        names = archive.namelist()
        for name in names:
            if name.startswith("/") or ".." in Path(name).parts or "\\" in name:
                raise ManifestError(f"bundle holds an unsafe path {name!r}", [name])
        if "manifest.json" not in names:
            raise ManifestError("bundle has no manifest.json", ["manifest.json"])
        try:
            manifest = validate_manifest(json.loads(archive.read("manifest.json")))
        except (ValueError, UnicodeDecodeError) as exc:
            if isinstance(exc, ManifestError):
                raise
            raise ManifestError("manifest.json is not valid JSON", ["manifest.json"]) from exc
        package = manifest["entry"].split(".")[0]
        if not any(n == f"{package}.py" or n.startswith(f"{package}/") for n in names):
            raise ManifestError(f"bundle does not contain the entry package {package!r}", ["entry"])
    return manifest


def build_bundle(source: Path) -> bytes:
    """Zip ``source`` (a folder with manifest.json and the entry package), deterministically."""
    validate_manifest(json.loads((source / "manifest.json").read_text(encoding="utf-8")))
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(p for p in source.rglob("*") if p.is_file()):
            rel = path.relative_to(source).as_posix()
            if "__pycache__" in rel or rel.endswith(".pyc"):
                continue
            info = zipfile.ZipInfo(rel, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, path.read_bytes())
    data = buffer.getvalue()
    read_manifest(data)  # the bundle we built must pass the same checks as an upload
    return data

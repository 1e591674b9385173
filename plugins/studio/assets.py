"""The studio's files, read once per process (``package_bundle``): each ES module and style
sheet of ``app/`` gets a content-hashed name (``main.3f9a1c2b7d4e.js``), the imports between
modules and the references of ``index.html`` are rewritten to those names.

A module's name hashes its text after its own imports were rewritten, so a change anywhere
changes the name of every module that imports it (directly or not), and a browser holding the
old files for a year never mixes them with new ones.

-- dashboards: vendored libraries live in ``app/vendor/`` (their license beside them), are served
unchanged under their own hashed file name (``vendor/uPlot.esm.js`` -> ``uPlot.esm.<hash>.js``,
beside the app's modules) and are imported as ``from "./vendor/x.js"`` or loaded on demand with
``import("./x.js")``, which is rewritten like a static import.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent / "app"
# The only import forms the app's modules use: `from "./x.js"`, `import "./x.js"` and (-- dashboards)
# `import("./x.js")`, the module path optionally under `vendor/`.
IMPORT = re.compile(r"""(\bfrom\s+|\bimport\s+|\bimport\()"\./((?:vendor/)?[A-Za-z0-9_.-]+\.js)\"""")
# The page's source names its assets as `assets/<file>` (-- dashboards: or `assets/vendor/<file>`).
PAGE_REF = re.compile(r"""assets/((?:vendor/)?[A-Za-z0-9_.-]+\.(?:js|css))""")
VENDOR = "vendor/"  # -- dashboards: the vendored libraries' folder under app/
TYPES = {".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
HASH_LENGTH = 12
# Absolute, so the page works at /studio and /studio/ alike.
ASSETS_PATH = "/studio/assets/"


@dataclass
class Bundle:
    """``page``: the rewritten ``index.html``; ``assets``: hashed name -> (bytes, content type);
    ``names``: source name -> hashed name."""

    page: bytes
    assets: dict[str, tuple[bytes, str]] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)


def _hashed(name: str, data: bytes) -> str:
    stem, dot, ext = name.removeprefix(VENDOR).rpartition(".")
    return f"{stem}.{hashlib.sha256(data).hexdigest()[:HASH_LENGTH]}{dot}{ext}"


@functools.cache
def package_bundle() -> Bundle:
    """The bundle of the installed package's ``app/``, built once per process: its files do not
    change while the process runs, and building it costs ~35 ms (hashing and rewriting every
    module), which each app's start paid (docs/testing.md, "What the run costs"). Only read."""
    return load_bundle(APP_DIR)


def load_bundle(app_dir: Path = APP_DIR) -> Bundle:
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(app_dir.iterdir())
               if p.suffix in TYPES and p.is_file()}
    vendor = app_dir / VENDOR
    if vendor.is_dir():  # -- dashboards: vendored libraries, served as taken
        sources.update({VENDOR + p.name: p.read_bytes().decode("utf-8") for p in sorted(vendor.iterdir())
                        if p.suffix in TYPES and p.is_file()})  # bytes: no newline translation either
    bundle = Bundle(page=b"")
    visiting: set[str] = set()

    def name_of(source: str) -> str:
        if source in bundle.names:
            return bundle.names[source]
        if source not in sources:
            raise RuntimeError(f"studio: {source} is imported but missing from {app_dir}")
        if source in visiting:
            raise RuntimeError(f"studio: an import cycle goes through {source}")
        visiting.add(source)
        text = sources[source]
        if not source.startswith(VENDOR):  # a vendored file is served unchanged
            text = IMPORT.sub(lambda m: f'{m.group(1)}"./{name_of(m.group(2))}"', text)
        visiting.discard(source)
        data = text.encode("utf-8")
        hashed = _hashed(source, data)
        if hashed in bundle.assets:
            raise RuntimeError(f"studio: {source} and another file are both served as {hashed}")
        bundle.names[source] = hashed
        bundle.assets[hashed] = (data, TYPES[Path(source).suffix])
        return hashed

    for source in sources:
        name_of(source)
    page = (app_dir / "index.html").read_text(encoding="utf-8")
    bundle.page = PAGE_REF.sub(lambda m: f"{ASSETS_PATH}{name_of(m.group(1))}", page).encode("utf-8")
    return bundle

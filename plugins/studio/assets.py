"""The studio's files, read once: each ES module and style sheet of ``app/`` gets a content-hashed
name (``main.3f9a1c2b7d4e.js``), the imports between modules and the references of
``index.html`` are rewritten to those names.

A module's name hashes its text after its own imports were rewritten, so a change anywhere
changes the name of every module that imports it (directly or not), and a browser holding the
old files for a year never mixes them with new ones.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

APP_DIR = Path(__file__).resolve().parent / "app"
# The only import forms the app's modules use: `from "./x.js"` and `import "./x.js"`.
IMPORT = re.compile(r"""(\bfrom\s+|\bimport\s+)"\./([A-Za-z0-9_-]+\.js)\"""")
# The page's source names its assets as `assets/<file>`.
PAGE_REF = re.compile(r"""assets/([A-Za-z0-9_-]+\.(?:js|css))""")
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
    stem, dot, ext = name.rpartition(".")
    return f"{stem}.{hashlib.sha256(data).hexdigest()[:HASH_LENGTH]}{dot}{ext}"


def load_bundle(app_dir: Path = APP_DIR) -> Bundle:
    sources = {p.name: p.read_text(encoding="utf-8") for p in sorted(app_dir.iterdir())
               if p.suffix in TYPES}
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
        text = IMPORT.sub(lambda m: f'{m.group(1)}"./{name_of(m.group(2))}"', sources[source])
        visiting.discard(source)
        data = text.encode("utf-8")
        hashed = _hashed(source, data)
        bundle.names[source] = hashed
        bundle.assets[hashed] = (data, TYPES[Path(source).suffix])
        return hashed

    for source in sources:
        name_of(source)
    page = (app_dir / "index.html").read_text(encoding="utf-8")
    bundle.page = PAGE_REF.sub(lambda m: f"{ASSETS_PATH}{name_of(m.group(1))}", page).encode("utf-8")
    return bundle

"""The studio's files without a browser: every module and style sheet gets a content-hashed name,
imports and the page name the hashed files, a change in one module renames every module that
imports it, and the vendored test files are the pinned ones (docs/decisions/studio-build.md)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest

from plugins.studio.assets import APP_DIR, load_bundle

VENDOR = Path(__file__).resolve().parent / "vendor"
# axe-core 4.10.2 from the npm registry (`npm pack axe-core@4.10.2`), MPL-2.0: the files as taken.
PINNED = {
    "axe-core-4.10.2.min.js": "b511cd9dec01c76f4b2ad1723b66b6db37d4c2eb4ed199076e1829d9ee7b75e3",
    "axe-core.LICENSE": "af175b9d96ee93c21a036152e1b905b0b95304d4ae8c2c921c7609100ba8df7e",
    "axe-core.LICENSE-3RD-PARTY.txt": "4f8563870d0fca38bbc3e00b6f670cb7fa9f380ba9f26a7f7d1184a6b18b1653",
}


def test_every_asset_has_a_hashed_name_and_the_page_names_them():
    bundle = load_bundle()
    sources = sorted(p.name for p in APP_DIR.iterdir() if p.suffix in (".js", ".css"))
    assert sorted(bundle.names) == sources
    for source, hashed in bundle.names.items():
        data, _ = bundle.assets[hashed]
        assert hashed == re.sub(r"\.(js|css)$", f".{hashlib.sha256(data).hexdigest()[:12]}.\\1", source)
        for imported in re.findall(r'from "\./([^"]+)"', data.decode()):
            assert imported in bundle.assets, (source, imported)
    page = bundle.page.decode()
    assert f'src="/studio/assets/{bundle.names["main.js"]}"' in page
    assert f'href="/studio/assets/{bundle.names["studio.css"]}"' in page


def test_a_change_renames_the_module_and_its_importers(tmp_path):
    for path in APP_DIR.iterdir():
        (tmp_path / path.name).write_bytes(path.read_bytes())
    before = load_bundle(tmp_path).names
    (tmp_path / "dom.js").write_text((tmp_path / "dom.js").read_text() + "\n// changed\n")
    after = load_bundle(tmp_path).names
    assert after["dom.js"] != before["dom.js"] and after["main.js"] != before["main.js"]
    assert after["i18n.js"] == before["i18n.js"] and after["studio.css"] == before["studio.css"]


def test_an_import_of_a_missing_module_stops_the_load(tmp_path):
    (tmp_path / "index.html").write_text('<script type="module" src="assets/main.js"></script>')
    (tmp_path / "main.js").write_text('import { x } from "./gone.js";\n')
    with pytest.raises(RuntimeError, match="gone.js is imported but missing"):
        load_bundle(tmp_path)


def test_the_vendored_files_are_the_pinned_ones():
    present = {p.name for p in VENDOR.iterdir() if p.is_file()}
    assert present == set(PINNED)
    for name, digest in PINNED.items():
        assert hashlib.sha256((VENDOR / name).read_bytes()).hexdigest() == digest, name

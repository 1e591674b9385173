"""The studio's files without a browser: every module and style sheet gets a content-hashed name,
imports and the page name the hashed files, a change in one module renames every module that
imports it, and the vendored test files are the pinned ones (docs/decisions/studio-build.md).
-- dashboards: the app's own vendored library (uPlot) is pinned, packaged, served unchanged with
the assets' content type and caching, and fetched only by the module that draws charts."""

from __future__ import annotations

import hashlib
import re
import shutil
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from plugins.studio.assets import APP_DIR, load_bundle
from plugins.studio.routes import IMMUTABLE

VENDOR = Path(__file__).resolve().parent / "vendor"
# axe-core 4.10.2 from the npm registry (`npm pack axe-core@4.10.2`), MPL-2.0: the files as taken.
PINNED = {
    "axe-core-4.10.2.min.js": "b511cd9dec01c76f4b2ad1723b66b6db37d4c2eb4ed199076e1829d9ee7b75e3",
    "axe-core.LICENSE": "af175b9d96ee93c21a036152e1b905b0b95304d4ae8c2c921c7609100ba8df7e",
    "axe-core.LICENSE-3RD-PARTY.txt": "4f8563870d0fca38bbc3e00b6f670cb7fa9f380ba9f26a7f7d1184a6b18b1653",
}


def test_every_asset_has_a_hashed_name_and_the_page_names_them():
    bundle = load_bundle()
    sources = sorted(
        str(p.relative_to(APP_DIR))
        for p in [*APP_DIR.iterdir(), *(APP_DIR / "vendor").iterdir()]
        if p.suffix in (".js", ".css")
    )
    assert sorted(bundle.names) == sources
    for source, hashed in bundle.names.items():
        data, _ = bundle.assets[hashed]
        assert hashed == re.sub(
            r"\.(js|css)$", f".{hashlib.sha256(data).hexdigest()[:12]}.\\1", source.removeprefix("vendor/")
        )
        for imported in re.findall(r'from "\./([^"]+)"', data.decode()):
            assert imported in bundle.assets, (source, imported)
    page = bundle.page.decode()
    assert f'src="/studio/assets/{bundle.names["main.js"]}"' in page
    assert f'href="/studio/assets/{bundle.names["studio.css"]}"' in page


def test_a_change_renames_the_module_and_its_importers(tmp_path):
    shutil.copytree(APP_DIR, tmp_path, dirs_exist_ok=True)
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


# -- dashboards: the libraries the app itself serves (app/vendor/), taken unchanged from the npm
# registry (`npm pack uplot@1.6.32`, MIT): the charts of the dashboards screens.
APP_VENDOR = APP_DIR / "vendor"
APP_PINNED = {
    "uPlot.esm.js": "5dd9b3281aa64b461b42d9945f6adb2649d346502b12281a9ae0d46599a80eba",
    "uPlot.min.css": "df630c6a8d6f8eeaff264b50f73ce5b114f646ffd9a0bb74f049b0a00135fa04",
    "uPlot.LICENSE": "8f989229699b4fe2f1a0432d0e9edc338a8a911e250e2d1b01ecd770a5f5b1bd",
}
ROOT = Path(__file__).resolve().parents[2]


def test_the_app_s_vendored_files_are_the_pinned_ones_and_packaged():
    assert {p.name for p in APP_VENDOR.iterdir()} == set(APP_PINNED)
    for name, digest in APP_PINNED.items():
        assert hashlib.sha256((APP_VENDOR / name).read_bytes()).hexdigest() == digest, name
    # Every file of the app, vendored ones and their license included, is in the wheel's package data.
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    for path in [*APP_DIR.iterdir(), *APP_VENDOR.iterdir()]:
        if path.is_file():
            relative = str(path.relative_to(APP_DIR.parent))
            assert any(
                fnmatch(relative, pattern) and relative.count("/") == pattern.count("/")
                for pattern in patterns
            ), relative


def test_a_vendored_module_is_served_unchanged_and_its_importers_name_it(tmp_path):
    (tmp_path / "vendor").mkdir()
    (tmp_path / "vendor" / "lib.js").write_text('import "./x.js";\nexport default 1;\n')  # left as taken
    (tmp_path / "vendor" / "lib.css").write_text(".lib {}\n")
    (tmp_path / "x.js").write_text("export const x = 1;\n")
    (tmp_path / "charts.js").write_text('import lib from "./vendor/lib.js";\nexport default lib;\n')
    (tmp_path / "main.js").write_text('const later = () => import("./charts.js");\n')
    (tmp_path / "index.html").write_text(
        '<link href="assets/vendor/lib.css"><script src="assets/main.js"></script>'
    )
    bundle = load_bundle(tmp_path)
    lib = bundle.names["vendor/lib.js"]
    assert re.fullmatch(r"lib\.[0-9a-f]{12}\.js", lib)
    assert bundle.assets[lib][0] == (tmp_path / "vendor" / "lib.js").read_bytes()
    assert f'from "./{lib}"' in bundle.assets[bundle.names["charts.js"]][0].decode()
    assert f'import("./{bundle.names["charts.js"]}")' in bundle.assets[bundle.names["main.js"]][0].decode()
    assert f'href="/studio/assets/{bundle.names["vendor/lib.css"]}"' in bundle.page.decode()
    # The same served name from two files stops the load.
    (tmp_path / "lib.js").write_text("export default 2;\n")
    (tmp_path / "vendor" / "lib.js").write_text("export default 2;\n")
    with pytest.raises(RuntimeError, match="both served as"):
        load_bundle(tmp_path)


@pytest.mark.svc_first_pass_only("serves the app's files, read from the package; no database behind them")
async def test_the_charting_library_is_served_like_every_asset(shared_site):
    client = shared_site.app.client
    page = (await client.get("/studio/")).text
    bundle = load_bundle()
    css = bundle.names["vendor/uPlot.min.css"]
    assert f'href="/studio/assets/{css}"' in page
    for source, content_type in (
        ("vendor/uPlot.esm.js", "text/javascript; charset=utf-8"),
        ("vendor/uPlot.min.css", "text/css; charset=utf-8"),
    ):
        resp = await client.get(f"/studio/assets/{bundle.names[source]}")
        assert resp.status_code == 200, source
        assert (resp.headers["content-type"], resp.headers["cache-control"]) == (content_type, IMMUTABLE)
        assert resp.headers["x-content-type-options"] == "nosniff"
        assert resp.content == (APP_DIR / source).read_bytes()
    dashboards = bundle.assets[bundle.names["dashboards.js"]][0].decode()
    assert f'from "./{bundle.names["charts.js"]}"' in dashboards
    main = bundle.assets[bundle.names["main.js"]][0].decode()
    assert f'import("./{bundle.names["dashboards.js"]}")' in main and "uPlot" not in main

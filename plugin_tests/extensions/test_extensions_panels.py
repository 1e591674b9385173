"""UI panels (docs/extensions.md#ui-panels): a manifest's panel names its script in the bundle;
``GET /extensions/ui/panels/{site}/{extension}/{panel}`` serves it in a document of its own with a
strict policy (the script allowed by its hash, no network, sandboxed, framed only by the studio's
origin), only in a site where the extension is enabled with ``ui`` granted; bad sources are
refused at upload."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile

import pytest
from extension_bundles import ENV, PRIVATE, enable, install, upload, write_extension

from kernel.base.signing import sign_bytes
from kernel.testing import Calls

PANEL_JS = 'document.body.append(Object.assign(document.createElement("h1"), {textContent: "Hello"}));\n'
UI = [
    {"id": "hello", "type": "panel", "label": "Hello panel", "source": "ui/hello.js"},
    {"id": "menu", "type": "module", "label": "A declared entry"},
]


def panel_extension(root, name="hello-ui", source=PANEL_JS, ui=None, caps=("ui", "items:posts")):
    folder = write_extension(root, name, "", list(caps), ui=UI if ui is None else ui)
    (folder / "ui").mkdir()
    (folder / "ui" / "hello.js").write_text(source)
    return folder


async def test_a_panel_is_served_sandboxed_in_its_site_only(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_a, site_b = await app.create_site(admin), await app.create_site(admin, prefix="b")
    calls, calls_b = (
        Calls(app.client, {**admin, "X-Svc-Site": site_a}),
        Calls(app.client, {**admin, "X-Svc-Site": site_b}),
    )
    ext = await install(app.client, admin, panel_extension(tmp_path))
    url = f"/extensions/ui/panels/{site_a}/hello-ui/hello"
    anonymous = Calls(app.client, {})
    await anonymous.err("get", url, 404, "NOT_FOUND")  # installed, not enabled anywhere

    # Enabled without `ui`: still nothing to frame, and no manifest entry.
    await enable(calls, ext["id"], ["items:posts"])
    await anonymous.err("get", url, 404, "NOT_FOUND")
    assert await calls.ok("get", "/extensions/ui/manifest") == []

    await calls.ok(
        "post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": ["ui", "items:posts"]}
    )
    manifest = await calls.ok("get", "/extensions/ui/manifest")
    assert manifest == [
        {
            "extension": "hello-ui",
            "version": "1.0.0",
            "id": "hello",
            "type": "panel",
            "label": "Hello panel",
            "source": "ui/hello.js",
            "src": f"/api/v1{url}",
            "grantedCapabilities": ["items:posts", "ui"],
        },
        {
            "extension": "hello-ui",
            "version": "1.0.0",
            "id": "menu",
            "type": "module",
            "label": "A declared entry",
        },
    ]

    # No credential needed (a frame sends no header): the document and its policy.
    resp = await app.client.get(f"/api/v1{url}", params={"lang": "de"})
    assert resp.status_code == 200 and resp.headers["content-type"] == "text/html; charset=utf-8"
    digest = base64.b64encode(hashlib.sha256(PANEL_JS.encode()).digest()).decode()
    policy = [d.strip() for d in resp.headers["content-security-policy"].split(";")]
    assert policy == [
        "default-src 'none'",
        f"script-src 'sha256-{digest}'",
        "style-src 'unsafe-inline'",
        "img-src data:",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-ancestors 'self'",
        "sandbox allow-scripts",
    ]
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert resp.headers["referrer-policy"] == "no-referrer"
    assert resp.headers["cache-control"] == "no-store"
    assert f'<script type="module">{PANEL_JS}</script>' in resp.text
    assert '<html lang="de">' in resp.text and "<title>Hello panel</title>" in resp.text
    hostile_lang = await app.client.get(f"/api/v1{url}", params={"lang": '"><script>x</script>'})
    assert '<html lang="en">' in hostile_lang.text and "<script>x" not in hostile_lang.text

    # Cross-tenant: the same extension's panel in site B, where it is not enabled, is not there;
    # an unknown site, panel, entry without source, or extension neither.
    await anonymous.err("get", f"/extensions/ui/panels/{site_b}/hello-ui/hello", 404, "NOT_FOUND")
    assert await calls_b.ok("get", "/extensions/ui/manifest") == []
    await anonymous.err("get", "/extensions/ui/panels/nowhere/hello-ui/hello", 404, "SITE_NOT_FOUND")
    for path in ("hello-ui/nope", "hello-ui/menu", "other/hello", "x" * 300 + "/hello"):
        await anonymous.err("get", f"/extensions/ui/panels/{site_a}/{path}", 404, "NOT_FOUND")

    # Disabled in A: gone at once.
    await calls.ok("post", f"/extensions/{ext['id']}/disable")
    await anonymous.err("get", url, 404, "NOT_FOUND")


def _panel_bundle(source: str, ui: list) -> tuple[bytes, str]:
    """A bundle svc-ext build would refuse (its check is the server's), zipped by hand, stored."""
    manifest = {
        "name": "bad-ui",
        "version": "1.0.0",
        "publisher": "example",
        "entry": "pkg",
        "capabilities": ["ui"],
        "ui": ui,
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("manifest.json", json.dumps(manifest))
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("ui/hello.js", source)
    bundle = buf.getvalue()
    return bundle, sign_bytes(PRIVATE["example"], bundle)


BAD_SOURCES = {
    "missing-file": ("x", [{"id": "p", "type": "panel", "label": "P", "source": "ui/missing.js"}]),
    "not-js": ("x", [{"id": "p", "type": "panel", "label": "P", "source": "ui/hello.html"}]),
    "traversal": ("x", [{"id": "p", "type": "panel", "label": "P", "source": "../ui/hello.js"}]),
    "not-a-panel": ("x", [{"id": "p", "type": "module", "label": "P", "source": "ui/hello.js"}]),
    # -- defects: a panel without a script would be listed and never load
    "panel-without-source": ("x", [{"id": "p", "type": "panel", "label": "P"}]),
    "closes-its-script": (
        'console.log("</SCRIPT><script>alert(1)")',
        [{"id": "p", "type": "panel", "label": "P", "source": "ui/hello.js"}],
    ),
    "html-comment": ("<!-- x", [{"id": "p", "type": "panel", "label": "P", "source": "ui/hello.js"}]),
    "too-large": (
        "x" * (256 * 1024 + 1),
        [{"id": "p", "type": "panel", "label": "P", "source": "ui/hello.js"}],
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_SOURCES))
async def test_bad_panel_sources_are_refused_at_upload(shared_site, case):
    resp = await upload(shared_site.app.client, shared_site.admin_headers, *_panel_bundle(*BAD_SOURCES[case]))
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert (error["code"], error["path"]) == ("VALIDATION_FAILED", ["bundle", "ui", "0", "source"]), (
        json.dumps(error)
    )

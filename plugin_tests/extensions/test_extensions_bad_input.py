"""Hostile bundles, bad signatures, forged publishers, the reserved namespace, unknown capabilities,
bad bodies and callers without the instance admin: all refused with the spec's envelope, on one
shared app (the publisher keys are stored through the API, since the shared app has no env)."""

from __future__ import annotations

import io
import json
import stat
import warnings
import zipfile

import pytest
import pytest_asyncio
from extension_bundles import PRIVATE, PUBLIC, route_extension, signed, upload

from extensions_sdk.signing import sign_bytes

MISSING = "0190a0a0-0000-7000-8000-000000000000"
MANIFEST = {"name": "hostile", "version": "1.0.0", "publisher": "example", "entry": "pkg", "capabilities": []}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def seeded(shared_site, tmp_path_factory):
    """Keys of "example" and "other" stored as trusted, "svc" as trusted only; one installed extension."""
    calls = shared_site.calls
    for publisher in ("example", "other", "svc"):
        await calls.ok("post", "/extensions/publisher-keys", 201,
                       json={"publisher": publisher, "publicKey": PUBLIC[publisher], "status": "trusted"})
    folder = route_extension(tmp_path_factory.mktemp("ext"), "seeded-ext")
    resp = await upload(shared_site.app.client, shared_site.admin_headers, *signed(folder))
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


def _zip(files: dict[str, bytes], *, links: tuple[str, ...] = (), level: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", level) as archive:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = level
            info.external_attr = ((stat.S_IFLNK | 0o777) if name in links else (stat.S_IFREG | 0o644)) << 16
            archive.writestr(info, data)
    return buf.getvalue()


def _with(files: dict[str, bytes] | None = None, manifest: dict | None = None, **kw) -> bytes:
    base = {"manifest.json": json.dumps(manifest or MANIFEST).encode(), "pkg/__init__.py": b""}
    return _zip({**base, **(files or {})}, **kw)


def _duplicate() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about the duplicate name, which is the point
        archive.writestr("manifest.json", json.dumps(MANIFEST))
        archive.writestr("pkg/__init__.py", "")
        archive.writestr("pkg/__init__.py", "print('second')")
    return buf.getvalue()


HOSTILE = {
    "traversal": _with({"../evil.py": b"x"}),
    "traversal-inside": _with({"pkg/../../evil.py": b"x"}),
    "absolute": _with({"/etc/cron.d/evil": b"x"}),
    "backslash": _with({"pkg\\..\\evil.py": b"x"}),
    "drive": _with({"C:/evil.py": b"x"}),
    "symlink": _with({"pkg/link.py": b"/etc/passwd"}, links=("pkg/link.py",)),
    "zip-bomb": _with({"pkg/zeros.bin": b"\0" * (8 * 1024 * 1024)}),
    "too-many-files": _with({f"pkg/f{i}.py": b"" for i in range(501)}),
    "duplicate-name": _duplicate(),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
async def test_hostile_bundles_are_refused(shared_site, seeded, case):
    bundle = HOSTILE[case]
    resp = await upload(shared_site.app.client, shared_site.admin_headers, bundle,
                        sign_bytes(PRIVATE["example"], bundle))
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "BUNDLE_UNSAFE"


BAD_MANIFESTS = {
    "not-a-zip": (b"PK\x03\x04 not really", ["bundle"]),
    "no-manifest": (_zip({"pkg/__init__.py": b""}), ["bundle", "manifest.json"]),
    "manifest-not-json": (_zip({"manifest.json": b"{nope", "pkg/__init__.py": b""}), ["bundle", "manifest.json"]),
    "no-entry-package": (_zip({"manifest.json": json.dumps(MANIFEST).encode()}), ["bundle", "entry"]),
    "unknown-capability": (_with(manifest={**MANIFEST, "capabilities": ["root"]}), ["bundle", "capabilities", "0"]),
    "capability-without-value": (_with(manifest={**MANIFEST, "capabilities": ["items"]}),
                                 ["bundle", "capabilities", "0"]),
    "capability-bad-value": (_with(manifest={**MANIFEST, "capabilities": ["network:evil.com"]}),
                             ["bundle", "capabilities", "0"]),
    "capability-twice": (_with(manifest={**MANIFEST, "capabilities": ["routes", "routes"]}),
                         ["bundle", "capabilities"]),
    "unknown-key": (_with(manifest={**MANIFEST, "isOfficial": True}), ["bundle", "isOfficial"]),
    "ui-without-capability": (_with(manifest={**MANIFEST, "ui": [{"id": "a", "type": "module", "label": "A"}]}),
                              ["bundle", "ui"]),
    "ui-bad-type": (_with(manifest={**MANIFEST, "capabilities": ["ui"],
                                    "ui": [{"id": "a", "type": "script", "label": "A"}]}),
                    ["bundle", "ui", "0", "type"]),
    "bad-name": (_with(manifest={**MANIFEST, "name": "Hostile!"}), ["bundle", "name"]),
}


@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
async def test_bad_manifests_are_refused(shared_site, seeded, case):
    bundle, path = BAD_MANIFESTS[case]
    resp = await upload(shared_site.app.client, shared_site.admin_headers, bundle,
                        sign_bytes(PRIVATE["example"], bundle))
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert (error["code"], error["path"]) == ("VALIDATION_FAILED", path)


def _bundle(name="sig-test", publisher="example") -> bytes:
    return _with(manifest={**MANIFEST, "name": name, "publisher": publisher})


SIGNATURES = {
    # A signature of other bytes by the right key.
    "bad-signature": (_bundle(), sign_bytes(PRIVATE["example"], b"other bytes"), 400, "SIGNATURE_INVALID"),
    "not-base64": (_bundle(), "@@not base64@@", 400, "SIGNATURE_INVALID"),
    "short-signature": (_bundle(), "AAAA", 400, "SIGNATURE_INVALID"),
    # The manifest claims "example", a trusted key of "other" signed it.
    "forged-publisher": (_bundle(), sign_bytes(PRIVATE["other"], _bundle()), 400, "SIGNATURE_INVALID"),
    # A publisher nobody knows, signed by its own key.
    "unknown-publisher": (_bundle(publisher="stranger"), sign_bytes(PRIVATE["stranger"], _bundle(publisher="stranger")),
                          400, "SIGNATURE_INVALID"),
    # A community bundle (trusted, not official key) in the reserved namespace.
    "reserved-community": (_bundle("svc-evil"), sign_bytes(PRIVATE["example"], _bundle("svc-evil")), 403,
                           "RESERVED_NAMESPACE"),
    # Even by the "svc" publisher when its key is not official.
    "reserved-not-official": (_bundle("svc-evil", "svc"), sign_bytes(PRIVATE["svc"], _bundle("svc-evil", "svc")),
                              403, "RESERVED_NAMESPACE"),
    # A reserved name with a bad signature fails closed the same way.
    "reserved-unsigned": (_bundle("svc-evil", "svc"), sign_bytes(PRIVATE["stranger"], b"x"), 403,
                          "RESERVED_NAMESPACE"),
}


@pytest.mark.parametrize("case", sorted(SIGNATURES))
async def test_bad_signatures_and_publishers_are_refused(shared_site, seeded, case):
    bundle, signature, status, code = SIGNATURES[case]
    resp = await upload(shared_site.app.client, shared_site.admin_headers, bundle, signature)
    assert resp.status_code == status, resp.text
    assert resp.json()["errors"][0]["code"] == code
    names = [e["name"] for e in await shared_site.calls.ok("get", "/extensions")]
    assert names == ["seeded-ext"]


async def test_upload_bodies(shared_site, seeded):
    client, admin = shared_site.app.client, shared_site.admin_headers
    url = "/api/v1/extensions/upload"
    bundle = _bundle()
    resp = await client.post(url, headers=admin, json={"bundle": "x", "signature": "y"})
    assert (resp.status_code, resp.json()["errors"][0]["path"]) == (400, ["body"])
    resp = await client.post(url, headers=admin, files={"bundle": ("b.zip", bundle, "application/zip")})
    assert (resp.status_code, resp.json()["errors"][0]["path"]) == (400, ["signature"])
    resp = await client.post(url, headers=admin, data={"signature": "x"}, files={"other": ("a", b"a")})
    assert (resp.status_code, resp.json()["errors"][0]["path"]) == (400, ["bundle"])
    resp = await client.post(url, headers=admin, files={"bundle": ("b.zip", b"x" * (6 * 1024 * 1024))},
                             data={"signature": "x"})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (413, "PAYLOAD_TOO_LARGE")
    # The same name twice.
    folder_bundle, signature = signed(route_extension(_tmp(shared_site), "seeded-ext"))
    resp = await upload(client, admin, folder_bundle, signature)
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (409, "EXTENSION_EXISTS")


def _tmp(shared_site):
    import tempfile
    from pathlib import Path
    return Path(tempfile.mkdtemp(dir=shared_site.app.kernel.settings.data_path))


async def test_only_the_instance_admin(shared_site, seeded):
    member = await shared_site.member(role="admin")
    anonymous_calls = type(member)(shared_site.app.client, {"X-Svc-Site": shared_site.site})
    # -- govern43: a site admin sees nothing the instance admin has not made available to the site
    # (test_extensions_site_admin.py), and never uploads, keeps keys, offers or uninstalls.
    assert await member.ok("get", "/extensions") == []
    for method, path in [("get", f"/extensions/{seeded['id']}"), ("post", f"/extensions/{seeded['id']}/enable"),
                         ("post", f"/extensions/{seeded['id']}/disable"),
                         ("post", f"/extensions/{seeded['id']}/capabilities")]:
        await member.err(method, path, 404, "NOT_FOUND", json={} if method == "post" else None)
    for method, path in [("get", "/extensions"), ("post", "/extensions/upload"), ("get", "/extensions/publisher-keys"),
                         ("post", f"/extensions/{seeded['id']}/enable"), ("post", f"/extensions/{seeded['id']}/disable"),
                         ("post", f"/extensions/{seeded['id']}/capabilities"), ("delete", f"/extensions/{seeded['id']}"),
                         ("put", f"/extensions/{seeded['id']}/availability")]:
        if path in ("/extensions/upload", "/extensions/publisher-keys") or method in ("delete", "put"):
            await member.err(method, path, 403, "PERMISSION_DENIED", json={} if method in ("post", "put") else None)
        await anonymous_calls.err(method, path, 401, "UNAUTHENTICATED")
    await anonymous_calls.err("get", "/extensions/ui/manifest", 401, "UNAUTHENTICATED")
    assert await member.ok("get", "/extensions/ui/manifest") == []


@pytest.mark.parametrize("body,status,code,path", [
    ({}, 400, "VALIDATION_FAILED", ["capabilities"]),
    ({"capabilities": "routes"}, 400, "VALIDATION_FAILED", ["capabilities"]),
    ({"capabilities": ["routes"], "all": True}, 400, "VALIDATION_FAILED", ["all"]),
    ({"capabilities": ["root"]}, 400, "VALIDATION_FAILED", ["capabilities", "0"]),
    ({"capabilities": [1]}, 400, "VALIDATION_FAILED", ["capabilities", "0"]),
    ({"capabilities": ["routes", "items:articles"]}, 400, "CAPABILITY_NOT_REQUESTED", ["capabilities", "1"]),
    ({"capabilities": ["network"]}, 400, "CAPABILITY_NOT_REQUESTED", ["capabilities", "0"]),
])
async def test_grant_bodies(shared_site, seeded, body, status, code, path):
    await shared_site.calls.err("post", f"/extensions/{seeded['id']}/capabilities", status, code, path, json=body)
    state = await shared_site.calls.ok("get", f"/extensions/{seeded['id']}")
    assert state["site"]["grantedCapabilities"] == []


@pytest.mark.parametrize("method,suffix", [("get", ""), ("delete", ""), ("post", "/enable"), ("post", "/disable"),
                                           ("post", "/capabilities")])
async def test_unknown_extension(shared_site, seeded, method, suffix):
    await shared_site.calls.err(method, f"/extensions/{MISSING}{suffix}", 404, "NOT_FOUND",
                                json={"capabilities": []} if suffix == "/capabilities" else None)


@pytest.mark.parametrize("body,path", [
    ({"publicKey": PUBLIC["example"], "status": "trusted"}, ["publisher"]),
    ({"publisher": "Bad Name", "publicKey": PUBLIC["example"], "status": "trusted"}, ["publisher"]),
    ({"publisher": "p1", "publicKey": "bm90IGEga2V5", "status": "trusted"}, ["publicKey"]),
    ({"publisher": "p1", "publicKey": PUBLIC["example"], "status": "god"}, ["status"]),
    ({"publisher": "p1", "publicKey": PUBLIC["example"], "status": "trusted", "x": 1}, ["x"]),
])
async def test_key_bodies(shared_site, seeded, body, path):
    await shared_site.calls.err("post", "/extensions/publisher-keys", 400, "VALIDATION_FAILED", path, json=body)


async def test_site_header_rules(shared_site, seeded):
    admin = type(shared_site.calls)(shared_site.app.client, shared_site.admin_headers)
    await admin.err("post", f"/extensions/{seeded['id']}/enable", 400, "VALIDATION_FAILED", ["headers", "X-Svc-Site"])
    other = type(shared_site.calls)(shared_site.app.client, {**shared_site.admin_headers, "X-Svc-Site": "nope-x"})
    await other.err("post", f"/extensions/{seeded['id']}/enable", 404, "SITE_NOT_FOUND")
    # Without the site, the list carries no per-site state; never installed code runs for nothing.
    assert "site" not in (await admin.ok("get", "/extensions"))[0]
    await shared_site.calls.err("get", "/ext/seeded-ext/ping", 404, "NOT_FOUND")
    await shared_site.calls.err("get", "/ext/nothing-here", 404, "NOT_FOUND")

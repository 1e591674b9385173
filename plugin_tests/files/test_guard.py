"""The one upload guard: every surface refuses every hostile class with the same code, and
nothing of a refused upload stays in the database or in storage."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernel import ApiError
from kernel.testing import shared as testing_shared
from plugins.files.uploads import checks
from plugins.files.uploads.catalogue import BY_MIME

from .conftest import CAP, Surfaces, error_code, shared_site_on_each_storage
from .corpus import DOCX, PDF, SVG_HOSTILE, SVG_OK, gradient_jpeg, hostile_corpus, image

# Every test uploads and reads in a site of its own (its storage checks list only that site's
# keys): they share the module's app on each storage, each in a new site of it
# (kernel/testing/shared.py).
shared_site = shared_site_on_each_storage()
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_every_surface_refuses_every_hostile_class(surfaces, svc_app, site, calls):
    for hostile in hostile_corpus(CAP):
        for surface in Surfaces.NAMES:
            resp = await surfaces.upload(surface, hostile.filename, hostile.mime, hostile.data)
            assert (resp.status_code, error_code(resp)) == (hostile.status, hostile.code), \
                (hostile.name, surface, resp.text)
    listed = await calls.ok("get", "/files", full=True)
    assert listed["data"] == [] and listed["meta"]["total"] == 0
    # Refused bytes are never kept: no file object, no pending presigned object.
    assert await svc_app.kernel.storage.list(f"{site}/") == []


async def test_good_files_pass_on_every_surface(surfaces, svc_app, site, calls):
    samples = [("a.jpg", "image/jpeg", image("JPEG")), ("b.png", "image/png", image("PNG", color=(1, 2, 3, 4))),
               ("c.svg", "image/svg+xml", SVG_OK), ("d.pdf", "application/pdf", PDF),
               ("e.docx", BY_MIME_DOCX, DOCX), ("f.txt", "text/plain", "héllo\n".encode())]
    for surface in Surfaces.NAMES:
        for name, mime, data in samples:
            resp = await surfaces.upload(surface, f"{surface}-{name}", mime, data)
            assert resp.status_code == 201, (surface, name, resp.text)
            record = resp.json()["data"]
            assert record["key"] == f"{surface}-{name}" and record["type"] == mime
            assert record["filesize"] == len(data)
    listed = await calls.ok("get", "/files", full=True, params={"limit": 100})
    assert listed["meta"]["total"] == len(Surfaces.NAMES) * len(samples)
    # Nothing pending is left behind once the presigned uploads are registered.
    assert not [k for k in await svc_app.kernel.storage.list(f"{site}/") if "/uploads/" in k]


BY_MIME_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


async def test_public_role_cannot_upload_even_when_granted(surfaces, svc_app, site, calls):
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r["systemKey"] == "public")
    await calls.grant([{"collection": "*", "action": a, "fields": ["*"]} for a in ("media:create", "media:read")],
                      {"roleId": public["id"]})
    anonymous = Surfaces(svc_app, site, {"X-Svc-Site": site}, surfaces.receiver)
    for surface in Surfaces.NAMES:
        resp = await anonymous.upload(surface, "a.jpg", "image/jpeg", image("JPEG"))
        assert (resp.status_code, error_code(resp)) == (401, "UNAUTHENTICATED"), (surface, resp.text)
        # Every surface but the unsigned PUT is a bearer route (the kernel refuses first); the
        # PUT is public for signed URLs, and there the guard refuses the public role, saying so.
        if surface == "put":
            assert resp.json()["errors"][0]["extensions"]["reason"] == "public_role"
    # The public role's media:read still serves (reading is allowed, uploading never).
    await calls.ok("get", "/files", headers={"Authorization": ""})


async def test_a_member_without_media_create_is_refused_before_any_byte(surfaces, svc_app, site, make_member):
    member = await make_member(site, "subscriber")
    plain = Surfaces(svc_app, site, member.headers, surfaces.receiver)
    for surface in Surfaces.NAMES:
        resp = await plain.upload(surface, "a.jpg", "image/jpeg", image("JPEG"))
        assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED"), (surface, resp.text)
    assert surfaces.receiver.received() == []  # the import never went out


async def test_size_is_the_true_length_without_content_length(svc_app, site_headers):
    """A chunked body with no Content-Length is counted as it streams and cut at the cap."""
    sent = []

    async def body():
        for _ in range(50):
            sent.append(1)
            yield image("JPEG")[:2] + b"\x00" * 10_000

    resp = await svc_app.client.put("/api/v1/files/upload/big.jpg", content=body(),
                                    headers={**site_headers, "Content-Type": "image/jpeg"})
    assert (resp.status_code, error_code(resp)) == (413, "FILE_TOO_LARGE")
    assert len(sent) < 50  # refused before the body was read to its end
    # A Content-Length above the cap is refused before a byte is read, even above SVC_MAX_BODY_BYTES.
    resp = await svc_app.client.put("/api/v1/files/upload/big.jpg", content=b"\xff" * (CAP + 1),
                                    headers={**site_headers, "Content-Type": "image/jpeg"})
    assert (resp.status_code, error_code(resp)) == (413, "FILE_TOO_LARGE")


async def test_upload_policy_config(svc_app, calls, calls_b, site, make_member):
    """GET shows the effective policy (site over FILE_UPLOAD_* over defaults); PUT is admin only,
    per site, validated, and applies to the next upload."""
    policy = await calls.ok("get", "/uploads/config")
    assert policy["maxBytes"] == CAP  # FILE_UPLOAD_MAX_BYTES from the environment
    assert "image/jpeg" in policy["allowedMimeTypes"] and ".jpg" in policy["allowedExtensions"]
    assert {t["mimeType"] for t in policy["catalogue"]} >= set(policy["allowedMimeTypes"])
    member = await make_member(site, "subscriber")
    assert (await calls.call("get", "/uploads/config", headers=member.headers)).status_code == 200
    await calls.err("put", "/uploads/config", 403, "PERMISSION_DENIED", json={"maxBytes": 10},
                    headers=member.headers)
    await calls.err("get", "/uploads/config", 401, headers={"Authorization": ""})
    for bad in ({"maxBytes": 0}, {"maxBytes": "9"}, {"allowedMimeTypes": ["text/html"]}, {"other": 1},
                {"allowedMimeTypes": "image/png"}, {"maxBytes": 6 * 1024**3}):
        await calls.err("put", "/uploads/config", 400, "VALIDATION_FAILED", json=bad)
    updated = await calls.ok("put", "/uploads/config", json={"maxBytes": 1000, "allowedMimeTypes": ["image/png"]})
    assert updated["maxBytes"] == 1000 and updated["allowedMimeTypes"] == ["image/png"]
    assert updated["allowedExtensions"] == [".png"]
    assert (await calls.ok("get", "/uploads/config"))["maxBytes"] == 1000
    jpeg = await calls.call("put", "/files/upload/a.jpg", content=image("JPEG"), headers={"Content-Type": "image/jpeg"})
    assert error_code(jpeg) == "FILE_TYPE_NOT_ALLOWED"
    big = await calls.call("put", "/files/upload/a.png", content=image("PNG", size=(400, 400)),
                           headers={"Content-Type": "image/png"})
    assert error_code(big) == "FILE_TOO_LARGE"
    # The site layer is the setting upload_policy: the settings routes see and check the same value.
    assert await calls.ok("get", "/settings/upload_policy") == {
        "key": "upload_policy", "value": {"maxBytes": 1000, "allowedMimeTypes": ["image/png"]}}
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", json={"upload_policy": {"maxBytes": -1}})
    await calls.ok("put", "/settings/upload_policy", json={"value": {"maxBytes": 2000}})
    assert (await calls.ok("get", "/uploads/config"))["maxBytes"] == 2000
    # Site B keeps the environment's policy.
    assert (await calls_b.ok("get", "/uploads/config"))["maxBytes"] == CAP
    # null falls back to the environment again.
    assert (await calls.ok("put", "/uploads/config", json={"maxBytes": None}))["maxBytes"] == CAP
    await calls.err("get", "/settings/upload_policy", 404, "RECORD_NOT_FOUND")


# ------------------------------------------------------------------- the content checks directly


def _inspect(tmp_path: Path, data: bytes, mime: str) -> dict:
    path = tmp_path / "f"
    path.write_bytes(data)
    return checks.inspect(path, len(data), BY_MIME[mime])


@pytest.mark.parametrize("name", sorted(SVG_HOSTILE))
def test_svg_active_content_is_refused(tmp_path, name):
    with pytest.raises(ApiError) as caught:
        _inspect(tmp_path, SVG_HOSTILE[name], "image/svg+xml")
    assert caught.value.code == "FILE_ACTIVE_CONTENT", caught.value.message


def test_inert_files_pass_and_report_dimensions(tmp_path):
    assert _inspect(tmp_path, SVG_OK, "image/svg+xml") == {"width": None, "height": None}
    assert _inspect(tmp_path, gradient_jpeg((40, 30), 6), "image/jpeg") == {"width": 40, "height": 30}
    for fmt, mime in (("GIF", "image/gif"), ("WEBP", "image/webp"), ("AVIF", "image/avif"), ("PNG", "image/png")):
        assert _inspect(tmp_path, image(fmt, size=(7, 5)), mime) == {"width": 7, "height": 5}
    # Text that spells a magic number further in (ODT's "text" at offset 38) is still text.
    assert _inspect(tmp_path, b"line of text\n" * 5000, "text/plain") == {"width": None, "height": None}
    # JPEG padding with NULs after the end marker is inert and accepted.
    assert _inspect(tmp_path, image("JPEG") + b"\x00" * 64, "image/jpeg")["width"] == 64


def test_content_refusals(tmp_path):
    cases = [
        (b"", "text/plain", "FILE_CONTENT_MISMATCH"),
        (b"\xff\xfe\x00bad", "text/csv", "FILE_CONTENT_MISMATCH"),  # not UTF-8 / NUL
        (PDF, "text/plain", "FILE_CONTENT_MISMATCH"),  # ASCII, but a PDF's magic number
        (b"<svg", "image/svg+xml", "FILE_CONTENT_MISMATCH"),  # not well-formed
        (b'<html xmlns="http://www.w3.org/2000/svg"/>', "image/svg+xml", "FILE_CONTENT_MISMATCH"),
        (image("PNG")[:60], "image/png", "FILE_EMBEDDED_PAYLOAD"),  # truncated: no IEND
        (b"\xca\xfe\xba\xbe" + b"\x00" * 60, "video/mp4", "FILE_EXECUTABLE"),
        (DOCX.replace(b"word/", b"xxxx/"), BY_MIME_DOCX, "FILE_CONTENT_MISMATCH"),
    ]
    for data, mime, code in cases:
        with pytest.raises(ApiError) as caught:
            _inspect(tmp_path, data, mime)
        assert caught.value.code == code, (data[:20], mime, caught.value.message)

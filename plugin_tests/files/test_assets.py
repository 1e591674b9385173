"""/assets and /media: originals and transforms, their bounds and errors, the derivative cache,
ETag/304, nosniff and attachments; transform presets."""

from __future__ import annotations

import asyncio
import io
import threading

from PIL import Image

from kernel.testing import shared as testing_shared
from plugins.files.assets import transforms

from .conftest import error_code, shared_site_on_each_storage
from .corpus import SVG_OK, gradient_jpeg, image

# The tests on svc_app read and write in a site of their own: they share the module's app on each
# storage, each in a new site of it (kernel/testing/shared.py); those with settings or a patched
# renderer of their own start their own with make_app.
shared_site = shared_site_on_each_storage()
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


def _open(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


async def test_transforms_and_their_answers(svc_app, calls, site):
    src = await calls.ok("put", "/files/upload/wide.jpg", status=201, content=gradient_jpeg((400, 200)),
                         headers={"Content-Type": "image/jpeg"})
    path = f"/assets/{src['id']}"
    original = await calls.call("get", path)
    assert original.status_code == 200 and original.headers["content-type"] == "image/jpeg"
    assert original.headers["x-content-type-options"] == "nosniff"
    assert original.headers["content-disposition"].startswith("inline;")
    assert original.headers["cache-control"].startswith("private, max-age=")
    assert original.headers["etag"] == f'"{src["checksum"]}"'
    again = await calls.call("get", path, headers={"If-None-Match": original.headers["etag"]})
    assert again.status_code == 304 and again.content == b""

    cases = [({"width": 100}, "image/jpeg", (100, 50)), ({"height": 50, "format": "png"}, "image/png", (100, 50)),
             ({"width": 50, "height": 50, "fit": "cover", "format": "webp"}, "image/webp", (50, 50)),
             ({"width": 50, "height": 50, "fit": "contain", "format": "png"}, "image/png", (50, 50)),
             ({"width": 50, "height": 50, "fit": "inside"}, "image/jpeg", (50, 25)),
             ({"width": 50, "height": 50, "fit": "outside"}, "image/jpeg", (100, 50)),
             ({"width": 40, "format": "avif", "quality": 30}, "image/avif", (40, 20))]
    for params, mime, size in cases:
        resp = await calls.call("get", path, params=params)
        assert resp.status_code == 200, (params, resp.text)
        assert resp.headers["content-type"] == mime and _open(resp.content).size == size, params
        assert resp.headers["x-content-type-options"] == "nosniff"
    # A cover crop keeps the focal point (in the original's pixels, clamped to the image).
    left = _open((await calls.call("get", path, params={"width": 20, "height": 20, "focal": "0,100"})).content)
    right = _open((await calls.call("get", path, params={"width": 20, "height": 20, "focal": "99999,-5"})).content)
    assert left.convert("RGB").getpixel((10, 10))[0] > 200 and right.convert("RGB").getpixel((10, 10))[2] > 200

    # Bad parameters are 400 naming the parameter, never 500.
    for params, name in (({"width": 5001}, "width"), ({"width": 0}, "width"), ({"height": "x"}, "height"),
                         ({"fit": "fill"}, "fit"), ({"format": "tiff"}, "format"), ({"quality": 101}, "quality"),
                         ({"focal": "1"}, "focal"), ({"focal": "nan,1"}, "focal"), ({"focal": "a,b"}, "focal"),
                         ({"width": ["1", "2"]}, "width"), ({"preset": "missing"}, "preset")):
        error = await calls.err("get", path, 400, "VALIDATION_FAILED", params=params)
        assert error["path"] == ["query", name], (params, error)

    # The derivative is cached in storage; a 304 for its ETag; a changed file drops them all.
    first = await calls.call("get", path, params={"width": 64, "format": "webp"})
    cached = await svc_app.kernel.storage.list(f"{site}/derivatives/{src['id']}/")
    assert cached
    calls_before = len(cached)
    second = await calls.call("get", path, params={"format": "webp", "width": "64", "cachebuster": "1"})
    assert second.content == first.content and second.headers["etag"] == first.headers["etag"]
    assert len(await svc_app.kernel.storage.list(f"{site}/derivatives/{src['id']}/")) == calls_before
    not_modified = await calls.call("get", path, params={"width": 64, "format": "webp"},
                                    headers={"If-None-Match": first.headers["etag"]})
    assert not_modified.status_code == 304
    await calls.ok("put", "/files/upload/wide.jpg", content=gradient_jpeg((300, 300)),
                   headers={"Content-Type": "image/jpeg"})
    assert await svc_app.kernel.storage.list(f"{site}/derivatives/{src['id']}/") == []
    changed = await calls.call("get", path, params={"width": 64, "format": "webp"},
                               headers={"If-None-Match": first.headers["etag"]})
    assert changed.status_code == 200 and _open(changed.content).size == (64, 64)
    await calls.ok("delete", f"/files/{src['id']}", status=204)
    assert await svc_app.kernel.storage.list(f"{site}/derivatives/{src['id']}/") == []
    assert await svc_app.kernel.storage.list(f"{site}/files/{src['id']}/") == []


async def test_orientation_metadata_bombs_and_attachments(make_app):
    app = await make_app(env={"SVC_FILES_MAX_INPUT_PIXELS": "100000"})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}

    async def put(name, data, mime):
        resp = await app.client.put(f"/api/v1/files/upload/{name}", content=data,
                                    headers={**headers, "Content-Type": mime})
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]

    # EXIF orientation 6 (rotate 90°): a 40x20 JPEG stands as 20x40; derivatives keep no EXIF.
    turned = await put("turned.jpg", gradient_jpeg((40, 20), orientation=6), "image/jpeg")
    resp = await app.client.get(f"/api/v1/assets/{turned['id']}", params={"width": 20}, headers=headers)
    out = _open(resp.content)
    assert out.size == (20, 40) and not out.getexif() and "exif" not in out.info and "icc_profile" not in out.info
    # Over SVC_FILES_MAX_INPUT_PIXELS: refused before decoding, 422; the original still serves.
    big = await put("big.png", image("PNG", size=(400, 300)), "image/png")
    resp = await app.client.get(f"/api/v1/assets/{big['id']}", params={"width": 10}, headers=headers)
    assert (resp.status_code, error_code(resp)) == (422, "IMAGE_TOO_LARGE")
    assert (await app.client.get(f"/api/v1/assets/{big['id']}", headers=headers)).status_code == 200
    # Anything but a raster image is an attachment, nosniff; an SVG also gets a sandboxing CSP.
    svg = await put("logo.svg", SVG_OK, "image/svg+xml")
    resp = await app.client.get(f"/api/v1/assets/{svg['id']}", headers=headers)
    assert resp.headers["content-disposition"].startswith('attachment; filename="logo.svg"')
    assert resp.headers["x-content-type-options"] == "nosniff" and "sandbox" in resp.headers["content-security-policy"]
    resp = await app.client.get(f"/api/v1/assets/{svg['id']}", params={"width": 10}, headers=headers)
    assert resp.status_code == 400
    text = await put("ünïcode \"name\".txt", b"hello", "text/plain")
    resp = await app.client.get(f"/api/v1/assets/{text['id']}", headers=headers)
    assert resp.headers["content-disposition"] == (
        "attachment; filename=\"_n_code _name_.txt\"; filename*=UTF-8''%C3%BCn%C3%AFcode%20%22name%22.txt")
    assert resp.content == b"hello" and resp.headers["content-type"].startswith("text/plain")
    resp = await app.client.get(f"/api/v1/assets/{turned['id']}", params={"download": "true"}, headers=headers)
    assert resp.headers["content-disposition"].startswith("attachment;")


async def test_transforms_are_bounded_in_concurrency(make_app, monkeypatch):
    """Ten transforms of large images at once: at most SVC_FILES_TRANSFORM_CONCURRENCY render."""
    app = await make_app(env={"SVC_FILES_TRANSFORM_CONCURRENCY": "2"})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    active, peak, lock = [0], [0], threading.Lock()
    real = transforms.render

    def counting(*args):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        try:
            return real(*args)
        finally:
            with lock:
                active[0] -= 1

    monkeypatch.setattr(transforms, "render", counting)
    resp = await app.client.put("/api/v1/files/upload/large.jpg", content=gradient_jpeg((2000, 1500)),
                                headers={**headers, "Content-Type": "image/jpeg"})
    file_id = resp.json()["data"]["id"]
    answers = await asyncio.gather(*(app.client.get(f"/api/v1/assets/{file_id}", params={"width": 100 + i},
                                                    headers=headers) for i in range(10)))
    assert [a.status_code for a in answers] == [200] * 10
    assert peak[0] == 2


async def test_media_routes_and_presets(svc_app, calls, site, make_member):
    created = await calls.ok("post", "/media/photo.jpg", status=201, content=gradient_jpeg((100, 50)),
                             headers={"Content-Type": "image/jpeg"})
    assert created["key"] == "photo.jpg"
    resp = await calls.call("get", "/media/photo.jpg")
    assert resp.status_code == 200 and resp.headers["content-disposition"].startswith("attachment;")
    assert resp.headers["x-content-type-options"] == "nosniff" and resp.content == gradient_jpeg((100, 50))
    redirect = await calls.call("get", "/media/photo.jpg", params={"width": 10, "format": "png"})
    assert redirect.status_code == 302
    location = redirect.headers["location"]
    assert location.startswith(f"/api/v1/assets/{created['id']}?") and "width=10" in location
    followed = await svc_app.client.get(location, headers=calls.headers)
    assert followed.status_code == 200 and _open(followed.content).size == (10, 5)
    await calls.err("get", "/media/photo.jpg", 400, "VALIDATION_FAILED", params={"width": 9000})
    await calls.err("get", "/media/nothing.jpg", 404, "RECORD_NOT_FOUND")

    # Presets: CRUD with the media:* actions; a preset's dsl is a transform.
    for bad in ({"key": "Bad Key", "name": "x", "dsl": "width=1"}, {"key": "k", "name": "x", "dsl": "width=0"},
                {"key": "k", "name": "x", "dsl": "colour=red"}, {"key": "k", "name": "", "dsl": "width=1"},
                {"key": "k", "name": "x", "dsl": "preset=other"}, {"key": "k", "name": "x"}):
        await calls.err("post", "/transform-presets", 400, "VALIDATION_FAILED", json=bad)
    preset = await calls.ok("post", "/transform-presets", status=201,
                            json={"key": "thumb", "name": "Thumbnail", "dsl": "width=20&height=20&format=png"})
    await calls.err("post", "/transform-presets", 409, "CONFLICT", json={"key": "thumb", "name": "x", "dsl": "width=1"})
    resp = await calls.call("get", f"/assets/{created['id']}", params={"preset": "thumb"})
    assert resp.headers["content-type"] == "image/png" and _open(resp.content).size == (20, 20)
    resp = await calls.call("get", f"/assets/{created['id']}", params={"preset": "thumb", "width": 30})
    assert _open(resp.content).size == (30, 20)  # a parameter beside the preset wins
    assert (await calls.call("get", "/media/photo.jpg", params={"preset": "thumb"})).status_code == 302
    updated = await calls.ok("patch", f"/transform-presets/{preset['id']}", json={"dsl": "width=8"})
    assert updated["dsl"] == "width=8" and updated["key"] == "thumb"
    await calls.err("patch", f"/transform-presets/{preset['id']}", 400, "VALIDATION_FAILED", json={"dsl": ""})
    assert [p["key"] for p in await calls.ok("get", "/transform-presets")] == ["thumb"]
    # A member's rights follow the media:* actions of its rules.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Viewers"})
    viewer = await make_member(site, role["id"])
    await calls.err("get", "/transform-presets", 403, "PERMISSION_DENIED", headers=viewer.headers)
    await calls.grant([{"collection": "*", "action": "media:read", "fields": ["*"]}], {"roleId": role["id"]})
    assert len(await calls.ok("get", "/transform-presets", headers=viewer.headers)) == 1
    assert (await calls.call("get", "/media/photo.jpg", headers=viewer.headers)).status_code == 200
    for method, path, kw in (("post", "/transform-presets", {"json": {"key": "v", "name": "v", "dsl": "width=1"}}),
                             ("patch", f"/transform-presets/{preset['id']}", {"json": {"name": "v"}}),
                             ("delete", f"/transform-presets/{preset['id']}", {})):
        await calls.err(method, path, 403, "PERMISSION_DENIED", headers=viewer.headers, **kw)
    await calls.ok("delete", f"/transform-presets/{preset['id']}", status=204)
    await calls.err("delete", f"/transform-presets/{preset['id']}", 404)
    # A large original streams from storage in chunks, whole and with its length.
    await calls.ok("put", "/uploads/config", json={"maxBytes": 3_000_000})
    big = ("line of text\n" * 120_000).encode()
    await calls.ok("post", "/media/big.txt", status=201, content=big, headers={"Content-Type": "text/plain"})
    for path in ("/media/big.txt", f"/assets/{(await calls.ok('get', '/files', params={'filter[key][_eq]': 'big.txt'}))[0]['id']}"):
        resp = await calls.call("get", path)
        assert resp.status_code == 200 and resp.content == big and resp.headers["content-length"] == str(len(big))
        assert resp.headers["content-disposition"].startswith("attachment;")
    await calls.ok("delete", "/media/big.txt", status=204)
    # DELETE /media/{key} removes the file, its bytes and derivatives.
    await calls.ok("delete", "/media/photo.jpg", status=204)
    await calls.err("get", "/media/photo.jpg", 404, "RECORD_NOT_FOUND")
    assert await svc_app.kernel.storage.list(f"{site}/") == []

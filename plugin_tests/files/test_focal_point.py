"""A file's stored focal point (``focalPoint``, docs/files.md#focal-point): set and cleared by
``PATCH /files/:id``, validated against the image, kept by cover crops of real image bytes
(a ``focal`` parameter still wins), part of the derivative's ETag, and dropped when the bytes
are replaced."""

from __future__ import annotations

import io

from PIL import Image

from kernel.testing import shared as testing_shared

from .conftest import FILES_ENV
from .corpus import gradient_jpeg, uploaded

# Every test writes and reads in a site of its own: they share the module's app (the files tests'
# settings, local storage: storage is not the subject), each in a new site of it
# (kernel/testing/shared.py).
shared_site = testing_shared.shared_site_started_with(env=FILES_ENV)
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

API = "/api/v1"
RED, BLUE = (255, 0, 0), (0, 0, 255)


def _colour(body: bytes) -> tuple[int, int, int]:
    """The mean colour of an image, rounded to red or blue when it is clearly one of them."""
    image = Image.open(io.BytesIO(body)).convert("RGB")
    pixels = list(image.get_flattened_data())
    mean = tuple(sum(p[i] for p in pixels) // len(pixels) for i in range(3))
    if mean[0] > 200 and mean[2] < 55:
        return RED
    if mean[2] > 200 and mean[0] < 55:
        return BLUE
    return mean


async def _crop(calls, file_id: str, **extra) -> tuple[bytes, str]:
    answer = await calls.call("get", f"/assets/{file_id}", params={"width": 100, "height": 100, **extra})
    assert answer.status_code == 200, answer.text
    assert Image.open(io.BytesIO(answer.content)).size == (100, 100)
    return answer.content, answer.headers["etag"]


async def test_a_cover_crop_keeps_the_stored_focal_point(calls):
    # 400x200: red on the left half, blue on the right. A 100x100 cover crop scales it to 200x100
    # and keeps 100 of the 200 columns: the centre (half of each), or the side of the focal point.
    photo = await uploaded(calls, "photo.jpg", gradient_jpeg((400, 200)))
    assert photo["focalPoint"] is None
    centre, centre_tag = await _crop(calls, photo["id"])
    assert _colour(centre) not in (RED, BLUE)

    changed = await calls.ok("patch", f"/files/{photo['id']}", json={"focalPoint": {"x": 380, "y": 100}})
    assert changed["focalPoint"] == {"x": 380, "y": 100}
    assert (await calls.ok("get", f"/files/{photo['id']}"))["focalPoint"] == {"x": 380, "y": 100}
    right, right_tag = await _crop(calls, photo["id"])
    assert _colour(right) == BLUE and right_tag != centre_tag  # not the cached centre crop

    await calls.ok("patch", f"/files/{photo['id']}", json={"focalPoint": {"x": 10, "y": 190}})
    left, left_tag = await _crop(calls, photo["id"])
    assert _colour(left) == RED and left_tag not in (centre_tag, right_tag)
    # The query's focal point wins over the stored one; other fits do not crop.
    chosen, _ = await _crop(calls, photo["id"], focal="390,100")
    assert _colour(chosen) == BLUE
    inside = await calls.call(
        "get", f"/assets/{photo['id']}", params={"width": 100, "height": 100, "fit": "inside"}
    )
    assert Image.open(io.BytesIO(inside.content)).size == (100, 50) and _colour(inside.content) not in (
        RED,
        BLUE,
    )

    # Cleared with null: the centre again (the same derivative as before any focal point).
    cleared = await calls.ok("patch", f"/files/{photo['id']}", json={"focalPoint": None})
    assert cleared["focalPoint"] is None
    assert (await _crop(calls, photo["id"]))[1] == centre_tag

    # New bytes under the same name drop the point: it was a point of the old picture.
    await calls.ok("patch", f"/files/{photo['id']}", json={"focalPoint": {"x": 380, "y": 100}})
    replaced = await uploaded(calls, "photo.jpg", gradient_jpeg((400, 200), orientation=1), status=200)
    assert replaced["id"] == photo["id"] and replaced["focalPoint"] is None


async def test_a_focal_point_is_validated(calls):
    photo = await uploaded(calls, "small.jpg", gradient_jpeg((40, 20)))
    doc = await uploaded(calls, "notes.txt", b"plain words\n", "text/plain")
    for body, path in (
        ({"focalPoint": [1, 2]}, ["focalPoint"]),
        ({"focalPoint": {"x": 1}}, ["focalPoint"]),
        ({"focalPoint": {"x": 1, "y": 2, "z": 3}}, ["focalPoint"]),
        ({"focalPoint": {"x": -1, "y": 2}}, ["focalPoint", "x"]),
        ({"focalPoint": {"x": 1.5, "y": 2}}, ["focalPoint", "x"]),
        ({"focalPoint": {"x": True, "y": 2}}, ["focalPoint", "x"]),
        ({"focalPoint": {"x": 1, "y": "2"}}, ["focalPoint", "y"]),
        ({"focalPoint": {"x": 41, "y": 2}}, ["focalPoint", "x"]),
        ({"focalPoint": {"x": 4, "y": 21}}, ["focalPoint", "y"]),
    ):
        refused = await calls.call("patch", f"/files/{photo['id']}", json=body)
        assert refused.status_code == 400, (body, refused.text)
        assert refused.json()["errors"][0]["path"] == path, body
    edge = await calls.ok("patch", f"/files/{photo['id']}", json={"focalPoint": {"x": 40, "y": 0}})
    assert edge["focalPoint"] == {"x": 40, "y": 0}
    not_image = await calls.call("patch", f"/files/{doc['id']}", json={"focalPoint": {"x": 0, "y": 0}})
    assert (not_image.status_code, not_image.json()["errors"][0]["path"]) == (400, ["focalPoint"])
    # Only PATCH takes it: registering or importing a file names no point yet.
    assert (await calls.ok("get", f"/files/{doc['id']}"))["focalPoint"] is None


async def test_a_focal_point_needs_media_update(svc_app, calls, site, make_member):
    photo = await uploaded(calls, "guarded.jpg", gradient_jpeg((40, 20)))
    member = await make_member(site, "subscriber")
    refused = await svc_app.client.patch(
        f"{API}/files/{photo['id']}",
        json={"focalPoint": {"x": 1, "y": 1}},
        headers={**member.headers, "X-Svc-Site": site},
    )
    assert refused.status_code == 403 and refused.json()["errors"][0]["code"] == "PERMISSION_DENIED", (
        refused.text
    )
    assert (await calls.ok("get", f"/files/{photo['id']}"))["focalPoint"] is None

"""Files through HTTP on one shared app (local storage), a site per test that writes: the guard's
declared step on a site's own policy, replacing bytes, PATCH bounds, the list query's refusals,
304s and cache scopes, transforms of what is not an image, presets' errors, signed upload URLs
that are not valid, and another site's files, presets and pending uploads (docs/files.md)."""

from __future__ import annotations

import pytest

from kernel.testing import Calls, new_member
from plugin_tests.files.corpus import PDF, image

JPEG = image("JPEG")
PNG = image("PNG", size=(40, 20))


async def _upload(calls, name="a.png", data=PNG, mime="image/png", status=201):
    return await calls.ok(
        "put", f"/files/upload/{name}", status, content=data, headers={"Content-Type": mime}
    )


def _code(resp):
    return resp.status_code, resp.json()["errors"][0]["code"]


async def test_a_sites_allowlist_refuses_other_types_with_415(shared_site):
    calls = await shared_site.new_site("fi")
    await calls.ok("put", "/uploads/config", json={"allowedMimeTypes": ["image/png"]})
    error = await calls.err(
        "put",
        "/files/upload/a.jpg",
        415,
        "FILE_TYPE_NOT_ALLOWED",
        content=JPEG,
        headers={"Content-Type": "image/jpeg"},
    )
    assert error["extensions"]["allowed"] == ["image/png"]
    await _upload(calls)
    # Back to the defaults: null falls through to the environment and the catalogue.
    await calls.ok("put", "/uploads/config", json={"allowedMimeTypes": None})
    await _upload(calls, "a.jpg", JPEG, "image/jpeg")


async def test_a_sites_cap_refuses_a_longer_body_with_413(shared_site):
    calls = await shared_site.new_site("fi")
    await calls.ok("put", "/uploads/config", json={"maxBytes": len(PNG) - 1})
    await calls.err(
        "put",
        "/files/upload/a.png",
        413,
        "FILE_TOO_LARGE",
        content=PNG,
        headers={"Content-Type": "image/png"},
    )
    assert await calls.ok("get", "/files") == []


async def test_a_name_whose_extension_is_another_types_is_415(shared_site):
    await shared_site.calls.err(
        "put",
        "/files/upload/photo.png",
        415,
        "FILE_EXTENSION_MISMATCH",
        content=JPEG,
        headers={"Content-Type": "image/jpeg"},
    )


@pytest.mark.parametrize("name", [".hidden.png", "%20a.png", "a%0A.png"])
async def test_a_name_that_cannot_be_a_key_is_400(shared_site, name):
    await shared_site.calls.err(
        "put",
        f"/files/upload/{name}",
        400,
        "VALIDATION_FAILED",
        path_is=["key"],
        content=PNG,
        headers={"Content-Type": "image/png"},
    )


async def test_replacing_the_bytes_keeps_the_id_and_drops_the_old_derivatives(shared_site):
    calls = await shared_site.new_site("fi")
    first = await _upload(calls)
    before = await calls.call("get", f"/assets/{first['id']}", params={"width": 10})
    second = await _upload(calls, data=image("PNG", size=(80, 20)), status=200)
    assert (second["id"], second["width"]) == (first["id"], 80) and second["checksum"] != first["checksum"]
    after = await calls.call("get", f"/assets/{first['id']}", params={"width": 10})
    assert after.headers["etag"] != before.headers["etag"] and after.status_code == 200
    prefix = f"{calls.headers['X-Svc-Site']}/derivatives/{first['id']}/"
    assert len(await shared_site.app.kernel.storage.list(prefix)) == 1


async def test_replacing_needs_media_update_and_changes_nothing_without_it(shared_site):
    calls = await shared_site.new_site("fi")
    first = await _upload(calls)
    role = await calls.ok("post", "/roles", 201, json={"name": "Uploaders"})
    await calls.grant([{"collection": "*", "action": "media:create"}], {"roleId": role["id"]})
    made = await new_member(shared_site.app, calls.headers["X-Svc-Site"], role["id"])
    uploader = Calls(shared_site.app.client, made.headers)
    await uploader.err(
        "put",
        "/files/upload/a.png",
        403,
        "PERMISSION_DENIED",
        content=image("PNG", size=(5, 5)),
        headers={"Content-Type": "image/png"},
    )
    assert (await calls.ok("get", f"/files/{first['id']}"))["checksum"] == first["checksum"]
    await _upload(uploader, "b.png")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"title": "t" * 256}, ["title"]),
        ({"tags": ["t"] * 51}, ["tags"]),
        ({"type": "image/gif"}, ["type"]),
        ({"key": "b.png"}, ["key"]),
    ],
)
async def test_a_patch_out_of_bounds_or_beyond_title_tags_folder_is_400(shared_site, body, path):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    await calls.err("patch", f"/files/{file['id']}", 400, "VALIDATION_FAILED", path_is=path, json=body)
    assert await calls.ok("get", f"/files/{file['id']}") == file


async def test_a_patch_keeps_tags_once_and_filters_by_them(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    other = await _upload(calls, "b.png")
    patched = await calls.ok(
        "patch", f"/files/{file['id']}", json={"tags": ["hero", "blue", "hero"], "title": "Hero"}
    )
    assert (patched["tags"], patched["title"]) == (["hero", "blue"], "Hero")
    found = await calls.ok("get", "/files", params={"filter[tags][_eq]": "hero"})
    assert [f["id"] for f in found] == [file["id"]]
    untagged = await calls.ok("get", "/files", params={"filter[tags][_null]": "true"})
    assert [f["id"] for f in untagged] == [other["id"]]
    cleared = await calls.ok("patch", f"/files/{file['id']}", json={"tags": None})
    assert cleared["tags"] == []


@pytest.mark.parametrize(
    "params",
    [
        {"limit": "201"},
        {"filter[owner][_eq]": "x"},
        {"sort": "owner"},
        {"filter[key.name][_eq]": "x"},
        {"filter[filesize][_eq]": "big"},
        {"filter[createdAt][_gt]": "yesterday"},
        {"filter": '{"tags": {"_json_contains": ["a"]}}'},
    ],
)
async def test_a_files_query_that_cannot_apply_is_400(shared_site, params):
    await shared_site.calls.err("get", "/files", 400, "VALIDATION_FAILED", params=params)


async def test_a_files_page_sorts_and_counts(shared_site):
    calls = await shared_site.new_site("fi")
    for name in ("c.png", "a.png", "b.png"):
        await _upload(calls, name)
    page = await calls.ok("get", "/files", full=True, params={"sort": "-key", "limit": 2, "offset": 1})
    assert [f["key"] for f in page["data"]] == ["b.png", "a.png"] and page["meta"]["total"] == 3
    bare = await calls.ok("get", "/files", full=True, params={"meta": "none", "limit": 1})
    assert len(bare["data"]) == 1 and "total" not in (bare.get("meta") or {})


@pytest.mark.parametrize("header", ["*", 'W/"{}"', '"nope", "{}"'])
async def test_a_matching_if_none_match_is_304_without_a_body(shared_site, header):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    resp = await calls.call(
        "get", f"/assets/{file['id']}", headers={"If-None-Match": header.format(file["checksum"])}
    )
    assert (resp.status_code, resp.content) == (304, b"")
    assert resp.headers["etag"] == f'"{file["checksum"]}"' and resp.headers["cache-control"].startswith(
        "private"
    )


async def test_download_forces_an_attachment_for_an_image(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls, "Photo é.png")
    inline = await calls.call("get", f"/assets/{file['id']}")
    forced = await calls.call("get", f"/assets/{file['id']}", params={"download": "true"})
    assert inline.headers["content-disposition"].startswith('inline; filename="Photo _.png"')
    assert forced.headers["content-disposition"].startswith("attachment;")
    assert forced.headers["content-disposition"].endswith("Photo%20%C3%A9.png")


async def test_a_transform_of_what_is_not_a_raster_is_400(shared_site):
    calls = await shared_site.new_site("fi")
    pdf = await calls.ok(
        "post", "/media/doc.pdf", 201, content=PDF, headers={"Content-Type": "application/pdf"}
    )
    await calls.err("get", f"/assets/{pdf['id']}", 400, "VALIDATION_FAILED", params={"width": "10"})
    await calls.err("get", "/media/doc.pdf", 400, "VALIDATION_FAILED", params={"width": "10"})
    whole = await calls.call("get", f"/assets/{pdf['id']}")
    assert whole.headers["content-disposition"].startswith("attachment;") and whole.content == PDF


@pytest.mark.parametrize("preset", ["", "no-such"])
async def test_an_unknown_preset_is_400_on_the_preset(shared_site, preset):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    await calls.err(
        "get",
        f"/assets/{file['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["query", "preset"],
        params={"preset": preset},
    )


async def test_a_preset_renamed_onto_another_key_is_409(shared_site):
    calls = await shared_site.new_site("fi")
    await calls.ok("post", "/transform-presets", 201, json={"key": "a", "name": "A", "dsl": "width=10"})
    b = await calls.ok("post", "/transform-presets", 201, json={"key": "b", "name": "B", "dsl": "width=20"})
    await calls.err(
        "patch", f"/transform-presets/{b['id']}", 409, "CONFLICT", path_is=["key"], json={"key": "a"}
    )
    await calls.err(
        "patch",
        f"/transform-presets/{b['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["scope"],
        json={"scope": "all"},
    )
    await calls.err("patch", "/transform-presets/" + "x" * 37, 404, json={"name": "n"})
    assert (await calls.ok("patch", f"/transform-presets/{b['id']}", json={"name": "Bee"}))["key"] == "b"


async def test_another_site_cannot_use_change_or_see_a_preset(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    preset = await a.ok(
        "post", "/transform-presets", 201, json={"key": "thumb", "name": "T", "dsl": "width=8"}
    )
    theirs = await _upload(b)
    await b.err(
        "get",
        f"/assets/{theirs['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["query", "preset"],
        params={"preset": "thumb"},
    )
    await b.err("patch", f"/transform-presets/{preset['id']}", 404, json={"name": "mine"})
    await b.err("delete", f"/transform-presets/{preset['id']}", 404)
    assert await b.ok("get", "/transform-presets") == []
    await b.ok("post", "/transform-presets", 201, json={"key": "thumb", "name": "Mine", "dsl": "width=9"})


async def test_a_pending_upload_of_another_site_is_not_found(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    reserved = await a.ok(
        "post", "/files/upload-url", 201, json={"filename": "a.png", "contentType": "image/png"}
    )
    await b.err("post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]})
    # ... nor is one of another member of the same site.
    made = await new_member(shared_site.app, a.headers["X-Svc-Site"], "admin")
    await Calls(shared_site.app.client, made.headers).err(
        "post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]}
    )


async def test_registering_before_the_bytes_arrive_is_400(shared_site):
    calls = await shared_site.new_site("fi")
    reserved = await calls.ok(
        "post", "/files/upload-url", 201, json={"filename": "a.png", "contentType": "image/png"}
    )
    await calls.err(
        "post", "/files", 400, "VALIDATION_FAILED", path_is=["key"], json={"key": reserved["key"]}
    )
    await calls.err("post", "/files", 400, "VALIDATION_FAILED", path_is=["key"], json={"key": "k" * 37})


async def test_an_upload_url_for_a_type_the_site_refuses_is_415(shared_site):
    calls = await shared_site.new_site("fi")
    await calls.ok("put", "/uploads/config", json={"allowedMimeTypes": ["application/pdf"]})
    for mime, code in (
        ("image/png", "FILE_TYPE_NOT_ALLOWED"),
        ("application/pdf", "FILE_EXTENSION_MISMATCH"),
    ):
        body = {"filename": "a.png", "contentType": mime}
        await calls.err("post", "/files/upload-url", 415, code, json=body)


def _signed_path(url: str) -> str:
    return url.split("://", 1)[1].split("/", 1)[1]


@pytest.mark.parametrize("tamper", ["signature", "expires", "site"])
async def test_a_signed_url_changed_in_any_part_is_403(shared_site, tamper):
    calls = await shared_site.new_site("fi")
    reserved = await calls.ok(
        "post", "/files/upload-url", 201, json={"filename": "a.png", "contentType": "image/png"}
    )
    path = _signed_path(reserved["url"])
    base, query = path.split("?", 1)
    params = dict(part.split("=", 1) for part in query.split("&"))
    params[tamper] = {
        "signature": "0" * 64,
        "expires": str(int(params["expires"]) + 60),
        "site": shared_site.site,
    }[tamper]
    resp = await shared_site.app.client.put(
        "/" + base, params=params, content=PNG, headers={"Content-Type": "image/png"}
    )
    assert _code(resp) == (403, "PERMISSION_DENIED") and resp.json()["errors"][0]["extensions"]["reason"] == (
        "upload_url"
    )


async def test_a_signed_url_refuses_another_type_and_another_sites_header(shared_site):
    calls = await shared_site.new_site("fi")
    reserved = await calls.ok(
        "post", "/files/upload-url", 201, json={"filename": "a.png", "contentType": "image/png"}
    )
    path = "/" + _signed_path(reserved["url"])
    resp = await shared_site.app.client.put(path, content=JPEG, headers={"Content-Type": "image/jpeg"})
    assert _code(resp) == (400, "VALIDATION_FAILED") and resp.json()["errors"][0]["path"] == [
        "headers",
        "Content-Type",
    ]
    resp = await shared_site.app.client.put(
        path, content=PNG, headers={"Content-Type": "image/png", "X-Svc-Site": shared_site.site}
    )
    assert _code(resp) == (403, "PERMISSION_DENIED")
    resp = await shared_site.app.client.put(path, content=PNG, headers={"Content-Type": "image/png"})
    assert resp.status_code == 204
    registered = await calls.ok("post", "/files", 201, json={"key": reserved["key"], "tags": ["up"]})
    assert (registered["key"], registered["tags"]) == ("a.png", ["up"])


async def test_deleting_by_key_removes_the_file_and_its_objects(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    await calls.call("get", f"/assets/{file['id']}", params={"width": 10})
    await calls.ok("delete", "/media/a.png", 204)
    await calls.err("get", f"/files/{file['id']}", 404, "RECORD_NOT_FOUND")
    assert await shared_site.app.kernel.storage.list(f"{calls.headers['X-Svc-Site']}/") == []


async def test_another_sites_file_is_not_found_by_id_or_key(shared_site):
    a, b = await shared_site.new_site("fa"), await shared_site.new_site("fb")
    file = await _upload(a)
    for method, path in (
        ("get", f"/files/{file['id']}"),
        ("get", f"/assets/{file['id']}"),
        ("get", "/media/a.png"),
        ("delete", "/media/a.png"),
        ("delete", f"/files/{file['id']}"),
    ):
        await b.err(method, path, 404, "RECORD_NOT_FOUND")
    await b.err("patch", f"/files/{file['id']}", 404, "RECORD_NOT_FOUND", json={"title": "mine"})
    assert (await a.ok("get", f"/files/{file['id']}"))["title"] is None


async def test_any_member_reads_the_upload_policy_and_only_an_admin_sets_it(shared_site):
    calls = await shared_site.new_site("fi")
    made = await new_member(shared_site.app, calls.headers["X-Svc-Site"], "subscriber")
    member = Calls(shared_site.app.client, made.headers)
    assert await member.ok("get", "/uploads/config") == await calls.ok("get", "/uploads/config")
    await member.err("put", "/uploads/config", 403, "PERMISSION_DENIED", json={"maxBytes": 10})


async def test_an_upload_without_a_content_type_is_415(shared_site):
    await shared_site.calls.err(
        "put", "/files/upload/a.png", 415, "FILE_TYPE_NOT_ALLOWED", content=PNG, headers={"Content-Type": ""}
    )


async def test_a_content_type_with_parameters_is_its_bare_type(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls, mime="Image/PNG; charset=binary")
    assert file["type"] == "image/png"


async def test_a_derivatives_own_etag_answers_304(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    first = await calls.call("get", f"/assets/{file['id']}", params={"width": 10, "format": "jpg"})
    assert first.headers["content-type"] == "image/jpeg" and first.headers["etag"] != f'"{file["checksum"]}"'
    assert 'filename="a.jpg"' in first.headers["content-disposition"]
    again = await calls.call(
        "get",
        f"/assets/{file['id']}",
        params={"format": "jpeg", "width": 10},
        headers={"If-None-Match": first.headers["etag"]},
    )
    assert (again.status_code, again.content) == (304, b"")


async def test_a_registered_upload_refuses_bad_metadata_before_looking(shared_site):
    await shared_site.calls.err(
        "post", "/files", 400, "VALIDATION_FAILED", path_is=["tags"], json={"key": "k", "tags": "hero"}
    )
    await shared_site.calls.err(
        "post", "/files", 400, "VALIDATION_FAILED", path_is=["owner"], json={"key": "k", "owner": "me"}
    )


async def test_the_public_roles_answer_may_be_cached_publicly(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    await calls.ok("post", "/roles/public/permissions", 201, json={"collection": "*", "action": "media:read"})
    shared_site.app.kernel.access.invalidate(calls.headers["X-Svc-Site"])
    resp = await shared_site.app.client.get(
        f"/api/v1/assets/{file['id']}", headers={"X-Svc-Site": calls.headers["X-Svc-Site"]}
    )
    assert resp.status_code == 200 and resp.headers["cache-control"].startswith("public, max-age=")
    assert resp.headers["x-content-type-options"] == "nosniff" and resp.content == PNG


async def test_an_svg_is_an_attachment_with_a_sandbox(shared_site):
    calls = await shared_site.new_site("fi")
    svg = b'<svg xmlns="http://www.w3.org/2000/svg" width="4" height="4"><rect width="4" height="4"/></svg>'
    file = await _upload(calls, "logo.svg", svg, "image/svg+xml")
    resp = await calls.call("get", f"/assets/{file['id']}")
    assert resp.headers["content-disposition"].startswith("attachment;")
    assert resp.headers["content-security-policy"] == "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    await calls.err("get", f"/assets/{file['id']}", 400, "VALIDATION_FAILED", params={"width": 2})


async def test_a_deleted_files_id_is_gone_from_the_list_and_its_key_free(shared_site):
    calls = await shared_site.new_site("fi")
    file = await _upload(calls)
    await calls.ok("delete", f"/files/{file['id']}", 204)
    assert await calls.ok("get", "/files") == []
    again = await _upload(calls)
    assert again["id"] != file["id"]

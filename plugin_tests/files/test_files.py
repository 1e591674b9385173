"""Files: the record routes, the list's query language, events, permissions (media:* rules and
their conditions), the schema's files type, and site B never reaching site A's files."""

from __future__ import annotations

import re

from kernel.testing import shared as testing_shared

from .conftest import error_code, shared_site_on_each_storage
from .corpus import image

# Every test uploads and reads in a site of its own: they share the module's app on each storage,
# each in a new site of it (kernel/testing/shared.py); the upkeep tests, whose job sweeps every
# site, start their own.
shared_site = shared_site_on_each_storage()
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def _upload(calls, name: str, fmt: str = "JPEG", mime: str = "image/jpeg", color=(200, 30, 30),
                  **headers: str) -> dict:
    return await calls.ok("put", f"/files/upload/{name}", status=201, content=image(fmt, color=color),
                          headers={"Content-Type": mime, **headers})


async def test_crud_list_query_and_events(svc_app, calls, site, record_events):
    recorder = record_events("files.*")
    a = await _upload(calls, "alpha.jpg")
    b = await _upload(calls, "beta.png", "PNG", "image/png")
    c = await calls.ok("put", "/files/upload/gamma.txt", status=201, content=b"g" * 5000,
                       headers={"Content-Type": "text/plain"})
    assert a["width"] == 64 and a["height"] == 48 and c["width"] is None and len(a["checksum"]) == 64
    assert a["tags"] == [] and a["title"] is None and a["uploadedBy"]
    assert await calls.ok("get", f"/files/{a['id']}") == a
    patched = await calls.ok("patch", f"/files/{a['id']}", json={"title": "Alpha", "tags": ["hero", "red"],
                                                                 "folder": "banners"})
    assert (patched["title"], patched["tags"], patched["folder"]) == ("Alpha", ["hero", "red"], "banners")
    await calls.ok("patch", f"/files/{b['id']}", json={"tags": ["red"]})
    for bad in ({"key": "x.jpg"}, {"tags": "red"}, {"tags": [""]}, {"title": 5}, {"checksum": "0"},
                {"tags": ["x"] * 51}, {"folder": "a\nb"}):
        await calls.err("patch", f"/files/{a['id']}", 400, "VALIDATION_FAILED", json=bad)

    async def keys(**params):
        page = await calls.ok("get", "/files", full=True, params=params)
        return [f["key"] for f in page["data"]], page["meta"]

    assert (await keys(sort="key"))[0] == ["alpha.jpg", "beta.png", "gamma.txt"]
    assert (await keys(sort="-filesize", limit=1))[0] == ["gamma.txt"]
    assert await keys(**{"filter[tags][_eq]": "red", "sort": "key"}) == (
        ["alpha.jpg", "beta.png"], {"limit": 25, "offset": 0, "total": 2})
    assert (await keys(**{"filter[type][_starts_with]": "image/", "filter[folder][_null]": "true"}))[0] == \
        ["beta.png"]
    assert (await keys(filter='{"_or": [{"key": {"_eq": "gamma.txt"}}, {"title": {"_icontains": "alp"}}]}',
                       sort="key"))[0] == ["alpha.jpg", "gamma.txt"]
    assert (await keys(**{"filter[filesize][_gt]": 4000, "filter[width][_null]": "true"}))[0] == ["gamma.txt"]
    assert (await keys(**{"filter[createdAt][_gte]": "2000-01-01T00:00:00Z"}))[1]["total"] == 3
    page = await calls.ok("get", "/files", full=True, params={"meta": "none", "limit": 2, "offset": 1, "sort": "key"})
    assert [f["key"] for f in page["data"]] == ["beta.png", "gamma.txt"] and "total" not in page["meta"]
    for params, code in (({"filter": "{bad"}, "VALIDATION"), ({"filter[nope][_eq]": 1}, "VALIDATION_FAILED"),
                         ({"sort": "nope"}, "VALIDATION_FAILED"), ({"limit": 500}, "VALIDATION_FAILED"),
                         ({"filter[tags][_gt]": 1}, "VALIDATION_FAILED"),
                         ({"filter[createdAt][_gt]": "yesterday"}, "VALIDATION_FAILED"),
                         ({"filter[key][_json_contains]": '{"a":1}'}, "VALIDATION_FAILED"),
                         ({"aggregate[count]": "*"}, "VALIDATION_FAILED")):
        await calls.err("get", "/files", 400, code, params=params)

    # Replacing the bytes under the same name: 200, same id, new checksum.
    again = await calls.ok("put", "/files/upload/alpha.jpg", content=image("JPEG", color=(0, 255, 0)),
                           headers={"Content-Type": "image/jpeg"})
    assert again["id"] == a["id"] and again["checksum"] != a["checksum"] and again["tags"] == ["hero", "red"]
    await calls.ok("delete", f"/files/{b['id']}", status=204)
    await calls.err("get", f"/files/{b['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("delete", f"/files/{b['id']}", 404, "RECORD_NOT_FOUND")
    assert not [k for k in await svc_app.kernel.storage.list(f"{site}/files/{b['id']}/")]

    # The bus and the durable event log saw every write, thin (ids and field names).
    assert [(e, p["id"]) for e, p, _ in recorder.events] == [
        ("files.create", a["id"]), ("files.create", b["id"]), ("files.create", c["id"]),
        ("files.update", a["id"]), ("files.update", b["id"]), ("files.update", a["id"]), ("files.delete", b["id"])]
    page = await svc_app.kernel.events.read_after(site, limit=100)
    logged = [(e.type, e.item_id) for e in page.events if e.type.startswith("files.")]
    assert logged == [(e, p["id"]) for e, p, _ in recorder.events]
    update = next(e for e in page.events if e.type == "files.update")
    assert update.fields == ["folder", "tags", "title"]


async def test_cross_tenant(svc_app, calls, calls_b, site, site_b, make_member):
    a = await _upload(calls, "logo.jpg")
    preset = await calls.ok("post", "/transform-presets", status=201, json={"key": "thumb", "name": "T",
                                                                             "dsl": "width=8"})
    # The same name in site B is another file, another object.
    b = await _upload(calls_b, "logo.jpg", color=(0, 0, 9))
    assert b["id"] != a["id"]
    objects_a = await svc_app.kernel.storage.list(f"{site}/files/")
    objects_b = await svc_app.kernel.storage.list(f"{site_b}/files/")
    assert len(objects_a) == len(objects_b) == 1 and objects_a[0].startswith(f"{site}/files/{a['id']}/")
    assert [f["id"] for f in await calls_b.ok("get", "/files")] == [b["id"]]
    assert (await calls_b.ok("get", "/files", full=True, params={"filter[id][_eq]": a["id"]}))["meta"]["total"] == 0
    for method, path, kw in (("get", f"/files/{a['id']}", {}), ("patch", f"/files/{a['id']}", {"json": {"title": "x"}}),
                             ("delete", f"/files/{a['id']}", {}), ("get", f"/assets/{a['id']}", {}),
                             ("get", f"/assets/{a['id']}", {"params": {"width": 10}})):
        await calls_b.err(method, path, 404, "RECORD_NOT_FOUND", **kw)
    await calls_b.err("patch", f"/transform-presets/{preset['id']}", 404, json={"name": "x"})
    await calls_b.err("delete", f"/transform-presets/{preset['id']}", 404)
    assert await calls_b.ok("get", "/transform-presets") == []
    await calls_b.err("get", f"/assets/{b['id']}", 400, "VALIDATION_FAILED", params={"preset": "thumb"})
    # A's media names, ids and storage keys reach nothing in B.
    a_only = await _upload(calls, "only-a.jpg")
    for method in ("get", "delete"):
        await calls_b.err(method, "/media/only-a.jpg", 404, "RECORD_NOT_FOUND")
    storage_key = objects_a[0]
    for path in (f"/media/{storage_key.replace('/', '%2F')}", f"/assets/{storage_key.replace('/', '%2F')}",
                 f"/files/{storage_key.replace('/', '%2F')}"):
        assert (await calls_b.call("get", path)).status_code == 404, path
    resp = await calls_b.call("put", f"/files/upload/{storage_key.replace('/', '%2F')}", content=image("JPEG"),
                              headers={"Content-Type": "image/jpeg"})
    # The encoded slashes come back as path separators: no route has that many segments.
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "NOT_FOUND"), resp.text
    assert (await calls.ok("get", f"/files/{a_only['id']}"))["id"] == a_only["id"]
    objects_a = await svc_app.kernel.storage.list(f"{site}/files/")
    # A's pending presigned upload key cannot be registered from B, nor its signed URL used with B's site.
    reserved = await calls.ok("post", "/files/upload-url", status=201, json={"filename": "p.jpg",
                                                                            "contentType": "image/jpeg"})
    await calls_b.err("post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]})
    # Nor by another member of site A: only who reserved it.
    other = await make_member(site, "admin")
    await calls.err("post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]}, headers=other.headers)
    if reserved["url"].startswith("http://testserver/"):  # svc's own signed URL (local storage)
        resp = await svc_app.client.put(reserved["url"], content=image("JPEG"),
                                        headers={"Content-Type": "image/jpeg", "X-Svc-Site": site_b})
        assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED")
        forged = reserved["url"].replace(f"site={site}", f"site={site_b}")
        resp = await svc_app.client.put(forged, content=image("JPEG"), headers={"Content-Type": "image/jpeg"})
        assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED")
        # An expiry in digits that are not ASCII ("²" passes str.isdigit) is an invalid URL, not a 500.
        odd = re.sub(r"expires=[0-9]+", "expires=%C2%B2", reserved["url"])
        resp = await svc_app.client.put(odd, content=image("JPEG"), headers={"Content-Type": "image/jpeg"})
        assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED")
    # Deleting and replacing in B leaves A's file and bytes alone.
    await calls_b.ok("put", "/files/upload/logo.jpg", content=image("JPEG"), headers={"Content-Type": "image/jpeg"})
    await calls_b.ok("delete", "/media/logo.jpg", status=204)
    assert (await calls.ok("get", f"/files/{a['id']}"))["checksum"] == a["checksum"]
    assert await svc_app.kernel.storage.list(f"{site}/files/") == objects_a
    # Deleting site B takes its files and objects, and leaves A's.
    await _upload(calls_b, "again.jpg")
    await calls.ok("delete", f"/sites/{site_b}", status=204)
    assert await svc_app.kernel.storage.list(f"{site_b}/") == []
    assert await svc_app.kernel.storage.list(f"{site}/files/") == objects_a


async def test_media_permissions_and_their_conditions(svc_app, calls, site, make_member):
    """media:* rules decide every answer; a rule's conditions bound the files it covers; a
    replace needs media:update and changes nothing without it (Directus CVE-2025-55746)."""
    role = await calls.ok("post", "/roles", status=201, json={"name": "Writers"})
    writer = await make_member(site, role["id"])
    headers = writer.headers
    mine_only = {"uploadedBy": {"_eq": "$CURRENT_USER"}}
    await calls.grant([{"collection": "*", "action": "media:create", "fields": ["*"]},
                       {"collection": "*", "action": "media:read", "fields": ["*"], "conditions": mine_only}],
                      {"roleId": role["id"]})
    theirs = await _upload(calls, "theirs.jpg")
    mine = await _upload(calls, "mine.jpg", **headers)
    assert mine["uploadedBy"] == writer.id
    listed = await calls.ok("get", "/files", headers=headers)
    assert [f["key"] for f in listed] == ["mine.jpg"]
    await calls.err("get", f"/files/{theirs['id']}", 404, "RECORD_NOT_FOUND", headers=headers)
    await calls.err("get", f"/assets/{theirs['id']}", 404, "RECORD_NOT_FOUND", headers=headers)
    assert (await calls.call("get", f"/assets/{mine['id']}", headers=headers)).status_code == 200
    # No media:update: PATCH and a replacing upload are 403, and the bytes stay as they were.
    await calls.err("patch", f"/files/{mine['id']}", 403, "PERMISSION_DENIED", json={"title": "x"}, headers=headers)
    resp = await calls.call("put", "/files/upload/theirs.jpg", content=image("JPEG", color=(0, 0, 0)),
                            headers={**headers, "Content-Type": "image/jpeg"})
    assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED")
    assert (await calls.ok("get", f"/files/{theirs['id']}"))["checksum"] == theirs["checksum"]
    await calls.err("delete", f"/files/{mine['id']}", 403, "PERMISSION_DENIED", headers=headers)
    await calls.err("delete", f"/media/{mine['key']}", 403, "PERMISSION_DENIED", headers=headers)
    # media:update and media:delete on their own files only.
    await calls.grant([{"collection": "*", "action": a, "fields": ["*"], "conditions": mine_only}
                       for a in ("media:update", "media:delete")], {"roleId": role["id"]})
    await calls.err("patch", f"/files/{theirs['id']}", 404, "RECORD_NOT_FOUND", json={"title": "x"},
                    headers=headers)
    resp = await calls.call("put", "/files/upload/theirs.jpg", content=image("JPEG", color=(0, 0, 0)),
                            headers={**headers, "Content-Type": "image/jpeg"})
    assert (resp.status_code, error_code(resp)) == (403, "PERMISSION_DENIED")
    assert (await calls.ok("patch", f"/files/{mine['id']}", json={"title": "Mine"}, headers=headers))["title"] == "Mine"
    await calls.err("delete", f"/files/{theirs['id']}", 404, "RECORD_NOT_FOUND", headers=headers)
    await calls.ok("delete", f"/media/{mine['key']}", status=204, headers=headers)
    # Without any media:read: 403 on reads.
    subscriber = await make_member(site, "subscriber")
    await calls.err("get", "/files", 403, "PERMISSION_DENIED", headers=subscriber.headers)
    await calls.err("get", f"/assets/{theirs['id']}", 403, "PERMISSION_DENIED", headers=subscriber.headers)
    await calls.err("get", "/files", 403, "PERMISSION_DENIED", headers={"Authorization": ""})


async def test_files_field_holds_ids_of_this_sites_files(calls, calls_b):
    await calls.collection("posts", {"title": "string", "gallery": "files"})
    await calls_b.collection("posts", {"title": "string", "gallery": "files"})
    a = await _upload(calls, "a.jpg")
    b = await _upload(calls_b, "b.jpg")
    post = await calls.create("posts", {"title": "p", "gallery": [a["id"]]})
    assert post["gallery"] == [a["id"]]
    error = await calls.err("post", "/items/posts", 400, "VALIDATION_FAILED", json={"gallery": [a["id"], b["id"]]})
    assert error["path"] == ["gallery"] and b["id"] in error["message"]
    await calls.err("patch", f"/items/posts/{post['id']}", 400, "VALIDATION_FAILED", json={"gallery": ["nope"]})
    await calls_b.err("post", "/items/posts", 400, "VALIDATION_FAILED", json={"gallery": [a["id"]]})
    assert (await calls_b.create("posts", {"gallery": [b["id"]]}))["gallery"] == [b["id"]]


async def test_expired_pending_uploads_are_swept(make_app, files_env):
    import datetime as dt

    from plugins.files import upkeep

    svc_app, [calls] = await testing_shared.own_app(make_app, env=files_env)
    site = calls.headers["X-Svc-Site"]

    reserved = await calls.ok("post", "/files/upload-url", status=201,
                              json={"filename": "late.jpg", "contentType": "image/jpeg"})
    kept = await calls.ok("post", "/files/upload-url", status=201,
                          json={"filename": "soon.jpg", "contentType": "image/jpeg"})
    for token in (reserved["key"], kept["key"]):
        await svc_app.kernel.storage.put(f"{site}/uploads/{token}", image("JPEG"), "image/jpeg")
    assert "files.upkeep" in [job["name"] for job in svc_app.kernel.jobs.registered()]
    assert await upkeep.run(svc_app.kernel) == 0  # nothing has expired yet
    # An hour later (the URLs live 15 minutes), the hourly job drops both pending uploads.
    assert await upkeep.run(svc_app.kernel, now=dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)) == 2
    assert await svc_app.kernel.storage.list(f"{site}/uploads/") == []
    await calls.err("post", "/files", 404, "RECORD_NOT_FOUND", json={"key": reserved["key"]})


async def test_upkeep_costs_the_same_at_5_and_50_idle_sites(make_app, files_env):
    # Issue 27 ("scale"): one query across sites finds the expired pending uploads, and each
    # site's go in one DELETE; a site with only live uploads costs nothing. The idle sites each
    # hold a live pending upload; each round: two expired uploads in A, a live one in B.
    import datetime as dt

    from sqlalchemy import select, update

    from kernel.testing import Calls, add_idle_sites, counted_statements
    from plugins.files import upkeep
    from plugins.files.tables import uploads

    svc_app, [calls, calls_b] = await testing_shared.own_app(make_app, 2, env=files_env)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    kernel = svc_app.kernel
    body = {"filename": "x.jpg", "contentType": "image/jpeg"}
    counts = []
    for idle in (5, 45):
        for idle_site in await add_idle_sites(kernel, idle):
            await Calls(svc_app.client, {**calls.headers, "X-Svc-Site": idle_site}).ok(
                "post", "/files/upload-url", status=201, json=body)
        late = [(await calls.ok("post", "/files/upload-url", status=201, json=body))["key"] for _ in range(2)]
        live = (await calls_b.ok("post", "/files/upload-url", status=201, json=body))["key"]
        for site_id, token in [(site, t) for t in late] + [(site_b, live)]:
            await kernel.storage.put(f"{site_id}/uploads/{token}", image("JPEG"), "image/jpeg")
        async with kernel.db.begin() as conn:
            await conn.execute(update(uploads).where(uploads.c.site_id == site).values(
                expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(hours=1)))
        with counted_statements(kernel) as seen:
            assert await upkeep.run(kernel) == 2
        counts.append(len(seen))
        assert await kernel.storage.list(f"{site}/uploads/") == []
        async with kernel.db.connect() as conn:
            held = set((await conn.execute(select(uploads.c.site_id))).scalars())
        assert site not in held and site_b in held
    assert counts[0] == counts[1]
    assert len(await kernel.storage.list(f"{site_b}/uploads/")) == 2

"""Cross-tenant: site B never sees or touches site A's collections, fields or relations, the
same names live independently in both, and deleting a site takes its schema with it."""

from __future__ import annotations

from sqlalchemy import func, select

from kernel.testing import shared as testing_shared
from plugins.schema import api
from plugins.schema.tables import collections, fields, relations, schema_versions

# Every test writes and reads in sites of its own: they share the module's app, each in new sites
# of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def _schema_a(calls):
    await calls.collection("articles", icon="a")
    await calls.collection("authors")
    await calls.field("articles", "title", "string")
    await calls.field("articles", "author", "uuid")
    rel = await calls.relation(type="m2o", collection="articles", field="author", relatedCollection="authors")
    return rel["id"]


async def test_site_b_sees_nothing_of_site_a(calls, calls_b):
    rel = await _schema_a(calls)
    assert await calls_b.ok("get", "/collections") == []
    assert await calls_b.ok("get", "/collections?deleted=true") == []
    assert await calls_b.ok("get", "/fields") == []
    assert await calls_b.ok("get", "/relations") == []
    assert await calls_b.ok("get", "/relations?collection=articles") == []
    for path in ("/collections/articles", "/fields/articles", "/fields/articles/title", f"/relations/{rel}"):
        await calls_b.err("get", path, 404, "NOT_FOUND")


async def test_site_b_cannot_touch_site_a(calls, calls_b):
    rel = await _schema_a(calls)
    await calls_b.err("patch", "/collections/articles", 404, json={"icon": "b"})
    await calls_b.err("delete", "/collections/articles", 404)
    await calls_b.err("post", "/fields/articles", 404, json={"field": "x", "type": "string"})
    await calls_b.err("patch", "/fields/articles/title", 404, json={"required": True})
    await calls_b.err("delete", "/fields/articles/title", 404)
    await calls_b.err("patch", f"/relations/{rel}", 404, json={"onDelete": "cascade"})
    await calls_b.err("delete", f"/relations/{rel}", 404)
    await calls_b.err("post", "/relations", 400, path_is=["collection"], json={
        "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
    # Site A is untouched.
    assert (await calls.ok("get", "/collections/articles"))["icon"] == "a"
    assert (await calls.ok("get", "/fields/articles/title"))["required"] is False
    assert (await calls.ok("get", f"/relations/{rel}"))["onDelete"] == "set null"


async def test_restore_is_per_site(calls, calls_b):
    await calls.collection("articles")
    await calls.ok("delete", "/collections/articles", status=204)
    await calls_b.err("post", "/collections/articles/restore", 404)
    await calls.ok("post", "/collections/articles/restore")


async def test_same_names_live_independently(calls, calls_b, svc_app, site, site_b):
    rel_a = await _schema_a(calls)
    rel_b = await _schema_a(calls_b)
    assert rel_a != rel_b
    await calls_b.ok("patch", "/fields/articles/title", json={"type": "text"})
    await calls_b.ok("delete", "/collections/authors", status=204)
    assert (await calls.ok("get", "/fields/articles/title"))["type"] == "string"
    assert len(await calls.ok("get", "/relations")) == 1
    a = await api.get_schema(svc_app.kernel, site)
    b = await api.get_schema(svc_app.kernel, site_b)
    assert a.field("articles", "title").type == "string" and b.field("articles", "title").type == "text"
    assert set(a.collections) == {"articles", "authors"} and set(b.collections) == {"articles"}


async def test_deleting_a_site_removes_its_schema(svc_app, calls, calls_b, site, site_b, admin_headers):
    await _schema_a(calls)
    await _schema_a(calls_b)
    await calls.ok("delete", "/collections/authors", status=204)  # a soft-deleted row goes too
    resp = await svc_app.client.delete(f"/api/v1/sites/{site}", headers=admin_headers)
    assert resp.status_code == 204
    async with svc_app.kernel.db.connect() as conn:
        for table in (collections, fields, relations, schema_versions):
            left = (await conn.execute(select(func.count()).select_from(table)
                                       .where(table.c.site_id == site))).scalar_one()
            assert left == 0, table.name
            kept = (await conn.execute(select(func.count()).select_from(table)
                                       .where(table.c.site_id == site_b))).scalar_one()
            assert kept > 0, table.name
    assert len(await calls_b.ok("get", "/collections")) == 2

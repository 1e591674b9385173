"""Who may call the schema routes: reads need any principal of the site, writes need admin."""

from __future__ import annotations

import pytest

WRITES = [
    ("post", "/collections", {"name": "x"}),
    ("patch", "/collections/articles", {"icon": "x"}),
    ("delete", "/collections/articles", None),
    ("post", "/collections/articles/restore", None),
    ("post", "/fields/articles", {"field": "f", "type": "string"}),
    ("patch", "/fields/articles/title", {"required": True}),
    ("delete", "/fields/articles/title", None),
    ("post", "/relations", {"type": "m2o", "collection": "articles", "field": "author",
                            "relatedCollection": "authors"}),
    ("patch", "/relations/{rel}", {"onDelete": "cascade"}),
    ("delete", "/relations/{rel}", None),
]
READS = ["/collections", "/collections/articles", "/fields", "/fields/articles", "/fields/articles/title",
         "/relations", "/relations/{rel}"]


@pytest.fixture
async def schema(calls):
    await calls.collection("articles")
    await calls.collection("authors")
    await calls.field("articles", "title", "string")
    await calls.field("articles", "author", "uuid")
    rel = await calls.relation(type="m2o", collection="articles", field="author", relatedCollection="authors")
    return rel["id"]


async def test_members_read_but_do_not_write(schema, calls, member_calls):
    # What a member sees of the schema follows its read permissions (test_schema_visibility.py).
    roles = await calls.ok("get", "/roles")
    subscriber = next(r for r in roles if r.get("systemKey") == "subscriber")
    await calls.grant([{"collection": name, "action": "read", "fields": ["*"]} for name in ("articles", "authors")],
                      {"roleId": subscriber["id"]})
    for path in READS:
        await member_calls.ok("get", path.format(rel=schema))
    await member_calls.err("get", "/collections?deleted=true", 403, "PERMISSION_DENIED")
    for method, path, body in WRITES:
        await member_calls.err(method, path.format(rel=schema), 403, "PERMISSION_DENIED", json=body)
    # Nothing changed.
    assert len(await calls.ok("get", "/collections")) == 2
    assert (await calls.ok("get", "/fields/articles/title"))["required"] is False


async def test_anonymous_gets_401_everywhere(schema, anon_calls):
    for path in READS:
        await anon_calls.err("get", path.format(rel=schema), 401, "UNAUTHENTICATED")
    for method, path, body in WRITES:
        await anon_calls.err(method, path.format(rel=schema), 401, "UNAUTHENTICATED", json=body)


async def test_a_site_is_required(svc_app, admin_headers):
    resp = await svc_app.client.get("/api/v1/collections", headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]
    resp = await svc_app.client.get("/api/v1/collections", headers={**admin_headers, "X-Svc-Site": "nope-site"})
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"

"""Sections held by a relation: an m2a list, an m2m list and an o2m alias are hydrated as the
public role reads the related items, and a related item it cannot read is left out, id and all."""

from __future__ import annotations

from delivery_seed import grant_public

from kernel.testing import Calls

API = "/api/v1"
HEROES = [{"id": "h1", "heading": "Hello", "secret": "s1"},
          {"id": "h2", "heading": "Draft", "secret": "s2", "status": "draft"}]
RULES = [{"collection": "pages", "action": "read", "fields": ["slug", "sections"]},
         {"collection": "heroes", "action": "read", "fields": ["heading", "page"],
          "conditions": {"status": {"_eq": "published"}}}]


async def _page(client, site: str) -> list:
    resp = await client.get(f"{API}/deliver/page/home", headers={"X-Svc-Site": site})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["sections"]


async def test_relation_sections(svc_app, site, site_b, admin_headers, calls: Calls, calls_b: Calls):
    client = svc_app.client
    # m2a: [{collection, id}] -> [{collection, item}]; the draft hero and the vault item vanish.
    await calls.collection("pages", {"slug": "string", "sections": "json"})
    await calls.collection("heroes", {"heading": "string", "secret": "string"})
    await calls.collection("vault", {"code": "string"})
    await calls.relation(type="m2a", collection="pages", field="sections", relatedCollections=["heroes", "vault"])
    await calls.create("heroes", HEROES)
    await calls.create("vault", {"id": "v1", "code": "c1"})
    await calls.create("pages", {"id": "p", "slug": "home", "sections": [
        {"collection": "vault", "id": "v1"}, {"collection": "heroes", "id": "h1"}, {"collection": "heroes", "id": "h2"}]})
    await grant_public(svc_app, calls, site, RULES)
    assert await _page(client, site) == [{"collection": "heroes", "item": {"id": "h1", "heading": "Hello"}}]

    # m2m: a list of ids -> the related items, in the list's order, hidden ones left out.
    await calls_b.collection("pages", {"slug": "string", "sections": "json"})
    await calls_b.collection("heroes", {"heading": "string", "secret": "string"})
    await calls_b.relation(type="m2m", collection="pages", field="sections", relatedCollection="heroes")
    await calls_b.create("heroes", [*HEROES, {"id": "h3", "heading": "Third"}])
    await calls_b.create("pages", {"id": "p", "slug": "home", "sections": ["h3", "h2", "h1"]})
    await grant_public(svc_app, calls_b, site_b, RULES)
    assert await _page(client, site_b) == [{"id": "h3", "heading": "Third"}, {"id": "h1", "heading": "Hello"}]

    # o2m: heroes.page points at the page; the alias nests the heroes the public may read.
    site_c = await svc_app.create_site(admin_headers, prefix="c", name="Site C")
    calls_c = Calls(client, {**admin_headers, "X-Svc-Site": site_c})
    await calls_c.collection("pages", {"slug": "string"})
    await calls_c.collection("heroes", {"heading": "string", "secret": "string", "page": "string"})
    await calls_c.relation(type="m2o", collection="heroes", field="page", relatedCollection="pages",
                           relatedField="sections")
    await calls_c.create("pages", {"id": "p", "slug": "home"})
    await calls_c.create("heroes", [{**hero, "page": "p"} for hero in HEROES])
    await grant_public(svc_app, calls_c, site_c, RULES[:1])
    # The heroes are not the public's yet: the page, without its sections.
    resp = await client.get(f"{API}/deliver/page/home", headers={"X-Svc-Site": site_c})
    assert resp.status_code == 200 and resp.json()["data"] == {"id": "p", "slug": "home"}, resp.text
    await grant_public(svc_app, calls_c, site_c, RULES[1:])
    assert await _page(client, site_c) == [{"id": "h1", "heading": "Hello", "page": "p"}]

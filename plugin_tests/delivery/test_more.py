"""/deliver/items, /deliver/menu and /deliver/llms.txt: public permissions, the same caching,
and site B never seeing A's menu, list or index."""

from __future__ import annotations

from delivery_seed import seed_site

API = "/api/v1"


async def test_items_menu_llms(svc_app, site, site_b, calls, calls_b, count_queries):
    client = svc_app.client
    await seed_site(svc_app, calls, site)
    anon = {"X-Svc-Site": site}

    # The public item list with the query language, masked, drafts left out.
    resp = await client.get(f"{API}/deliver/items/heroes", headers=anon, params={"sort": "-heading", "meta": "*"})
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == [{"id": "h1", "heading": "Hello"}]
    assert resp.headers["cache-control"].startswith("public, s-maxage=60") and "etag" in resp.headers
    with count_queries:
        again = await client.get(f"{API}/deliver/items/heroes", headers={**anon, "If-None-Match": resp.headers["etag"]},
                                 params={"sort": "-heading", "meta": "*"})
    assert again.status_code == 304 and count_queries.statements == []
    filtered = await client.get(f"{API}/deliver/items/pages", headers=anon,
                                params={"filter[slug][_eq]": "about", "fields": "title"})
    assert filtered.json()["data"] == [{"id": "p-about", "title": "About [us]"}]
    for hidden in ("vault", "nothing", "svc_users"):
        missing = await client.get(f"{API}/deliver/items/{hidden}", headers=anon)
        assert missing.status_code == 404 and missing.headers["cache-control"] == "no-store", hidden
    bad = await client.get(f"{API}/deliver/items/heroes", headers=anon, params={"filter": "{not json"})
    assert bad.status_code == 400 and bad.headers["cache-control"] == "no-store"
    private = await client.get(f"{API}/deliver/items/heroes", headers=calls.headers)
    assert private.headers["cache-control"] == "private, no-store" and "etag" not in private.headers

    # Menus: the public setting menu.<key>; its value is in the fingerprint.
    await calls.err("put", "/settings/menu.main", 400, "VALIDATION_FAILED", json={"value": "just text"})
    await calls.ok("put", "/settings/menu.main", json={"value": [{"label": "Home", "href": "/home"}]})
    menu = await client.get(f"{API}/deliver/menu/main", headers=anon)
    assert menu.status_code == 200 and menu.json() == {"data": [{"label": "Home", "href": "/home"}]}
    tag = menu.headers["etag"]
    assert (await client.get(f"{API}/deliver/menu/main", headers={**anon, "If-None-Match": tag})).status_code == 304
    await calls.ok("put", "/settings/menu.main", json={"value": [{"label": "Home", "href": "/"}]})
    changed = await client.get(f"{API}/deliver/menu/main", headers={**anon, "If-None-Match": tag})
    assert changed.status_code == 200 and changed.json()["data"][0]["href"] == "/"
    assert (await client.get(f"{API}/deliver/menu/main", headers={"X-Svc-Site": site_b})).status_code == 404
    # No such menu: 404; a key no menu may have (a space, too long): 400, and neither is cached.
    for key, status, code in (("nope", 404, "NOT_FOUND"), ("a%20b", 400, "VALIDATION_FAILED"),
                              ("x" * 96, 400, "VALIDATION_FAILED")):
        missing = await client.get(f"{API}/deliver/menu/{key}", headers=anon)
        assert (missing.status_code, missing.json()["errors"][0]["code"]) == (status, code), key
        assert missing.headers["cache-control"] == "no-store", key

    # llms.txt: only what the public role may read, as links with title and summary.
    llms = await client.get(f"{API}/deliver/llms.txt/{site}")
    assert llms.status_code == 200 and llms.headers["content-type"].startswith("text/plain")
    text = llms.text
    assert text.startswith("# Test site\n")
    assert f"- [Home](http://testserver/api/v1/deliver/page/{site}/home): The front page" in text
    assert f"- [About (us)](http://testserver/api/v1/deliver/page/{site}/about): Who we are" in text
    assert "hidden" not in text and "Hidden" not in text
    assert llms.headers["cache-control"].startswith("public, s-maxage=60")
    revalidated = await client.get(f"{API}/deliver/llms.txt/{site}", headers={"If-None-Match": llms.headers["etag"]})
    assert revalidated.status_code == 304 and revalidated.content == b""
    missing = await client.get(f"{API}/deliver/llms.txt/nosuchsite")
    assert missing.status_code == 404 and missing.headers["cache-control"] == "no-store"

    # The site's own frontend origin may read the path form and send beacons (CORS).
    await calls.ok("patch", "/site", json={"siteUrl": "https://www.example.org"})
    origin = {"Origin": "https://www.example.org"}
    for method, path, status in (("GET", f"/deliver/page/{site}/about", 200), ("GET", f"/deliver/llms.txt/{site}", 200),
                                 ("POST", f"/pageviews/{site}/hit", 204)):
        resp = await client.request(method, API + path, headers=origin, content=b'{"path": "/about"}')
        assert resp.status_code == status, (path, resp.text)
        assert resp.headers["access-control-allow-origin"] == "https://www.example.org", path
    other = await client.get(f"{API}/deliver/page/{site}/about", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers

    # Site B: its own list and index, none of A's.
    empty_b = await client.get(f"{API}/deliver/llms.txt/{site_b}")
    assert empty_b.status_code == 200 and "/deliver/page/" not in empty_b.text
    assert (await client.get(f"{API}/deliver/items/heroes", headers={"X-Svc-Site": site_b})).status_code == 404
    await seed_site(svc_app, calls_b, site_b, heading="B only")
    b_list = await client.get(f"{API}/deliver/items/heroes", headers={"X-Svc-Site": site_b})
    assert b_list.json()["data"] == [{"id": "h1", "heading": "B only"}]
    assert site not in (await client.get(f"{API}/deliver/llms.txt/{site_b}")).text

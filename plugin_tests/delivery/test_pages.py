"""Page hydration and HTTP caching: one round trip as the public role, ETag and 304 without a
database query, Cache-Control and Vary as the spec's table, the version moving on writes, and
two sites never sharing content or an ETag."""

from __future__ import annotations

from delivery_seed import seed_site

API = "/api/v1"


async def test_page_hydration_and_caching(svc_app, site, site_b, calls, calls_b, count_queries):
    client = svc_app.client
    await seed_site(svc_app, calls, site)
    anon = {"X-Svc-Site": site}

    resp = await client.get(f"{API}/deliver/page/home", headers=anon)
    assert resp.status_code == 200, resp.text
    page = resp.json()["data"]
    # The public role's mask: no ``notes``; sections hydrated, hidden ones left out entirely.
    assert page["slug"] == "home" and page["title"] == "Home" and "notes" not in page
    assert page["sections"] == [
        {"collection": "heroes", "item": {"id": "h1", "heading": "Hello"}, "layout": "wide"},
        {"type": "text", "body": "plain"},
    ]
    assert resp.headers["cache-control"] == "public, s-maxage=60, stale-while-revalidate=300"
    assert "X-Svc-Site" in resp.headers["vary"].split(", ")  # (CORS adds Origin)
    tag = resp.headers["etag"]
    assert tag.startswith('W/"') and tag.endswith('"')

    # The site named in the path: the same page and the same fingerprint.
    by_path = await client.get(f"{API}/deliver/page/{site}/home")
    assert by_path.status_code == 200 and by_path.json() == resp.json() and by_path.headers["etag"] == tag

    # A revalidation: 304, empty body, the caching headers, and not one database query.
    with count_queries:
        again = await client.get(f"{API}/deliver/page/home", headers={**anon, "If-None-Match": tag})
        by_path = await client.get(f"{API}/deliver/page/{site}/home", headers={"If-None-Match": f"\"x\", {tag}"})
    assert again.status_code == 304 and again.content == b"", again.text
    assert by_path.status_code == 304 and by_path.content == b""
    assert again.headers["etag"] == tag and "X-Svc-Site" in again.headers["vary"]
    assert again.headers["cache-control"].startswith("public, s-maxage=60")
    assert count_queries.statements == []

    # A full hydration: the page, then one list per readable referenced collection.
    with count_queries:
        await client.get(f"{API}/deliver/page/home", headers=anon)
    # (Only the item reads: the event dispatcher's background scan may run meanwhile.)
    selects = [q for q in count_queries.statements if q.lstrip().upper().startswith("SELECT") and "svc_items" in q]
    assert len(selects) == 2, selects  # pages, heroes (vault is not the public's: no query)

    # Credentials: private, no shared ETag, never a 304 from the shared fingerprint.
    private = await client.get(f"{API}/deliver/page/home", headers={**calls.headers, "If-None-Match": tag})
    assert private.status_code == 200 and private.headers["cache-control"] == "private, no-store"
    assert "etag" not in private.headers
    assert private.json() == resp.json()  # still the public role's reading

    # Not found, a draft page, a page of another site: 404 no-store, without an ETag.
    for path in ("/deliver/page/nope", "/deliver/page/hidden", f"/deliver/page/{site_b}/home"):
        missing = await client.get(API + path, headers={**anon, "If-None-Match": "*"})
        assert missing.status_code == 404, path
        assert missing.headers["cache-control"] == "no-store" and "etag" not in missing.headers
    # Refused by the kernel before the responder: no site named 400, an unknown one 404.
    for headers, status, code in (({}, 400, "VALIDATION_FAILED"), ({"X-Svc-Site": "nosuchsite"}, 404, "SITE_NOT_FOUND")):
        refused = await client.get(f"{API}/deliver/page/home", headers=headers)
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (status, code), headers
        assert refused.headers["cache-control"] == "no-store"
    unknown = await client.get(f"{API}/deliver/page/nosuchsite/home")
    assert unknown.status_code == 404 and unknown.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
    assert unknown.headers["cache-control"] == "no-store"

    # Any item write moves the version: the old ETag no longer matches, the page changes.
    await calls.ok("patch", "/items/heroes/h1", json={"heading": "Hi again"})
    moved = await client.get(f"{API}/deliver/page/home", headers={**anon, "If-None-Match": tag})
    assert moved.status_code == 200 and moved.headers["etag"] != tag
    assert moved.json()["data"]["sections"][0]["item"]["heading"] == "Hi again"
    # ... a write to a collection the page does not show as well (a site-level fingerprint).
    tag = moved.headers["etag"]
    await calls.create("vault", {"code": "c2"})
    assert (await client.get(f"{API}/deliver/page/home", headers=anon)).headers["etag"] != tag
    # ... and so does a change of the public role's rules (what the public sees).
    tag = (await client.get(f"{API}/deliver/page/home", headers=anon)).headers["etag"]
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r.get("systemKey") == "public")
    await calls.grant([{"collection": "vault", "action": "read", "fields": ["code"]}], {"roleId": public["id"]})
    opened = await client.get(f"{API}/deliver/page/home", headers=anon)
    assert opened.headers["etag"] != tag
    assert {"collection": "vault", "item": {"id": "v1", "code": "c1"}} in opened.json()["data"]["sections"]

    # Site B with the same history: its own content, never A's ETag.
    await seed_site(svc_app, calls_b, site_b, title="B home", heading="B hello")
    b_page = await client.get(f"{API}/deliver/page/home", headers={"X-Svc-Site": site_b})
    assert b_page.json()["data"]["title"] == "B home"
    assert b_page.json()["data"]["sections"][0]["item"]["heading"] == "B hello"
    a_tag = (await client.get(f"{API}/deliver/page/home", headers=anon)).headers["etag"]
    assert b_page.headers["etag"] != a_tag
    crossed = await client.get(f"{API}/deliver/page/home", headers={"X-Svc-Site": site_b, "If-None-Match": a_tag})
    assert crossed.status_code == 200 and crossed.json()["data"]["title"] == "B home"


async def test_tunables_and_hostile_slugs(make_app):
    app = await make_app(env={"SVC_DELIVER_SMAXAGE": "120", "SVC_DELIVER_SWR": "30"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    from kernel.testing import Calls

    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await seed_site(app, calls, site)
    resp = await app.client.get(f"{API}/deliver/page/home", headers={"X-Svc-Site": site})
    assert resp.status_code == 200
    assert resp.headers["cache-control"] == "public, s-maxage=120, stale-while-revalidate=30"
    again = await app.client.get(f"{API}/deliver/page/home",
                                 headers={"X-Svc-Site": site, "If-None-Match": resp.headers["etag"]})
    assert again.status_code == 304
    hostile = [".env", "-x", "a..b", "a%00b", "a%20b", "x" * 201, "a;b", "%E2%80%AE", "%27%20OR%201=1"]
    for slug in hostile:
        bad = await app.client.get(f"{API}/deliver/page/{slug}", headers={"X-Svc-Site": site})
        assert bad.status_code == 400 and bad.json()["errors"][0]["code"] == "VALIDATION_FAILED", slug
        assert bad.headers["cache-control"] == "no-store", slug
        bad = await app.client.get(f"{API}/deliver/page/{site}/{slug}")
        assert bad.status_code == 400 and bad.headers["cache-control"] == "no-store", slug
    traversal = await app.client.get(f"{API}/deliver/page/..%2F..%2Fsites/home", headers={"X-Svc-Site": site})
    assert traversal.status_code == 404


def test_smaxage_zero_disables_public_caching_and_keeps_revalidation():
    from plugins.delivery.caching import matches, public_cache_control

    # (Settings.get reads a setting by name, as a dict does.)
    assert public_cache_control({"deliver_smaxage": 0, "deliver_swr": 300}) == "public, no-cache"
    assert public_cache_control({"deliver_smaxage": 60, "deliver_swr": 0}) == "public, s-maxage=60, stale-while-revalidate=0"
    tag = 'W/"abc"'
    assert matches('W/"abc"', tag) and matches('"abc"', tag) and matches('"x", W/"abc"', tag)
    assert not matches("*", tag)  # the 304 cannot know the page exists: a missing one stays a 404
    assert not matches('W/"abcd"', tag) and not matches("", tag) and not matches(None, tag)

"""``GET, PATCH /site``: every key, its checks, DOMAIN_TAKEN, Host resolution by custom domain
and the allowed browser origins; site B's admin never touches site A."""

from __future__ import annotations

from kernel.testing import shared as testing_shared

# Every test but the domains' writes and reads in sites of its own: they share the module's app
# (conftest.py's ``shared_site``, with the settings tests' settings), each in new sites of it
# (kernel/testing/shared.py). The domains' test changes the instance's base domain: an app of its own.
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

FULL = {
    "name": "Blog", "displayTitle": "The Blog", "siteUrl": "https://www.example.org/home", "descriptor": "A blog",
    "domain": "Blog.Example.COM", "defaultLanguage": "en-US", "defaultAppearance": "dark",
    "defaultSaveAction": "create_new",
    "branding": {"logoUrl": "https://cdn.example.org/logo.svg", "faviconUrl": "http://x.example/f.ico",
                 "brandColor": "#1a2b3c"},
    "themeOverrides": {"light": {"primary": "222.2 47.4% 11.2%", "primary-foreground": "0 0% 100%"},
                       "dark": {"ring": "360 100% 0%"}},
    "customCss": ".hero { color: red; }\n@import 'local.css';",
}


async def test_read_patch_and_clear(calls, site, admin_headers, svc_app):
    start = await calls.ok("get", "/site")
    assert start["id"] == site and start["defaultAppearance"] == "auto" and start["defaultSaveAction"] == "stay"
    assert all(start[k] is None for k in ("displayTitle", "siteUrl", "domain", "branding", "themeOverrides",
                                          "customCss", "defaultLanguage", "descriptor"))
    done = await calls.ok("patch", "/site", json=FULL)
    assert done == {**FULL, "id": site, "domain": "blog.example.com", "createdAt": start["createdAt"]}
    assert await calls.ok("get", "/site") == done
    sites = await calls.ok("get", f"/sites/{site}")
    assert sites["name"] == "Blog"  # the kernel's record too
    # An empty string clears a nullable key; the enums fall back to their defaults.
    cleared = await calls.ok("patch", "/site", json={k: "" for k in FULL if k != "name"})
    assert cleared == {**start, "name": "Blog"}
    # A partial update leaves the rest alone.
    await calls.ok("patch", "/site", json={"descriptor": "x"})
    assert (await calls.ok("patch", "/site", json={"displayTitle": "T"}))["descriptor"] == "x"


BAD = [
    ({"name": ""}, ["name"]), ({"name": None}, ["name"]), ({"name": "x" * 201}, ["name"]),
    ({"displayTitle": 5}, ["displayTitle"]), ({"descriptor": "x" * 1001}, ["descriptor"]),
    ({"siteUrl": "ftp://x.example"}, ["siteUrl"]), ({"siteUrl": "javascript:alert(1)"}, ["siteUrl"]),
    ({"siteUrl": "https://user:pw@x.example"}, ["siteUrl"]), ({"siteUrl": "https://x.example:99999"}, ["siteUrl"]),
    ({"domain": "https://x.example"}, ["domain"]), ({"domain": "x.example:8080"}, ["domain"]),
    ({"domain": "localhost"}, ["domain"]), ({"domain": "-x.example"}, ["domain"]), ({"domain": 3}, ["domain"]),
    ({"domain": "1.2.3.4"}, ["domain"]),
    ({"defaultLanguage": "english!"}, ["defaultLanguage"]), ({"defaultAppearance": "blue"}, ["defaultAppearance"]),
    ({"defaultSaveAction": "close"}, ["defaultSaveAction"]), ({"defaultSaveAction": 1}, ["defaultSaveAction"]),
    ({"branding": "x"}, ["branding"]), ({"branding": {"logoUrl": "data:image/png;base64,AA"}}, ["branding", "logoUrl"]),
    ({"branding": {"faviconUrl": "//x.example/f.ico"}}, ["branding", "faviconUrl"]),
    ({"branding": {"brandColor": "red"}}, ["branding", "brandColor"]), ({"branding": {"x": 1}}, ["branding", "x"]),
    ({"themeOverrides": []}, ["themeOverrides"]), ({"themeOverrides": {"dim": {}}}, ["themeOverrides", "dim"]),
    ({"themeOverrides": {"light": {"primary": "#fff"}}}, ["themeOverrides", "light", "primary"]),
    ({"themeOverrides": {"light": {"primary": "361 10% 10%"}}}, ["themeOverrides", "light", "primary"]),
    ({"themeOverrides": {"light": {"primary": "10 101% 10%"}}}, ["themeOverrides", "light", "primary"]),
    ({"themeOverrides": {"light": {"primary": "10 10% 10%; x"}}}, ["themeOverrides", "light", "primary"]),
    ({"themeOverrides": {"light": {"sidebar": "10 10% 10%"}}}, ["themeOverrides", "light", "sidebar"]),
    ({"themeOverrides": {"dark": "x"}}, ["themeOverrides", "dark"]),
    ({"customCss": 1}, ["customCss"]), ({"customCss": "a{}</style><script>alert(1)</script>"}, ["customCss"]),
    ({"customCss": "a{}</STYLE >"}, ["customCss"]), ({"customCss": "a{} <!-- x"}, ["customCss"]),
    ({"customCss": "a{content:'\\3c /style>'}"}, ["customCss"]),
    ({"customCss": "@import url(https://evil.example/x.css);"}, ["customCss"]),
    ({"customCss": "@import 'http://evil.example/x.css';"}, ["customCss"]),
    ({"customCss": "@import '//evil.example/x.css';"}, ["customCss"]),
    ({"customCss": "@\\69mport 'https://evil.example/x.css';"}, ["customCss"]),
    ({"customCss": "@import/**/url(https://evil.example)"}, ["customCss"]),
    ({"customCss": "a{width:expression(alert(1))}"}, ["customCss"]),
    ({"customCss": "a{}" + "x" * 70_000}, ["customCss"]),
    ({"unknown": 1}, ["unknown"]), ({"id": "other"}, ["id"]),
]


async def test_bad_input_is_400_and_writes_nothing(calls):
    before = await calls.ok("patch", "/site", json={"displayTitle": "kept"})
    for body, path in BAD:
        # Each bad key rides with a good one: nothing of the body may be written.
        await calls.err("patch", "/site", 400, "VALIDATION_FAILED", path_is=path, json={"descriptor": "no", **body})
    assert await calls.ok("get", "/site") == before
    await calls.err("patch", "/site", 400, "VALIDATION_FAILED", json=["x"])


async def test_domains_are_unique_and_name_their_site(make_app):
    svc_app, [calls, calls_b] = await testing_shared.own_app(make_app, 2)
    site, site_b = calls.headers["X-Svc-Site"], calls_b.headers["X-Svc-Site"]
    admin_headers = {"Authorization": calls.headers["Authorization"]}
    client = svc_app.client
    await calls.ok("patch", "/site", json={"domain": "blog.example.com"})
    err = await calls_b.err("patch", "/site", 409, "DOMAIN_TAKEN", path_is=["domain"],
                            json={"domain": "BLOG.example.com.", "displayTitle": "not written"})
    assert "blog.example.com" in err["message"]
    assert (await calls_b.ok("get", "/site"))["displayTitle"] is None
    await calls.ok("patch", "/site", json={"domain": "blog.example.com"})  # its own domain again: fine

    async def site_of(host, **headers):
        resp = await client.get("/api/v1/site", headers={**admin_headers, "Host": host, **headers})
        return resp.status_code, resp.json()

    status, body = await site_of("blog.example.com")
    assert status == 200 and body["data"]["id"] == site
    status, body = await site_of("Blog.Example.com")
    assert status == 200 and body["data"]["id"] == site
    # X-Svc-Site comes first, then the SVC_BASE_DOMAIN subdomain, then the custom domain.
    status, body = await site_of("blog.example.com", **{"X-Svc-Site": site_b})
    assert body["data"]["id"] == site_b
    svc_app.kernel.settings.values["base_domain"] = "example.com"
    await calls_b.ok("patch", "/site", json={"domain": f"{site}.example.com"})
    status, body = await site_of(f"{site}.example.com")
    assert body["data"]["id"] == site  # the subdomain wins over B's custom domain
    svc_app.kernel.settings.values["base_domain"] = ""
    status, body = await site_of(f"{site}.example.com")
    assert body["data"]["id"] == site_b
    status, body = await site_of("nobody.example.net")
    assert status == 400 and body["errors"][0]["code"] == "VALIDATION_FAILED"
    # A domain moving to another site resolves there at once.
    await calls.ok("patch", "/site", json={"domain": ""})
    await calls_b.ok("patch", "/site", json={"domain": "blog.example.com"})
    status, body = await site_of("blog.example.com")
    assert body["data"]["id"] == site_b
    # A deleted site's domain resolves to nothing and is free again.
    await client.delete(f"/api/v1/sites/{site_b}", headers=admin_headers)
    status, body = await site_of("blog.example.com")
    assert status == 400
    await calls.ok("patch", "/site", json={"domain": "blog.example.com"})


async def test_site_url_and_domain_are_allowed_origins(calls, calls_b):
    async def allowed(origin, on=calls):
        resp = await on.call("get", "/site", headers={"Origin": origin})
        assert resp.status_code == 200
        return resp.headers.get("access-control-allow-origin")

    assert await allowed("https://www.example.org") is None
    # A domain no other test of the module takes (a domain names one site of the instance).
    await calls.ok("patch", "/site", json={"siteUrl": "https://www.example.org/home", "domain": "news.example.com"})
    assert await allowed("https://www.example.org") == "https://www.example.org"
    assert await allowed("https://news.example.com") == "https://news.example.com"
    assert await allowed("https://evil.example.org") is None
    assert await allowed("https://www.example.org", on=calls_b) is None  # A's origins are not B's
    await calls.ok("patch", "/site", json={"siteUrl": ""})
    assert await allowed("https://www.example.org") is None


async def test_who_may_read_and_change(calls, site, site_b, make_member, svc_app):
    member = await make_member(site, "subscriber")
    assert (await calls.ok("get", "/site", headers=member.headers))["id"] == site
    await calls.err("patch", "/site", 403, "PERMISSION_DENIED", headers=member.headers, json={"name": "x"})
    # Site B's admin cannot change (or read) site A, whichever header it sends.
    admin_b = await make_member(site_b, "admin")
    # (its token belongs to site B: 401 in site A, like any token of another site)
    b_in_a = {**admin_b.headers, "X-Svc-Site": site}
    await calls.err("patch", "/site", 401, "UNAUTHENTICATED", headers=b_in_a, json={"name": "x"})
    await calls.err("get", "/site", 401, "UNAUTHENTICATED", headers=b_in_a)
    assert (await calls.ok("patch", "/site", headers=admin_b.headers, json={"name": "B!"}))["id"] == site_b
    assert (await calls.ok("get", "/site"))["name"] != "B!"
    await calls.err("get", "/site", 401, "UNAUTHENTICATED", headers={"Authorization": ""})

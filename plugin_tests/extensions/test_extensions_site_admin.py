"""-- govern43: the instance admin installs and offers an extension to sites, with the most it may
be granted; a site admin enables, disables and grants it in their own site within that, never
beyond, and never in another site. A member is refused."""

from __future__ import annotations

from extension_bundles import ENV, ROUTE_CODE, enable, install, write_extension

from kernel.testing import Calls, new_member


async def _setup(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_a, site_b = await app.create_site(admin, prefix="a"), await app.create_site(admin, prefix="b")
    folder = write_extension(tmp_path, "offered", ROUTE_CODE.replace("NAME", "offered"), ["routes", "network", "ui"])
    ext = await install(app.client, admin, folder)
    instance_a = Calls(app.client, {**admin, "X-Svc-Site": site_a})
    instance_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    site_admin_a = Calls(app.client, (await new_member(app, site_a, role="admin")).headers)
    return app, ext, instance_a, instance_b, site_admin_a, site_a, site_b


async def test_not_available_until_the_instance_admin_offers_it(make_app, tmp_path):
    app, ext, instance_a, _, site_admin_a, *_ = await _setup(make_app, tmp_path)
    url = f"/extensions/{ext['id']}"
    # The safe default: a site admin sees nothing and can turn on nothing.
    assert await site_admin_a.ok("get", "/extensions") == []
    await site_admin_a.err("get", url, 404, "NOT_FOUND")
    await site_admin_a.err("post", f"{url}/enable", 404, "NOT_FOUND")
    await site_admin_a.err("post", f"{url}/capabilities", 404, "NOT_FOUND", json={"capabilities": ["routes"]})
    state = await instance_a.ok("get", url)
    assert (state["site"]["available"], state["site"]["maxCapabilities"]) == (False, [])
    # Offered with at most routes and ui: the site admin sees it, with the maximum.
    offered = await instance_a.ok("put", f"{url}/availability",
                                  json={"available": True, "maxCapabilities": ["ui", "routes"]})
    assert offered["site"] == {"enabled": False, "grantedCapabilities": [], "failures": 0, "disabledReason": None,
                               "available": True, "maxCapabilities": ["routes", "ui"]}
    [listed] = await site_admin_a.ok("get", "/extensions")
    assert listed["id"] == ext["id"] and listed["requestedCapabilities"] == ["routes", "network", "ui"]
    # Within the maximum: granted and enabled by the site admin, and it runs.
    state = await enable(site_admin_a, ext["id"], ["routes"])
    assert state["site"]["enabled"] is True and state["site"]["grantedCapabilities"] == ["routes"]
    assert await site_admin_a.ok("get", "/ext/offered/ping") == {"pong": True}
    # Beyond it: refused, naming the capability; the grants stay as they were.
    await site_admin_a.err("post", f"{url}/capabilities", 403, "PERMISSION_DENIED", ["capabilities", "1"],
                           json={"capabilities": ["routes", "network"]})
    assert (await site_admin_a.ok("get", url))["site"]["grantedCapabilities"] == ["routes"]
    # What the manifest does not ask for is still 400, for everyone.
    await site_admin_a.err("post", f"{url}/capabilities", 400, "CAPABILITY_NOT_REQUESTED",
                           json={"capabilities": ["files"]})
    # The site admin turns it off again.
    assert (await site_admin_a.ok("post", f"{url}/disable"))["site"]["enabled"] is False
    await site_admin_a.err("get", "/ext/offered/ping", 404, "NOT_FOUND")
    # The audit log names who did what in the site.
    actions = [a["action"] for a in await instance_a.ok("get", "/audit", params={"limit": 20})
               if a["action"].startswith("extensions.")]
    assert {"extensions.availability", "extensions.enable", "extensions.grant", "extensions.disable"} <= set(actions)
    del app


async def test_lowering_the_maximum_or_withdrawing_takes_effect(make_app, tmp_path):
    _, ext, instance_a, _, site_admin_a, *_ = await _setup(make_app, tmp_path)
    url = f"/extensions/{ext['id']}"
    await instance_a.ok("put", f"{url}/availability", json={"available": True, "maxCapabilities": ["routes", "ui"]})
    await enable(site_admin_a, ext["id"], ["routes", "ui"])
    # A lower maximum drops the grants beyond it at once (maxCapabilities left out: kept).
    state = await instance_a.ok("put", f"{url}/availability", json={"available": True, "maxCapabilities": ["routes"]})
    assert state["site"]["grantedCapabilities"] == ["routes"] and state["site"]["enabled"] is True
    assert (await instance_a.ok("put", f"{url}/availability", json={"available": True}))["site"][
        "maxCapabilities"] == ["routes"]
    # Withdrawn: disabled in the site, and the site admin can no longer change it.
    state = await instance_a.ok("put", f"{url}/availability", json={"available": False})
    assert state["site"]["enabled"] is False and state["site"]["disabledReason"] == "no longer available in this site"
    await site_admin_a.err("get", "/ext/offered/ping", 404, "NOT_FOUND")
    await site_admin_a.err("post", f"{url}/enable", 404, "NOT_FOUND")
    # Enabled by the instance admin without offering it: the site admin sees it, but cannot change it.
    await enable(instance_a, ext["id"], ["routes"])
    assert (await site_admin_a.ok("get", url))["site"]["enabled"] is True
    await site_admin_a.err("post", f"{url}/disable", 403, "PERMISSION_DENIED")
    # Bodies: the maximum holds only what the manifest asks for.
    await instance_a.err("put", f"{url}/availability", 400, "CAPABILITY_NOT_REQUESTED", ["maxCapabilities", "0"],
                         json={"available": True, "maxCapabilities": ["files"]})
    await instance_a.err("put", f"{url}/availability", 400, "VALIDATION_FAILED", ["available"], json={})
    await instance_a.err("put", f"{url}/availability", 400, "VALIDATION_FAILED", ["all"],
                         json={"available": True, "all": True})
    await instance_a.err("put", "/extensions/nope/availability", 404, "NOT_FOUND", json={"available": True})


async def test_a_site_admin_cannot_reach_another_site_or_offer(make_app, tmp_path):
    app, ext, instance_a, instance_b, site_admin_a, site_a, site_b = await _setup(make_app, tmp_path)
    url = f"/extensions/{ext['id']}"
    await instance_b.ok("put", f"{url}/availability", json={"available": True, "maxCapabilities": ["routes"]})
    # Offered in B, not in A: the site admin of A sees nothing of it, in A or in B.
    assert await site_admin_a.ok("get", "/extensions") == []
    in_b = Calls(app.client, {**site_admin_a.headers, "X-Svc-Site": site_b})  # A's token, B's header
    for method, path in [("get", "/extensions"), ("get", url), ("post", f"{url}/enable"),
                         ("post", f"{url}/disable"), ("post", f"{url}/capabilities")]:
        await in_b.err(method, path, 401, "UNAUTHENTICATED",
                       json={"capabilities": ["routes"]} if method == "post" else None)
    assert (await instance_b.ok("get", url))["site"]["enabled"] is False
    # Offering, uploading, keys and uninstalling stay the instance admin's.
    await instance_a.ok("put", f"{url}/availability", json={"available": True, "maxCapabilities": ["routes"]})
    await site_admin_a.err("put", f"{url}/availability", 403, "PERMISSION_DENIED",
                           json={"available": True, "maxCapabilities": ["routes", "network"]})
    await site_admin_a.err("delete", url, 403, "PERMISSION_DENIED")
    await site_admin_a.err("get", "/extensions/publisher-keys", 403, "PERMISSION_DENIED")
    # A member (a subscriber, not an admin) of A: 403 everywhere.
    member = Calls(app.client, (await new_member(app, site_a)).headers)
    for method, path in [("get", "/extensions"), ("get", url), ("post", f"{url}/enable"),
                         ("post", f"{url}/capabilities"), ("put", f"{url}/availability")]:
        await member.err(method, path, 403, "PERMISSION_DENIED", json={} if method != "get" else None)

"""The signature policy: warn installs and flags; official extensions; a revoked key unloads at the
next load (a key change, an enable, a start); per-site enablement and grants."""

from __future__ import annotations

from extension_bundles import ENV, PRIVATE, PUBLIC, enable, install, route_extension, signed, upload

from kernel.app import database_url
from kernel.testing import Calls


async def _admin(app):
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    return admin, Calls(app.client, {**admin, "X-Svc-Site": site})


async def test_warn_policy_installs_unverified_bundles_flagged(make_app, tmp_path):
    app = await make_app(env={**ENV, "SVC_EXT_SIGNATURE_POLICY": "warn"})
    admin, calls = await _admin(app)
    # Unknown publisher: installed, flagged, and it still runs once enabled (the operator chose warn).
    ext = await install(app.client, admin, route_extension(tmp_path, "warned", publisher="stranger"), key="stranger")
    assert ext["signature"]["state"] == "unverified" and ext["isOfficial"] is False
    assert "no key is known for publisher 'stranger'" in ext["statusReason"]
    await enable(calls, ext["id"], ["routes"])
    assert await calls.ok("get", "/ext/warned/ping") == {"pong": True}
    # A forged publisher is flagged too (a key of "other" signs what claims to be "example").
    forged = await install(app.client, admin, route_extension(tmp_path, "forged"), key="other")
    assert forged["signature"]["state"] == "unverified"
    # Warn never covers the reserved namespace.
    resp = await upload(app.client, admin, *signed(route_extension(tmp_path, "svc-warned", publisher="stranger"),
                                                   "stranger"))
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (403, "RESERVED_NAMESPACE")


async def test_official_extensions_need_an_official_key(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin, calls = await _admin(app)
    folder = route_extension(tmp_path, "svc-tools", publisher="svc")
    resp = await upload(app.client, admin, *signed(folder, "svc"))
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (403, "RESERVED_NAMESPACE")
    # The stored key overrides the environment's status: official now.
    await calls.ok("post", "/extensions/publisher-keys", 201,
                   json={"publisher": "svc", "publicKey": PUBLIC["svc"], "status": "official"})
    keys = await calls.ok("get", "/extensions/publisher-keys")
    assert {(k["publisher"], k["status"], k["source"]) for k in keys} == {
        ("example", "trusted", "environment"), ("other", "trusted", "environment"), ("svc", "official", "stored")}
    ext = await install(app.client, admin, folder, key="svc")
    assert ext["isOfficial"] is True and ext["signature"]["state"] == "verified"
    # An official key signing a name outside the namespace makes no official extension.
    plain = await install(app.client, admin, route_extension(tmp_path, "plain-tools", publisher="svc"), key="svc")
    assert plain["isOfficial"] is False
    # Official fails closed even under warn: revoke the key and the next load blocks it.
    await enable(calls, ext["id"], ["routes"])
    assert await calls.ok("get", "/ext/svc-tools/ping") == {"pong": True}
    await calls.ok("post", "/extensions/publisher-keys", 200,
                   json={"publisher": "svc", "publicKey": PUBLIC["svc"], "status": "revoked"})
    await calls.err("get", "/ext/svc-tools/ping", 404, "NOT_FOUND")


async def test_a_revoked_key_unloads_its_extensions(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin, calls = await _admin(app)
    ext = await install(app.client, admin, route_extension(tmp_path, "revocable"))
    await enable(calls, ext["id"], ["routes"])
    assert await calls.ok("get", "/ext/revocable/ping") == {"pong": True}
    await calls.ok("post", "/extensions/publisher-keys", 201,
                   json={"publisher": "example", "publicKey": PUBLIC["example"], "status": "revoked"})
    await calls.err("get", "/ext/revocable/ping", 404, "NOT_FOUND")
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["status"] == "blocked" and "revoked key" in state["statusReason"]
    await calls.err("post", f"/extensions/{ext['id']}/enable", 409, "EXTENSION_BLOCKED")
    # New uploads signed by the revoked key are refused whatever the policy.
    resp = await upload(app.client, admin, *signed(route_extension(tmp_path, "late")))
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (400, "SIGNATURE_INVALID")
    assert "example" not in str(app.kernel.extension_routes.owners())


async def test_every_start_verifies_again(make_app, tmp_path):
    first = await make_app(env=ENV)
    admin, calls = await _admin(first)
    ext = await install(first.client, admin, route_extension(tmp_path, "restarted"))
    await enable(calls, ext["id"], ["routes"])
    site = calls.headers["X-Svc-Site"]
    shared = {"SVC_DATABASE_URL": database_url(first.kernel.settings)}
    # A second start with the same keys loads it from the database.
    second = await make_app(env={**ENV, **shared})
    resp = await second.client.get("/api/v1/ext/restarted/ping", headers={"X-Svc-Site": site})
    assert resp.json() == {"data": {"pong": True}}
    assert second.kernel.extension_routes.owners() == ["restarted"]
    # A start whose keys no longer include the publisher refuses to load it, and blocks it.
    third = await make_app(env={"MARKETPLACE_PUBLIC_KEYS": f"other:{PUBLIC['other']}", **shared})
    resp = await third.client.get("/api/v1/ext/restarted/ping", headers={"X-Svc-Site": site})
    assert resp.status_code == 404
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["status"] == "blocked"


async def test_enablement_and_grants_are_per_site(make_app, tmp_path, upload_extension):
    app = await make_app(env=ENV)
    admin, calls = await _admin(app)
    site_b = await app.create_site(admin, prefix="b")
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    resp = await upload_extension(app, admin, route_extension(tmp_path, "per-site"), PRIVATE["example"])
    assert resp.status_code == 201, resp.text
    ext = resp.json()["data"]
    # Enabled without the routes grant: the route does not answer.
    await calls.ok("post", f"/extensions/{ext['id']}/enable")
    await calls.err("get", "/ext/per-site/ping", 404, "NOT_FOUND")
    await calls.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": ["routes"]})
    assert await calls.ok("get", "/ext/per-site/ping") == {"pong": True}
    await calls_b.err("get", "/ext/per-site/ping", 404, "NOT_FOUND")
    # B enables it with no grant: still nothing in B; A unaffected.
    state_b = await calls_b.ok("post", f"/extensions/{ext['id']}/enable")
    assert state_b["site"]["grantedCapabilities"] == []
    await calls_b.err("get", "/ext/per-site/ping", 404, "NOT_FOUND")
    # Disabled in A: gone in A, the module stays loaded for B.
    await calls.ok("post", f"/extensions/{ext['id']}/disable")
    await calls.err("get", "/ext/per-site/ping", 404, "NOT_FOUND")
    assert app.kernel.extension_routes.owners() == ["per-site"]
    await calls_b.ok("post", f"/extensions/{ext['id']}/disable")
    assert app.kernel.extension_routes.owners() == []

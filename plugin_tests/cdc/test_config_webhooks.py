"""The webhooks section of the config manifest: subscriptions travel by name, kind, url and
filters, never with their secret."""

from __future__ import annotations

IMPORT = "/config/import"
SUBS = "/cdc/subscriptions"
SECRET = "whsec-0123456789abcdef"


async def test_export_and_import_into_another_site(calls, calls_b, http_receiver):
    url = http_receiver.url("/hook")
    await calls.ok("post", SUBS, status=201, json={"name": "hook", "kind": "webhook", "url": url, "secret": SECRET,
                                                   "collections": ["posts"], "operations": ["delete", "create"]})
    await calls.ok("post", SUBS, status=201, json={"name": "puller", "kind": "pull"})
    manifest = await calls.ok("get", "/config/export", params={"scope": "webhooks"})
    assert manifest["managedScopes"] == ["webhooks"]
    assert manifest["webhooks"] == [
        {"name": "hook", "kind": "webhook", "url": url, "collections": ["posts"], "operations": ["create", "delete"]},
        {"name": "puller", "kind": "pull", "collections": [], "operations": []}]
    assert SECRET not in repr(manifest) and "hasSecret" not in repr(manifest)
    # The same manifest back into its own site changes nothing.
    same = await calls.ok("post", IMPORT, params={"dryRun": "true", "mode": "merge"}, json=manifest)
    assert same["valid"] and same["diff"]["webhooks"]["unchanged"] == 2

    dry = await calls_b.ok("post", IMPORT, params={"dryRun": "true", "mode": "merge"}, json=manifest)
    assert dry["valid"] and dry["diff"]["webhooks"]["create"] == 2
    assert await calls_b.ok("get", SUBS) == []  # a dry run writes nothing
    applied = await calls_b.ok("post", IMPORT, params={"mode": "merge"}, json=manifest)
    assert applied["applied"]["created"] == 2
    made = {s["name"]: s for s in await calls_b.ok("get", SUBS)}
    # Without a secret, a webhook arrives paused, signing with a secret nobody knows yet.
    assert made["hook"]["status"] == "paused" and "secret" in made["hook"]["statusReason"]
    assert made["hook"]["hasSecret"] and made["hook"]["collections"] == ["posts"]
    assert made["puller"]["status"] == "active"
    hook = made["hook"]["id"]
    await calls_b.ok("patch", f"{SUBS}/{hook}", json={"secret": "a-secret-i-chose-123"})
    assert (await calls_b.ok("patch", f"{SUBS}/{hook}", json={"status": "active"}))["status"] == "active"

    # An update keeps the secret, status and position; replace-managed deletes what is absent.
    manifest["webhooks"] = [{**manifest["webhooks"][0], "operations": ["update"]}]
    manifest["managedScopes"] = ["webhooks"]
    applied = await calls_b.ok("post", IMPORT, params={"mode": "replace-managed"}, json=manifest)
    assert applied["applied"] == {"created": 0, "updated": 1, "deleted": 1}
    [only] = await calls_b.ok("get", SUBS)
    assert only["id"] == hook and only["operations"] == ["update"] and only["status"] == "active"
    assert len(await calls.ok("get", SUBS)) == 2  # site A untouched


async def test_import_with_a_secret_is_active_and_bad_entries_are_refused(calls, http_receiver):
    url = http_receiver.url("/hook")
    manifest = {"version": "svc.config@v1", "webhooks": [
        {"name": "hook", "kind": "webhook", "url": url, "secret": SECRET}]}
    await calls.ok("post", IMPORT, params={"mode": "merge"}, json=manifest)
    [made] = await calls.ok("get", SUBS)
    assert made["status"] == "active" and made["hasSecret"]
    # A bad entry is 400 at its path; the kind of an existing subscription cannot change: 409.
    for entry, status, path in (({"name": "x", "kind": "webhook"}, 400, ["webhooks", "0", "url"]),
                                ({"name": "x", "kind": "webhook", "url": "http://0.0.0.0/"}, 400, ["webhooks", "0", "url"]),
                                ({"name": "x", "kind": "pull", "url": url}, 400, ["webhooks", "0", "url"]),
                                ({"name": "x", "kind": "pull", "id": "1"}, 400, ["webhooks", "0", "id"]),
                                ({"name": "hook", "kind": "pull"}, 409, None)):
        body = {"version": "svc.config@v1", "webhooks": [entry]}
        resp = await calls.call("post", IMPORT, params={"mode": "merge"}, json=body)
        assert resp.status_code == status, (entry, resp.text)
        if path:
            assert resp.json()["errors"][0]["path"] == path
    assert [s["name"] for s in await calls.ok("get", SUBS)] == ["hook"]

"""The ``settings`` section of the config manifest: exported without secrets, imported with the
three modes, each entry checked by the key's owner."""

from __future__ import annotations

IMPORT = "/config/import"


async def test_export_and_import_with_the_three_modes(calls, calls_b, demo_keys):
    await calls.ok("patch", "/settings", json={"demo.main": ["home"], "plain": {"a": 1}, "demo_token": "tok-1"})
    manifest = await calls.ok("get", "/config/export", params={"scope": "settings"})
    assert manifest["managedScopes"] == ["settings"]
    assert manifest["settings"] == [{"key": "demo.main", "value": ["home"]}, {"key": "plain", "value": {"a": 1}}]
    assert "tok-1" not in repr(manifest) and "demo_token" not in repr(manifest)
    same = await calls.ok("post", IMPORT, params={"dryRun": "true", "mode": "merge"}, json=manifest)
    assert same["valid"] and same["diff"]["settings"] == {"create": 0, "update": 0, "delete": 0, "unchanged": 2}

    await calls_b.ok("patch", "/settings", json={"plain": {"a": 2}, "extra": True})
    dry = await calls_b.ok("post", IMPORT, params={"dryRun": "true", "mode": "merge"}, json=manifest)
    assert dry["diff"]["settings"] == {"create": 1, "update": 1, "delete": 0, "unchanged": 0}
    assert await calls_b.ok("get", "/settings") == {"plain": {"a": 2}, "extra": True}  # a dry run writes nothing
    applied = await calls_b.ok("post", IMPORT, params={"mode": "merge"}, json=manifest)
    assert applied["applied"] == {"created": 1, "updated": 1, "deleted": 0}
    assert await calls_b.ok("get", "/settings") == {"plain": {"a": 1}, "extra": True, "demo.main": ["home"]}
    # replace-managed deletes what the manifest leaves out of a managed scope; so does replace-all.
    await calls_b.ok("put", "/settings/demo_token", json={"value": "b-secret"})
    applied = await calls_b.ok("post", IMPORT, params={"mode": "replace-managed"}, json=manifest)
    assert applied["applied"] == {"created": 0, "updated": 0, "deleted": 1}
    assert await calls_b.ok("get", "/settings") == {"plain": {"a": 1}, "demo.main": ["home"],
                                                    "demo_token": {"hasSecret": True}}  # secrets stay
    only = {"version": "svc.config@v1", "settings": [{"key": "plain", "value": 5}]}
    applied = await calls_b.ok("post", IMPORT, params={"mode": "replace-all"}, json=only)
    assert applied["applied"]["deleted"] >= 1
    assert await calls_b.ok("get", "/settings") == {"plain": 5, "demo_token": {"hasSecret": True}}
    assert (await calls.ok("get", "/settings"))["plain"] == {"a": 1}  # A untouched


async def test_bad_entries_are_refused(calls, demo_keys):
    def manifest(*entries):
        return {"version": "svc.config@v1", "settings": list(entries)}

    for entry, path in (({"key": "demo.main", "value": "x"}, ["settings", "0", "value"]),
                        ({"key": "demo_limit", "value": -1}, ["settings", "0", "value"]),
                        ({"key": "bad key", "value": 1}, ["settings", "0", "key"]),
                        ({"key": "k"}, ["settings", "0", "value"]),
                        ({"key": "k", "value": 1, "other": 2}, ["settings", "0", "other"]),
                        ({"key": "k", "value": "x" * 70_000}, ["settings", "0", "value"])):
        await calls.err("post", IMPORT, 400, "VALIDATION_FAILED", path_is=path, params={"mode": "merge"},
                        json=manifest(entry))
    dup = await calls.ok("post", IMPORT, params={"mode": "merge", "dryRun": "true"},
                         json=manifest({"key": "k", "value": 1}, {"key": "k", "value": 2}))
    assert not dup["valid"] and dup["errors"][0]["code"] == "DUPLICATE_KEY"
    assert await calls.ok("get", "/settings") == {}

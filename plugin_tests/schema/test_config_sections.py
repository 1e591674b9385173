"""Manifest sections other plugins provide through the ``config_sections`` hook (settings here,
with an in-memory provider standing in for the settings plugin)."""

from __future__ import annotations

from typing import Any

import pytest

from kernel import ApiError, hookimpl

IMPORT = "/config/import"
V = "svc.config@v1"


class MemorySettings:
    """A settings section kept in memory; writes land only when the import's transaction commits."""

    name = "settings"
    key = "key"

    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}
        self.writes: list[tuple[str, str]] = []

    async def export(self, db: Any) -> list[dict[str, Any]]:
        return [{"key": k, "value": v} for k, v in sorted(self.store.get(db.site_id, {}).items())]

    def check(self, entry: dict[str, Any]) -> dict[str, Any]:
        for key in entry:
            if key not in ("key", "value"):
                raise ApiError.validation(f"Unknown key '{key}'", path=[key])
        return {"key": entry["key"], "value": entry.get("value")}

    async def put(self, uow: Any, entry: dict[str, Any]) -> None:
        self.writes.append(("put", entry["key"]))
        uow.after_commit(lambda: self.store.setdefault(uow.site_id, {}).__setitem__(entry["key"], entry["value"]))

    async def delete(self, uow: Any, key: str) -> None:
        self.writes.append(("delete", key))
        uow.after_commit(lambda: self.store.get(uow.site_id, {}).pop(key, None))


class SettingsPlugin:
    def __init__(self, section: MemorySettings) -> None:
        self.section = section

    @hookimpl
    def config_sections(self, kernel: Any) -> list[Any]:
        return [self.section]


@pytest.fixture
def settings(svc_app, temporary_plugin):
    section = MemorySettings()
    with temporary_plugin(svc_app.kernel, SettingsPlugin(section)):
        yield section


async def test_export_includes_a_provided_section(calls, site, settings):
    settings.store[site] = {"menu.main": [{"label": "Home"}], "theme": "dark"}
    settings.store["elsewhere"] = {"secret-ish": 1}
    data = await calls.ok("get", "/config/export")
    assert data["settings"] == [{"key": "menu.main", "value": [{"label": "Home"}]}, {"key": "theme", "value": "dark"}]
    assert data["managedScopes"][:2] == ["schema", "settings"] and data["webhooks"] == []
    only = await calls.ok("get", "/config/export?scope=settings")
    assert only["managedScopes"] == ["settings"] and only["collections"] == [] and len(only["settings"]) == 2


async def test_import_creates_updates_and_deletes_entries(calls, site, settings):
    settings.store[site] = {"theme": "dark", "old": 1, "same": True}
    manifest = {"version": V, "settings": [{"key": "theme", "value": "light"}, {"key": "new", "value": {"a": 1}},
                                           {"key": "same", "value": True}]}
    merge = await calls.ok("post", IMPORT + "?dryRun=true", json=manifest)
    assert merge["diff"]["settings"] == {"create": 1, "update": 1, "delete": 0, "unchanged": 1}
    assert merge["diff"]["risk"] == "medium" and settings.writes == []
    managed = {**manifest, "managedScopes": ["settings"]}
    dry = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-managed", json=managed)
    assert dry["diff"]["settings"]["delete"] == 1 and dry["diff"]["risk"] == "high"
    not_managed = await calls.ok("post", IMPORT + "?dryRun=true&mode=replace-managed", json=manifest)
    assert not_managed["diff"]["settings"]["delete"] == 0
    out = await calls.ok("post", IMPORT + "?mode=replace-managed", json=managed)
    assert out["applied"] == {"created": 1, "updated": 1, "deleted": 1}
    assert settings.store[site] == {"theme": "light", "new": {"a": 1}, "same": True}
    again = await calls.ok("post", IMPORT + "?mode=replace-managed", json=managed)
    assert again["applied"] == {"created": 0, "updated": 0, "deleted": 0}


async def test_section_errors(calls, settings):
    twice = {"version": V, "settings": [{"key": "a", "value": 1}, {"key": "b"}, {"key": "a", "value": 2}]}
    out = await calls.ok("post", IMPORT + "?dryRun=true", json=twice)
    assert [(e["code"], e["path"]) for e in out["errors"]] == [("DUPLICATE_KEY", ["settings", 2, "key"])]
    await calls.err("post", IMPORT, 422, "VALIDATION_FAILED", ["settings", "2", "key"], json=twice)
    await calls.err("post", IMPORT, 400, "VALIDATION_FAILED", ["settings", "0", "bogus"],
                    json={"version": V, "settings": [{"key": "a", "bogus": 1}]})
    for key in (None, 5, "", "k" * 201):
        await calls.err("post", IMPORT, 400, "VALIDATION_FAILED", ["settings", "0", "key"],
                        json={"version": V, "settings": [{"key": key}]})
    assert settings.writes == []


async def test_sections_roll_back_with_the_schema(svc_app, calls, site, settings):
    def refuse(event, payload, ctx):
        raise ApiError(409, "CONFLICT", "no", path=["name"])

    off = svc_app.kernel.bus.on_filter("collections.create", refuse)
    try:
        await calls.err("post", IMPORT, 409, "CONFLICT", json={
            "version": V, "settings": [{"key": "a", "value": 1}], "collections": [{"name": "posts"}]})
    finally:
        off()
    assert settings.store.get(site, {}) == {}


async def test_sections_stay_in_their_site(calls, calls_b, site, site_b, settings):
    settings.store[site] = {"theme": "dark"}
    assert (await calls_b.ok("get", "/config/export"))["settings"] == []
    await calls_b.ok("post", IMPORT + "?mode=replace-all", json={"version": V, "settings": [{"key": "x", "value": 1}]})
    assert settings.store[site] == {"theme": "dark"} and settings.store[site_b] == {"x": 1}


def test_the_hook_is_published(svc_app):
    assert hasattr(svc_app.kernel.pm.hook, "config_sections")
    provided = [s.name for group in svc_app.kernel.pm.hook.config_sections(kernel=svc_app.kernel) for s in group]
    assert set(provided) <= {"settings", "webhooks"}  # the settings and cdc plugins', when installed

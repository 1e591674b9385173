"""items answers schema.data_check: a config import may drop empty fields, not ones holding data."""

from __future__ import annotations

IMPORT = "/api/v1/config/import"


async def test_dropping_a_field_or_collection_with_data_is_blocked(client, site_headers):
    h = site_headers
    assert (await client.post("/api/v1/collections", json={"name": "notes"}, headers=h)).status_code == 201
    for field in ("title", "extra", "empty"):
        resp = await client.post("/api/v1/fields/notes", json={"field": field, "type": "string"}, headers=h)
        assert resp.status_code == 201
    resp = await client.post("/api/v1/items/notes", json={"title": "t", "extra": "x"}, headers=h)
    assert resp.status_code == 201
    exported = (await client.get("/api/v1/config/export", headers=h)).json()["data"]

    def without(*names):
        return {**exported, "fields": [f for f in exported["fields"] if f["field"] not in names]}

    dry = (await client.post(IMPORT + "?dryRun=true&mode=replace-all", json=without("extra", "empty"),
                             headers=h)).json()["data"]
    assert [c.get("field") for c in dry["diff"]["destructive"]] == ["extra"]  # "empty" holds nothing
    blocked = await client.post(IMPORT + "?mode=replace-all", json=without("extra"), headers=h)
    assert blocked.status_code == 409 and blocked.json()["errors"][0]["code"] == "DESTRUCTIVE_BLOCKED"
    ok = await client.post(IMPORT + "?mode=replace-all", json=without("empty"), headers=h)
    assert ok.status_code == 200, ok.text
    gone = {**exported, "collections": [], "fields": [], "relations": []}
    blocked = await client.post(IMPORT + "?mode=replace-all", json=gone, headers=h)
    assert blocked.status_code == 409
    allowed = await client.post(IMPORT + "?mode=replace-all&allowDestructive=true", json=gone, headers=h)
    assert allowed.status_code == 200, allowed.text

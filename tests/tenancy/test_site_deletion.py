"""Deleting a site leaves no row of it in any table, so a new site given the same id starts
empty (audit trail, item counts, and every plugin's tables)."""

from __future__ import annotations

from sqlalchemy import inspect, text

from kernel.testing import Calls


async def _rows_of(kernel, site_id: str) -> dict[str, int]:
    async with kernel.db.connect() as conn:
        def tables(sync_conn):
            found = inspect(sync_conn)
            return [t for t in found.get_table_names()
                    if any(c["name"] == "site_id" for c in found.get_columns(t))]

        names = await conn.run_sync(tables)
        counts = {}
        for name in names:
            n = (await conn.execute(text(f'SELECT count(*) FROM "{name}" WHERE site_id = :s'), {"s": site_id})).scalar()
            if n:
                counts[name] = n
        await conn.rollback()
    return counts


async def test_a_deleted_site_leaves_no_row_and_its_id_starts_empty(svc_app, admin_headers):
    client = svc_app.client
    assert (await client.post("/api/v1/sites", json={"id": "reused"}, headers=admin_headers)).status_code == 201
    calls = Calls(client, {**admin_headers, "X-Svc-Site": "reused"})
    await calls.collection("posts", {"title": "string"})
    made = await calls.create("posts", [{"title": "a"}, {"title": "b"}])
    await calls.ok("delete", f"/items/posts/{made[0]['id']}", 204)
    await calls.ok("post", "/roles", 201, json={"name": "Editors"})
    await calls.ok("post", "/api-keys", 201, json={"name": "ci"})
    assert await calls.ok("get", "/audit")  # audited actions of the site exist
    assert (await client.delete("/api/v1/sites/reused", headers=admin_headers)).status_code == 204
    assert await _rows_of(svc_app.kernel, "reused") == {}

    assert (await client.post("/api/v1/sites", json={"id": "reused"}, headers=admin_headers)).status_code == 201
    assert await calls.ok("get", "/audit") == []
    await calls.collection("posts", {"title": "string"})
    listed = await calls.list("posts")
    assert listed["data"] == [] and listed["meta"]["total"] == 0  # the kept count starts at zero

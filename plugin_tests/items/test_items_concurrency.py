"""Many clients writing one collection at once: every write answers 2xx, none is lost."""

from __future__ import annotations

import asyncio


async def test_concurrent_creates_and_patches_all_succeed(svc_app, site_headers):
    client = svc_app.client
    r = await client.post("/api/v1/collections", json={"name": "hits"}, headers=site_headers)
    assert r.status_code == 201, r.text
    r = await client.post("/api/v1/fields/hits", json={"field": "n", "type": "integer"}, headers=site_headers)
    assert r.status_code == 201, r.text

    creates = await asyncio.gather(*(client.post("/api/v1/items/hits", json={"n": 0}, headers=site_headers)
                                     for _ in range(30)))
    assert [c.status_code for c in creates] == [201] * 30
    ids = [c.json()["data"]["id"] for c in creates]

    patches = await asyncio.gather(*(client.patch(f"/api/v1/items/hits/{i}", json={"n": k}, headers=site_headers)
                                     for k, i in enumerate(ids)))
    assert [p.status_code for p in patches] == [200] * 30
    listed = (await client.get("/api/v1/items/hits", params={"limit": "100", "fields": "id,n"},
                               headers=site_headers)).json()["data"]
    assert {row["id"]: row["n"] for row in listed} == {i: k for k, i in enumerate(ids)}

"""Expression indexes of indexed/unique fields cover their own collection only."""

from __future__ import annotations

from typing import Any

import pytest_asyncio

from kernel.testing import TestApp


@pytest_asyncio.fixture
async def svc_app(make_app: Any) -> TestApp:
    """Field indexes with the field (``SVC_ITEMS_INDEX_MIN_ITEMS=0``): the ``rank`` index must
    exist for the cast check below to mean anything."""
    return await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "0"})


async def make(client, headers, name, fields):
    assert (await client.post("/api/v1/collections", json={"name": name}, headers=headers)).status_code == 201
    for field, ftype, options in fields:
        resp = await client.post(f"/api/v1/fields/{name}", json={"field": field, "type": ftype, "options": options},
                                 headers=headers)
        assert resp.status_code == 201, resp.text


async def test_unique_and_numeric_indexes_do_not_reach_other_collections(client, site_headers):
    await make(client, site_headers, "products", [("code", "integer", {"unique": True}),
                                                 ("rank", "integer", {"indexed": True})])
    await make(client, site_headers, "notes", [("code", "string", {}), ("rank", "string", {})])
    ok = await client.post("/api/v1/items/products", json={"code": 7, "rank": 1}, headers=site_headers)
    assert ok.status_code == 201, ok.text
    # Same keys, same or non-numeric values, in another collection: no clash, no cast error.
    for body in ({"code": "7", "rank": "high"}, {"code": "abc", "rank": "x"}):
        resp = await client.post("/api/v1/items/notes", json=body, headers=site_headers)
        assert resp.status_code == 201, resp.text
    dup = await client.post("/api/v1/items/products", json={"code": 7, "rank": 2}, headers=site_headers)
    assert dup.status_code == 409

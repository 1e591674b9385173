"""``SVC_ITEMS_INDEX_MIN_ITEMS``: a small collection's non-unique field indexes wait until it
holds that many live items (each index weighs on the one items table of every site); a unique
field's index is made at once."""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls
from plugins.items.upkeep import indexes
from plugins.items.upkeep.indexes import existing_indexes, index_name
from plugins.schema.api import get_schema


async def _present(app: Any) -> set[str]:
    async with app.kernel.db.connect() as conn:
        return await existing_indexes(conn)


async def test_field_indexes_wait_for_the_collection_to_grow(make_app: Any):
    app = await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "3"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site, other = await app.create_site(admin), await app.create_site(admin)
    calls, calls_other = Calls(app.client, {**admin, "X-Svc-Site": site}), Calls(app.client, {**admin, "X-Svc-Site": other})
    for c in (calls, calls_other):
        await c.collection("shop", {"views": "integer", "sku": {"type": "string", "options": {"unique": True}},
                                    "body": "text"})
    coll = (await get_schema(app.kernel, site)).collection("shop")
    small = (await get_schema(app.kernel, other)).collection("shop")
    views, sku = index_name(coll.id, "views"), index_name(coll.id, "sku")
    found = await _present(app)
    assert sku in found and views not in found and index_name(small.id, "sku") in found
    await calls.create("shop", [{"views": n, "sku": f"s{n}"} for n in range(3)])
    await calls_other.create("shop", [{"views": 1, "sku": "x"}])
    assert await indexes.ensure_grown(app.kernel) == 1  # views of the grown collection only
    found = await _present(app)
    assert views in found and index_name(small.id, "views") not in found
    assert index_name(coll.id, "body") not in found  # long text is not indexed at any size
    assert await indexes.ensure_grown(app.kernel) == 0
    await calls.field("shop", "rank", "integer")  # a new field of a grown collection: at once
    assert index_name(coll.id, "rank") in await _present(app)

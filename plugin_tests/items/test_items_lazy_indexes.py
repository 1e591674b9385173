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
    await indexes.settle(app.kernel)  # the creates' background count made it
    found = await _present(app)
    assert views in found and index_name(small.id, "views") not in found
    assert index_name(coll.id, "body") not in found  # long text is not indexed at any size
    # The startup pass finds what items loaded around the API (or a failed build) left out.
    await indexes.drop_index(app.kernel, coll.id, "views")
    assert await indexes.ensure_grown(app.kernel) == 1  # views of the grown collection only
    assert views in await _present(app) and index_name(small.id, "views") not in await _present(app)
    assert await indexes.ensure_grown(app.kernel) == 0
    await calls.field("shop", "rank", "integer")  # a new field of a grown collection: at once
    assert index_name(coll.id, "rank") in await _present(app)


async def test_a_bulk_seed_past_the_threshold_gets_its_indexes_without_a_restart(make_app: Any):
    """Items created in arrays of 200 (how ``shared/bench/workload.py`` seeds): the collection that
    crosses the threshold is indexed once the writes' background count has run; another site's
    collection of the same name, below it, is counted on its own and stays without."""
    app = await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "300"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site, other = await app.create_site(admin), await app.create_site(admin)
    calls, calls_other = Calls(app.client, {**admin, "X-Svc-Site": site}), Calls(app.client, {**admin, "X-Svc-Site": other})
    for c in (calls, calls_other):
        await c.collection("shop", {"views": "integer", "title": "string"})
    grown = (await get_schema(app.kernel, site)).collection("shop")
    small = (await get_schema(app.kernel, other)).collection("shop")
    wanted = {index_name(grown.id, "views"), index_name(grown.id, "title")}

    def batch(start: int) -> list[dict[str, Any]]:
        return [{"views": n, "title": f"t{n}"} for n in range(start, start + 200)]

    await calls.create("shop", batch(0))
    await calls_other.create("shop", batch(0))
    await indexes.settle(app.kernel)
    assert not wanted & await _present(app)  # 200 items: below the threshold
    await calls.create("shop", batch(200))  # 400: past it
    await calls_other.create("shop", batch(200)[:50])  # 250: still below
    await indexes.settle(app.kernel)
    found = await _present(app)
    assert wanted <= found
    assert not {index_name(small.id, "views"), index_name(small.id, "title")} & found
    await calls_other.create("shop", batch(250)[:60])  # 310: the other site's collection grows too
    await indexes.settle(app.kernel)
    assert {index_name(small.id, "views"), index_name(small.id, "title")} <= await _present(app)

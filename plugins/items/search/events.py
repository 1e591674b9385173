"""Keeping ``svc_search`` in step with items and fields: bus filters, inside the write's transaction.

A filter runs in the unit of work of the write (``ctx.conn``), so the index row commits or
rolls back together with the item; an action after commit could be lost, leaving search and
content disagreeing. Handlers never replace the payload, and they run last (``LAST``) so they
see what earlier filters (flows, extensions) made of the item.

- ``<collection>.items.create`` / ``.update`` (the collection-scoped events run after the
  generic ``items.<op>`` ones): the item's rows are replaced from ``after``; an update that
  leaves every searchable value as it was writes nothing.
- ``<collection>.items.delete`` (soft and hard): the item's rows go.
- ``fields.create`` / ``fields.update`` / ``fields.delete``: the field's rows are rebuilt from
  the stored items (after the items plugin's own filters wrote defaults or converted values),
  or dropped when the field is gone or no longer ``string``/``text``.
- ``collections.delete``: nothing. The collection's items stay in ``svc_items`` (a restore
  brings them back), so their rows stay too; search only ever looks at live collections, and
  a new collection of the same name has a new id, so it never sees them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kernel.tenancy.scope import SiteDB
from plugins.items.search import index as search_index
from plugins.items.search.index import SEARCHABLE_TYPES, searchable_fields
from plugins.schema.api import get_schema, transaction_schema

LAST = 10_000


async def _collection(ctx: Any, name: Any, *, fresh: bool = False) -> Any:
    """The collection ``name`` as the transaction sees it: the cached snapshot for item writes
    (the items code validated against it), else (schema changes, or a collection created in
    this very transaction) the snapshot read on ``ctx.conn``."""
    if not isinstance(name, str):
        return None
    if not fresh:
        coll = (await get_schema(ctx.kernel, ctx.site_id)).collection(name)
        if coll is not None:
            return coll
    return (await transaction_schema(ctx)).collection(name)


def _texts(coll: Any, item: Any) -> dict[str, Any]:
    item = item if isinstance(item, dict) else {}
    return {name: item.get(name) for name in searchable_fields(coll)}


async def on_item_write(event: str, payload: Any, ctx: Any) -> None:
    """Create and update: the item's index rows from the final ``after``."""
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict) or not isinstance(payload.get("after"), dict):
        return
    coll = await _collection(ctx, payload.get("collection"))
    if coll is None or not searchable_fields(coll):
        return
    after = payload["after"]
    if event.endswith(".update") and _texts(coll, payload.get("before")) == _texts(coll, after):
        return  # status, sort or non-text fields changed: the index already holds this text
    await search_index.write_item(SiteDB(ctx.site_id, ctx.conn), coll, str(payload["id"]), after,
                                  new=event.endswith(".create"))


async def on_item_delete(event: str, payload: Any, ctx: Any) -> None:
    """Delete (soft or hard): the item leaves the index."""
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict):
        return
    coll = await _collection(ctx, payload.get("collection"))
    if coll is not None:
        await search_index.drop_item(SiteDB(ctx.site_id, ctx.conn), coll.id, str(payload["id"]))


async def on_field_change(event: str, payload: Any, ctx: Any) -> None:
    """A field created, changed or deleted: drop its rows, and index it again when it is (now)
    a searchable type. Only type changes matter to an existing field."""
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict):
        return
    before, after = payload.get("before") or {}, payload.get("after") or {}
    old, new = before.get("type"), after.get("type")
    if _sensitive(before) != _sensitive(after):  # a field made sensitive leaves the index (and back)
        old = new = old or new
    elif event == "fields.update" and old == new:
        return
    if old not in SEARCHABLE_TYPES and new not in SEARCHABLE_TYPES:
        return
    coll = await _collection(ctx, payload.get("collection"), fresh=True)
    if coll is None:
        return
    db, field = SiteDB(ctx.site_id, ctx.conn), str(payload.get("field"))
    await search_index.drop_field(db, coll.id, field)
    if new in SEARCHABLE_TYPES and not _sensitive(after):
        await search_index.index_field(db, coll, field)


def _sensitive(field: Any) -> bool:
    options = field.get("options") if isinstance(field, dict) else None
    return isinstance(options, dict) and options.get("sensitive") is True


def register(bus: Any) -> list[Callable[[], None]]:
    """Subscribe the index to the item and field events; returns the unregister handles."""
    return [
        bus.on_filter("*.items.create", on_item_write, LAST),
        bus.on_filter("*.items.update", on_item_write, LAST),
        bus.on_filter("*.items.delete", on_item_delete, LAST),
        *(bus.on_filter(f"fields.{op}", on_field_change, LAST) for op in ("create", "update", "delete")),
    ]

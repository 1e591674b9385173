"""The read hook of items: ``items.read``, a bus filter over the items a read is about to answer.

Every path that answers item content calls ``reveal`` last (list, item, singleton, the item a
write answers, revisions, versions, search hits), so a plugin that stores some fields in another
form (regulated content decrypts or masks ``sensitive`` fields) sees every one of them. The
decision to run it comes from the cached schema, never from rows: a site whose schema has no
``sensitive`` field (``SchemaSnapshot.has_sensitive``) or a bus with no handler costs one
attribute lookup per read.

Payload: ``{ siteId, collection, items, ids, source }``; ``items`` is the list of item records as
the caller will get them (nested related items inside them), changed in place by the handlers;
``ids[i]`` is the id of the item ``items[i]`` belongs to (a revision's content has none);
``source`` is ``list``, ``item``, ``write``, ``revision``, ``version``, ``search`` or ``export`` (the
privacy data export). With
``uow`` (a read inside a write's transaction) the handlers get its connection and unit of work.
"""

from __future__ import annotations

from typing import Any

from kernel.messaging.bus import EventContext

READ_EVENT = "items.read"


def wanted(kernel: Any, schema: Any) -> bool:
    """Whether a read of ``schema``'s site must run the hook (no row is looked at)."""
    return schema.has_sensitive and kernel.bus.has_handlers(READ_EVENT)


async def reveal(ctx: Any, schema: Any, collection: str, records: list[Any], source: str, *,
                 uow: Any = None, ids: list[Any] | None = None) -> None:
    """Run ``items.read`` over ``records`` (dicts; others are skipped) of ``collection``; ``ids``
    names each record's item where the record has no ``id`` of its own (revision content)."""
    if not records or not wanted(ctx.kernel, schema):
        return
    pairs = [(r, ids[i] if ids is not None else r.get("id")) for i, r in enumerate(records) if isinstance(r, dict)]
    shown = [r for r, _ in pairs]
    in_tx = uow is not None and getattr(uow, "conn", None) is not None
    event_ctx = EventContext(site_id=ctx.site_id, principal=ctx.principal, kernel=ctx.kernel,
                             conn=uow.conn if in_tx else None, uow=uow if in_tx else None,
                             request_id=getattr(ctx, "request_id", None))
    payload = {"siteId": ctx.site_id, "collection": collection, "items": shown, "ids": [i for _, i in pairs],
               "source": source}
    await ctx.kernel.bus.filter(READ_EVENT, payload, event_ctx)

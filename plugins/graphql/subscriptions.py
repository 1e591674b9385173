"""``<collection>_events`` subscriptions, fed by the live topics (the SSE transport: ``streams``).

The items plugin publishes every committed item write on the site's live topic
``items.<collection>`` (``items_api.live_topic``; ``{collection, action, itemId}``, never values). A
subscription needs read permission on the collection when it starts, then streams one
``next`` event per write of an item the subscriber may read then (``items_api.LiveReach``: row
conditions applied, as on the realtime channel): ``{ data: { <collection>_events: { action, itemId, item: null } } }``
(``item`` is null: a signal, like the realtime channel; docs/graphql.md). The stream sends
heartbeats (``SVC_SSE_HEARTBEAT_SECONDS``), notices a client that went away at the next send,
and counts towards the site's cap (``SVC_GQL_MAX_SUBSCRIPTIONS`` open streams per site and
process). Topics are lossy: a reader that falls behind skips what it missed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from kernel.base.errors import ApiError
from kernel.messaging.topics import Lagged
from plugins.items import api as items_api


async def subscribe_events(_root: Any, info: Any) -> AsyncIterator[dict[str, Any]]:
    """The source stream of ``X_events``, once the caller may read ``X``."""
    collection = info.context.graph.by_type[info.field_name[:-len("_events")]]
    ctx = info.context.ctx
    access = ctx.kernel.access
    if access is not None and not (await access.decide(ctx.principal, ctx.site_id, collection, "read")).allowed:
        raise ApiError.forbidden(f"Subscribing to '{collection}' needs read permission on it")
    return _events(ctx.kernel, ctx.site_id, collection, items_api.LiveReach(ctx.kernel, ctx.site_id, ctx.principal))


async def _events(kernel: Any, site_id: str, collection: str, reach: Any) -> AsyncIterator[dict[str, Any]]:
    async with kernel.topics.subscribe(site_id, items_api.live_topic(collection)) as sub:
        async for message in sub:
            if isinstance(message, Lagged):
                continue
            data = message.data if isinstance(message.data, dict) else {}
            # Only items the subscriber may read now (row conditions too): items_api.LiveReach.
            if not await reach.sees({"collection": collection, **data}):
                continue
            yield {"action": data.get("action"), "itemId": data.get("itemId"), "item": None}


def resolve_event(event: Any, _info: Any) -> Any:
    return event

"""``<collection>_events`` subscriptions, fed by the live topics (the SSE transport: ``streams``).

Every committed item write is published on the site's live topic ``items.<collection>``
(``publish_item_event``, a bus action; ``{collection, action, itemId}``, never values). A
subscription needs read permission on the collection when it starts, then streams one
``next`` event per write: ``{ data: { <collection>_events: { action, itemId, item: null } } }``
(``item`` is null: a signal, like the realtime channel; contract.md). The stream sends
heartbeats (``SVC_SSE_HEARTBEAT_SECONDS``), notices a client that went away at the next send,
and counts towards the site's cap (``SVC_GQL_MAX_SUBSCRIPTIONS`` open streams per site and
process). Topics are lossy: a reader that falls behind skips what it missed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from kernel.errors import ApiError
from kernel.topics import Lagged

OPS = ("create", "update", "delete")


def topic(collection: str) -> str:
    return f"items.{collection}"


async def publish_item_event(event: str, payload: Any, ctx: Any) -> None:
    """Bus action ``items.<op>``: the live signal of one committed write (once: not for the
    copies other processes receive through Redis, whose topics fan out on their own)."""
    op = event.rpartition(".")[2]
    if ctx.remote or op not in OPS or not isinstance(payload, dict):
        return
    site_id, collection, item_id = payload.get("siteId"), payload.get("collection"), payload.get("id")
    if not (isinstance(site_id, str) and isinstance(collection, str) and item_id is not None):
        return
    await ctx.kernel.topics.publish(site_id, topic(collection),
                                    {"collection": collection, "action": op, "itemId": str(item_id)})


async def subscribe_events(_root: Any, info: Any) -> AsyncIterator[dict[str, Any]]:
    """The source stream of ``X_events``, once the caller may read ``X``."""
    collection = info.context.graph.by_type[info.field_name[:-len("_events")]]
    ctx = info.context.ctx
    access = ctx.kernel.access
    if access is not None and not (await access.decide(ctx.principal, ctx.site_id, collection, "read")).allowed:
        raise ApiError.forbidden(f"Subscribing to '{collection}' needs read permission on it")
    return _events(ctx.kernel, ctx.site_id, collection)


async def _events(kernel: Any, site_id: str, collection: str) -> AsyncIterator[dict[str, Any]]:
    async with kernel.topics.subscribe(site_id, topic(collection)) as sub:
        async for message in sub:
            if isinstance(message, Lagged):
                continue
            data = message.data if isinstance(message.data, dict) else {}
            yield {"action": data.get("action"), "itemId": data.get("itemId"), "item": None}


def resolve_event(event: Any, _info: Any) -> Any:
    return event

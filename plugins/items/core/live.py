"""The live signal of item writes: each committed write, once, on the site's live topic
``items.<collection>`` as ``{ collection, action, itemId }`` (never a value).

The items plugin's ``items.create|update|delete`` bus actions run after commit in the process
that wrote; this handler turns each into one message. The copies other processes receive through
the bus (``ctx.remote``) are skipped: topics fan out across processes on their own (Redis). Readers
(the realtime channel, GraphQL subscriptions) subscribe to ``items.<collection>`` or ``items.*``
through ``plugins.items.api``; topics are lossy, so a reader that must not miss a write reads the
durable event log instead.
"""

from __future__ import annotations

from typing import Any

OPERATIONS = ("create", "update", "delete")
ALL = "items.*"


def topic(collection: str) -> str:
    return f"items.{collection}"


async def publish(event: str, payload: Any, ctx: Any) -> None:
    """Bus action ``items.<op>``: publish the write's signal (see the module docstring)."""
    op = event.rpartition(".")[2]
    if ctx.remote or op not in OPERATIONS or not isinstance(payload, dict):
        return
    site_id = ctx.site_id or payload.get("siteId")
    collection, item_id = payload.get("collection"), payload.get("id")
    if not (isinstance(site_id, str) and isinstance(collection, str) and item_id is not None):
        return
    await ctx.kernel.topics.publish(site_id, topic(collection),
                                    {"collection": collection, "action": op, "itemId": str(item_id)})

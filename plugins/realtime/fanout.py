"""Item writes to the realtime channel: each committed item event, once, on the site's topic.

The items plugin's ``items.create|update|delete`` actions run after commit in the process that
wrote; each becomes one message ``{ collection, action, itemId }`` on the site's
``realtime.items`` topic, which reaches the sockets of every process (Redis pub/sub). Actions
fanned out from another process (``ctx.remote``) are skipped: the writer's process published.
"""

from __future__ import annotations

import logging
from typing import Any

from plugins.realtime.channel import ITEMS_TOPIC

log = logging.getLogger("svc.realtime")
ITEM_EVENTS = ("items.create", "items.update", "items.delete")


def register(bus: Any, kernel: Any) -> None:
    async def publish(event: str, payload: Any, ctx: Any) -> None:
        if ctx.remote or not isinstance(payload, dict) or not ctx.site_id:
            return
        message = {"collection": payload.get("collection"), "action": event.rsplit(".", 1)[1],
                   "itemId": str(payload.get("id"))}
        await kernel.topics.publish(ctx.site_id, ITEMS_TOPIC, message)

    for name in ITEM_EVENTS:
        bus.on_action(name, publish)

"""Which live signals of item writes a reader may hear about: an item it may read, now.

Used by every live reader of ``items.<collection>`` (the realtime channel's sockets, GraphQL's
``X_events`` subscriptions) through ``plugins.items.api.LiveReach``. Read permission on the
collection is enough for a principal who reads every row of it (an admin, a rule without
conditions). A rule with row
conditions (``status = published``, ``owner = $CURRENT_USER``) makes the item's id itself
something to keep from the principal when the row is outside them, so each event of such a
collection is checked by reading the item as the principal (its permissions, tenancy and row
filter applied, one indexed read, id only). A delete cannot be checked after the fact: it is
passed only for an item this reader was told about (a create or update it could read); a list
shown from an earlier read learns of the delete at its next re-fetch. Permissions are decided at each event (the access snapshot, cached and dropped on
every change), so a rule withdrawn while the socket is open stops its events at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from kernel import ApiError
from kernel.core.context import RequestContext
from plugins.items import service
from plugins.items.query import parse_list_query

SEEN_MAX = 10_000  # item ids a reader remembers for its deletes (oldest forgotten first)
ID_ONLY = parse_list_query({"fields": "id", "meta": "none"})  # as items_api.read(..., query(fields=["id"]))


class LiveReach:
    """The principal of one live reader, asked per signal ``{ collection, action, itemId }``:
    ``await sees(event)``."""

    def __init__(self, kernel: Any, site_id: str, principal: Any) -> None:
        self.kernel, self.site_id, self.principal = kernel, site_id, principal
        self.ctx = RequestContext(kernel=kernel, request_id="live", site_id=site_id, principal=principal)
        self.seen: OrderedDict[tuple[str, str], None] = OrderedDict()

    async def sees(self, event: dict[str, Any]) -> bool:
        collection, item_id = event["collection"], str(event.get("itemId"))
        decision = await self.kernel.access.decide(self.principal, self.site_id, collection, "read")
        if not decision.allowed:
            return False
        if decision.row_filter is None:
            return True
        key = (collection, item_id)
        if event.get("action") == "delete":
            return self.forget(key)
        if await self.readable(collection, item_id):
            self.seen[key] = None
            self.seen.move_to_end(key)
            if len(self.seen) > SEEN_MAX:
                self.seen.popitem(last=False)
            return True
        # Moved out of its reach: told once (it knew the item), then no more.
        return self.forget(key)

    def forget(self, key: tuple[str, str]) -> bool:
        """Drop ``key`` from the items this reader was told about; whether it was there."""
        if key not in self.seen:
            return False
        del self.seen[key]
        return True

    async def readable(self, collection: str, item_id: str) -> bool:
        try:
            await service.read_item(self.ctx, collection, item_id, ID_ONLY)
        except ApiError as err:
            if err.status in (403, 404):
                return False
            raise
        return True

"""Which events a socket's principal may hear about: an item it may read, now.

A ticket names the collections its principal could read when it was minted; that is enough for
a principal who reads every row of them (an admin, a rule without conditions). A rule with row
conditions (``status = published``, ``owner = $CURRENT_USER``) makes the item's id itself
something to keep from the principal when the row is outside them, so each event of such a
collection is checked by reading the item through the items API as the principal (its
permissions, tenancy and row filter applied, one indexed read, id only). A delete cannot be
checked after the fact: it is sent only for an item this socket was told about (a create or
update it could read); a list shown from an earlier read learns of the delete at its next
re-fetch. Permissions are decided at each event (the access snapshot, cached and dropped on
every change), so a rule withdrawn while the socket is open stops its events at once.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from kernel import ApiError
from plugins.items import api as items_api

SEEN_MAX = 10_000  # item ids a socket remembers for its deletes (oldest forgotten first)
ID_ONLY = items_api.query(fields=["id"], meta="none")


class RowReach:
    """The principal of one socket, asked per event: ``await sees(event)``."""

    def __init__(self, kernel: Any, site_id: str, principal: Any) -> None:
        self.kernel, self.site_id, self.principal = kernel, site_id, principal
        self.ctx = items_api.context(kernel, site_id, principal, "realtime")
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
        """Drop ``key`` from the items this socket was told about; whether it was there."""
        if key not in self.seen:
            return False
        del self.seen[key]
        return True

    async def readable(self, collection: str, item_id: str) -> bool:
        try:
            await items_api.read(self.ctx, collection, item_id, query=ID_ONLY)
        except ApiError as err:
            if err.status in (403, 404):
                return False
            raise
        return True

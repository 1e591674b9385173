"""Crypto-shredding: the privacy plugin's erasure emits the bus filter ``privacy.erase``
``{ collection, ids }`` inside its transaction; the data keys of those items are destroyed in
that same transaction (their encrypted values, in the items, revisions and versions, never open
again and read as null). Nothing is imported from privacy: the event is the contract."""

from __future__ import annotations

from typing import Any

from kernel.tenancy.scope import SiteDB
from plugins.regulated import store

EVENT = "privacy.erase"
MAX_IDS = 10_000


async def on_erase(event: str, payload: Any, ctx: Any) -> Any:
    if ctx.conn is None or ctx.site_id is None or not isinstance(payload, dict):
        return None
    collection, ids = payload.get("collection"), payload.get("ids")
    if not isinstance(collection, str) or not isinstance(ids, list):
        return None
    ids = [str(i) for i in ids if isinstance(i, (str, int)) and not isinstance(i, bool)][:MAX_IDS]
    shredded = await store.shred(SiteDB(ctx.site_id, ctx.conn), collection, ids)
    return {**payload, "shredded": int(payload.get("shredded") or 0) + shredded}

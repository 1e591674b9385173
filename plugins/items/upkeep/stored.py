"""Storage maintenance of item content: rewrite stored values in place (no event, no revision).

For a plugin that changes how values are stored, not what they are (regulated content moving
sensitive fields between plaintext and ciphertext): ``stored_page`` walks every stored item of
some collections (live and soft-deleted) in (collection id, item id) order from a cursor, and
``rewrite`` applies a transform to one item's content and to the content kept of it in history
(each revision's ``data`` and both sides of its ``delta``, each version's ``data`` and
``base``). It runs in the caller's transaction: a batch and its cursor commit together.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import and_, or_

from kernel.tenancy.scope import SiteDB
from plugins.items.tables import items, revisions, versions

Transform = Callable[[dict[str, Any]], dict[str, Any] | None]  # None: unchanged


async def stored_page(db: SiteDB, collection_ids: list[str], after: tuple[str, str] | None,
                      limit: int) -> list[Any]:
    """Up to ``limit`` stored items (``collection_id``, ``id``, ``data``) after ``after``."""
    if not collection_ids:
        return []
    stmt = db.select(items, items.c.collection_id, items.c.id, items.c.data).where(
        items.c.collection_id.in_(sorted(collection_ids)))
    if after is not None:
        stmt = stmt.where(or_(items.c.collection_id > after[0],
                              and_(items.c.collection_id == after[0], items.c.id > after[1])))
    return list(await db.all(stmt.order_by(items.c.collection_id, items.c.id).limit(limit)))


def _delta(delta: Any, transform: Transform) -> Any:
    if not isinstance(delta, dict):
        return None
    sides = {side: {k: v.get(side) for k, v in delta.items() if isinstance(v, dict)} for side in ("from", "to")}
    new = {side: transform(values) for side, values in sides.items()}
    if new["from"] is None and new["to"] is None:
        return None
    got = {side: new[side] if new[side] is not None else sides[side] for side in sides}
    return {k: {"from": got["from"].get(k), "to": got["to"].get(k)} if isinstance(v, dict) else v
            for k, v in delta.items()}


async def rewrite(db: SiteDB, collection_id: str, item_id: str, data: dict[str, Any], transform: Transform) -> int:
    """Apply ``transform`` to the item's stored content and its history; the rows changed."""
    changed = 0
    new = transform(dict(data or {}))
    if new is not None:
        await db.execute(db.update(items).where(items.c.collection_id == collection_id, items.c.id == item_id)
                         .values(data=new))
        changed += 1
    where = (revisions.c.collection_id == collection_id, revisions.c.item_id == item_id)
    for row in await db.all(db.select(revisions, revisions.c.id, revisions.c.data, revisions.c.delta).where(*where)):
        data_new, delta_new = transform(dict(row["data"] or {})), _delta(row["delta"], transform)
        if data_new is not None or delta_new is not None:
            await db.execute(db.update(revisions).where(revisions.c.id == row["id"]).values(
                data=data_new if data_new is not None else row["data"],
                delta=delta_new if delta_new is not None else row["delta"]))
            changed += 1
    where = (versions.c.collection_id == collection_id, versions.c.item_id == item_id)
    for row in await db.all(db.select(versions, versions.c.key, versions.c.data, versions.c.base).where(*where)):
        data_new, base_new = transform(dict(row["data"] or {})), transform(dict(row["base"] or {}))
        if data_new is not None or base_new is not None:
            await db.execute(db.update(versions).where(*where, versions.c.key == row["key"]).values(
                data=data_new if data_new is not None else row["data"],
                base=base_new if base_new is not None else row["base"]))
            changed += 1
    return changed

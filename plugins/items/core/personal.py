"""The items a user's personal data lives in, for the privacy plugin's data export and its list
of automated decisions. These reads are the data subject's own right of access, so they are
not masked by the subject's read permission (a subscriber sees their own data even where their
role reads nothing); they look only at collections whose meta ``personalData`` is true.

- ``subject_items``: live items of those collections the user created (``userCreated``), and
  live items whose top-level field holds the user's id (a ``uuid``/``string`` reference, or a
  list of ids: m2o and m2m values point at users so).
- ``agent_revisions``: revisions of items the user created, in any collection, whose cause is
  an agent's (``agent:<id>`` or ``ai:<id>``): the spec's "agent-authored revisions".
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, or_, select

from kernel.db.meta import iso
from plugins.items.core.records import item_record
from plugins.items.core.rows import live_values
from plugins.items.tables import items, revisions
from plugins.schema.api import get_schema

AGENT_CAUSE_KINDS = ("agent", "ai")
MAX_ITEMS = 5_000


def personal_collections(snap: Any) -> list[Any]:
    """The live collections marked ``personalData``."""
    return [c for c in snap.collections.values() if c.meta.get("personalData")]


def _points_at(data: dict[str, Any], user_id: str) -> list[str]:
    found = []
    for name, value in data.items():
        if value == user_id or (isinstance(value, list) and user_id in value):
            found.append(name)
    return sorted(found)


async def subject_items(kernel: Any, db: Any, site_id: str, user_id: str) -> list[dict[str, Any]]:
    """``[{ collection, id, authored, referencedBy: [field], item }]`` (at most ``MAX_ITEMS``)."""
    snap = await get_schema(kernel, site_id)
    out: list[dict[str, Any]] = []
    for coll in personal_collections(snap):
        authored = {r["id"]: r for r in await db.all(db.select(items).where(
            items.c.collection_id == coll.id, items.c.deleted_at.is_(None), items.c.user_created == user_id))}
        pointing: dict[str, list[str]] = {}
        async for item_id, data in live_values(db, coll):
            fields = _points_at(data, user_id)
            if fields:
                pointing[item_id] = fields
        missing = [i for i in pointing if i not in authored]
        if missing:
            authored_or_not = {r["id"]: r for r in await db.all(db.select(items).where(
                items.c.collection_id == coll.id, items.c.id.in_(missing[:MAX_ITEMS])))}
        else:
            authored_or_not = {}
        for item_id in sorted({*authored, *pointing}):
            row = authored.get(item_id) or authored_or_not.get(item_id)
            if row is None:
                continue
            out.append({"collection": coll.name, "id": item_id, "authored": item_id in authored,
                        "referencedBy": pointing.get(item_id, []), "item": item_record(row)})
            if len(out) >= MAX_ITEMS:
                return out
    return out


async def agent_revisions(kernel: Any, db: Any, site_id: str, user_id: str, limit: int,
                          offset: int) -> tuple[list[dict[str, Any]], int]:
    """Agent-caused revisions of the items ``user_id`` created (newest first) and their total.
    The answer names what changed (field names), the cause and when; not the values."""
    snap = await get_schema(kernel, site_id)
    names = {c.id: c.name for c in snap.collections.values()}
    cause = or_(*(revisions.c.caused_by.like(f"{kind}:%") for kind in AGENT_CAUSE_KINDS))
    joined = revisions.join(items, (items.c.site_id == revisions.c.site_id)
                            & (items.c.collection_id == revisions.c.collection_id)
                            & (items.c.id == revisions.c.item_id))
    owned = db.scope(select(revisions.c.id).select_from(joined), revisions, items)
    base = owned.where(cause, items.c.user_created == user_id)
    total = int(await db.scalar(base.with_only_columns(func.count())) or 0)
    rows = await db.all(base.with_only_columns(
        revisions.c.id, revisions.c.collection_id, revisions.c.item_id, revisions.c.kind, revisions.c.delta,
        revisions.c.caused_by, revisions.c.actor_kind, revisions.c.actor_id, revisions.c.created_at,
        revisions.c.committed_at).order_by(revisions.c.created_at.desc(), revisions.c.id.desc())
        .limit(limit).offset(offset))
    return [{
        "id": r["id"], "collection": names.get(r["collection_id"]), "item": r["item_id"], "kind": r["kind"],
        "causedBy": r["caused_by"], "fields": sorted((r["delta"] or {}).keys()),
        "actor": {"kind": r["actor_kind"], "userId": r["actor_id"]},
        "createdAt": iso(r["created_at"]), "committedAt": iso(r["committed_at"]),
    } for r in rows if r["collection_id"] in names], total

"""The field-access log: who read which sensitive field of which item in clear, and when.

Never the value. One row per (item, field) read, written in one insert per request (a page of
25 items with 3 sensitive fields is one statement of 75 rows). ``GET /admin/field-access-log``
lists them, newest first, filtered by ``collection``, ``itemId``, ``actorId``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.regulated.tables import field_access


async def write(db: SiteDB, ctx: Any, entries: list[tuple[str, str, str]], purpose: str) -> None:
    if not entries:
        return
    principal, now = ctx.principal, now_utc()
    actor = getattr(principal, "user_id", None) or getattr(principal, "api_key_id", None)
    await db.insert(field_access, [
        {"id": uuid7(), "actor_id": actor, "actor_kind": getattr(principal, "kind", None), "collection": c,
         "item_id": i, "field": f, "purpose": purpose, "request_id": getattr(ctx, "request_id", None),
         "created_at": now} for c, i, f in dict.fromkeys(entries)])


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "actorId": row["actor_id"], "actorKind": row["actor_kind"],
            "collection": row["collection"], "itemId": row["item_id"], "field": row["field"],
            "purpose": row["purpose"], "requestId": row["request_id"], "createdAt": iso(row["created_at"])}


async def list_entries(db: SiteDB, filters: dict[str, str | None], limit: int, offset: int
                       ) -> tuple[list[dict[str, Any]], int]:
    where = [getattr(field_access.c, column) == value for column, value in filters.items() if value is not None]
    stmt = db.select(field_access).where(*where)
    rows = await db.all(stmt.order_by(field_access.c.created_at.desc(), field_access.c.id.desc())
                        .limit(limit).offset(offset))
    total = await db.scalar(db.select(field_access, func.count()).where(*where))
    return [record(r) for r in rows], int(total or 0)

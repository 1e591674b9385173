"""The audit trail: one record per security-relevant event, never secrets or field values.

``await record(conn, action=..., site_id=..., principal=..., target_type=..., target_id=...,
details={...})`` inside the transaction of the change it describes, so the record commits
(or rolls back) with it. ``details`` keeps identifiers and names only: keys that look like
secrets or values are dropped before anything is written, and a NUL in a string kept becomes
U+FFFD (PostgreSQL stores none).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    Column,
    Index,
    String,
    Table,
    delete,
    func,
    insert,
    literal,
    or_,
    select,
    union,
)

from kernel.base.ids import uuid7
from kernel.db.meta import id_column, iso, json_type, metadata, now_utc, site_column, timestamp_column

audit_log = Table(
    "svc_audit",
    metadata,
    id_column(),
    site_column(nullable=True, foreign_key=False),  # None: an instance-level event
    Column("action", String(60), nullable=False),
    Column("actor_id", String(36), nullable=True),
    Column("actor_kind", String(20), nullable=True),
    Column("impersonator_id", String(36), nullable=True),
    Column("target_type", String(40), nullable=True),
    Column("target_id", String(300), nullable=True),
    Column("details", json_type, nullable=True),
    Column("ip", String(64), nullable=True),
    Column("request_id", String(128), nullable=True),
    timestamp_column("created_at"),
    Index("ix_svc_audit_site_created", "site_id", "created_at"),
)

_SECRET_MARKERS = ("password", "secret", "token", "hash", "key", "credential", "value", "data")
MAX_DETAIL_STRING = 300


def _storable(text: str) -> str:
    # A detail may echo what a caller sent (a login's unknown address): PostgreSQL keeps no NUL.
    return text.replace("\x00", "\ufffd")


def _clean(details: dict[str, Any] | None) -> dict[str, Any] | None:
    if not details:
        return None
    out: dict[str, Any] = {}
    for name, value in details.items():
        lowered = name.lower()
        if any(marker in lowered for marker in _SECRET_MARKERS) and not lowered.endswith(("id", "ids")):
            continue
        if isinstance(value, str):
            value = _storable(value[:MAX_DETAIL_STRING])
        elif isinstance(value, (list, tuple)):
            value = [_storable(v) if isinstance(v, str) else v for v in value if isinstance(v, (str, int, bool))][:50]
        elif not isinstance(value, (int, float, bool)) and value is not None:
            continue
        out[name] = value
    return out or None


async def record(conn: Any, *, action: str, site_id: str | None, principal: Any = None,
                 target_type: str | None = None, target_id: str | None = None,
                 details: dict[str, Any] | None = None, ip: str | None = None,
                 request_id: str | None = None, actor_id: str | None = None) -> str:
    """Write one audit record on ``conn`` (inside the caller's transaction); returns its id."""
    entry_id = uuid7()
    await conn.execute(insert(audit_log).values(
        id=entry_id, site_id=site_id, action=action,
        actor_id=actor_id or getattr(principal, "user_id", None) or getattr(principal, "api_key_id", None),
        actor_kind=getattr(principal, "kind", None),
        impersonator_id=getattr(principal, "impersonator_id", None),
        target_type=target_type, target_id=target_id and _storable(target_id), details=_clean(details), ip=ip,
        request_id=request_id, created_at=now_utc(),
    ))
    return entry_id


def entry_record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"], "siteId": row["site_id"], "action": row["action"],
        "actor": {"id": row["actor_id"], "kind": row["actor_kind"], "impersonatorId": row["impersonator_id"]},
        "target": {"type": row["target_type"], "id": row["target_id"]},
        "details": row["details"] or {}, "ip": row["ip"], "requestId": row["request_id"],
        "createdAt": iso(row["created_at"]),
    }


async def list_entries(conn: Any, site_id: str, *, action: str | None = None, actor_id: str | None = None,
                       target_type: str | None = None, target_id: str | None = None,
                       since: Any = None, until: Any = None, limit: int = 25,
                       offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """A site's records, newest first, with optional filters; returns (page, total)."""
    where = [audit_log.c.site_id == site_id]
    if action:
        where.append(audit_log.c.action == action)
    if actor_id:  # what they did, in person or through an impersonation session
        where.append(or_(audit_log.c.actor_id == actor_id, audit_log.c.impersonator_id == actor_id))
    if target_type:
        where.append(audit_log.c.target_type == target_type)
    if target_id:
        where.append(audit_log.c.target_id == target_id)
    if since is not None:
        where.append(audit_log.c.created_at >= since)
    if until is not None:
        where.append(audit_log.c.created_at < until)
    stmt = select(audit_log).where(*where).order_by(audit_log.c.created_at.desc(), audit_log.c.id.desc())
    rows = (await conn.execute(stmt.limit(limit).offset(offset))).mappings().all()
    total = (await conn.execute(select(func.count()).select_from(audit_log).where(*where))).scalar_one()
    return [entry_record(r) for r in rows], total


async def actors_of(conn: Any, site_id: str, limit: int = 500) -> list[tuple[str, str | None]]:
    """``(id, kind)`` of everyone in a site's trail (actors and impersonators, ``user`` for the
    latter), for an actor filter: the instance admin acts in sites it is no member of."""
    acting = select(audit_log.c.actor_id.label("id"), audit_log.c.actor_kind.label("kind")).where(
        audit_log.c.site_id == site_id, audit_log.c.actor_id.is_not(None))
    impersonating = select(audit_log.c.impersonator_id.label("id"), literal("user").label("kind")).where(
        audit_log.c.site_id == site_id, audit_log.c.impersonator_id.is_not(None))
    both = union(acting, impersonating).subquery()
    rows = (await conn.execute(select(both.c.id, both.c.kind).order_by(both.c.id).limit(limit))).all()
    seen: dict[str, str | None] = {}
    for actor, kind in rows:
        seen.setdefault(actor, kind)
    return list(seen.items())


async def prune_site(kernel: Any, site_id: str, before: Any) -> int:
    """Delete the site's audit records older than ``before`` (the retention target ``audit``);
    instance-level records (no site) are never pruned here. Returns how many went."""
    async with kernel.db.begin() as conn:
        result = await conn.execute(delete(audit_log).where(audit_log.c.site_id == site_id,
                                                            audit_log.c.created_at < before))
    return int(result.rowcount or 0)


async def forget_site(conn: Any, site_id: str) -> None:
    """Delete the site's audit trail in ``conn``'s transaction (the site is being deleted: a new
    site given the same id must not read it). Instance-level records stay."""
    await conn.execute(delete(audit_log).where(audit_log.c.site_id == site_id))

"""The trust ledger (``/agent/autonomy``): grants per role, incidents, promotions.

Demotion rule (docs/decisions/agents.md): incident weights ``staging_vetoed`` 1, ``run_failed``
1, ``constitution_blocked`` 1, ``ci_failed`` 3. When the weight of a role's incidents since its
last level change reaches ``DEMOTE_AT``, the role drops one level (never below ``suggest``).
A promotion (proposed by any member) decided ``approved`` by a site admin is the only way up.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.agents.common import (
    LEVELS,
    id_param,
    invalid,
    level,
    owner_of,
    require_admin,
    require_member,
    site_db,
)
from plugins.agents.governance import roles as roles_mod
from plugins.agents.tables import incidents, promotions, roles

WEIGHTS = {"staging_vetoed": 1, "run_failed": 1, "constitution_blocked": 1, "ci_failed": 3}
DEMOTE_AT = 3


def incident_record(row: Any) -> dict[str, Any]:
    detail = dict(row["detail"] or {})
    resolution = detail.pop("resolution", None)
    return {"id": row["id"], "role": row["role"], "kind": row["kind"], "weight": row["weight"],
            "detail": detail, "status": row["status"], "resolution": resolution,
            "createdAt": iso(row["created_at"])}


def promotion_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "role": row["role"], "fromLevel": row["from_level"], "level": row["level"],
            "reason": row["reason"], "status": row["status"], "proposedBy": row["proposed_by"],
            "decidedBy": row["decided_by"], "createdAt": iso(row["created_at"]), "decidedAt": iso(row["decided_at"])}


async def add_incident(uow: Any, *, role: str, kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """Record an incident in ``uow``'s transaction and apply the demotion rule."""
    if kind not in WEIGHTS:
        raise ValueError(f"unknown incident kind {kind!r}")
    now = now_utc()
    row = {"id": uuid7(), "role": role[:64], "kind": kind, "weight": WEIGHTS[kind], "detail": detail,
           "status": "open", "created_at": now}
    await uow.db.insert(incidents, row)
    grant = await roles_mod.load(uow.conn, uow.site_id, role)
    if grant is not None:
        since = aware(grant["level_changed_at"])
        weight = int(await uow.db.scalar(uow.db.select(incidents, func.sum(incidents.c.weight)).where(
            incidents.c.role == role, incidents.c.created_at >= since, incidents.c.status == "open")) or 0)
        current = LEVELS.index(grant["level"])
        if weight >= DEMOTE_AT and current > 0:
            lower = LEVELS[current - 1]
            await uow.db.execute(uow.db.update(roles).where(roles.c.id == grant["id"]).values(
                level=lower, level_changed_at=now, updated_at=now))
            await audit.record(uow.conn, action="agent_demoted", site_id=uow.site_id, target_type="agent_role",
                               target_id=role, details={"from": grant["level"], "to": lower, "incident": row["id"]})
    return incident_record(row)


async def record_incident(ctx: Any, *, role: str, kind: str, detail: dict[str, Any]) -> dict[str, Any]:
    """``api.record_incident``: its own transaction, acting as ``ctx``'s principal."""
    site_id = ctx.require_site()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        return await add_incident(uow, role=role, kind=kind, detail=detail)


async def ledger(ctx: Any) -> dict[str, Any]:
    """``GET /agent/autonomy``: ``{ grants: [{ role, level, since }], incidents: [open ones] }``."""
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        grants = await db.all(db.select(roles).order_by(roles.c.name))
        open_ = await db.all(db.select(incidents).where(incidents.c.status == "open")
                             .order_by(incidents.c.created_at.desc()).limit(200))
    return {"grants": [{"role": r["name"], "level": r["level"], "since": iso(r["level_changed_at"])} for r in grants],
            "incidents": [incident_record(r) for r in open_], "levels": list(LEVELS)}


async def list_promotions(ctx: Any, status: str | None) -> list[dict[str, Any]]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        stmt = db.select(promotions).order_by(promotions.c.created_at.desc()).limit(200)
        if status is not None:
            stmt = stmt.where(promotions.c.status == status[:12])
        rows = await db.all(stmt)
    return [promotion_record(r) for r in rows]


async def propose(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/autonomy/promotions { role, level, reason? }``: a pending proposal."""
    site_id = await require_member(ctx)
    reject_unknown(body, {"role", "level", "reason"})
    name = body.get("role")
    if not isinstance(name, str) or len(name) > 64:
        raise invalid("'role' names an agent role", ["role"])
    wanted = level(body.get("level"), ["level"])
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 2000):
        raise invalid("'reason' is a string of at most 2000 characters", ["reason"])
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        grant = await roles_mod.load(uow.conn, site_id, name)
        if grant is None:
            raise invalid(f"No agent role '{name}'", ["role"])
        if LEVELS.index(wanted) <= LEVELS.index(grant["level"]):
            raise invalid(f"The role is already at '{grant['level']}'; a promotion proposes a higher level",
                          ["level"])
        row = {"id": uuid7(), "role": name, "from_level": grant["level"], "level": wanted, "reason": reason,
               "status": "pending", "proposed_by": owner_of(ctx.principal), "decided_by": None,
               "created_at": now_utc(), "decided_at": None}
        await uow.db.insert(promotions, row)
    return promotion_record(row)


async def decide(ctx: Any, promotion_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/autonomy/promotions/:id/decide { decision }`` (admin, exactly once)."""
    site_id = await require_admin(ctx)
    promotion_id = id_param(promotion_id, "Promotion")
    reject_unknown(body, {"decision"})
    decision = body.get("decision")
    if decision not in ("approved", "rejected"):
        raise invalid("'decision' is 'approved' or 'rejected'", ["decision"])
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        db = uow.db
        row = await db.one(db.select(promotions).where(promotions.c.id == promotion_id))
        if row is None:
            raise ApiError.not_found("Promotion not found")
        claimed = await db.execute(db.update(promotions).where(
            promotions.c.id == promotion_id, promotions.c.status == "pending").values(
            status=decision, decided_by=owner_of(ctx.principal), decided_at=now))
        if claimed.rowcount != 1:
            raise ApiError.conflict(f"The promotion is {row['status']}, no longer pending")
        if decision == "approved":
            grant = await roles_mod.load(uow.conn, site_id, row["role"])
            if grant is None:
                raise ApiError.conflict(f"The agent role '{row['role']}' no longer exists")
            if LEVELS.index(row["level"]) > LEVELS.index(grant["level"]):
                await db.execute(db.update(roles).where(roles.c.id == grant["id"]).values(
                    level=row["level"], level_changed_at=now, updated_at=now))
        await audit.record(uow.conn, action="agent_promotion_decided", site_id=site_id, principal=ctx.principal,
                           target_type="agent_promotion", target_id=promotion_id, request_id=ctx.request_id,
                           details={"role": row["role"], "level": row["level"], "decision": decision})
    return promotion_record({**row, "status": decision, "decided_by": owner_of(ctx.principal), "decided_at": now})


async def resolve_incident(ctx: Any, incident_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/autonomy/incidents/:id/resolve { note? }`` (admin, once): the incident leaves
    the ledger's open list and no longer counts towards a demotion; audited
    ``agent_incident_resolved``. A demotion it already caused stays (a promotion is the way up)."""
    site_id = await require_admin(ctx)
    incident_id = id_param(incident_id, "Incident")
    reject_unknown(body, {"note"})
    note = body.get("note")
    if note is not None and (not isinstance(note, str) or len(note) > 2000):
        raise invalid("'note' is a string of at most 2000 characters", ["note"])
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        db = uow.db
        row = await db.one(db.select(incidents).where(incidents.c.id == incident_id))
        if row is None:
            raise ApiError.not_found("Incident not found")
        detail = {**(row["detail"] or {}), "resolution": {"by": owner_of(ctx.principal), "note": note,
                                                          "at": iso(now)}}
        done = await db.execute(db.update(incidents).where(incidents.c.id == incident_id,
                                                          incidents.c.status == "open")
                                .values(status="resolved", detail=detail))
        if done.rowcount != 1:
            raise ApiError.conflict(f"The incident is {row['status']}, no longer open")
        await audit.record(uow.conn, action="agent_incident_resolved", site_id=site_id, principal=ctx.principal,
                           target_type="agent_incident", target_id=incident_id, request_id=ctx.request_id,
                           details={"role": row["role"], "kind": row["kind"]})
    return incident_record({**row, "status": "resolved", "detail": detail})

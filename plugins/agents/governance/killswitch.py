"""The kill switch (``/agent/kill-switch``): freezes by scope ``run`` (a goal and its
descendants), ``intent`` (the goals it spawned, and its spawning), ``role`` (the goals of that
role) or ``site`` (everything).

Propagation: a freeze is a row in the shared database; the runner reads the active freezes before
every step and before a staging applies, so every worker stops at its next step. A topic
message (``agent.frozen``) tells live clients at once; it is a courtesy, the row is the guarantee.
Freezing and lifting need the capability ``agents:freeze`` (a site admin holds it) and are audited.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.agents.common import (
    FREEZE_CAPABILITY,
    id_param,
    invalid,
    owner_of,
    require_capability,
    require_member,
    site_db,
)
from plugins.agents.tables import freezes
from plugins.realtime import api as realtime_api

SCOPES = ("run", "intent", "role", "site")


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "scope": row["scope"], "target": row["target"], "reason": row["reason"],
            "active": row["lifted_at"] is None, "createdBy": row["created_by"], "createdAt": iso(row["created_at"]),
            "liftedBy": row["lifted_by"], "liftedAt": iso(row["lifted_at"])}


async def active(conn: Any, site_id: str) -> list[Any]:
    db = site_db(conn, site_id)
    return list(await db.all(db.select(freezes).where(freezes.c.lifted_at.is_(None))))


def covering(active_freezes: list[Any], *, goal_ids: set[str], role: str | None, intent_id: str | None) -> Any:
    """The first freeze that covers work of ``goal_ids`` (the goal and its ancestors), ``role``,
    ``intent_id``; or None."""
    for row in active_freezes:
        scope, target = row["scope"], row["target"]
        if scope == "site" or (scope == "run" and target in goal_ids) or (
                scope == "role" and role is not None and target == role) or (
                scope == "intent" and intent_id is not None and target == intent_id):
            return row
    return None


async def list_freezes(ctx: Any, include_lifted: bool) -> list[dict[str, Any]]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        stmt = db.select(freezes).order_by(freezes.c.created_at.desc()).limit(200)
        if not include_lifted:
            stmt = stmt.where(freezes.c.lifted_at.is_(None))
        rows = await db.all(stmt)
    return [record(r) for r in rows]


async def freeze(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/kill-switch { scope, target?, reason? }``."""
    site_id = await require_capability(ctx, FREEZE_CAPABILITY)
    reject_unknown(body, {"scope", "target", "reason"})
    scope = body.get("scope")
    if scope not in SCOPES:
        raise invalid(f"'scope' is one of {', '.join(SCOPES)}", ["scope"])
    target = body.get("target")
    if scope == "site":
        if target is not None:
            raise invalid("A site freeze takes no 'target'", ["target"])
    elif not isinstance(target, str) or not 0 < len(target) <= 64:
        raise invalid(f"A {scope} freeze needs 'target' (the {'goal id' if scope == 'run' else scope})", ["target"])
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
        raise invalid("'reason' is a string of at most 500 characters", ["reason"])
    row = {"id": uuid7(), "scope": scope, "target": target, "reason": reason, "created_by": owner_of(ctx.principal),
           "created_at": now_utc(), "lifted_by": None, "lifted_at": None}
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        await uow.db.insert(freezes, row)
        await audit.record(uow.conn, action="agent_frozen", site_id=site_id, principal=ctx.principal,
                           target_type="agent_freeze", target_id=row["id"], request_id=ctx.request_id,
                           details={"scope": scope, "target": target})
    await _announce(ctx.kernel, site_id, "agent.frozen", row)
    return record(row)


async def lift(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/kill-switch/lift { id }``."""
    site_id = await require_capability(ctx, FREEZE_CAPABILITY)
    reject_unknown(body, {"id"})
    if not isinstance(body.get("id"), str):
        raise invalid("'id' names an active freeze", ["id"])
    freeze_id = id_param(body["id"], "Freeze")
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        db = uow.db
        row = await db.one(db.select(freezes).where(freezes.c.id == freeze_id))
        if row is None:
            raise ApiError.not_found("Freeze not found")
        done = await db.execute(db.update(freezes).where(freezes.c.id == freeze_id, freezes.c.lifted_at.is_(None))
                                .values(lifted_at=now, lifted_by=owner_of(ctx.principal)))
        if done.rowcount != 1:
            raise ApiError.conflict("The freeze was lifted already")
        await audit.record(uow.conn, action="agent_freeze_lifted", site_id=site_id, principal=ctx.principal,
                           target_type="agent_freeze", target_id=freeze_id, request_id=ctx.request_id,
                           details={"scope": row["scope"], "target": row["target"]})
    lifted = {**row, "lifted_at": now, "lifted_by": owner_of(ctx.principal)}
    await _announce(ctx.kernel, site_id, "agent.unfrozen", lifted)
    return record(lifted)


async def _announce(kernel: Any, site_id: str, kind: str, row: dict[str, Any]) -> None:
    title = f"Agents {'frozen' if kind == 'agent.frozen' else 'unfrozen'}: {row['scope']}" + (
        f" {row['target']}" if row["target"] else "")
    await realtime_api.notify(kernel, site_id, kind=kind, title=title[:200], severity="warning",
                              deep_link="/agent/kill-switch", entity_id=row["id"])

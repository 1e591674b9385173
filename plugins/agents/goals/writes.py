"""The agent write path and staging (``/agent/staged``).

Every write an agent asks for passes, in order: the role's collections, the processing
restriction of the item's author, the active constitution, the goal's write budget, and then the
role's autonomy level decides: ``act`` writes through the items API now (cause ``agent:<goal>``),
``stage`` stores a staging that applies after the window unless vetoed, ``suggest`` stores one
that never applies. Every attempt is recorded in ``svc_agent_actions``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import func, select

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from kernel.policy.privacy import prune_rows, rows_before
from plugins.agents.common import (
    DEFAULT_WINDOW,
    STAGING_WINDOW_SETTING,
    id_param,
    owner_of,
    require_member,
    site_db,
)
from plugins.agents.governance import autonomy, constitution
from plugins.agents.guard import RESTRICTED, acting_context, author_restricted, freeze_for
from plugins.agents.tables import actions, goals, stagings
from plugins.items import api as items
from plugins.realtime import api as realtime_api
from plugins.settings import api as settings_api

APPLY_JOB = "agents.apply_staging"
HOLD_SECONDS = 60
WRITE_SKILLS = {"create_item": "create", "update_item": "update", "delete_item": "delete"}


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "goalId": row["goal_id"], "role": row["role"], "operation": row["operation"],
            "collection": row["collection"], "itemId": row["item_id"], "status": row["status"],
            "level": row["level"], "diff": {"before": row["before"], "after": row["after"]},
            "applyAt": iso(row["apply_at"]), "reason": row["reason"], "decidedBy": row["decided_by"],
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


async def marker(ctx: Any, collection: str, item_id: str) -> str | None:
    """The item's latest revision id: any change after staging moves it."""
    page, _ = await items.list_revisions(ctx, collection, item_id, limit=1)
    return str(page[0]["id"]) if page else None


def _diff_before(before: dict[str, Any] | None, data: dict[str, Any] | None) -> dict[str, Any] | None:
    if before is None or data is None:
        return before
    return {k: before.get(k) for k in data}


class Blocked(Exception):
    """A write the path refused (recorded; the goal goes on or fails as the runner decides)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


async def _note(kernel: Any, site_id: str, goal: Any, operation: str, collection: str, item_id: str | None,
                data: Any, outcome: str, uow: Any = None) -> None:
    row = {"id": uuid7(), "goal_id": goal["id"], "role": goal["role"], "operation": operation,
           "collection": collection, "item_id": item_id, "data": data, "outcome": outcome, "created_at": now_utc()}
    if uow is not None:
        await uow.db.insert(actions, row)
        return
    async with kernel.unit_of_work(site_id) as own:
        await own.db.insert(actions, row)


async def perform(ctx: Any, goal: Any, role: Any, operation: str, args: dict[str, Any]) -> dict[str, Any]:
    """One agent write of ``goal`` as ``ctx``'s principal: ``{ outcome, ... }``; raises
    ``Blocked`` for a refused write (recorded, and a constitution block is an incident)."""
    kernel, site_id = ctx.kernel, ctx.site_id
    collection = args["collection"]
    item_id = args.get("id")
    data = args.get("data")
    allowed = role["collections"] if role is not None else []
    if collection not in allowed:
        await _note(kernel, site_id, goal, operation, collection, item_id, data, "blocked")
        raise Blocked("COLLECTION_NOT_ALLOWED", f"The agent role may not write '{collection}'" if role is not None
                      else "A goal without an agent role writes nothing")
    before = None
    if item_id is not None:
        if await author_restricted(ctx, collection, item_id):
            await _note(kernel, site_id, goal, operation, collection, item_id, data, "blocked")
            raise Blocked("PROCESSING_RESTRICTED", RESTRICTED)
        before = await items.read(ctx, collection, item_id)
    async with kernel.db.connect() as conn:
        reason = await constitution.blocked(conn, site_id, constitution.Write(operation, collection, data,
                                                                              goal["role"]))
    if reason is not None:
        async with kernel.unit_of_work(site_id) as uow:
            await _note(kernel, site_id, goal, operation, collection, item_id, data, "blocked", uow=uow)
            if goal["role"]:
                await autonomy.add_incident(uow, role=goal["role"], kind="constitution_blocked",
                                            detail={"goalId": goal["id"], "reason": reason})
        raise Blocked("CONSTITUTION_BLOCKED", reason)
    level = role["level"]
    cause = f"agent:{goal['id']}"
    if level == "act":
        if operation == "create":
            result = await items.create(ctx, collection, data, cause=cause)
            item_id = str(result.get("id")) if isinstance(result, dict) else None
        elif operation == "update":
            result = await items.update(ctx, collection, item_id, data, cause=cause)
        else:
            await items.delete(ctx, collection, item_id, cause=cause)
            result = {"collection": collection, "id": item_id, "deleted": True}
        await _note(kernel, site_id, goal, operation, collection, item_id, data, "applied")
        await realtime_api.notify(kernel, site_id, kind="agent.acted", title=f"Agent {operation}d an item of "
                                  f"'{collection}'"[:200], entity_id=goal["id"], deep_link=f"/agent/goals/{goal['id']}")
        return {"outcome": "applied", "result": result}
    window = await settings_api.get_setting(kernel, site_id, STAGING_WINDOW_SETTING, DEFAULT_WINDOW)
    now = now_utc()
    apply_at = now + dt.timedelta(seconds=int(window)) if level == "stage" else None
    row = {"id": uuid7(), "goal_id": goal["id"], "role": goal["role"], "operation": operation,
           "collection": collection, "item_id": item_id, "before": _diff_before(before, data),
           "after": data if operation != "delete" else None,
           "base_marker": await marker(ctx, collection, item_id) if item_id is not None else None,
           "status": "pending", "level": level, "apply_at": apply_at, "reason": None, "decided_by": None,
           "created_at": now, "updated_at": now}
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.insert(stagings, row)
        await _note(kernel, site_id, goal, operation, collection, item_id, data, "staged", uow=uow)
        if apply_at is not None:
            await uow.enqueue(APPLY_JOB, site_id=site_id, staging_id=row["id"], run_at=apply_at,
                              due_at=apply_at.isoformat(), dedupe_key=f"staging:{row['id']}")
        await realtime_api.notify(kernel, site_id, kind="agent.staged", severity="info",
                                  title=f"Agent staged a {operation} in '{collection}'"[:200],
                                  body="Veto it before " + (iso(apply_at) or "") if apply_at else "A suggestion",
                                  deep_link=f"/agent/staged/{row['id']}", entity_id=row["id"], uow=uow)
    return {"outcome": "staged", "staging": record(row)}


# ---------------------------------------------------------------------- the routes


async def _readable(ctx: Any, site_id: str, conn: Any) -> dict[str, Any] | None:
    """For a non-admin: the collections with stagings whose items the caller may read on every
    row, with its read decision (a diff shows field values). None: an admin, who sees all."""
    if ctx.principal.is_admin:
        return None
    db = site_db(conn, site_id)
    names = [r["collection"] for r in await db.all(db.select(stagings, stagings.c.collection).distinct())]
    out = {}
    for name in names:
        decision = await ctx.kernel.access.decide(ctx.principal, site_id, name, "read")
        if decision.allowed and decision.row_filter is None and not decision.paired:
            out[name] = decision
    return out


def _shown(row: Any, readable: dict[str, Any] | None) -> dict[str, Any]:
    """The record, its diff limited to the fields the caller may read."""
    out = record(row)
    if readable is not None:
        decision = readable[row["collection"]]
        out["diff"] = {side: None if values is None else {k: v for k, v in values.items()
                                                          if decision.field_allowed(k)}
                       for side, values in out["diff"].items()}
    return out


async def list_staged(ctx: Any, status: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """Stagings (default ``pending``; ``all``); a non-admin sees those of collections it may read
    on every row, with the diff limited to its readable fields."""
    site_id = await require_member(ctx)
    wanted = status or "pending"
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        readable = await _readable(ctx, site_id, conn)
        cond = [] if wanted == "all" else [stagings.c.status == wanted[:12]]
        if readable is not None:
            cond.append(stagings.c.collection.in_(list(readable)))
        total = await db.scalar(db.select(stagings, func.count()).where(*cond))
        rows = await db.all(db.select(stagings).where(*cond).order_by(stagings.c.created_at.desc())
                            .limit(limit).offset(offset))
    return [_shown(r, readable) for r in rows], int(total or 0)


async def get_staged(ctx: Any, staging_id: str) -> dict[str, Any]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        row = await db.one(db.select(stagings).where(stagings.c.id == id_param(staging_id, "Staging")))
        readable = await _readable(ctx, site_id, conn)
    if row is None or (readable is not None and row["collection"] not in readable):
        raise ApiError.not_found("Staging not found")
    return _shown(row, readable)


async def veto(ctx: Any, staging_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/staged/:id/veto { reason? }``: discard a pending staging (an incident of its role)."""
    site_id = await require_member(ctx)
    reject_unknown(body, {"reason"})
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > 500):
        raise ApiError.validation("'reason' is a string of at most 500 characters", path=["reason"])
    staging_id = id_param(staging_id, "Staging")
    await get_staged(ctx, staging_id)  # 404 unless the caller may see it
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        db = uow.db
        row = await db.one(db.select(stagings).where(stagings.c.id == staging_id))
        if row is None:
            raise ApiError.not_found("Staging not found")
        done = await db.execute(db.update(stagings).where(stagings.c.id == staging_id, stagings.c.status == "pending")
                                .values(status="vetoed", reason=reason, decided_by=owner_of(ctx.principal),
                                        updated_at=now))
        if done.rowcount != 1:
            raise ApiError.conflict(f"The staging is {row['status']}, no longer pending")
        await ctx.kernel.jobs.cancel(APPLY_JOB, dedupe_key=f"staging:{staging_id}", site_id=site_id, uow=uow)
        if row["role"]:
            await autonomy.add_incident(uow, role=row["role"], kind="staging_vetoed",
                                        detail={"stagingId": staging_id, "goalId": row["goal_id"]})
    return await get_staged(ctx, staging_id)


async def _write_staged(ctx: Any, row: Any, uow: Any, cause: str) -> None:
    """The staged write through the items API as ``ctx``'s principal, in ``uow``."""
    if row["operation"] == "create":
        await items.create(ctx, row["collection"], row["after"], uow=uow, cause=cause)
    elif row["operation"] == "update":
        await items.update(ctx, row["collection"], row["item_id"], row["after"], uow=uow, cause=cause)
    else:
        await items.delete(ctx, row["collection"], row["item_id"], uow=uow, cause=cause)


async def accept(ctx: Any, staging_id: str) -> dict[str, Any]:
    """``POST /agent/staged/:id/apply``: a person applies a pending ``suggest`` staging as
    themselves: through the items API with the caller's own permissions (403 as a direct write
    would be), cause ``agent-suggestion:<id>``, audited ``agent_suggestion_applied``. 409
    ``CONFLICT`` for a staging that is no longer pending, or a ``stage`` one (it applies on its
    own at ``applyAt``); an item changed since the suggestion ends it ``stale`` (409
    ``STAGING_STALE``); an author who restricted processing ends it ``blocked`` (409
    ``PROCESSING_RESTRICTED``), as the apply job does."""
    site_id = await require_member(ctx)
    staging_id = id_param(staging_id, "Staging")
    shown = await get_staged(ctx, staging_id)  # 404 unless the caller may see it
    if shown["status"] != "pending":
        raise ApiError.conflict(f"The staging is {shown['status']}, no longer pending")
    if shown["level"] != "suggest":
        raise ApiError.conflict("Only a suggestion is applied by hand; a staged write applies on its own at "
                                "applyAt unless vetoed")
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        row = await db.one(db.select(stagings).where(stagings.c.id == staging_id))
    collection, item_id = row["collection"], row["item_id"]
    if item_id is not None:
        if await author_restricted(ctx, collection, item_id):
            await _finish(ctx.kernel, site_id, staging_id, "blocked", f"PROCESSING_RESTRICTED: {RESTRICTED}")
            raise ApiError.conflict(RESTRICTED, code="PROCESSING_RESTRICTED")
        if await marker(ctx, collection, item_id) != row["base_marker"]:
            await _finish(ctx.kernel, site_id, staging_id, "stale", "The item changed after it was suggested")
            raise ApiError.conflict("The item changed after it was suggested", code="STAGING_STALE")
    cause = f"agent-suggestion:{staging_id}"
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        claimed = await uow.db.execute(uow.db.update(stagings).where(
            stagings.c.id == staging_id, stagings.c.status == "pending").values(
            status="applied", decided_by=owner_of(ctx.principal), updated_at=now_utc()))
        if claimed.rowcount != 1:
            raise ApiError.conflict("The staging was decided meanwhile")
        await _write_staged(ctx, row, uow, cause)
        await audit.record(uow.conn, action="agent_suggestion_applied", site_id=site_id, principal=ctx.principal,
                           target_type="agent_staging", target_id=staging_id, request_id=ctx.request_id,
                           details={"collection": collection, "itemId": item_id, "operation": row["operation"]})
    return await get_staged(ctx, staging_id)


# ---------------------------------------------------------------------- the apply job


async def _finish(kernel: Any, site_id: str, staging_id: str, status: str, reason: str | None) -> None:
    async with kernel.unit_of_work(site_id) as uow:
        await uow.db.execute(uow.db.update(stagings).where(stagings.c.id == staging_id,
                                                          stagings.c.status == "pending")
                             .values(status=status, reason=reason[:500] if reason else None, updated_at=now_utc()))


async def apply_job(kernel: Any, site_id: str, staging_id: str, due_at: str | None = None) -> None:
    """The job ``agents.apply_staging``: apply a due, pending, unfrozen staging through the items
    API as the goal's principal, unless the item changed since (``stale``), or the constitution
    now blocks it, or the item's author restricted processing meanwhile (``blocked``, as a direct
    write would be). A frozen staging stays pending; the sweep retries it later.
    ``due_at``: the time it was queued for; it acts at the later of that and the clock."""
    due = dt.datetime.fromisoformat(due_at) if isinstance(due_at, str) else None
    moment = max(now_utc(), due) if due is not None else now_utc()
    async with kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        row = await db.one(db.select(stagings).where(stagings.c.id == staging_id))
        goal = await db.one(db.select(goals).where(goals.c.id == row["goal_id"])) if row is not None else None
        if row is None or goal is None or row["status"] != "pending" or row["apply_at"] is None:
            return
        if aware(row["apply_at"]) > moment:
            return
        if await freeze_for(conn, site_id, goal) is not None:
            held = moment + dt.timedelta(seconds=HOLD_SECONDS)  # look again after a while
            await kernel.jobs.enqueue(APPLY_JOB, site_id=site_id, staging_id=staging_id, run_at=held,
                                      due_at=held.isoformat(), dedupe_key=f"staging:{staging_id}", replace=True)
            return
        reason = await constitution.blocked(conn, site_id, constitution.Write(
            row["operation"], row["collection"], row["after"], row["role"]))
    if reason is not None:
        await _finish(kernel, site_id, staging_id, "blocked", reason)
        return
    ctx = await acting_context(kernel, site_id, goal)
    if ctx is None:
        await _finish(kernel, site_id, staging_id, "blocked", "The agent's principal no longer exists")
        return
    cause = f"agent:{goal['id']}"
    try:
        if row["item_id"] is not None and await author_restricted(ctx, row["collection"], row["item_id"]):
            await _note(kernel, site_id, goal, row["operation"], row["collection"], row["item_id"], row["after"],
                        "blocked")
            await _finish(kernel, site_id, staging_id, "blocked", f"PROCESSING_RESTRICTED: {RESTRICTED}")
            return
        if row["item_id"] is not None and await marker(ctx, row["collection"], row["item_id"]) != row["base_marker"]:
            await _finish(kernel, site_id, staging_id, "stale", "The item changed after it was staged")
            return
        # The claim and the write commit together: a veto either comes first (nothing applies)
        # or finds the staging applied (409).
        async with kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
            claimed = await uow.db.execute(uow.db.update(stagings).where(
                stagings.c.id == staging_id, stagings.c.status == "pending").values(
                status="applied", updated_at=now_utc()))
            if claimed.rowcount != 1:
                return
            await _write_staged(ctx, row, uow, cause)
    except ApiError as exc:
        await _finish(kernel, site_id, staging_id, "blocked" if exc.status != 404 else "stale",
                      f"{exc.code}: {exc.message}")


async def sweep(kernel: Any) -> None:
    """Periodic: re-queue due pending stagings (one held by a freeze applies after the lift)."""
    async with kernel.db.connect() as conn:
        rows = (await conn.execute(select(stagings.c.id, stagings.c.site_id).where(
            stagings.c.status == "pending", stagings.c.apply_at <= now_utc()).limit(500))).mappings().all()
    for row in rows:
        await kernel.jobs.enqueue(APPLY_JOB, site_id=row["site_id"], staging_id=row["id"],
                                  dedupe_key=f"staging:{row['id']}", replace=True)


async def prune_actions(kernel: Any, site_id: str, before: dt.datetime) -> int:
    """The retention target ``agentActions``: the site's write attempts older than ``before``."""
    return await prune_rows(kernel, site_id, actions, actions.c.created_at < before)


# The sites with an attempt older than the horizon: the target's ``pending`` (one query).
pending_actions = rows_before(actions, actions.c.created_at)

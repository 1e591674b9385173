"""Goals (``/agent/goals``): create (``execution`` ``async`` | ``sync`` | ``none``), list, read,
decompose into role-scoped sub-goals, settle from the children. The runner is ``runner.py``."""

from __future__ import annotations

from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.accounts import api as accounts_api
from plugins.agents.common import (
    BUDGET_PARTS,
    DEFAULT_BUDGET,
    id_param,
    invalid,
    owner_of,
    parse_budget,
    require_member,
    site_db,
    text,
)
from plugins.agents.goals import runner
from plugins.agents.governance import roles as roles_mod
from plugins.agents.tables import goals

EXECUTIONS = ("async", "sync", "none")
FIELDS = {"title", "description", "role", "budget", "execution"}
MAX_CHILDREN = 20


def remaining(row: Any) -> dict[str, int]:
    return {k: max(0, row["budget"][k] - row["used"][k] - row["reserved"].get(k, 0)) for k in BUDGET_PARTS}


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "title": row["title"], "description": row["description"], "role": row["role"],
            "status": row["status"], "execution": row["execution"], "budget": row["budget"], "used": row["used"],
            "remaining": remaining(row), "parentId": row["parent_id"], "rootId": row["root_id"],
            "intentId": row["intent_id"], "steps": row["steps"], "error": row["error"],
            "createdBy": row["owner"], "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


async def _role(conn: Any, site_id: str, name: Any, path: list[str | int]) -> Any:
    if name is None:
        return None
    if not isinstance(name, str) or len(name) > 64:
        raise invalid("'role' names an agent role", path)
    row = await roles_mod.load(conn, site_id, name)
    if row is None:
        raise invalid(f"No agent role '{name}'", path)
    return row


def parse(body: Any, path: list[str | int]) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("A goal is an object", path)
    try:
        reject_unknown(body, FIELDS)
    except ApiError as exc:
        raise invalid(exc.message, [*path, *(exc.details[0].path or [])]) from None
    spec = {"title": _text(body, "title", path, required=True, max_len=200),
            "description": _text(body, "description", path, required=False, max_len=20000) or "",
            "role": body.get("role"), "execution": body.get("execution", "async")}
    if spec["execution"] not in EXECUTIONS:
        raise invalid(f"'execution' is one of {', '.join(EXECUTIONS)}", [*path, "execution"])
    spec["budget"] = parse_budget(body["budget"], [*path, "budget"]) if "budget" in body else {}
    return spec


def _text(body: dict[str, Any], key: str, path: list[str | int], *, required: bool, max_len: int) -> Any:
    try:
        return text(body, key, required=required, max_len=max_len)
    except ApiError as exc:
        raise invalid(exc.message, [*path, key]) from None


def new_row(ctx: Any, spec: dict[str, Any], role: Any, *, parent: Any = None, intent_id: str | None = None,
            budget: dict[str, int] | None = None) -> dict[str, Any]:
    now = now_utc()
    goal_id = uuid7()
    base = budget if budget is not None else {**DEFAULT_BUDGET, **(role["budget"] if role else {}), **spec["budget"]}
    return {"id": goal_id, "parent_id": parent["id"] if parent is not None else None,
            "root_id": parent["root_id"] if parent is not None else goal_id, "intent_id": intent_id,
            "title": spec["title"], "description": spec["description"], "role": role["name"] if role else None,
            "status": "pending" if spec["execution"] == "none" else "queued", "execution": spec["execution"],
            "budget": base, "used": dict.fromkeys(BUDGET_PARTS, 0), "reserved": dict.fromkeys(BUDGET_PARTS, 0),
            "principal": accounts_api.principal_record(ctx.principal) | {"sessionId": None},
            "owner": owner_of(ctx.principal), "steps": [], "error": None, "created_at": now, "updated_at": now}


async def insert(uow: Any, row: dict[str, Any]) -> None:
    await uow.db.insert(goals, row)
    if row["execution"] in ("async",):
        await uow.enqueue(runner.JOB, site_id=uow.site_id, goal_id=row["id"], dedupe_key=f"goal:{row['id']}")


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/goals``."""
    site_id = await require_member(ctx)
    spec = parse(body, [])
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        role = await _role(uow.conn, site_id, spec["role"], ["role"])
        row = new_row(ctx, spec, role)
        await insert(uow, row)
    if row["execution"] == "sync":
        await runner.run_goal(ctx.kernel, site_id, row["id"])
    return await get(ctx, row["id"])


def _mine(ctx: Any) -> list[Any]:
    """A site admin sees every goal; anyone else the goals it created (a goal's steps and answers
    come from what its principal could read)."""
    return [] if ctx.principal.is_admin else [goals.c.owner == owner_of(ctx.principal)]


async def list_goals(ctx: Any, status: str | None, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        cond = _mine(ctx) + ([] if status is None else [goals.c.status == status[:16]])
        total = await db.scalar(db.select(goals, func.count()).where(*cond))
        rows = await db.all(db.select(goals).where(*cond).order_by(goals.c.created_at.desc(), goals.c.id.desc())
                            .limit(limit).offset(offset))
    return [record(r) for r in rows], int(total or 0)


async def _load(ctx: Any, conn: Any, site_id: str, goal_id: str) -> Any:
    db = site_db(conn, site_id)
    row = await db.one(db.select(goals).where(goals.c.id == id_param(goal_id, "Goal"), *_mine(ctx)))
    if row is None:
        raise ApiError.not_found("Goal not found")
    return row


async def get(ctx: Any, goal_id: str) -> dict[str, Any]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        row = await _load(ctx, conn, site_id, goal_id)
        db = site_db(conn, site_id)
        children = await db.all(db.select(goals, goals.c.id, goals.c.status).where(goals.c.parent_id == row["id"]))
    return {**record(row), "children": [{"id": c["id"], "status": c["status"]} for c in children]}


async def decompose(ctx: Any, goal_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """``POST /agent/goals/:id/decompose { goals: [...] }``: children share the parent's remaining
    budget (an unbudgeted child gets an equal share of what the budgeted ones leave); their sum
    never exceeds it (400 ``BUDGET_EXCEEDED``)."""
    site_id = await require_member(ctx)
    reject_unknown(body, {"goals"})
    specs = body.get("goals")
    if not isinstance(specs, list) or not 0 < len(specs) <= MAX_CHILDREN:
        raise invalid(f"'goals' is a list of 1 to {MAX_CHILDREN} sub-goals", ["goals"])
    parsed = [parse({**s, "execution": s.get("execution", "async")} if isinstance(s, dict) else s, ["goals", i])
              for i, s in enumerate(specs)]
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        parent = await _load(ctx, uow.conn, site_id, goal_id)
        if parent["status"] not in ("pending", "decomposed"):
            raise ApiError(409, "GOAL_NOT_DECOMPOSABLE", f"The goal is {parent['status']}; only a pending or "
                           "decomposed goal can be decomposed")
        left = remaining(parent)
        budgets = _shares(parsed, left)
        rows = []
        for i, spec in enumerate(parsed):
            role = await _role(uow.conn, site_id, spec["role"], ["goals", i, "role"])
            rows.append(new_row(ctx, spec, role, parent=parent, intent_id=parent["intent_id"], budget=budgets[i]))
        reserved = {k: parent["reserved"].get(k, 0) + sum(b[k] for b in budgets) for k in BUDGET_PARTS}
        await uow.db.execute(uow.db.update(goals).where(goals.c.id == parent["id"]).values(
            status="decomposed", reserved=reserved, updated_at=now_utc()))
        for row in rows:
            await insert(uow, row)
    for row in rows:
        if row["execution"] == "sync":
            await runner.run_goal(ctx.kernel, site_id, row["id"])
    return await get(ctx, parent["id"])


def _shares(parsed: list[dict[str, Any]], left: dict[str, int]) -> list[dict[str, int]]:
    budgets: list[dict[str, int]] = []
    for part in BUDGET_PARTS:
        asked = [p["budget"].get(part) for p in parsed]
        fixed = sum(a for a in asked if a is not None)
        if fixed > left[part]:
            raise ApiError(400, "BUDGET_EXCEEDED", f"The sub-goals ask for {fixed} {part}; the goal has "
                           f"{left[part]} left", path=["goals"], extensions={"part": part, "left": left[part]})
        free = [i for i, a in enumerate(asked) if a is None]
        share = (left[part] - fixed) // len(free) if free else 0
        for i, a in enumerate(asked):
            if len(budgets) <= i:
                budgets.append({})
            budgets[i][part] = a if a is not None else share
    return budgets


async def settle(ctx: Any, goal_id: str) -> dict[str, Any]:
    """``POST /agent/goals/:id/settle``: a decomposed goal whose children are all terminal becomes
    ``succeeded`` (all succeeded), ``failed`` (none did) or ``partial``; its ``used`` adds theirs."""
    site_id = await require_member(ctx)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        parent = await _load(ctx, uow.conn, site_id, goal_id)
        children = await uow.db.all(uow.db.select(goals).where(goals.c.parent_id == parent["id"]))
        if parent["status"] != "decomposed" or not children:
            raise ApiError(409, "GOAL_NOT_SETTLEABLE", f"The goal is {parent['status']}, not decomposed")
        open_ = [c["id"] for c in children if c["status"] not in runner.TERMINAL]
        if open_:
            raise ApiError(409, "GOAL_NOT_SETTLEABLE", f"{len(open_)} sub-goal(s) are not finished",
                           extensions={"open": open_[:20]})
        won = sum(1 for c in children if c["status"] == "succeeded")
        status = "succeeded" if won == len(children) else "failed" if won == 0 else "partial"
        used = {k: parent["used"][k] + sum(c["used"][k] for c in children) for k in BUDGET_PARTS}
        await uow.db.execute(uow.db.update(goals).where(goals.c.id == parent["id"], goals.c.status == "decomposed")
                             .values(status=status, used=used, reserved=dict.fromkeys(BUDGET_PARTS, 0),
                                     updated_at=now_utc()))
    return await get(ctx, parent["id"])

"""Agent as reviewer: ``POST /agent/approvals/:id/agent-decide { decision, goalId? }``.

The caller needs the capability ``review:<domain>`` among its token's roles, where the domain is
the approval's ``collection`` argument, else its skill name. Self-review is refused (403
``SELF_REVIEW``): the caller requested the approval, or the approval was requested by a goal of
a tree the caller owns a goal in (or of the tree of ``goalId``).
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import reject_unknown
from plugins.agents.common import capabilities, id_param, invalid, owner_of, require_member, site_db
from plugins.agents.tables import approval_links, goals
from plugins.ai import api as ai


def domain(approval: dict[str, Any]) -> str:
    args = approval.get("arguments") or {}
    collection = args.get("collection") if isinstance(args, dict) else None
    return collection if isinstance(collection, str) else str(approval["skill"])


async def agent_decide(ctx: Any, approval_id: str, body: dict[str, Any]) -> dict[str, Any]:
    site_id = await require_member(ctx)
    reject_unknown(body, {"decision", "goalId"})
    decision = body.get("decision")
    if decision not in ("approved", "rejected"):
        raise invalid("'decision' is 'approved' or 'rejected'", ["decision"])
    goal_id = body.get("goalId")
    if goal_id is not None and not isinstance(goal_id, str):
        raise invalid("'goalId' is a goal id", ["goalId"])
    skill_ctx = ai.SkillContext(ctx.kernel, site_id, ctx.principal, ctx.request_id)
    approval = await ai.read_approval(skill_ctx, id_param(approval_id, "Approval"))
    needed = f"review:{domain(approval)}"
    if needed not in await capabilities(ctx, site_id):
        raise ApiError(403, "CAPABILITY_REQUIRED", f"Deciding this approval needs the capability '{needed}'",
                       extensions={"capability": needed})
    me = owner_of(ctx.principal)
    requester = approval.get("requestedBy")
    if requester is not None and me in (f"user:{requester}", f"key:{requester}"):
        raise ApiError(403, "SELF_REVIEW", "An agent never decides an approval it requested")
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        link = await db.one(db.select(approval_links).where(approval_links.c.approval_id == approval["id"]))
        if link is not None:
            mine = await db.one(db.select(goals, goals.c.id).where(goals.c.root_id == link["root_id"],
                                                                   goals.c.owner == me).limit(1))
            own_tree = None
            if goal_id is not None:
                own_tree = await db.one(db.select(goals, goals.c.root_id).where(goals.c.id == goal_id[:36]))
                if own_tree is None:
                    raise invalid("No such goal", ["goalId"])
            if mine is not None or (own_tree is not None and own_tree["root_id"] == link["root_id"]):
                raise ApiError(403, "SELF_REVIEW", "An agent never decides what its own goal tree requested")
    return await ai.decide_approval(skill_ctx, approval["id"], decision)

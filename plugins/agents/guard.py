"""Checks the runner, the staging job and approval decisions share: the kill switch read from
the database, the author's restriction of processing, and the goal's principal read again."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.privacy import restricted
from plugins.accounts import api as accounts_api
from plugins.agents.common import site_db
from plugins.agents.governance import killswitch
from plugins.agents.tables import approval_links, goals
from plugins.items import api as items

RESTRICTED = "The item's author restricted processing of their data"


async def ancestors(conn: Any, site_id: str, goal: Any) -> set[str]:
    """The goal's id and its ancestors' ids."""
    db = site_db(conn, site_id)
    out = {goal["id"]}
    parent = goal["parent_id"]
    while parent is not None and parent not in out:
        out.add(parent)
        row = await db.one(db.select(goals, goals.c.parent_id).where(goals.c.id == parent))
        parent = row["parent_id"] if row is not None else None
    return out


async def freeze_for(conn: Any, site_id: str, goal: Any) -> Any:
    """The active freeze that covers ``goal`` (run, intent, role or site), or None."""
    active = await killswitch.active(conn, site_id)
    if not active:
        return None
    return killswitch.covering(active, goal_ids=await ancestors(conn, site_id, goal), role=goal["role"],
                               intent_id=goal["intent_id"])


async def acting_context(kernel: Any, site_id: str, goal: Any) -> Any:
    """The items ``ctx`` acting as the goal's principal read again now, or None."""
    principal = await accounts_api.principal_current(kernel, site_id, goal["principal"])
    if principal is None:
        return None
    resolved = await kernel.access.resolve(principal, site_id)
    return items.context(kernel, site_id, resolved, f"agent-{goal['id'][:24]}")


async def author_restricted(ctx: Any, collection: str, item_id: str) -> bool:
    """The item's author restricted processing (``kernel.policy.privacy.restricted``): an agent writes
    none of their content, neither directly nor when a staging applies."""
    return await restricted(ctx.kernel, ctx.site_id, await items.author_of(ctx, collection, item_id))


async def refuse_while_frozen(event: str, payload: dict[str, Any], ctx: Any) -> None:
    """The bus filter ``ai.approval.decide``: approving what a goal requested, while a freeze
    covers that goal, is refused (409 ``AGENT_FROZEN``), whoever decides (a person through
    ``/ai/approvals/:id/decide``, an agent through ``agent-decide``): the approval stays pending,
    to be decided after the lift. A rejection runs nothing and goes through."""
    if payload.get("decision") != "approved":
        return
    db = site_db(ctx.conn, ctx.site_id)
    link = await db.one(db.select(approval_links).where(approval_links.c.approval_id == payload["approvalId"]))
    if link is None:  # not an agent's request (the copilot's, an MCP session's)
        return
    goal = await db.one(db.select(goals).where(goals.c.id == link["goal_id"]))
    frozen = await freeze_for(ctx.conn, ctx.site_id, goal) if goal is not None else None
    if frozen is not None:
        raise ApiError(409, "AGENT_FROZEN", f"A {frozen['scope']} freeze covers the goal that requested this "
                       "approval; decide it after the freeze is lifted")

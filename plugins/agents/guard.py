"""Checks the runner and the staging job share: the kill switch read from the database, and the
goal's principal read again."""

from __future__ import annotations

from typing import Any

from plugins.accounts import api as accounts_api
from plugins.agents import killswitch
from plugins.agents.common import site_db
from plugins.agents.tables import goals
from plugins.items import api as items


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

"""Access decisions for items: ``kernel.access.decide`` per (collection, action).

Admin access (role, policy or instance admin) short-circuits inside ``kernel.access``. A
missing permission is 403 ``PERMISSION_DENIED``, also for anonymous callers, who act with
the site's public role (Directus answers the public role the same way). The check comes
before the collection lookup, so a caller without permission cannot probe which
collections exist.
"""

from __future__ import annotations

from typing import Any

from kernel.access import Decision
from plugins.items.errors import action_denied, field_denied

ALLOWED = Decision(True)


async def decide(ctx: Any, collection: str, action: str) -> Decision:
    """The caller's decision for ``action`` on ``collection`` (never raises)."""
    access = ctx.kernel.access
    if access is None:  # an app built without the access service: nothing is restricted
        return ALLOWED
    return await access.decide(ctx.principal, ctx.site_id, collection, action)


async def require(ctx: Any, collection: str, action: str) -> Decision:
    """The decision for ``action``, or 403 when it is not allowed."""
    decision = await decide(ctx, collection, action)
    if not decision.allowed:
        raise action_denied(collection, action)
    return decision


def readable(decision: Decision) -> frozenset[str] | None:
    """Field names the caller may read (``None``: all); nothing when reading is not allowed."""
    if not decision.allowed:
        return frozenset()
    return decision.fields


def require_readable(names: Any, decision: Decision, path: list[Any]) -> None:
    """403 ``field_policy`` when a field named in a query (sort, fields) is not readable."""
    allowed = readable(decision)
    if allowed is None:
        return
    for name in names:
        if name != "id" and name not in allowed:
            raise field_denied(name, path, "read")

"""Who may do what with files: the ``media:*`` rules (collection ``*``; docs/files.md, Permissions).

``require(ctx, action)`` answers 403 without the action and returns the SQL condition of the
rows it covers (a rule's ``conditions`` are filters over the files' fields, ``query.py``), so
every read, transform, update and delete of a file is bounded by the same rule. Uploads also
pass ``guard.admit`` first: the public role never uploads, whatever its rules say.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import true

from kernel import ApiError
from plugins.files.query import compile_condition

ACTIONS = ("media:create", "media:read", "media:update", "media:delete")
_TRUE = true()


def true_clause() -> Any:
    """The condition of an unconditional rule (one object: callers may test it with ``is``)."""
    return _TRUE


async def require(ctx: Any, action: str) -> Any:
    """The condition of the files ``ctx.principal`` may ``action`` (403 when none)."""
    site_id = ctx.require_site()
    decision = await ctx.kernel.access.decide(ctx.principal, site_id, "*", action)
    if not decision.allowed:
        raise ApiError.forbidden(f"This needs the {action} permission", reason=action)
    return _TRUE if decision.row_filter is None else compile_condition(decision.row_filter)

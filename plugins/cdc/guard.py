"""Who may use the change feed: never the frontend realm; the capability ``cdc:subscribe``."""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from plugins.access import api as access_api

CAPABILITY = "cdc:subscribe"


async def reject_frontend(ctx: Any) -> str:
    """The request's site; 403 for a frontend-realm caller (every ``/cdc`` route)."""
    site_id = ctx.require_site()
    if await access_api.is_frontend(ctx, site_id):
        raise ApiError.forbidden("Frontend-realm tokens cannot use the change feed")
    return site_id


async def require_feed_access(ctx: Any) -> str:
    """The request's site, once the caller may read its change feed; 403 otherwise."""
    site_id = await reject_frontend(ctx)
    if not ctx.principal.is_admin and not await ctx.kernel.access.has_capability(ctx.principal, site_id, CAPABILITY):
        raise ApiError.forbidden(f"The change feed needs the capability {CAPABILITY}", capability=CAPABILITY)
    return site_id

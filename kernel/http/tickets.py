"""``?ticket=`` credentials for routes declared with ``Route(tickets=True)``.

Browsers cannot send headers with a WebSocket handshake or an ``EventSource``, so a plugin (the
realtime plugin) mints a short-lived single-use ticket over an authenticated call, and the client
connects with ``?ticket=<ticket>``. The ``authenticate_ticket`` hook redeems it into a site and a
principal; the kernel then applies the route's auth level and rate limit as for any request.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from kernel.auth.principal import Principal, TicketGrant
from kernel.base.errors import ApiError
from kernel.hooks.plugins import call_first

if TYPE_CHECKING:
    from kernel.core.context import Kernel, RequestContext

MAX_TICKET_LENGTH = 4096


async def redeem_ticket(kernel: Kernel, req: Any, ctx: RequestContext, route: Any) -> Principal | None:
    """The principal of the request's ticket, with ``ctx.site`` set from it; ``None`` when the
    route takes no tickets or the request carries none. Raises 401 for a ticket nobody redeems."""
    if not route.tickets:
        return None
    ticket = req.get_param("ticket")
    if not ticket:
        return None
    if len(ticket) > MAX_TICKET_LENGTH:
        raise ApiError.unauthenticated("The ticket is not valid")
    grant = await call_first(kernel.pm.hook.authenticate_ticket, ticket=ticket, request=req, kernel=kernel,
                             route=route)
    if not isinstance(grant, TicketGrant):
        raise ApiError.unauthenticated("The ticket is not valid or has expired")
    from kernel.tenancy.service import get_site_cached

    site = await get_site_cached(kernel, grant.site_id)
    if site is None:
        raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{grant.site_id}'")
    ctx.site_id = site["id"]
    ctx.site = site
    return grant.principal

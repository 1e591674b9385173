"""``POST /auth/switch-site``: a member's session moves to another of its sites without the
password again (docs/accounts.md#switching-sites).

Access and refresh tokens are bound to one site (docs/decisions/site-bound-tokens.md), so a
person working in two sites needs a session in each. The proof of the session is its refresh
token (the ``svc_refresh`` cookie with ``X-Svc-Refresh: 1``, or the body), never the access
token, which is bound to the old site. The exchange spends that token like a refresh (a second
use is a reuse; a family has one live token, so nothing of it is left in the old site), and issues the family's next token
bound to the target site: the session (its id, ``sid``) moves, it is not copied. The old site's
tokens end with it (the browser keeps one ``svc_refresh`` cookie, and a session left behind would
live on unseen), and a stolen copy of the spent token, used later, revokes the moved session too
(``sessions.reuse_detected`` ends the family in every site).
"""

from __future__ import annotations

from typing import Any

from kernel.auth.principal import Principal
from kernel.base.errors import ApiError
from kernel.policy import audit
from plugins.access.api import membership
from plugins.accounts.sessions.sessions import Client, live_token, reuse_detected, spend, start_session


async def switch_site(kernel: Any, presented: str, site_id: str, client: Client) -> dict[str, Any]:
    """A new session bound to ``site_id`` for the live session of ``presented``; the login
    answer's data. 403 when the user is not a member of ``site_id`` (nothing is spent then)."""
    row, user = await live_token(kernel, presented, site_id, client, same_site=False)
    if not user["is_instance_admin"]:
        async with kernel.db.connect() as conn:
            if await membership(conn, site_id, user["id"]) is None:
                raise ApiError.forbidden("You are not a member of this site")
    principal = Principal(kind="user", user_id=user["id"], site_id=site_id, email=user["email"])
    data = None
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        # Conditional, like a refresh: of two exchanges racing with one token, one wins.
        if await spend(uow.conn, row):
            data = await start_session(kernel, uow.conn, user, site_id, client, family_id=row["family_id"])
            await audit.record(uow.conn, action="auth.site_switch", site_id=site_id, principal=principal,
                               target_type="session", target_id=row["family_id"],
                               details={"fromSite": row["site_id"]},
                               ip=client.ip, request_id=client.request_id)
    if data is None:
        raise await reuse_detected(kernel, row, site_id, client)
    return data

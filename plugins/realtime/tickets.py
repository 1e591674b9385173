"""Realtime tickets: minted over an authenticated call, redeemed once at the WebSocket handshake.

A ticket reads ``rt1.<site>.<secret>``: the site names the partition to look in, the secret
(32 random bytes, base64url) is stored only as its SHA-256. It lives ``TICKET_SECONDS`` and
is deleted when redeemed (``DELETE ... RETURNING``: two handshakes racing with one ticket get
one row between them). It carries the principal's ids, never a credential, and the
collections the principal could read when it was minted. At redemption the principal is read
again (``accounts.api.principal_current``): a suspended user, a revoked session or a deleted
API key is refused. The ticket itself is never logged nor stored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import secrets
from typing import Any

from sqlalchemy import delete

from kernel import ApiError, Principal, TicketGrant
from kernel.db.meta import aware, iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.accounts import api as accounts_api
from plugins.realtime.tables import tickets

PREFIX = "rt1"
TICKET_SECONDS = 60
ALL = "*"
STUDIO, AUDIENCE = "studio", "audience"
_TICKET = re.compile(r"^rt1\.([a-z0-9][a-z0-9_-]{0,62})\.([A-Za-z0-9_-]{43})$")


def token_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def readable_collections(kernel: Any, principal: Principal, site_id: str) -> list[str]:
    """The collections ``principal`` may read in the site: ``["*"]`` for all (admin access, or
    a read rule on ``*``), else the names of its read rules (a rule with conditions counts:
    events are signals, the re-fetch applies the conditions)."""
    if principal.is_admin:
        return [ALL]
    snapshot = await kernel.access.snapshot(principal, site_id)
    if snapshot.admin:
        return [ALL]
    names = {rule.collection for rule in snapshot.rules if rule.action == "read"}
    return [ALL] if ALL in names else sorted(names)


async def mint(kernel: Any, site_id: str, principal: Principal, audience: str) -> dict[str, Any]:
    """A new ticket for ``principal`` in ``site_id``: ``{ ticket, expiresAt }``."""
    secret = secrets.token_urlsafe(32)
    expires = now_utc() + dt.timedelta(seconds=TICKET_SECONDS)
    collections = await readable_collections(kernel, principal, site_id)
    async with kernel.db.begin() as conn:
        db = SiteDB(site_id, conn)
        # Expired tickets of the site go with each mint: the table stays small without a job.
        await db.execute(db.delete(tickets).where(tickets.c.expires_at < now_utc()))
        await db.insert(tickets, {"token_hash": token_hash(secret), "audience": audience,
                                  "principal": accounts_api.principal_record(principal),
                                  "collections": collections, "expires_at": expires})
    return {"ticket": f"{PREFIX}.{site_id}.{secret}", "expiresAt": iso(expires)}


async def redeem(kernel: Any, ticket: str, request: Any) -> TicketGrant | None:
    """The grant of a ticket this plugin minted (``None`` for a foreign one); 401 when it is
    unknown, used, expired, or its principal is no longer allowed. Stores the ticket's audience
    and collections on ``request.context.realtime``."""
    if not ticket.startswith(PREFIX + "."):
        return None
    found = _TICKET.match(ticket)
    if found is None:
        raise ApiError.unauthenticated("The ticket is not valid or has expired")
    site_id, secret = found.groups()
    async with kernel.db.begin() as conn:
        db = SiteDB(site_id, conn)
        stmt = db.scope(delete(tickets).where(tickets.c.token_hash == token_hash(secret))
                        .returning(tickets.c.audience, tickets.c.principal, tickets.c.collections,
                                   tickets.c.expires_at), tickets)
        row = (await db.execute(stmt)).mappings().first()
    if row is None or aware(row["expires_at"]) <= now_utc():
        raise ApiError.unauthenticated("The ticket is not valid or has expired")
    principal = await accounts_api.principal_current(kernel, site_id, row["principal"])
    if principal is None:
        raise ApiError.unauthenticated("The ticket's session or user is no longer valid")
    request.context.realtime = {"audience": row["audience"], "collections": list(row["collections"])}
    return TicketGrant(site_id, principal)

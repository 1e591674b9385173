"""The suppression list and unsubscribing: who a site's marketing mail never goes to.

Addresses are kept lower-cased (suppression compares ignoring case). An admin adds and removes
entries (audited ``email_suppressed`` and ``email_unsuppressed``); a recipient unsubscribes with
the token of their message (audited ``email_unsubscribed``) and may undo a mistaken click with
the same token (``email_unsuppressed``), which only lifts a suppression that token created:
an admin's entry stays. Audit records name a keyed hash of the address, never the address.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Any

from sqlalchemy import func

from kernel import ApiError
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from kernel.tenancy.service import get_site_cached
from plugins.email import addresses, tokens
from plugins.email.tables import suppressions

MAX_REASON = 300
SOURCES = ("admin", "unsubscribe")


def record(row: Any) -> dict[str, Any]:
    return {"email": row["email"], "reason": row["reason"], "source": row["source"],
            "createdAt": iso(row["created_at"])}


def audit_target(kernel: Any, email: str) -> str:
    key = kernel.settings.resolved_jwt_secret().encode()
    return hmac.new(key, b"svc.email.audit:" + email.encode(), hashlib.sha256).hexdigest()[:32]


async def suppressed_among(db: Any, emails: list[str]) -> set[str]:
    """The lower-cased addresses of ``emails`` that are suppressed in ``db``'s site."""
    wanted = sorted({e.lower() for e in emails})
    found: set[str] = set()
    for start in range(0, len(wanted), 500):
        chunk = wanted[start:start + 500]
        rows = await db.all(db.select(suppressions, suppressions.c.email).where(suppressions.c.email.in_(chunk)))
        found.update(r["email"] for r in rows)
    return found


async def list_page(ctx: Any, limit: int, offset: int, search: str | None) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        where = []
        if search:
            where.append(suppressions.c.email.contains(search.lower(), autoescape=True))
        rows = await db.all(db.select(suppressions).where(*where).order_by(suppressions.c.email)
                            .limit(limit).offset(offset))
        total = await db.scalar(db.select(suppressions, func.count()).where(*where))
    return [record(r) for r in rows], int(total or 0)


async def _row(db: Any, email: str) -> Any:
    return await db.one(db.select(suppressions).where(suppressions.c.email == email))


async def add(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Suppress ``email`` (201); 409 ``CONFLICT`` when it already is."""
    reject_unknown(body, {"email", "reason"})
    email = addresses.bare(addresses.check_one(body.get("email"), ["email"]))
    reason = body.get("reason")
    if reason is not None and (not isinstance(reason, str) or len(reason) > MAX_REASON):
        raise ApiError.validation(f"'reason' is a string of at most {MAX_REASON} characters", path=["reason"])
    async with ctx.unit_of_work() as uow:
        if await _row(uow.db, email) is not None:
            raise ApiError.conflict("This address is already suppressed")
        await uow.db.insert(suppressions, {"email": email, "reason": reason, "source": "admin",
                                           "created_at": now_utc()})
        await audit.record(uow.conn, action="email_suppressed", site_id=uow.site_id, principal=ctx.principal,
                           target_type="email_address", target_id=audit_target(ctx.kernel, email),
                           details={"source": "admin"}, request_id=ctx.request_id, ip=ctx.client_ip)
        return record(await _row(uow.db, email))


async def remove(ctx: Any, raw_email: str) -> None:
    """Lift a suppression; 404 ``RECORD_NOT_FOUND`` when the address is not suppressed."""
    email = raw_email.strip().lower()
    async with ctx.unit_of_work() as uow:
        if not email or len(email) > addresses.MAX_ADDRESS_CHARS or await _row(uow.db, email) is None:
            raise ApiError(404, "RECORD_NOT_FOUND", "This address is not suppressed in this site")
        await uow.db.execute(uow.db.delete(suppressions).where(suppressions.c.email == email))
        await audit.record(uow.conn, action="email_unsuppressed", site_id=uow.site_id, principal=ctx.principal,
                           target_type="email_address", target_id=audit_target(ctx.kernel, email),
                           details={"source": "admin"}, request_id=ctx.request_id, ip=ctx.client_ip)


async def _token_site(ctx: Any, token: Any) -> tuple[str, str]:
    """The (site, address) of an unsubscribe token, bound to the request's site if it names one."""
    site_id, email = tokens.verify(ctx.kernel.settings.resolved_jwt_secret(), token)
    if ctx.site_id is not None and ctx.site_id != site_id:
        raise tokens.invalid()  # a token of site A presented to site B: never acted on in B
    if await get_site_cached(ctx.kernel, site_id) is None:
        raise tokens.invalid()
    return site_id, email


async def unsubscribe(ctx: Any, token: Any, *, method: str) -> dict[str, Any]:
    """Suppress the token's address in the token's site; idempotent. ``{ email, siteId, changed }``."""
    site_id, email = await _token_site(ctx, token)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        changed = await _row(uow.db, email) is None
        if changed:
            await uow.db.insert(suppressions, {"email": email, "reason": f"unsubscribed ({method})",
                                               "source": "unsubscribe", "created_at": now_utc()})
            await audit.record(uow.conn, action="email_unsubscribed", site_id=site_id, principal=ctx.principal,
                               target_type="email_address", target_id=audit_target(ctx.kernel, email),
                               details={"method": method}, request_id=ctx.request_id, ip=ctx.client_ip)
    return {"email": email, "siteId": site_id, "changed": changed}


async def resubscribe(ctx: Any, token: Any) -> dict[str, Any]:
    """Undo an unsubscribe made with this token's address (not an admin's suppression)."""
    site_id, email = await _token_site(ctx, token)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _row(uow.db, email)
        changed = row is not None and row["source"] == "unsubscribe"
        if changed:
            await uow.db.execute(uow.db.delete(suppressions).where(suppressions.c.email == email))
            await audit.record(uow.conn, action="email_unsuppressed", site_id=site_id, principal=ctx.principal,
                               target_type="email_address", target_id=audit_target(ctx.kernel, email),
                               details={"source": "unsubscribe-undo"}, request_id=ctx.request_id,
                               ip=ctx.client_ip)
    return {"email": email, "siteId": site_id, "changed": changed, "suppressed": row is not None and not changed}

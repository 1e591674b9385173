"""Consent records and restriction of processing: the routes' logic and the hook answers.

A consent record is per (site, user, type) (docs/privacy.md, Consent); PUT keeps
``grantedAt`` (the last time it went from not granted to granted) and ``withdrawnAt`` (the last
time it went from granted to not granted), and is audited ``consent_granted`` or
``consent_withdrawn`` on every decision. Only user principals decide (API keys are 403, spec
Authentication 12). What other plugins read (``consent_state``, ``processing_restricted``,
``marketing_excluded``) comes from the ``privacy_subjects`` site cache, dropped for the site on
every change (``privacy.changed``), so a beacon costs a dict lookup.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError, SiteCacheSpec
from kernel.db.meta import iso, now_utc
from kernel.http.media import body_field, reject_unknown
from kernel.policy.audit import record as audit
from kernel.policy.privacy import CONSENT_TYPES
from kernel.tenancy.scope import SiteDB
from plugins.accounts.api import members_by_email
from plugins.privacy.tables import consents, restrictions

CHANGED = "privacy.changed"
SUBJECTS = SiteCacheSpec("privacy_subjects", max_entries=50_000, ttl=60.0, invalidate_on=(CHANGED,),
                         doc="Consent decisions and restriction per (site, user), read by pageviews and email.")
MAX_REASON = 500


def user_of(principal: Any) -> str:
    """The caller's user id; 403 for an API key (or any principal that is not a user)."""
    if principal.kind not in ("user", "external") or not principal.user_id:
        raise ApiError.forbidden("Consent and restriction belong to users; an API key cannot decide them",
                                 reason="user_principal_required")
    return principal.user_id


def deciding_user(principal: Any) -> str:
    """The caller's user id for an act of the data subject's own (consent, restriction, the data
    export): 403 for an impersonation session too (an admin acting as the user may read the
    site's consents and restriction, never decide them or export the user's data)."""
    user_id = user_of(principal)
    if principal.impersonator_id:
        raise ApiError.forbidden("Consent, restriction and the data export are the user's own, not an "
                                 "impersonator's", reason="impersonation")
    return user_id


def consent_record(row: Any) -> dict[str, Any]:
    return {"consentType": row["consent_type"], "granted": bool(row["granted"]),
            "grantedAt": iso(row["granted_at"]), "withdrawnAt": iso(row["withdrawn_at"]),
            "source": row["source"], "version": row["version"], "updatedAt": iso(row["updated_at"])}


def _undecided(kind: str) -> dict[str, Any]:
    return {"consentType": kind, "granted": False, "grantedAt": None, "withdrawnAt": None,
            "source": None, "version": None, "updatedAt": None}


async def list_consents(db: SiteDB, user_id: str) -> list[dict[str, Any]]:
    """Every consent type, in the spec's order; a type never decided is ``granted: false`` with
    null timestamps."""
    rows = {r["consent_type"]: r for r in await db.all(db.select(consents).where(consents.c.user_id == user_id))}
    return [consent_record(rows[k]) if k in rows else _undecided(k) for k in CONSENT_TYPES]


def parse_consent(kind: str, body: dict[str, Any]) -> tuple[bool, str, str]:
    if kind not in CONSENT_TYPES:
        raise ApiError.not_found(f"Unknown consent type (one of {', '.join(CONSENT_TYPES)})")
    reject_unknown(body, {"granted", "source", "version"})
    granted = body_field(body, "granted", bool)
    source = body_field(body, "source", str, max_length=200)
    version = body_field(body, "version", str, max_length=100)
    if not source.strip():
        raise ApiError.validation("'source' must not be empty", path=["source"])
    if not version.strip():
        raise ApiError.validation("'version' must not be empty", path=["version"])
    return granted, source, version


async def put_consent(ctx: Any, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """Record one decision; audited ``consent_granted`` / ``consent_withdrawn``."""
    user_id = deciding_user(ctx.principal)
    granted, source, version = parse_consent(kind, body)
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        where = (consents.c.user_id == user_id, consents.c.consent_type == kind)
        row = await db.one(db.select(consents).where(*where))
        was = bool(row["granted"]) if row is not None else False
        values = {"granted": granted, "source": source, "version": version, "updated_at": now,
                  "granted_at": row["granted_at"] if row is not None else None,
                  "withdrawn_at": row["withdrawn_at"] if row is not None else None}
        if granted and not was:
            values["granted_at"] = now
        if was and not granted:
            values["withdrawn_at"] = now
        if row is None:
            await db.insert(consents, {"user_id": user_id, "consent_type": kind, **values})
        else:
            await db.execute(db.update(consents).where(*where).values(**values))
        await audit(uow.conn, action="consent_granted" if granted else "consent_withdrawn", site_id=uow.site_id,
                    principal=ctx.principal, target_type="consent", target_id=f"{user_id}:{kind}",
                    details={"consentType": kind, "source": source, "version": version},
                    ip=ctx.client_ip, request_id=ctx.request_id)
        uow.action(CHANGED, {"siteId": uow.site_id})
        row = await db.one(db.select(consents).where(*where))
    return consent_record(row)


def restriction_record(row: Any) -> dict[str, Any]:
    if row is None:
        return {"restricted": False}
    out: dict[str, Any] = {"restricted": bool(row["restricted"])}
    if row["reason"] is not None:
        out["reason"] = row["reason"]
    return out


async def get_restriction(db: SiteDB, user_id: str) -> dict[str, Any]:
    return restriction_record(await db.one(db.select(restrictions).where(restrictions.c.user_id == user_id)))


async def put_restriction(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Set or lift the restriction; audited ``processing_restricted`` / ``processing_unrestricted``
    (the reason is the user's own words: it is stored, never put in the audit record)."""
    user_id = deciding_user(ctx.principal)
    reject_unknown(body, {"restricted", "reason"})
    restricted = body_field(body, "restricted", bool)
    reason = body_field(body, "reason", str, required=False, max_length=MAX_REASON)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        where = restrictions.c.user_id == user_id
        values = {"restricted": restricted, "reason": reason if restricted else None, "updated_at": now_utc()}
        if await db.one(db.select(restrictions, restrictions.c.user_id).where(where)) is None:
            await db.insert(restrictions, {"user_id": user_id, **values})
        else:
            await db.execute(db.update(restrictions).where(where).values(**values))
        await audit(uow.conn, action="processing_restricted" if restricted else "processing_unrestricted",
                    site_id=uow.site_id, principal=ctx.principal, target_type="user", target_id=user_id,
                    ip=ctx.client_ip, request_id=ctx.request_id)
        uow.action(CHANGED, {"siteId": uow.site_id})
        return await get_restriction(db, user_id)


# ---------------------------------------------------------------------- what other plugins read


async def subject_state(kernel: Any, site_id: str, user_id: str) -> tuple[frozenset[str], bool]:
    """``(granted consent types, restricted)`` of a user in a site, from the site cache."""
    async def load(stale: Any) -> tuple[frozenset[str], bool]:
        async with kernel.db.connect() as conn:
            db = SiteDB(site_id, conn)
            granted = frozenset(r["consent_type"] for r in await db.all(db.select(
                consents, consents.c.consent_type).where(consents.c.user_id == user_id, consents.c.granted.is_(True))))
            row = await db.one(db.select(restrictions, restrictions.c.restricted).where(
                restrictions.c.user_id == user_id))
        return granted, bool(row["restricted"]) if row is not None else False

    return await kernel.site_caches[SUBJECTS.name].get_or_load(site_id, user_id, load)


async def excluded_addresses(kernel: Any, site_id: str, emails: list[str]) -> set[str]:
    """The addresses of ``emails`` that belong to members of the site who did not grant
    ``marketing`` or who restricted processing (lower-cased)."""
    out: set[str] = set()
    async with kernel.db.connect() as conn:
        for row in await members_by_email(SiteDB(site_id, conn), emails):
            granted, restricted = await subject_state(kernel, site_id, row["id"])
            if restricted or "marketing" not in granted:
                out.add(row["email"])
    return out

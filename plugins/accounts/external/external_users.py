"""Local users behind external identities: the (issuer, subject) link and JIT provisioning.

With ``jitProvisioning`` the first verified token of a subject creates (or links) a global
identity and its membership of the site; later tokens find it through
``svc_external_identities``. The identity provider stays the source of truth for the role:
when a token maps to another role than the membership holds, the membership follows.

Linking to an identity that already exists (same email) is deliberately narrow, because an
identity provider asserting an email is not proof of owning that account: the identity must
already be a member of this site (an admin put it there), have no password, and not be the
instance admin. Anything else is 403 ``PERMISSION_DENIED`` with reason ``identity_conflict``.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from kernel.auth.principal import Principal
from kernel.base.errors import ApiError
from kernel.db.meta import now_utc
from kernel.policy.audit import record as audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts import service
from plugins.accounts.tables import external_identities, users
from plugins.accounts.users import membership

log = logging.getLogger("svc.accounts.external")


async def _link(conn: Any, site_id: str, issuer_id: str, subject: str) -> Any:
    db = SiteDB(site_id, conn)
    stmt = (select(external_identities.c.user_id, users.c.status)
            .select_from(external_identities.join(users, users.c.id == external_identities.c.user_id))
            .where(external_identities.c.issuer_id == issuer_id, external_identities.c.subject == subject))
    return await db.one(db.scope(stmt, external_identities))


def _check_active(status: str) -> None:
    if status != "active":
        raise ApiError.unauthenticated("The account linked to this token is not active")


async def linked_user(kernel: Any, site_id: str, issuer_id: str, subject: str) -> str | None:
    """The local user linked to (issuer, subject), if any (tokens of issuers without JIT)."""
    async with kernel.db.connect() as conn:
        link = await _link(conn, site_id, issuer_id, subject)
    if link is None:
        return None
    _check_active(link["status"])
    return link["user_id"]


async def provision(kernel: Any, site_id: str, issuer_row: Any, subject: str, email: str | None,
                    role_id: str) -> str:
    """The local user of (issuer, subject), created or linked on first sight; its membership
    of the site is brought to ``role_id``. Reads only, unless something must change."""
    async with kernel.db.connect() as conn:
        link = await _link(conn, site_id, issuer_row["id"], subject)
        if link is not None:
            _check_active(link["status"])
            member = await access_api.membership(conn, site_id, link["user_id"])
            if member is not None and member["role_id"] == role_id:
                return link["user_id"]
    try:
        return await _provision_in_transaction(kernel, site_id, issuer_row, subject, email, role_id)
    except IntegrityError:
        # Two first requests of one subject raced; the other one's rows are there now.
        log.info("JIT provisioning raced for issuer %s; retrying once", issuer_row["id"])
        return await _provision_in_transaction(kernel, site_id, issuer_row, subject, email, role_id)


def _email_of(email: str | None) -> str:
    if email is None:
        raise ApiError.unauthenticated("Just-in-time provisioning needs the token's email claim")
    try:
        return service.normalise_email(email)
    except ApiError as exc:
        raise ApiError.unauthenticated("The token's email claim is not an email address") from exc


async def _existing_identity(conn: Any, site_id: str, email: str) -> str | None:
    """The id of an identity with ``email`` that may be linked, None when there is none, or 403."""
    row = (await conn.execute(select(users).where(users.c.email == email))).mappings().first()
    if row is None:
        return None
    linkable = (not row["password_hash"] and not row["is_instance_admin"]
                and await access_api.membership(conn, site_id, row["id"]) is not None)
    if not linkable:
        raise ApiError.forbidden("An account with this email already exists and cannot be linked to the "
                                 "external identity automatically", reason="identity_conflict")
    _check_active(row["status"])
    return row["id"]


async def _provision_in_transaction(kernel: Any, site_id: str, issuer_row: Any, subject: str,
                                    email: str | None, role_id: str) -> str:
    async with kernel.unit_of_work(site_id) as uow:
        conn = uow.conn
        link = await _link(conn, site_id, issuer_row["id"], subject)
        actor = None
        if link is not None:
            _check_active(link["status"])
            user_id = link["user_id"]
            actor = Principal(kind="external", user_id=user_id, site_id=site_id)
        else:
            address = _email_of(email)
            existing = await _existing_identity(conn, site_id, address)
            user_id = existing or await service.create_user(kernel, conn, email=address, password=None,
                                                            status="active")
            await uow.db.insert(external_identities, {"issuer_id": issuer_row["id"], "subject": subject,
                                                      "user_id": user_id, "created_at": now_utc()})
            actor = Principal(kind="external", user_id=user_id, site_id=site_id)
            await audit(conn, action="user.provisioned" if existing is None else "external_identity.linked",
                        site_id=site_id, principal=actor, target_type="user", target_id=user_id,
                        details={"issuerId": issuer_row["id"], "issuer": issuer_row["issuer"]})
        member = await access_api.membership(conn, site_id, user_id)
        if member is None or member["role_id"] != role_id:
            await membership.set_membership(conn, site_id, user_id, role_id)
            await audit(conn, action="membership.synced", site_id=site_id, principal=actor,
                        target_type="user", target_id=user_id,
                        details={"roleId": role_id, "previousRoleId": member["role_id"] if member else None,
                                 "issuerId": issuer_row["id"]})
            access_api.changed(uow)
    return user_id

"""Trusted external issuers of a site: list, get, register, update, remove.

No HTTP here: routes, the CLI or flows call these with a unit of work. Every write checks
the config (``issuer_config``), checks that the roles it names belong to this site, writes an
audit record in the same transaction, queues ``access.changed`` (the role mapping decides
which role external principals get) and drops the issuer's cached signing keys after commit.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.policy.audit import record as audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts.external import jwks
from plugins.accounts.external.issuer_config import check_create_body, merge_patch, normalise_config
from plugins.accounts.tables import external_identities, external_logins, issuers

# Ids are UUIDs; anything else cannot name an issuer, so it is a 404 without a query.
_ID = re.compile(r"^[0-9A-Za-z-]{1,36}$")
AUDIT_TARGET = "issuer"
# The OpenID Connect client secret: sealed with kernel.secrets in the stored config under
# SEALED_SECRET, answered only as ``hasClientSecret`` (docs/decisions/external-issuers.md).
SEALED_SECRET = "clientSecretSealed"
SECRET_PURPOSE = "accounts.issuer.client_secret"


def issuer_record(row: Any) -> dict[str, Any]:
    """The API shape: the stored config (never the sealed secret) plus id, issuer, enabled,
    ``hasClientSecret`` and timestamps."""
    config = dict(row["config"] or {})
    sealed = config.pop(SEALED_SECRET, None)
    return {
        "id": row["id"], **config, "issuer": row["issuer"], "enabled": bool(row["enabled"]),
        "hasClientSecret": bool(sealed),
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }


def _stored(config: dict[str, Any]) -> dict[str, Any]:
    """What goes in the ``config`` column: everything but the columns of their own."""
    return {k: v for k, v in config.items() if k not in ("issuer", "enabled")}


def _seal_secret(uow: Any, config: dict[str, Any], plain: str | None, kept: str | None) -> dict[str, Any]:
    """``config`` as stored: the plain secret (if given) sealed for this site, else ``kept``."""
    sealed = uow.kernel.secrets.seal(uow.db.site_id, plain, purpose=SECRET_PURPOSE) if plain else kept
    if sealed and not config.get("clientId"):
        raise ApiError.validation("'clientSecret' needs 'clientId'", path=["clientSecret"], status=422)
    return {**_stored(config), **({SEALED_SECRET: sealed} if sealed else {})}


def open_client_secret(kernel: Any, site_id: str, config: dict[str, Any]) -> str | None:
    """The plain client secret of a stored issuer config, or None (raises ``SecretError`` or 400
    ``ENCRYPTION_KEY_REQUIRED`` when it cannot be opened)."""
    sealed = config.get(SEALED_SECRET)
    return kernel.secrets.open(site_id, sealed, purpose=SECRET_PURPOSE) if sealed else None


def _not_found(issuer_id: str) -> ApiError:
    # The spec's area table names NOT_FOUND (not RECORD_NOT_FOUND) for issuers.
    return ApiError.not_found(f"No trusted issuer '{issuer_id[:40]}' in this site")


def _duplicate(issuer: str) -> ApiError:
    return ApiError.conflict(f"The issuer '{issuer[:100]}' is already trusted by this site",
                             code="ISSUER_ALREADY_EXISTS")


async def _check_roles(conn: Any, site_id: str, config: dict[str, Any]) -> None:
    """Every ``roleId`` must be a role of this site; the default role must not grant admin.

    A default role applies to tokens whose roles map to nothing, so an admin default would be
    the "implicit admin" the spec forbids; admin is only ever reached through ``roleMapping``.
    """
    for claim_role, target in config["roleMapping"].items():
        if "roleId" in target and await access_api.role_in_site(conn, site_id, target["roleId"]) is None:
            raise ApiError.validation(f"Role '{target['roleId']}' is not a role of this site",
                                      path=["roleMapping", claim_role, "roleId"], status=422)
    if config["defaultRoleId"] is not None:
        role = await access_api.role_in_site(conn, site_id, config["defaultRoleId"])
        if role is None:
            raise ApiError.validation(f"Role '{config['defaultRoleId']}' is not a role of this site",
                                      path=["defaultRoleId"], status=422)
        if role["admin_access"]:
            raise ApiError.validation("'defaultRoleId' must not be a role with admin access; map admin "
                                      "explicitly in 'roleMapping'", path=["defaultRoleId"], status=422)


async def _get_row(db: SiteDB, issuer_id: str) -> Any:
    if not isinstance(issuer_id, str) or not _ID.match(issuer_id):
        raise _not_found(str(issuer_id))
    row = await db.one(db.select(issuers).where(issuers.c.id == issuer_id))
    if row is None:
        raise _not_found(issuer_id)
    return row


async def _issuer_taken(db: SiteDB, issuer: str, except_id: str | None = None) -> bool:
    stmt = db.select(issuers, issuers.c.id).where(issuers.c.issuer == issuer)
    if except_id is not None:
        stmt = stmt.where(issuers.c.id != except_id)
    return await db.one(stmt) is not None


def _after_change(uow: Any, issuer_id: str) -> None:
    access_api.changed(uow)
    uow.after_commit(lambda: jwks.forget(uow.kernel, issuer_id))


async def list_issuers(db: SiteDB, *, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """A page of the site's issuers (by issuer, then id) and the total."""
    stmt = db.select(issuers).order_by(issuers.c.issuer, issuers.c.id).limit(limit).offset(offset)
    rows = await db.all(stmt)
    total = await db.scalar(db.select(issuers, func.count()))
    return [issuer_record(r) for r in rows], int(total or 0)


async def get_issuer(db: SiteDB, issuer_id: str) -> dict[str, Any]:
    return issuer_record(await _get_row(db, issuer_id))


async def create_issuer(uow: Any, body: Any, *, ip: str | None = None) -> dict[str, Any]:
    """Register an issuer; 422 on a bad config, 409 ``ISSUER_ALREADY_EXISTS`` on a duplicate."""
    config = normalise_config(check_create_body(body))
    db = uow.db
    stored = _seal_secret(uow, config, config.pop("clientSecret"), None)
    await _check_roles(uow.conn, db.site_id, config)
    if await _issuer_taken(db, config["issuer"]):
        raise _duplicate(config["issuer"])
    issuer_id, now = uuid7(), now_utc()
    # No savepoint around the insert: an IntegrityError aborts the whole unit of work anyway.
    try:
        await db.insert(issuers, {"id": issuer_id, "issuer": config["issuer"], "config": stored,
                                  "enabled": config["enabled"], "created_at": now, "updated_at": now})
    except IntegrityError as exc:  # a concurrent registration of the same issuer won the race
        raise _duplicate(config["issuer"]) from exc
    await audit(uow.conn, action="issuer.create", site_id=db.site_id, principal=uow.principal,
                target_type=AUDIT_TARGET, target_id=issuer_id, ip=ip, request_id=uow.request_id,
                details={"issuer": config["issuer"], "enabled": config["enabled"],
                         "jitProvisioning": config["jitProvisioning"]})
    _after_change(uow, issuer_id)
    return issuer_record(await _get_row(db, issuer_id))


async def update_issuer(uow: Any, issuer_id: str, patch: Any, *, ip: str | None = None) -> dict[str, Any]:
    """Merge ``patch`` onto the stored config and re-validate the whole result."""
    db = uow.db
    row = await _get_row(db, issuer_id)
    current = issuer_record(row)
    base = {k: v for k, v in current.items() if k not in ("id", "createdAt", "updatedAt", "hasClientSecret")}
    config = normalise_config(merge_patch(base, patch))
    replaced = isinstance(patch, dict) and "clientSecret" in patch  # null clears it
    stored = _seal_secret(uow, config, config.pop("clientSecret"),
                          None if replaced else (row["config"] or {}).get(SEALED_SECRET))
    await _check_roles(uow.conn, db.site_id, config)
    if config["issuer"] != row["issuer"] and await _issuer_taken(db, config["issuer"], except_id=issuer_id):
        raise _duplicate(config["issuer"])
    try:
        await db.execute(db.update(issuers).where(issuers.c.id == issuer_id).values(
            issuer=config["issuer"], config=stored, enabled=config["enabled"], updated_at=now_utc()))
    except IntegrityError as exc:
        raise _duplicate(config["issuer"]) from exc
    if config["issuer"] != row["issuer"]:
        # Subjects are only unique within one issuer: links made under the old issuer must not
        # let the new one's subjects sign in as those users.
        await db.execute(db.delete(external_identities).where(external_identities.c.issuer_id == issuer_id))
    changed = sorted([k for k in config if config[k] != base.get(k)] + (["clientSecret"] if replaced else []))
    # Field names only: audit records never carry the values (URLs, audiences) themselves.
    await audit(uow.conn, action="issuer.update", site_id=db.site_id, principal=uow.principal,
                target_type=AUDIT_TARGET, target_id=issuer_id, ip=ip, request_id=uow.request_id,
                details={"issuer": config["issuer"], "changed": changed, "enabled": config["enabled"]})
    _after_change(uow, issuer_id)
    return issuer_record(await _get_row(db, issuer_id))


async def delete_issuer(uow: Any, issuer_id: str, *, ip: str | None = None) -> None:
    """Remove an issuer; its external identities go with it (the users themselves stay)."""
    db = uow.db
    row = await _get_row(db, issuer_id)
    # Explicit, not only ON DELETE CASCADE: the links must go even where FKs are not enforced.
    await db.execute(db.delete(external_identities).where(external_identities.c.issuer_id == issuer_id))
    await db.execute(db.delete(external_logins).where(external_logins.c.issuer_id == issuer_id))
    await db.execute(db.delete(issuers).where(issuers.c.id == issuer_id))
    await audit(uow.conn, action="issuer.delete", site_id=db.site_id, principal=uow.principal,
                target_type=AUDIT_TARGET, target_id=issuer_id, ip=ip, request_id=uow.request_id,
                details={"issuer": row["issuer"]})
    _after_change(uow, issuer_id)


async def find_enabled(conn: Any, site_id: str, issuer: str) -> Any:
    """The enabled issuer ``issuer`` of ``site_id``, or None (the auth chain's lookup)."""
    db = SiteDB(site_id, conn)
    return await db.one(db.select(issuers).where(issuers.c.issuer == issuer, issuers.c.enabled.is_(True)))

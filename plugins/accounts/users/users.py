"""Site user administration: the members of one site, their role there, and (within limits)
their identity. No HTTP here; ``routes_users`` calls these with the request's context.

Tenancy: a user is visible in a site only through a membership row of that site, so every
lookup joins access's ``members(db)`` (a query of that site's members, built by access); a member of site B is 404 in site A.
Identities are global, so a site admin may change identity fields (email, password, status,
names, avatar) only of a person who belongs to no other site; otherwise one site's admin
could take over or lock out another site's user. The instance admin may change anyone.
Decisions: docs/decisions/user-admin.md.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.auth.usercache import users_changed
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts import identity, service
from plugins.accounts.tables import users
from plugins.accounts.users import membership

NAME_COLUMNS = {"firstName": "first_name", "lastName": "last_name"}
# Through this admin route, nobody changes their own role, and their own sign-in secrets only
# through /me (which asks for the current password).
SELF_FORBIDDEN = {"roleId", "email", "password", "status"}


def user_record(row: Any) -> dict[str, Any]:
    """``{ id, email, firstName, lastName, avatar, status, roleId }``; never the hash."""
    return {"id": row["id"], "email": row["email"], "firstName": row["first_name"],
            "lastName": row["last_name"], "avatar": row["avatar"], "status": row["status"],
            "roleId": row["role_id"]}


def _joined(db: SiteDB) -> tuple[Any, Any]:
    """The site's members (access's ``members``) and their join with the global identities."""
    members = access_api.members(db)
    return members, users.join(members, members.c.user_id == users.c.id)


def _members(db: SiteDB, pair: tuple[Any, Any] | None = None) -> Any:
    """Every member's identity row with its ``role_id`` (over ``pair``, a ``_joined(db)``)."""
    members, joined = pair or _joined(db)
    return db.scope(select(users, members.c.role_id).select_from(joined))


async def members_by_email(db: SiteDB, emails: Any) -> list[dict[str, str]]:
    """``[{ id, email }]`` (the address lower-cased) of the members of ``db``'s site whose address
    is one of ``emails``, compared in lower case (other values are ignored)."""
    wanted = sorted({e.lower() for e in emails if isinstance(e, str)})
    _, joined = _joined(db)
    out = []
    for start in range(0, len(wanted), 500):
        rows = await db.all(db.scope(select(users.c.id, func.lower(users.c.email).label("email")).select_from(joined)
                                     .where(func.lower(users.c.email).in_(wanted[start:start + 500]))))
        out += [{"id": r["id"], "email": r["email"]} for r in rows]
    return out


async def active_members(db: SiteDB, limit: int) -> list[dict[str, Any]]:
    """The first ``limit`` active members of ``db``'s site by address: ``[{ id, email, firstName,
    lastName, isInstanceAdmin }]``."""
    _, joined = _joined(db)
    rows = await db.all(db.scope(select(users.c.id, users.c.email, users.c.first_name, users.c.last_name,
                                        users.c.is_instance_admin).select_from(joined))
                        .where(users.c.status == "active").order_by(users.c.email).limit(limit))
    return [{"id": r["id"], "email": r["email"], "firstName": r["first_name"], "lastName": r["last_name"],
             "isInstanceAdmin": bool(r["is_instance_admin"])} for r in rows]


async def list_users(db: SiteDB, *, status: str | None = None, role_id: str | None = None,
                     search: str | None = None, limit: int = 25, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    """One page of the site's members (by email) and the total matching the filters."""
    members, joined = _joined(db)
    where = []
    if status is not None:
        where.append(users.c.status == identity.check_status(status))
    if role_id is not None:
        where.append(members.c.role_id == role_id)
    if search:
        pattern = "%" + search.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
        where.append(or_(*(func.lower(c).like(pattern, escape="\\")
                           for c in (users.c.email, users.c.first_name, users.c.last_name))))
    rows = await db.all(_members(db, (members, joined)).where(*where).order_by(users.c.email).limit(limit)
                        .offset(offset))
    total = await db.scalar(db.scope(select(func.count()).select_from(joined)).where(*where))
    return [user_record(r) for r in rows], int(total or 0)


async def get_member(db: SiteDB, user_id: str) -> Any:
    """The member row (identity plus ``role_id``), or 404 ``RECORD_NOT_FOUND``."""
    row = None
    if service.clean_id(user_id) is not None:
        row = await db.one(_members(db).where(users.c.id == user_id))
    if row is None:
        raise ApiError.not_found("No such user in this site", code="RECORD_NOT_FOUND")
    return row


async def role_id_for(conn: Any, site_id: str, value: Any, default: str = "subscriber") -> str:
    """``roleId`` if it is a role of this site, the ``default`` system role when absent; else 400."""
    if value is None:
        role = await access_api.role_by_system_key(conn, site_id, default)
        if role is None:  # the built-in roles are seeded with the site; guard a damaged site anyway
            raise ApiError.conflict(f"This site has no built-in '{default}' role")
        return str(role["id"])
    role = await access_api.role_in_site(conn, site_id, service.clean_id(value))
    if role is None:
        raise ApiError.validation("'roleId' is not a role of this site", path=["roleId"])
    return str(role["id"])


def guard_instance_admin(principal: Any, row: Any) -> None:
    if row["is_instance_admin"] and not principal.is_instance_admin:
        raise ApiError.forbidden("Only the instance admin can change the instance admin")


async def _shared(conn: Any, site_id: str, user_id: str) -> bool:
    return await access_api.member_elsewhere(conn, site_id, user_id)


async def audit_user(uow: Any, ctx: Any, action: str, user_id: str, details: dict[str, Any] | None = None) -> None:
    """One audit record about ``user_id``, in the unit of work of the change it describes."""
    await audit.record(uow.conn, action=action, site_id=ctx.site_id, principal=ctx.principal,
                       target_type="user", target_id=user_id, details=details, ip=ctx.client_ip or None,
                       request_id=ctx.request_id)


async def create_user(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Create the identity, or add an existing one to this site (its own fields untouched);
    409 ``CONFLICT`` when it is already a member."""
    site_id = ctx.require_site()
    email = identity.check_email(body.get("email"))
    password = body.get("password")
    password_hash = await identity.hash_password(identity.check_password(password)) if password is not None else None
    status = identity.check_status(body.get("status", "active"))
    first, last = identity.check_text(body, "firstName"), identity.check_text(body, "lastName")
    try:
        async with ctx.unit_of_work() as uow:
            role_id = await role_id_for(uow.conn, site_id, body.get("roleId"))
            row = await identity.identity_by_email(uow.conn, email)
            if row is None:
                user_id = await identity.insert_identity(uow.conn, email=email, password_hash=password_hash,
                                                         status=status, first_name=first, last_name=last)
            else:
                guard_instance_admin(ctx.principal, row)
                user_id = row["id"]
                if await access_api.membership(uow.conn, site_id, user_id) is not None:
                    raise ApiError.conflict("This user is already a member of the site")
            await membership.set_membership(uow.conn, site_id, user_id, role_id)
            access_api.changed(uow)
            await audit_user(uow, ctx, "user.create", user_id, {"roleId": role_id, "existingIdentity": row is not None})
            return user_record(await get_member(uow.db, user_id))
    except IntegrityError as exc:  # a concurrent create of the same address or membership
        raise ApiError.conflict("This user already exists") from exc


async def update_user(ctx: Any, user_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Change a member's role in this site and, where allowed, their identity fields."""
    site_id = ctx.require_site()
    principal = ctx.principal
    if user_id == principal.user_id and SELF_FORBIDDEN & body.keys():
        raise ApiError.forbidden("You cannot change your own role, email, password or status here; "
                                 "use the /me routes", reason="self")
    values: dict[str, Any] = {}
    if "email" in body:
        values["email"] = identity.check_email(body["email"])
    if "status" in body:
        values["status"] = identity.check_status(body["status"])
    for key, column in NAME_COLUMNS.items():
        if key in body:
            values[column] = identity.check_text(body, key)
    if "avatar" in body:
        values["avatar"] = identity.check_text(body, "avatar", identity.MAX_AVATAR)
    password_hash = None
    if "password" in body:
        password_hash = await identity.hash_password(identity.check_password(body["password"]))
    try:
        async with ctx.unit_of_work() as uow:
            row = await get_member(uow.db, user_id)
            guard_instance_admin(principal, row)
            touches_identity = bool(values) or password_hash is not None
            if touches_identity and not principal.is_instance_admin and await _shared(uow.conn, site_id, user_id):
                raise ApiError.forbidden("This person also belongs to another site; only the instance admin "
                                         "can change their account", reason="shared_identity")
            if "roleId" in body:
                role_id = await role_id_for(uow.conn, site_id, _required(body, "roleId"))
                if role_id != row["role_id"]:
                    await membership.set_membership(uow.conn, site_id, user_id, role_id)
                    access_api.changed(uow)
                    await audit_user(uow, ctx, "user.role_changed", user_id,
                                     {"fromRoleId": row["role_id"], "toRoleId": role_id})
            suspended = values.get("status", "active") != "active"
            if password_hash is not None:
                await identity.set_password(uow.conn, user_id, password_hash, **values)
            elif values:
                await identity.update_identity(uow.conn, user_id, **values)
                if suspended:
                    await identity.end_sessions(uow.conn, user_id)  # a suspension takes effect now
            if suspended:  # and the person's personal keys, in every site
                await membership.revoke_personal_keys(uow.conn, user_id)
            if touches_identity:
                users_changed(uow, user_id)
                fields = sorted(k for k in body if k != "roleId")
                await audit_user(uow, ctx, "user.update", user_id, {"fields": fields})
            return user_record(await get_member(uow.db, user_id))
    except IntegrityError as exc:
        raise ApiError(409, "CONFLICT", "Another account already uses this email", path=["email"]) from exc


def _required(body: dict[str, Any], key: str) -> Any:
    if body.get(key) is None:
        raise ApiError.validation(f"'{key}' cannot be null", path=[key])
    return body[key]


async def delete_user(ctx: Any, user_id: str) -> None:
    """Remove the membership of this site; the identity goes too when no other site holds it
    and it is not the instance admin."""
    site_id = ctx.require_site()
    if user_id == ctx.principal.user_id:
        raise ApiError.forbidden("You cannot remove yourself from the site", reason="self")
    async with ctx.unit_of_work() as uow:
        row = await get_member(uow.db, user_id)
        guard_instance_admin(ctx.principal, row)
        await membership.remove_membership(uow.conn, site_id, user_id)
        orphan = not row["is_instance_admin"] and not await _shared(uow.conn, site_id, user_id)
        if orphan:
            await access_api.forget_user(uow.conn, user_id)
            await uow.conn.execute(delete(users).where(users.c.id == user_id))
            users_changed(uow, user_id)
        access_api.changed(uow)
        await audit_user(uow, ctx, "user.delete", user_id, {"identityDeleted": orphan})


async def erase_accounts(uow: Any, subject: Any) -> int:
    """The erasure target ``accounts``: each of the subject's accounts leaves the site with its
    sessions and one-time tokens there; the identity itself (email, name, password, external
    identities, every session) is deleted when no other site holds it and it is not the
    instance admin. Another site's membership keeps it: the person is that site's member still."""
    from plugins.accounts.tables import external_identities, one_time_tokens, refresh_tokens

    reached = 0
    for user_id in subject.user_ids:
        row = (await uow.conn.execute(select(users.c.is_instance_admin).where(users.c.id == user_id))).first()
        if row is None:
            continue
        await membership.remove_membership(uow.conn, subject.site_id, user_id)
        for table in (refresh_tokens, one_time_tokens, external_identities):
            await uow.db.execute(uow.db.delete(table).where(table.c.user_id == user_id))
        if not row[0] and not await _shared(uow.conn, subject.site_id, user_id):
            await access_api.forget_user(uow.conn, user_id)
            await uow.conn.execute(delete(users).where(users.c.id == user_id))
            users_changed(uow, user_id)
        reached += 1
    if reached:
        access_api.changed(uow)
    return reached

"""Invitations (``POST /users/invite``): an ``invited`` identity and membership, and an emailed
link (one-time token, purpose ``invite``) that ``POST /auth/accept-invite`` redeems with a
password (see ``selfservice.accept_invite``).

An address that already has an account is added to the site and told so, without a token:
accepting an invitation sets a password, and an existing account keeps its own. Inviting an
invited member again sends a fresh link (older links stop working) and answers 200.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.mailer import OutgoingEmail
from plugins.access import api as access_api
from plugins.accounts import identity
from plugins.accounts.selfservice import emails, onetime
from plugins.accounts.users import membership
from plugins.accounts.users.users import (
    audit_user,
    get_member,
    guard_instance_admin,
    role_id_for,
    user_record,
)


async def invite_user(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Invite ``body.email`` into the request's site; returns (user record, HTTP status)."""
    kernel = ctx.kernel
    site_id = ctx.require_site()
    site = ctx.site or {"id": site_id}
    await emails.require_mailer(kernel, site_id)  # an invitation that cannot be mailed is of no use
    email = identity.check_email(body.get("email"))
    first, last = identity.check_text(body, "firstName"), identity.check_text(body, "lastName")
    status = 201
    message: OutgoingEmail
    try:
        async with ctx.unit_of_work() as uow:
            role_id = await role_id_for(uow.conn, site_id, body.get("roleId"))
            row = await identity.identity_by_email(uow.conn, email)
            if row is None:
                user_id = await identity.insert_identity(uow.conn, email=email, password_hash=None,
                                                         status="invited", first_name=first, last_name=last)
                invited = True
            else:
                guard_instance_admin(ctx.principal, row)
                user_id, invited = row["id"], row["status"] == "invited"
                member = await access_api.membership(uow.conn, site_id, user_id)
                if member is not None:
                    if not invited:
                        raise ApiError.conflict("This user is already a member of the site")
                    status = 200
                    role_id = member["role_id"] if body.get("roleId") is None else role_id
            await membership.set_membership(uow.conn, site_id, user_id, role_id)
            access_api.changed(uow)
            if invited:
                raw = await onetime.issue(kernel, uow.db, user_id, onetime.INVITE)
                message = emails.invitation(email, site, emails.link(kernel, "accept-invite", raw, site_id))
            else:
                message = emails.added_to_site(email, site)
            await audit_user(uow, ctx, "user.invite", user_id, {"roleId": role_id, "resent": status == 200})
            record = user_record(await get_member(uow.db, user_id))
    except IntegrityError as exc:  # a concurrent invite of the same address
        raise ApiError.conflict("This user already exists") from exc
    # After commit: a failed delivery leaves the invitation in place; inviting again resends.
    await emails.send_now(kernel, message, user_id)
    return record, status

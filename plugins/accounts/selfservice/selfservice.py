"""Self-service account flows: sign up, verify the address, resend, forgot/reset password,
accept an invitation. No HTTP here; the routes in ``routes_selfservice`` call these.

Account enumeration: register, resend and forgot do the same work whatever the address (the
argon2 hash on every sign-up, an email only where one is due) and queue any email in the
request's transaction (``mail_queue``: the durable job queue sends it), so the answer, its body
and its timing say nothing about which addresses have accounts. Decisions:
docs/decisions/self-service-accounts.md.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel.auth.usercache import users_changed
from kernel.policy import audit
from plugins.access import api as access_api
from plugins.accounts import identity
from plugins.accounts.selfservice import mail_queue, onetime
from plugins.accounts.users.users import role_id_for

REGISTERED = "If the address can be used, we have sent an email with the next step."
EMAIL_SENT = "If the address belongs to an account, we have sent an email with the next step."


async def _is_member(conn: Any, site_id: str, row: Any) -> bool:
    return bool(row["is_instance_admin"]) or await access_api.membership(conn, site_id, row["id"]) is not None


async def register(kernel: Any, site: dict[str, Any], *, email: Any, password: Any,
                   first_name: str | None = None, last_name: str | None = None) -> None:
    """Sign up as a subscriber of ``site``: a new ``unverified`` identity with a verification
    email, or, for an address that has an account, a notice (never a change to an active one)."""
    site_id = site["id"]
    email = identity.check_email(email)
    password = identity.check_password(password)
    # Hashed on every path, new address or not: the same CPU work either way.
    password_hash = await identity.hash_password(password)
    try:
        async with kernel.unit_of_work(site_id) as uow:
            row = await identity.identity_by_email(uow.conn, email)
            if row is None:
                user_id = await identity.insert_identity(
                    uow.conn, email=email, password_hash=password_hash, status="unverified",
                    first_name=first_name, last_name=last_name)
                await access_api.set_membership(uow.conn, site_id, user_id, await role_id_for(uow.conn, site_id, None))
                access_api.changed(uow)
                await mail_queue.queue(uow, mail_queue.VERIFICATION, user_id)
            else:
                await _existing_identity(uow, site_id, row, password_hash)
    except IntegrityError:
        pass  # a concurrent sign-up with this address won (nothing queued); the answer stays the same


async def _existing_identity(uow: Any, site_id: str, row: Any, password_hash: str) -> None:
    """What a sign-up with a known address does. Active accounts are never changed here."""
    status = row["status"]
    if status == "unverified":
        # Nobody can sign in to an unverified account, so the latest sign-up's password wins:
        # an attacker who signed the address up long before its owner holds no usable password.
        await identity.update_identity(uow.conn, row["id"], password_hash=password_hash)
        users_changed(uow, row["id"])
        await mail_queue.queue(uow, mail_queue.VERIFICATION, row["id"])
    elif status != "active":
        return  # suspended: nothing to offer; invited: the invitation is the way in
    elif await _is_member(uow.conn, site_id, row):
        await mail_queue.queue(uow, mail_queue.EXISTING_ACCOUNT, row["id"])
    else:  # joining a further site needs proof of the address: the link adds the membership
        await mail_queue.queue(uow, mail_queue.JOIN_SITE, row["id"])


async def verify_email(kernel: Any, site_id: str, token: Any) -> None:
    """Consume a verification token: activate an unverified identity and make sure it is a
    member of the token's site (subscriber). Any bad token: 400 with one generic message."""
    async with kernel.unit_of_work(site_id) as uow:
        user_id = await onetime.consume(uow.db, token, onetime.VERIFY_EMAIL)
        row = await identity.identity_by_id(uow.conn, user_id)
        if row is None or row["status"] not in ("unverified", "active"):
            raise onetime.invalid()
        if row["status"] == "unverified":
            await identity.update_identity(uow.conn, user_id, status="active")
            users_changed(uow, user_id)
        if not await _is_member(uow.conn, site_id, row):
            await access_api.set_membership(uow.conn, site_id, user_id, await role_id_for(uow.conn, site_id, None))
            access_api.changed(uow)
        await audit.record(uow.conn, action="user.email_verified", site_id=site_id, actor_id=user_id,
                           target_type="user", target_id=user_id)


async def resend_verification(kernel: Any, site: dict[str, Any], email: Any) -> None:
    """A new verification link for an unverified identity; nothing for any other address."""
    email = identity.check_email(email)
    async with kernel.unit_of_work(site["id"]) as uow:
        row = await identity.identity_by_email(uow.conn, email)
        if row is not None and row["status"] == "unverified":
            await mail_queue.queue(uow, mail_queue.VERIFICATION, row["id"])


async def forgot_password(kernel: Any, site: dict[str, Any], email: Any) -> None:
    """A reset link for an active or unverified member of ``site`` (or the instance admin)."""
    email = identity.check_email(email)
    async with kernel.unit_of_work(site["id"]) as uow:
        row = await identity.identity_by_email(uow.conn, email)
        # Only the sites a person belongs to may mail them, so one site cannot spam another's people.
        if row is not None and row["status"] in ("active", "unverified") and await _is_member(
                uow.conn, site["id"], row):
            await mail_queue.queue(uow, mail_queue.PASSWORD_RESET, row["id"])


async def reset_password(kernel: Any, site_id: str, token: Any, password: Any) -> None:
    """Set the password from a reset token, end every session (refresh tokens revoked, token
    version bumped). The link proves the address, so an unverified identity becomes active."""
    password_hash = await identity.hash_password(identity.check_password(password))
    async with kernel.unit_of_work(site_id) as uow:
        user_id = await onetime.consume(uow.db, token, onetime.RESET_PASSWORD)
        row = await identity.identity_by_id(uow.conn, user_id)
        if row is None:
            raise onetime.invalid()
        extra = {"status": "active"} if row["status"] == "unverified" else {}
        await identity.set_password(uow.conn, user_id, password_hash, **extra)
        users_changed(uow, user_id)
        await audit.record(uow.conn, action="user.password_reset", site_id=site_id, actor_id=user_id,
                           target_type="user", target_id=user_id)


async def accept_invite(kernel: Any, site_id: str, token: Any, password: Any) -> None:
    """Activate an invited identity with the password it chooses."""
    password_hash = await identity.hash_password(identity.check_password(password))
    async with kernel.unit_of_work(site_id) as uow:
        user_id = await onetime.consume(uow.db, token, onetime.INVITE)
        row = await identity.identity_by_id(uow.conn, user_id)
        if row is None or row["status"] != "invited":
            raise onetime.invalid()
        await identity.set_password(uow.conn, user_id, password_hash, status="active")
        users_changed(uow, user_id)
        await audit.record(uow.conn, action="user.invite_accepted", site_id=site_id, actor_id=user_id,
                           target_type="user", target_id=user_id)

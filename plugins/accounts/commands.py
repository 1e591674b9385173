"""``svc users create`` and ``svc users set-password``: an operator's way in from the shell.

A lost admin password needs no SMTP: ``svc users set-password admin@example.com`` stores a new one
(generated and printed once, or read from standard input with ``--password-stdin``), ends every
session of the user and is audited, as ``POST /me/change-password`` would.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import sys
from typing import Any

from kernel import ApiError
from kernel.auth.passwords import hash_password_async
from kernel.policy import audit
from kernel.tenancy.service import get_site
from plugins.accounts import service
from plugins.accounts.sessions.password_change import check_password_policy, store_password

CLI = {"via": "svc users"}


def register(subparsers: Any, kernel_factory: Any) -> None:
    """Add ``svc users`` with its two actions."""
    cmd = subparsers.add_parser("users", help="create a user or set a password from the shell (no SMTP needed)")
    actions = cmd.add_subparsers(dest="users_command", required=True)
    create = actions.add_parser("create", help="create a user; prints the password once unless --password-stdin")
    create.add_argument("email", help="the new user's email (the login name)")
    create.add_argument("--site", default=None, help="make the user a member of this site")
    create.add_argument("--role", default="admin",
                        help="with --site: a built-in role key (admin, subscriber) or a role id (default: admin)")
    create.add_argument("--instance-admin", action="store_true",
                        help="the user may manage every site, like the first admin")
    _password_option(create)
    create.set_defaults(func=lambda args: _run(kernel_factory, lambda k: create_user(k, args)))
    reset = actions.add_parser("set-password", help="set a user's password and end every session of theirs")
    reset.add_argument("email", help="the user's email")
    _password_option(reset)
    reset.set_defaults(func=lambda args: _run(kernel_factory, lambda k: set_password(k, args)))


def _password_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--password-stdin", action="store_true",
                        help="read the password from standard input instead of generating one")


def _run(kernel_factory: Any, fn: Any) -> int:
    try:
        message = asyncio.run(kernel_factory(fn))
    except ApiError as exc:
        print(f"svc users: {exc.message}", file=sys.stderr)
        return 1
    print(message)
    return 0


def _password(args: argparse.Namespace) -> tuple[str, bool]:
    """The password to store, and whether it was generated (and so must be printed once)."""
    if args.password_stdin:
        return check_password_policy(sys.stdin.readline().rstrip("\r\n"), "password"), False
    return secrets.token_urlsafe(18), True


async def create_user(kernel: Any, args: argparse.Namespace) -> str:
    """Create the user (and its membership); the line to print."""
    from plugins.access import api as access_api

    email = service.normalise_email(args.email)
    if "@" not in email:
        raise ApiError.validation(f"'{args.email}' is not an email address", path=["email"])
    if await service.find_user_by_email(kernel, email) is not None:
        raise ApiError(409, "CONFLICT", f"Another account already uses {email}")
    if args.site is not None and await get_site(kernel, args.site) is None:
        raise ApiError.not_found(f"Unknown site '{args.site}' (svc sites list)", code="SITE_NOT_FOUND")
    password, generated = _password(args)
    async with kernel.unit_of_work(args.site) as uow:
        if args.site is not None:
            role = (await access_api.role_by_system_key(uow.conn, args.site, args.role)
                    or await access_api.role_in_site(uow.conn, args.site, args.role))
            if role is None:
                raise ApiError.validation(f"No role '{args.role}' in site '{args.site}'", path=["role"])
        user_id = await service.create_user(kernel, uow.conn, email=email, password=password,
                                            instance_admin=args.instance_admin)
        if args.site is not None:
            await access_api.set_membership(uow.conn, args.site, user_id, role["id"])
        await audit.record(uow.conn, action="user.created", site_id=args.site, target_type="user",
                           target_id=user_id, details=CLI)
    said = f"created user {email} ({user_id})"
    return f"{said} with password {password}" if generated else said


async def set_password(kernel: Any, args: argparse.Namespace) -> str:
    """Store a new password for the user and end their sessions; the line to print."""
    email = service.normalise_email(args.email)
    user = await service.find_user_by_email(kernel, email)
    if user is None:
        raise ApiError(404, "RECORD_NOT_FOUND", f"No user with the email {email}")
    password, generated = _password(args)
    new_hash = await hash_password_async(password)
    async with kernel.unit_of_work(None) as uow:
        revoked = await store_password(uow, user["id"], new_hash)  # as POST /me/change-password does
        await audit.record(uow.conn, action="user.password_changed", site_id=None, target_type="user",
                           target_id=user["id"], details={**CLI, "sessionsRevoked": revoked})
    said = f"set the password of {email}; {revoked} session(s) ended"
    return f"{said}; new password {password}" if generated else said

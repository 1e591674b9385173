"""The account emails (verification, password reset, invitation, notices) and how they leave.

Links point at ``SVC_PUBLIC_URL`` (the front end that shows the page and posts the token back
with the site header): ``{public}/verify-email?token=...&site=...``.

Anonymous flows (register, resend, forgot) queue their email in the request's transaction
(``mail_queue``): the durable job queue sends it, and a failure (no SMTP host, a refusing
server) is logged and retried, never answered. So the answer and its timing are the same whether
or not an email went out, and anonymous callers cannot probe the mail configuration. The job
carries no token: it mints the link's token when it runs. Admin flows (invite) use ``send_now``
and see the failure. Both send through ``mailer_for``: the site's own SMTP server when a plugin
gives one (the email plugin's ``/email/smtp``), else the server's.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode, urlsplit

from kernel import ApiError, Setting
from kernel.hooks.plugins import call_first
from kernel.mailer import DeliveryFailed, MailerNotConfigured, OutgoingEmail
from kernel.mailer.base import check_email

log = logging.getLogger("svc.accounts.email")


def _parse_public_url(raw: str) -> str:
    parts = urlsplit(raw.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError("must be an http(s) URL such as https://cms.example.com")
    return raw.strip().rstrip("/")


SETTINGS = [
    Setting("SVC_PUBLIC_URL", "http://127.0.0.1:8000", _parse_public_url,
            "Base URL of the pages that emailed links open (verify email, reset password, accept invite)."),
]


def link(kernel: Any, page: str, token: str, site_id: str) -> str:
    """The front-end URL for ``page`` carrying ``token`` and the site."""
    base = kernel.settings.get("public_url") or "http://127.0.0.1:8000"
    return f"{base}/{page}?{urlencode({'token': token, 'site': site_id})}"


def _site_name(site: dict[str, Any]) -> str:
    # A name goes into the Subject header: keep it to one short line.
    name = str(site.get("name") or site.get("id") or "svc")
    return " ".join(name.split())[:80]


@dataclass
class AccountEmail(OutgoingEmail):
    """A built-in account email, with what a site's own version needs (``compose_account_email``)."""

    site_id: str = ""
    key: str = ""
    variables: dict[str, Any] = field(default_factory=dict)


def _account(key: str, to: str, site: dict[str, Any], url: str | None, subject: str, text: str) -> AccountEmail:
    variables = {"siteName": _site_name(site), "email": to, **({"url": url} if url else {})}
    return AccountEmail(to=[to], subject=subject, text=text, site_id=str(site.get("id") or ""),
                        key=f"account.{key}", variables=variables)


async def site_version(kernel: Any, message: OutgoingEmail) -> OutgoingEmail:
    """The site's own version of an account email when a plugin gives one, else ``message``."""
    if not isinstance(message, AccountEmail) or not message.site_id:
        return message
    try:
        custom = await call_first(kernel.pm.hook.compose_account_email, kernel=kernel, site_id=message.site_id,
                                  key=message.key, to=list(message.to), variables=dict(message.variables))
        if custom is None:
            return message
        check_email(custom)
        if [a.lower() for a in custom.recipients] != [a.lower() for a in message.recipients]:
            raise ValueError("a site's version must go to the same recipients")
        return custom
    except Exception as exc:  # noqa: BLE001 - the built-in email still goes out
        log.warning("site %s: its version of '%s' cannot be used (%s); the built-in one is sent",
                    message.site_id, message.key, exc)
        return message


def verification(to: str, site: dict[str, Any], url: str) -> OutgoingEmail:
    name = _site_name(site)
    return _account("verification", to, site, url, f"Confirm your email address for {name}", (
        f"Someone (hopefully you) signed up for {name} with this address.\n\n"
        f"Confirm it by opening this link:\n{url}\n\n"
        "If it was not you, ignore this email; nothing happens without the link."))


def existing_account(to: str, site: dict[str, Any], url: str | None) -> OutgoingEmail:
    """For a sign-up with an address that already has an account: never changes that account."""
    name = _site_name(site)
    join = (f"To use your existing account with {name}, confirm by opening this link:\n{url}\n\n"
            if url else "")
    return _account("existing-account", to, site, url, f"Your account for {name}", (
        f"Someone tried to sign up for {name} with this address, which already has an account.\n\n"
        f"{join}If you forgot your password, use 'Forgot password' to choose a new one. "
        "If it was not you, ignore this email; your account is unchanged."))


def password_reset(to: str, site: dict[str, Any], url: str) -> OutgoingEmail:
    name = _site_name(site)
    return _account("password-reset", to, site, url, f"Reset your password for {name}", (
        f"Someone asked to reset the password of your {name} account.\n\n"
        f"Choose a new password here (the link works once, for a limited time):\n{url}\n\n"
        "If it was not you, ignore this email; your password is unchanged."))


def invitation(to: str, site: dict[str, Any], url: str) -> OutgoingEmail:
    name = _site_name(site)
    return _account("invitation", to, site, url, f"You are invited to {name}", (
        f"You have been invited to {name}.\n\n"
        f"Accept the invitation and choose your password here:\n{url}\n"))


def added_to_site(to: str, site: dict[str, Any]) -> OutgoingEmail:
    name = _site_name(site)
    return _account("added-to-site", to, site, None, f"You have been added to {name}", (
        f"Your existing account now has access to {name}. Sign in with your usual password."))


async def site_alone(kernel: Any, site_id: str, user_id: str) -> bool:
    """Whether the identity ``user_id`` is ``site_id``'s alone: not the instance admin, and a
    member of no other site (identities are instance-wide)."""
    from plugins.access import api as access_api
    from plugins.accounts import identity

    async with kernel.db.connect() as conn:
        row = await identity.identity_by_id(conn, user_id)
        alone = row is not None and not row["is_instance_admin"] and not await access_api.member_elsewhere(
            conn, site_id, user_id)
        await conn.rollback()
    return alone


async def mailer_for(kernel: Any, site_id: str | None, user_id: str | None = None) -> Any:
    """The mailer of ``site_id``'s account email to the identity ``user_id``: a plugin's answer
    to ``account_mailer`` (the site's own SMTP server), else the server's ``kernel.mailer``.

    The site's server is used only for an identity that is the site's alone (``site_alone``):
    the email may carry a live link (a password reset) to an instance-wide identity, and whoever
    runs the site's SMTP server reads it. An identity another site shares, or the instance admin,
    gets its email through the server's SMTP, so one site's admin can never read a credential of
    an account that reaches beyond their site."""
    if site_id and (user_id is None or await site_alone(kernel, site_id, user_id)):
        mailer = await call_first(kernel.pm.hook.account_mailer, kernel=kernel, site_id=site_id)
        if mailer is not None:
            return mailer
    return kernel.mailer


async def require_mailer(kernel: Any, site_id: str) -> None:
    """503 ``EMAIL_NOT_CONFIGURED`` before an admin flow that cannot work without email."""
    if not (await mailer_for(kernel, site_id)).configured:
        raise ApiError(503, "EMAIL_NOT_CONFIGURED", "Email is not configured on this server (SVC_SMTP_HOST)")


async def send_now(kernel: Any, message: OutgoingEmail, user_id: str) -> None:
    """Send to the identity ``user_id`` or fail with the spec's codes (for authenticated admin
    flows), through ``mailer_for``."""
    site_id = message.site_id if isinstance(message, AccountEmail) else None
    try:
        mailer = await mailer_for(kernel, site_id, user_id)
        await mailer.send(await site_version(kernel, message))
    except MailerNotConfigured as exc:
        raise ApiError(503, "EMAIL_NOT_CONFIGURED", "Email is not configured on this server") from exc
    except (DeliveryFailed, ValueError) as exc:
        log.warning("email '%s' not sent: %s", message.subject, exc)
        raise ApiError(502, "DELIVERY_FAILED",
                       "The email could not be delivered; invite again to send a new link") from exc

"""Account emails of the anonymous flows (register, resend, forgot) through the durable job queue.

The request writes the job ``accounts.email`` in its own unit of work (``queue``), so the email
exists exactly when the sign-up, or nothing, commits, and a restart between the answer and the
send loses nothing: the job runner (``svc serve``'s in-process consumer without Redis, ``svc
worker`` with it) sends it, retrying a refusing SMTP server with backoff.

The job carries the site, the person and the kind of email, never the link's token: the token
is minted when the job runs (``onetime.issue``, which drops the person's older unused tokens of
that purpose), so no live token sits in the queue table, and only the hash is ever stored. A
run that is repeated (its worker died after the send) mints a new token and sends again: the
newest email's link is the one that works, as when someone asks twice.

What the caller is told does not depend on any of this (docs/decisions/self-service-accounts.md).
"""

from __future__ import annotations

import logging
from typing import Any

from kernel import ApiError
from kernel.mailer import DeliveryFailed, MailerNotConfigured, OutgoingEmail
from kernel.tenancy.service import get_site
from plugins.accounts import identity
from plugins.accounts.selfservice import emails, onetime

log = logging.getLogger("svc.accounts.email")

JOB = "accounts.email"
VERIFICATION = "verification"
EXISTING_ACCOUNT = "existing-account"  # already a member: a notice without a link
JOIN_SITE = "join-site"  # an account that is not a member yet: the notice with a verification link
PASSWORD_RESET = "password-reset"
KINDS = (VERIFICATION, EXISTING_ACCOUNT, JOIN_SITE, PASSWORD_RESET)


async def queue(uow: Any, kind: str, user_id: str) -> None:
    """Write the email ``kind`` for ``user_id`` in the site of ``uow``: sent once it commits.
    Asked again while the first is still waiting, the two are one email (its link is minted when
    it is sent, so it is the newest either way)."""
    if kind not in KINDS:
        raise ValueError(f"unknown account email {kind!r}")
    await uow.enqueue(JOB, site_id=uow.site_id, kind=kind, user_id=user_id, dedupe_key=f"{kind}:{user_id}")


async def _compose(kernel: Any, uow: Any, site: dict[str, Any], kind: str, row: Any) -> OutgoingEmail | None:
    site_id, to = site["id"], row["email"]

    async def url(purpose: str, page: str) -> str:
        return emails.link(kernel, page, await onetime.issue(kernel, uow.db, row["id"], purpose), site_id)

    if kind == VERIFICATION:
        return emails.verification(to, site, await url(onetime.VERIFY_EMAIL, "verify-email"))
    if kind == JOIN_SITE:
        return emails.existing_account(to, site, await url(onetime.VERIFY_EMAIL, "verify-email"))
    if kind == EXISTING_ACCOUNT:
        return emails.existing_account(to, site, None)
    if kind == PASSWORD_RESET:
        return emails.password_reset(to, site, await url(onetime.RESET_PASSWORD, "reset-password"))
    log.warning("account email of unknown kind %r not sent", kind)
    return None


async def deliver(kernel: Any, site_id: str, kind: str, user_id: str) -> None:
    """The job: mint the link's token, then send. A refusing or unreachable SMTP server raises
    (the job is retried); no SMTP host, or a person or site gone since, ends it quietly (logged)."""
    site = await get_site(kernel, site_id)
    if site is None:
        return
    async with kernel.unit_of_work(site_id) as uow:
        row = await identity.identity_by_id(uow.conn, user_id)
        message = await _compose(kernel, uow, site, kind, row) if row is not None else None
    if message is None:
        return
    # Log the subject only: the body holds a live token and the address is personal data.
    try:
        mailer = await emails.mailer_for(kernel, site_id, user_id)
    except ApiError as exc:  # the site's own SMTP settings do not open now: retried, never the server's
        log.warning("email '%s' not sent, to be retried: %s", message.subject, exc.message)
        raise DeliveryFailed(exc.message) from None
    try:
        await mailer.send(await emails.site_version(kernel, message))
    except MailerNotConfigured:
        log.warning("email not configured (SVC_SMTP_HOST): '%s' not sent", message.subject)
    except DeliveryFailed as exc:
        log.warning("email '%s' not sent, to be retried: %s", message.subject, exc)
        raise
    except ValueError as exc:
        log.warning("email '%s' not sent: %s", message.subject, exc)


def register(jobs: Any) -> None:
    """``accounts.email``: retried 5 times, from 10 s to 10 minutes apart."""
    jobs.task(JOB, deliver, retries=5, retry_delay=10, retry_max_delay=600, timeout=120, owner="accounts")

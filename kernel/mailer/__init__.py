"""Outgoing email: one ``Mailer`` interface, SMTP for real delivery, memory for tests.

``make_mailer(settings)`` builds an ``SmtpMailer`` from the SVC_SMTP_* settings. Without an
SMTP host it is unconfigured: ``send`` raises ``MailerNotConfigured`` (the API answers
EMAIL_NOT_CONFIGURED) and ``check`` reports "not configured".
"""

from __future__ import annotations

import ssl
from typing import Any

from kernel.mailer.base import (
    DeliveryFailed,
    Mailer,
    MailerNotConfigured,
    OutgoingEmail,
    build_message,
    check_address,
)
from kernel.mailer.memory import MemoryMailer, SentEmail
from kernel.mailer.smtp import SmtpMailer

__all__ = [
    "DeliveryFailed",
    "Mailer",
    "MailerNotConfigured",
    "MemoryMailer",
    "OutgoingEmail",
    "SentEmail",
    "SmtpMailer",
    "build_message",
    "check_address",
    "make_mailer",
]


def make_mailer(settings: Any) -> Mailer:
    """An ``SmtpMailer`` from ``settings.smtp_*`` and ``settings.email_from``; ValueError if bad.

    ``smtp_ca_file`` (SVC_SMTP_CA_FILE) replaces the system trust store for the server's
    certificate (a private CA); the host name is checked either way."""
    ca_file = (getattr(settings, "smtp_ca_file", "") or "").strip()
    context = None
    if ca_file:
        try:
            context = ssl.create_default_context(cafile=ca_file)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"SVC_SMTP_CA_FILE={ca_file!r} cannot be loaded: {exc}") from None
    sender = settings.email_from or "svc@localhost"
    try:
        check_address(sender, "sender")
    except ValueError as exc:
        raise ValueError(f"SVC_EMAIL_FROM={sender!r} is not valid: {exc}") from None
    return SmtpMailer(
        host=(settings.smtp_host or "").strip(),
        port=int(settings.smtp_port or 25),
        user=settings.smtp_user or "",
        password=settings.smtp_password or "",
        tls=(settings.smtp_tls or "none").strip().lower(),
        sender=sender,
        ssl_context=context,
    )

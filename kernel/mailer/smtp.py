"""SMTP delivery with the standard library (``smtplib``), one connection per message.

The blocking client runs in a worker thread. TLS modes follow SVC_SMTP_TLS: ``none`` (plain,
port 25 or a local relay), ``starttls`` (upgrade after EHLO, usually port 587) and ``tls``
(implicit TLS from the first byte, ``SMTP_SSL``, usually port 465). Certificates are verified
with the system trust store unless an ``ssl_context`` is given (``make_mailer`` builds one
from SVC_SMTP_CA_FILE).

Error messages name the server and the reply, never the password: the password is scrubbed
from them, and the original exception is not chained because its arguments may carry it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import smtplib
import ssl
from email.message import EmailMessage
from email.utils import parseaddr

from kernel.mailer.base import (
    DeliveryFailed,
    Mailer,
    MailerNotConfigured,
    OutgoingEmail,
    build_message,
)

log = logging.getLogger("svc.mailer")

TLS_MODES = ("none", "starttls", "tls")


class SmtpMailer(Mailer):
    """Sends through one SMTP server; unconfigured (degraded) when ``host`` is empty."""

    def __init__(
        self,
        host: str = "",
        port: int = 25,
        user: str = "",
        password: str = "",
        tls: str = "none",
        sender: str = "svc@localhost",
        *,
        timeout: float = 10.0,
        ssl_context: ssl.SSLContext | None = None,
        address: str | None = None,
    ) -> None:
        if tls not in TLS_MODES:
            raise ValueError(f"SVC_SMTP_TLS must be one of {', '.join(TLS_MODES)}, got {tls!r}")
        self.host = host or ""
        self.port = int(port)
        self.user = user or ""
        self._password = password or ""
        self.tls = tls
        self.default_sender = sender
        self.timeout = timeout
        self._ssl_context = ssl_context
        self.address = address  # connect here instead of resolving ``host`` (a checked address)

    @property
    def configured(self) -> bool:
        """True when an SMTP host is set."""
        return bool(self.host)

    def describe(self) -> str:
        if not self.configured:
            return "smtp (not configured)"
        who = f"{self.user}@" if self.user else ""
        return f"smtp://{who}{self.host}:{self.port} tls={self.tls}"

    # -- blocking part ----------------------------------------------------------------------

    def _context(self) -> ssl.SSLContext:
        return self._ssl_context or ssl.create_default_context()

    def _connect(self) -> smtplib.SMTP:
        if self.tls == "tls":
            smtp: smtplib.SMTP = smtplib.SMTP_SSL(timeout=self.timeout, context=self._context())
        else:
            smtp = smtplib.SMTP(timeout=self.timeout)
        # TLS checks the certificate against the host name, whichever address is reached: an
        # ``address`` checked beforehand (a tenant's server, kernel.base.outbound) or the name itself.
        smtp._host = self.host  # type: ignore[attr-defined]
        try:
            code, reply = smtp.connect(self.address or self.host, self.port)
            if code != 220:
                raise smtplib.SMTPConnectError(code, reply)
            smtp.ehlo()
            if self.tls == "starttls":
                smtp.starttls(context=self._context())
                smtp.ehlo()
            if self.user:
                smtp.login(self.user, self._password)
        except BaseException:
            smtp.close()
            raise
        return smtp

    def _deliver(self, msg: EmailMessage, envelope_from: str, recipients: list[str]) -> None:
        smtp = self._connect()
        try:
            refused = smtp.send_message(msg, from_addr=envelope_from, to_addrs=recipients)
        finally:
            # The server has the message (or refused it) already; a failing QUIT changes nothing.
            with contextlib.suppress(smtplib.SMTPException, OSError):
                smtp.quit()
            smtp.close()
        if refused:
            # Some recipients accepted: raising would make a retry send duplicates to them.
            log.warning("SMTP server refused %d recipient(s) of %s", len(refused), msg["Message-ID"])

    def _probe(self) -> None:
        smtp = self._connect()
        try:
            smtp.noop()
        finally:
            with contextlib.suppress(smtplib.SMTPException, OSError):
                smtp.quit()
            smtp.close()

    # -- async surface ----------------------------------------------------------------------

    def _failure(self, exc: BaseException) -> DeliveryFailed:
        temporary = True
        if isinstance(exc, smtplib.SMTPResponseException):
            reply = exc.smtp_error
            text = reply.decode("utf-8", "replace") if isinstance(reply, bytes) else str(reply)
            reason = f"{exc.smtp_code} {text}"
            temporary = not 500 <= exc.smtp_code < 600
        elif isinstance(exc, smtplib.SMTPRecipientsRefused):
            reason = f"all recipients refused ({len(exc.recipients)})"
            temporary = False
        else:
            reason = f"{type(exc).__name__}: {exc}"
        if self._password:
            reason = reason.replace(self._password, "***")
        return DeliveryFailed(f"SMTP via {self.host}:{self.port} failed: {reason}", temporary=temporary)

    async def send(self, message: OutgoingEmail) -> str:
        """Send ``message``; the Message-ID. ``ValueError`` for a malformed message."""
        if not self.configured:
            raise MailerNotConfigured("email is not configured (set SVC_SMTP_HOST)")
        msg = build_message(message, self.default_sender)
        envelope_from = parseaddr(msg["From"])[1]
        try:
            await asyncio.to_thread(self._deliver, msg, envelope_from, message.recipients)
        except (smtplib.SMTPException, OSError) as exc:
            raise self._failure(exc) from None
        return str(msg["Message-ID"])

    async def check(self) -> str:
        """ "not configured", "ok" after connect, TLS, login and NOOP, or ``DeliveryFailed``."""
        if not self.configured:
            return "not configured"
        try:
            await asyncio.to_thread(self._probe)
        except (smtplib.SMTPException, OSError) as exc:
            raise self._failure(exc) from None
        return "ok"

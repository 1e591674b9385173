"""The mailer contract: an ``OutgoingEmail`` in, a Message-ID out.

``build_message`` turns an ``OutgoingEmail`` into a standard-library ``EmailMessage`` and is
shared by every mailer, so the checks against header injection (CR or LF smuggled into an
address, the subject or an extra header) hold whichever backend sends.
"""

from __future__ import annotations

import abc
import email.policy
import re
from dataclasses import dataclass, field
from email.message import EmailMessage
from email.utils import formatdate, getaddresses, make_msgid, parseaddr

# Headers the mailer writes itself; letting ``headers`` set them would allow a caller to
# add hidden recipients or break the MIME structure.
RESERVED_HEADERS = frozenset(
    {
        "from",
        "to",
        "cc",
        "bcc",
        "reply-to",
        "subject",
        "sender",
        "content-type",
        "content-transfer-encoding",
        "mime-version",
    }
)
_HEADER_NAME = re.compile(r"^[!-9;-~]+$")  # RFC 5322 field name: printable ASCII but ':'
_LINE_BREAKS = re.compile(r"[\r\n\x00]")


class MailerNotConfigured(RuntimeError):
    """No SMTP host is configured; email features run degraded (EMAIL_NOT_CONFIGURED)."""


class DeliveryFailed(RuntimeError):
    """The mail server could not be reached or refused the message.

    ``temporary`` is True for connection problems and 4xx replies, where a retry may
    succeed, and False for 5xx replies (bad recipient, authentication refused).
    """

    def __init__(self, message: str, *, temporary: bool = True) -> None:
        super().__init__(message)
        self.temporary = temporary


@dataclass
class OutgoingEmail:
    """One message to send. At least one of ``text`` and ``html``; ``sender`` defaults to SVC_EMAIL_FROM."""

    to: list[str]
    subject: str
    text: str | None = None
    html: str | None = None
    cc: list[str] = field(default_factory=list)
    bcc: list[str] = field(default_factory=list)
    reply_to: str | None = None
    sender: str | None = None
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # A bare string would otherwise be iterated character by character.
        for name in ("to", "cc", "bcc"):
            value = getattr(self, name)
            if isinstance(value, str):
                setattr(self, name, [value])

    @property
    def recipients(self) -> list[str]:
        """Envelope recipients: to, cc and bcc addresses (bcc never appears in a header)."""
        return [parseaddr(a)[1] for a in (*self.to, *self.cc, *self.bcc)]


def _no_line_breaks(value: str, what: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{what} must be a string")
    if _LINE_BREAKS.search(value):
        raise ValueError(f"{what} must not contain line breaks")
    return value


def check_address(value: str, what: str = "address") -> str:
    """``value`` if it is one email address (optionally with a display name); else ValueError."""
    _no_line_breaks(value, what)
    parsed = getaddresses([value])
    if len(parsed) != 1 or "@" not in parsed[0][1] or parsed[0][1].count("@") != 1:
        raise ValueError(f"{what} {value!r} is not a single email address")
    return value


def check_email(message: OutgoingEmail) -> None:
    """Raise ``ValueError`` when ``message`` could not be sent safely as given."""
    if not message.to:
        raise ValueError("an email needs at least one 'to' address")
    for name in ("to", "cc", "bcc"):
        for address in getattr(message, name):
            check_address(address, name)
    for name in ("reply_to", "sender"):
        value = getattr(message, name)
        if value is not None:
            check_address(value, name)
    _no_line_breaks(message.subject, "subject")
    if message.text is None and message.html is None:
        raise ValueError("an email needs a text or an html body")
    for key, value in message.headers.items():
        if not isinstance(key, str) or not _HEADER_NAME.match(key):
            raise ValueError(f"header name {key!r} is not valid")
        if key.lower() in RESERVED_HEADERS:
            raise ValueError(f"header {key!r} is set by the mailer; use the OutgoingEmail field")
        _no_line_breaks(value, f"header {key!r}")


def build_message(message: OutgoingEmail, default_sender: str) -> EmailMessage:
    """The MIME message for ``message``: multipart/alternative when it has text and html."""
    check_email(message)
    sender = message.sender or default_sender
    check_address(sender, "sender")
    msg = EmailMessage(policy=email.policy.SMTP)
    msg["From"] = sender
    msg["To"] = ", ".join(message.to)
    if message.cc:
        msg["Cc"] = ", ".join(message.cc)
    if message.reply_to:
        msg["Reply-To"] = message.reply_to
    msg["Subject"] = message.subject
    msg["Date"] = formatdate(localtime=False, usegmt=True)
    for key, value in message.headers.items():
        if key.lower() in ("message-id", "date"):
            del msg[key]  # the caller's value replaces ours (threading replies, scheduling)
        msg[key] = value
    if "Message-ID" not in msg:
        msg["Message-ID"] = make_msgid(domain=parseaddr(sender)[1].rpartition("@")[2] or None)
    if message.text is not None:
        msg.set_content(message.text)
        if message.html is not None:
            msg.add_alternative(message.html, subtype="html")
    else:
        msg.set_content(message.html or "", subtype="html")
    return msg


class Mailer(abc.ABC):
    """Sends ``OutgoingEmail``s. ``send`` returns the Message-ID, angle brackets included."""

    default_sender: str = "svc@localhost"

    @property
    @abc.abstractmethod
    def configured(self) -> bool:
        """Whether this mailer can send at all."""

    @abc.abstractmethod
    async def send(self, message: OutgoingEmail) -> str:
        """Deliver ``message``; ``MailerNotConfigured``, ``DeliveryFailed`` or ``ValueError``."""

    @abc.abstractmethod
    async def check(self) -> str:
        """Health: "ok", "not configured", or an exception."""

    @abc.abstractmethod
    def describe(self) -> str:
        """Where mail goes, for logs and health output (never the password)."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.describe()}>"

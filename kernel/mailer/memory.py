"""A mailer that keeps messages in a list: for tests and local development, never production."""

from __future__ import annotations

from dataclasses import dataclass
from email.message import EmailMessage

from kernel.mailer.base import Mailer, OutgoingEmail, build_message


@dataclass(frozen=True)
class SentEmail:
    """One message the memory mailer accepted: what was asked for and the MIME built from it."""

    email: OutgoingEmail
    message: EmailMessage

    @property
    def message_id(self) -> str:
        return str(self.message["Message-ID"])


class MemoryMailer(Mailer):
    """Builds every message exactly as ``SmtpMailer`` would and appends it to ``outbox``."""

    def __init__(self, sender: str = "svc@localhost") -> None:
        self.default_sender = sender
        self.outbox: list[SentEmail] = []

    @property
    def configured(self) -> bool:
        return True

    def describe(self) -> str:
        return "memory"

    async def send(self, message: OutgoingEmail) -> str:
        """Validate and build ``message``, keep it in ``outbox``; its Message-ID."""
        sent = SentEmail(message, build_message(message, self.default_sender))
        self.outbox.append(sent)
        return sent.message_id

    async def check(self) -> str:
        return "ok"

"""A site's own SMTP server: ``GET, PUT, DELETE /email/smtp`` and the mailer the site sends with.

``PUT`` takes ``{ host, port?, username?, password?, tls?, from? }``; the password is sealed with
``kernel.secrets`` for the site (purpose ``email.smtp_password``: 400 ``ENCRYPTION_KEY_REQUIRED``
without the key) and never returned (``hasPassword``). A PUT without ``password`` keeps the
stored one while the host and username stay the same (so a rename of the sender does not ask for
it again). The host is a tenant-configured outbound target: it is checked by ``kernel.base.outbound``
(no loopback, private, link-local or metadata address unless the operator opened it with
``SVC_OUTBOUND_ALLOW_NETWORKS``) when saved and, resolved again, at every send, and the mailer
connects to the checked address (TLS still verifies the certificate against the host name).

``mailer_for(kernel, site_id)`` is the site's ``SmtpMailer`` when it has settings, else the
server's ``kernel.mailer`` (SVC_SMTP_*).
"""

from __future__ import annotations

import ipaddress
import re
import ssl
from typing import Any

from kernel import ApiError, SecretError
from kernel.base.outbound import OutboundRefused, checked_address, policy
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.mailer import Mailer, SmtpMailer
from kernel.mailer.smtp import TLS_MODES
from kernel.tenancy.scope import SiteDB
from plugins.email import addresses
from plugins.email.tables import smtp_settings

PURPOSE = "email.smtp_password"
KEYS = frozenset({"host", "port", "username", "password", "tls", "from"})
_HOST = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9](?:[A-Za-z0-9-]{0,62})(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}))*\.?$"
)
DEFAULT_PORTS = {"none": 25, "starttls": 587, "tls": 465}


def record(row: Any) -> dict[str, Any]:
    return {
        "host": row["host"],
        "port": row["port"],
        "username": row["username"],
        "tls": row["tls"],
        "from": row["sender"],
        "hasPassword": bool(row["password"]),
        "updatedAt": iso(row["updated_at"]),
    }


def _host(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ApiError.validation("'host' is the SMTP server's host name or address", path=["host"])
    host = value.strip()
    try:
        ipaddress.ip_address(host)
    except ValueError:
        if not _HOST.match(host):
            raise ApiError.validation("'host' is not a valid host name", path=["host"]) from None
    return host


def _text(body: dict[str, Any], name: str, most: int) -> str | None:
    value = body.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > most or any(c in value for c in "\r\n\x00"):
        raise ApiError.validation(
            f"'{name}' is a string of at most {most} characters, on one line", path=[name]
        )
    return value


def parse(body: Any) -> dict[str, Any]:
    """The checked settings of a PUT body (400 with a path for anything wrong)."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown(body, KEYS)
    tls = body.get("tls", "starttls")
    if tls not in TLS_MODES:
        raise ApiError.validation(f"'tls' is one of {', '.join(TLS_MODES)}", path=["tls"])
    port = body.get("port", DEFAULT_PORTS[tls])
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ApiError.validation("'port' is an integer from 1 to 65535", path=["port"])
    sender = body.get("from")
    return {
        "host": _host(body.get("host")),
        "port": port,
        "tls": tls,
        "username": _text(body, "username", 320),
        "password": _text(body, "password", 1000),
        "sender": addresses.check_one(sender, ["from"]) if sender not in (None, "") else None,
    }


async def _checked(kernel: Any, host: str, port: int) -> str:
    try:
        return str(await checked_address(host, port, policy(kernel)))
    except OutboundRefused as exc:
        raise ApiError.validation(f"The SMTP host is refused: {exc}", path=["host"]) from None


async def get(ctx: Any) -> dict[str, Any] | None:
    async with ctx.reader() as db:
        row = await db.one(db.select(smtp_settings))
    return record(row) if row is not None else None


async def put(ctx: Any, body: Any) -> dict[str, Any]:
    kernel, site_id = ctx.kernel, ctx.require_site()
    values = parse(body)
    await _checked(kernel, values["host"], values["port"])
    password = values.pop("password")
    async with ctx.unit_of_work() as uow:
        db = uow.db
        old = await db.one(db.select(smtp_settings))
        if password is not None:
            sealed = kernel.secrets.seal(site_id, password, purpose=PURPOSE)
        elif old is not None and (old["host"], old["username"]) == (values["host"], values["username"]):
            sealed = old["password"]  # same server and user: the stored password stays
        else:
            sealed = None
        row = {**values, "password": sealed, "updated_at": now_utc()}
        if old is None:
            await db.insert(smtp_settings, row)
        else:
            await db.execute(db.update(smtp_settings).values(**row))
        fresh = await db.one(db.select(smtp_settings))
    return record(fresh)


async def delete(ctx: Any) -> None:
    async with ctx.unit_of_work() as uow:
        await uow.db.execute(uow.db.delete(smtp_settings))


async def mailer_for(kernel: Any, site_id: str) -> Mailer:
    """The site's own SMTP mailer, or the server's. A stored password that no longer opens (the
    key was rotated away) or a host now refused is a ``DeliveryFailed``-like 502 at send time,
    never a fallback to the server's account."""
    async with kernel.db.engine.connect() as conn:
        row = await SiteDB(site_id, conn).one(SiteDB(site_id, conn).select(smtp_settings))
        await conn.rollback()
    if row is None:
        return kernel.mailer
    try:
        password = kernel.secrets.open(site_id, row["password"], purpose=PURPOSE) if row["password"] else ""
    except SecretError:
        raise ApiError(
            502,
            "DELIVERY_FAILED",
            "The site's SMTP password does not open (the key was rotated away); PUT /email/smtp again",
        ) from None
    try:
        address = str(await checked_address(row["host"], row["port"], policy(kernel)))
    except OutboundRefused as exc:
        raise ApiError(502, "DELIVERY_FAILED", f"The site's SMTP host is refused: {exc}") from None
    context = getattr(kernel.mailer, "_ssl_context", None)
    return SmtpMailer(
        host=row["host"],
        port=row["port"],
        user=row["username"] or "",
        password=password,
        tls=row["tls"],
        sender=row["sender"] or getattr(kernel.mailer, "default_sender", "svc@localhost"),
        ssl_context=context if isinstance(context, ssl.SSLContext) else None,
        address=address,
    )

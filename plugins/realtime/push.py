"""Web push (VAPID, RFC 8292) with aes128gcm payloads (RFC 8291), through pywebpush.

Subscriptions are per (site, user, endpoint). A notification queues ``FANOUT_JOB``, which
sends it to every studio subscription of the site (or, for a notification with a recipient, to
that user's subscriptions alone): pywebpush's ``WebPusher`` encrypts the
payload for the subscription's keys, py-vapid signs the VAPID JWT (``aud`` is the push
service's origin), and the ``kernel.base.outbound`` client posts it: the endpoint's host is resolved
and checked at connect time (the outbound rule (docs/operations.md#outbound-requests): no loopback, private, link-local or
metadata address unless the operator opened it), and redirects are not followed. A 404 or 410
from the push service deletes the subscription; a 429 or 5xx (or a network failure) is retried
through ``SEND_JOB`` after a backoff (``Retry-After`` when the service gives one), up to
``MAX_ATTEMPTS``; a refused address is not retried.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from sqlalchemy import func

from kernel import ApiError
from kernel.base import outbound
from kernel.base.backoff import backoff_delay
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.tenancy.scope import SiteDB
from plugins.realtime.tables import notifications, push_subscriptions

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("svc.realtime.push")

FANOUT_JOB = "realtime.push_fanout"
SEND_JOB = "realtime.push_send"
MAX_ATTEMPTS = 6
RETRY_BASE, RETRY_MAX = 10.0, 3600.0
TTL_SECONDS = 24 * 3600
MAX_ENDPOINT = 2000
CLIENT_KEY = "realtime.push"


# ---------------------------------------------------------------------------- keys
def b64url_decode(value: str) -> bytes:
    return base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def new_key_pair() -> tuple[str, str]:
    """A fresh P-256 VAPID pair: (public, private), both base64url without padding (the public
    key as an uncompressed point: a browser's ``applicationServerKey``; the private as 32 raw bytes)."""
    key = ec.generate_private_key(ec.SECP256R1())
    private = key.private_numbers().private_value.to_bytes(32, "big")
    public = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return b64url(public), b64url(private)


def public_of(private: str) -> str:
    """The public key (base64url uncompressed point) of a base64url raw private key."""
    raw = b64url_decode(private)
    key = ec.derive_private_key(int.from_bytes(raw, "big"), ec.SECP256R1())
    return b64url(key.public_key().public_bytes(serialization.Encoding.X962,
                                                serialization.PublicFormat.UncompressedPoint))


def parse_private_key(raw: str) -> str:
    value = raw.strip()
    try:
        if len(b64url_decode(value)) != 32:
            raise ValueError
        public_of(value)
    except (ValueError, TypeError):
        raise ValueError("base64url of a 32-byte P-256 private key (see `svc push keygen`)") from None
    return value


def parse_public_key(raw: str) -> str:
    value = raw.strip()
    try:
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), b64url_decode(value))
    except (ValueError, TypeError):
        raise ValueError("base64url of an uncompressed P-256 public key (see `svc push keygen`)") from None
    return value


def parse_subject(raw: str) -> str:
    value = raw.strip()
    if not value.startswith(("mailto:", "https://")):
        raise ValueError("a mailto: address or an https: URL (RFC 8292 'sub')")
    return value


def configured(kernel: Any) -> bool:
    s = kernel.settings
    return bool(s.get("vapid_public_key") and s.get("vapid_private_key") and s.get("vapid_subject"))


def check_keys(kernel: Any) -> None:
    """At start: a public key that is not the private key's pair stops the app."""
    s = kernel.settings
    private, public = s.get("vapid_private_key"), s.get("vapid_public_key")
    if private and public and public_of(private) != public:
        raise RuntimeError("svc: SVC_VAPID_PUBLIC_KEY is not the public key of SVC_VAPID_PRIVATE_KEY")


def public_key(kernel: Any) -> str:
    if not configured(kernel):
        raise ApiError(404, "PUSH_NOT_CONFIGURED", "Web push is not configured on this server (no VAPID keys)")
    return str(kernel.settings.get("vapid_public_key"))


# ---------------------------------------------------------------------------- subscriptions
def check_endpoint(value: Any) -> str:
    """An http(s) endpoint URL by the outbound rule (docs/operations.md#outbound-requests) (``kernel.base.outbound.check_url``: never
    the unspecified address), not an IPv6 literal (the VAPID signer cannot name one in ``aud``);
    its resolved address is checked again when a notification is sent."""
    if not isinstance(value, str) or not value or len(value) > MAX_ENDPOINT:
        raise ApiError.validation(f"'endpoint' is an http(s) URL of at most {MAX_ENDPOINT} characters",
                                  path=["endpoint"])
    url = outbound.check_url(value, path=["endpoint"])
    if ":" in (urlsplit(url).hostname or ""):
        # py-vapid's 'aud' claim takes a host name or IPv4 address only; a push service has a name.
        raise ApiError.validation("'endpoint' cannot be an IPv6 literal address", path=["endpoint"])
    return url


def check_keys_body(keys: Any) -> tuple[str, str]:
    if not isinstance(keys, dict) or set(keys) - {"p256dh", "auth"}:
        raise ApiError.validation("'keys' is { p256dh, auth }", path=["keys"])
    p256dh, auth = keys.get("p256dh"), keys.get("auth")
    try:
        if not isinstance(p256dh, str) or len(p256dh) > 100:
            raise ValueError
        point = b64url_decode(p256dh)
        if len(point) != 65 or point[0] != 4:
            raise ValueError
        ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    except (ValueError, TypeError):
        raise ApiError.validation("'keys.p256dh' is an uncompressed P-256 point, base64url",
                                  path=["keys", "p256dh"]) from None
    try:
        if not isinstance(auth, str) or len(auth) > 40 or len(b64url_decode(auth)) != 16:
            raise ValueError
    except (ValueError, TypeError):
        raise ApiError.validation("'keys.auth' is 16 bytes, base64url", path=["keys", "auth"]) from None
    return p256dh, auth


def sub_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "endpoint": row["endpoint"], "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


async def upsert(kernel: Any, site_id: str, user_id: str, realm: str, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Create or update the (user, endpoint) subscription; (record, created)."""
    if set(body) - {"endpoint", "keys", "expirationTime"}:
        extra = sorted(set(body) - {"endpoint", "keys", "expirationTime"})[0]
        raise ApiError.validation(f"Unknown field '{str(extra)[:40]}'", path=[str(extra)[:40]])
    endpoint = check_endpoint(body.get("endpoint"))
    p256dh, auth = check_keys_body(body.get("keys"))
    now = now_utc()
    async with kernel.unit_of_work(site_id) as uow:
        db = uow.db
        T = push_subscriptions.c  # noqa: N806
        row = await db.one(db.select(push_subscriptions).where(T.user_id == user_id, T.endpoint == endpoint))
        if row is None:
            new = {"id": uuid7(), "user_id": user_id, "realm": realm, "endpoint": endpoint, "p256dh": p256dh,
                   "auth": auth, "created_at": now, "updated_at": now}
            await db.insert(push_subscriptions, new)
            return sub_record(new), True
        await db.execute(db.update(push_subscriptions).where(T.id == row["id"])
                         .values(p256dh=p256dh, auth=auth, realm=realm, updated_at=now))
        return sub_record({**row, "updated_at": now}), False


async def remove(kernel: Any, site_id: str, user_id: str, body: dict[str, Any]) -> None:
    if set(body) - {"endpoint"}:
        extra = sorted(set(body) - {"endpoint"})[0]
        raise ApiError.validation(f"Unknown field '{str(extra)[:40]}'", path=[str(extra)[:40]])
    endpoint = check_endpoint(body.get("endpoint"))
    async with kernel.unit_of_work(site_id) as uow:
        db = uow.db
        T = push_subscriptions.c  # noqa: N806
        result = await db.execute(db.delete(push_subscriptions).where(T.user_id == user_id, T.endpoint == endpoint))
    if not result.rowcount:
        raise ApiError(404, "RECORD_NOT_FOUND", "You have no push subscription with this endpoint")


async def count_mine(kernel: Any, site_id: str, user_id: str | None) -> int:
    if user_id is None:
        return 0
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        return int(await db.scalar(db.select(push_subscriptions, func.count())
                                   .where(push_subscriptions.c.user_id == user_id)) or 0)


# ---------------------------------------------------------------------------- sending
def _vapid(kernel: Any) -> Any:
    cached = kernel.state.get("realtime_vapid")
    if cached is None:
        from py_vapid import Vapid  # here, not at the top: see encrypt

        cached = Vapid.from_string(str(kernel.settings.get("vapid_private_key")))
        kernel.state["realtime_vapid"] = cached
    return cached


def encrypt(row: Any, payload: bytes) -> bytes:
    """The aes128gcm body (RFC 8291) of ``payload`` for the subscription ``row``."""
    # Imported on first use: pywebpush brings requests and aiohttp, ~9 % of the import time of
    # every svc process (a CLI command, a server, a test worker), most of which never push.
    from pywebpush import WebPusher

    pusher = WebPusher({"endpoint": row["endpoint"], "keys": {"p256dh": row["p256dh"], "auth": row["auth"]}})
    return bytes(pusher.encode(payload, content_encoding="aes128gcm")["body"])


def vapid_headers(kernel: Any, endpoint: str) -> dict[str, str]:
    parts = urlsplit(endpoint)
    claims = {"sub": str(kernel.settings.get("vapid_subject")), "aud": f"{parts.scheme}://{parts.netloc}",
              "exp": int(time.time()) + 12 * 3600}
    return dict(_vapid(kernel).sign(claims))


async def send_one(kernel: Any, row: Any, payload: bytes) -> httpx.Response:
    import httpx

    headers = {**vapid_headers(kernel, row["endpoint"]), "Content-Encoding": "aes128gcm",
               "Content-Type": "application/octet-stream", "TTL": str(TTL_SECONDS), "Urgency": "normal"}
    client = outbound.client(kernel, CLIENT_KEY, timeout=httpx.Timeout(10.0))
    response = await client.post(row["endpoint"], content=encrypt(row, payload), headers=headers)
    await response.aclose()
    return response


def _payload(note: Any) -> bytes:
    record = {"id": note["id"], "kind": note["kind"], "severity": note["severity"], "title": note["title"],
              "body": note["body"], "deepLink": note["deep_link"], "entityId": note["entity_id"],
              "ts": iso(note["created_at"])}
    return json.dumps({"type": "notification", "notification": record}, separators=(",", ":")).encode()


async def fanout(kernel: Any, site_id: str, notification_id: str) -> None:
    """Job: send a notification to every studio push subscription of the site, or, when it names
    a recipient, to that user's subscriptions alone."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        note = await db.one(db.select(notifications).where(notifications.c.id == notification_id))
        if note is None or not configured(kernel):
            return
        T = push_subscriptions.c  # noqa: N806
        whose = [T.realm == "studio"] if note["recipient_id"] is None else [T.user_id == note["recipient_id"]]
        subs = await db.all(db.select(push_subscriptions).where(*whose))
    payload = _payload(note)
    for row in subs:  # one subscription's fault never stops (nor repeats) the others
        try:
            await deliver(kernel, site_id, row, payload, notification_id, attempt=1)
        except Exception:  # noqa: BLE001 - logged with its trace; the next subscription goes on
            log.exception("push to subscription %s of site %s failed", row["id"], site_id)


async def send_retry(kernel: Any, site_id: str, notification_id: str, subscription_id: str, attempt: int) -> None:
    """Job: one more try at one subscription."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        note = await db.one(db.select(notifications).where(notifications.c.id == notification_id))
        row = await db.one(db.select(push_subscriptions).where(push_subscriptions.c.id == subscription_id))
    if note is None or row is None or not configured(kernel):
        return
    await deliver(kernel, site_id, row, _payload(note), notification_id, attempt=attempt)


async def deliver(kernel: Any, site_id: str, row: Any, payload: bytes, notification_id: str, attempt: int) -> str:
    """Send once; act on the answer: ``sent``, ``gone`` (deleted), ``retry``, ``failed`` or
    ``refused`` (the endpoint resolves to an address the outbound rule refuses: nothing is sent)."""
    import httpx

    retry_after: float | None = None
    try:
        resp = await send_one(kernel, row, payload)
        status = resp.status_code
        if 200 <= status < 300:
            return "sent"
        if status in (404, 410):
            async with kernel.unit_of_work(site_id) as uow:
                await uow.db.execute(uow.db.delete(push_subscriptions).where(push_subscriptions.c.id == row["id"]))
            log.info("push subscription %s of site %s is gone (%s): deleted", row["id"], site_id, status)
            return "gone"
        if status != 429 and status < 500:
            log.warning("push service refused a notification for subscription %s: %s", row["id"], status)
            return "failed"
        retry_after = _retry_after(resp.headers.get("Retry-After"))
    except outbound.OutboundRefused as exc:
        # the outbound rule (docs/operations.md#outbound-requests): the endpoint resolves to a refused address; not retried.
        log.warning("push endpoint of subscription %s refused: %s", row["id"], exc)
        return "refused"
    except httpx.HTTPError as exc:
        log.warning("push service unreachable for subscription %s: %s", row["id"], type(exc).__name__)
    if attempt >= MAX_ATTEMPTS:
        return "failed"
    delay = max(retry_after or 0.0, backoff_delay(attempt, RETRY_BASE, RETRY_MAX))
    await kernel.jobs.enqueue(SEND_JOB, site_id=site_id, notification_id=notification_id,
                              subscription_id=row["id"], attempt=attempt + 1,
                              run_at=now_utc() + dt.timedelta(seconds=delay))
    return "retry"


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return min(max(float(value.strip()), 0.0), RETRY_MAX)
    except ValueError:
        return None

"""Webhook delivery: each active webhook subscription is a member of the kernel consumer group
``cdc.webhook``, so it has its own checkpoint, lease, order and retries, and one slow endpoint
never delays another.

One delivery is one POST of ``{ deliveryId, events }`` (at most ``SVC_CDC_WEBHOOK_BATCH``
events, in log order) with

- ``X-Svc-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>``,
- ``X-Svc-Delivery: <deliveryId>`` (new for every attempt; an event keeps its ``id`` across
  retries, so receivers deduplicate by event id).

The answer decides:

- 2xx: delivered; the checkpoint moves past the batch.
- 410 Gone: the subscription is ``dead`` and nothing more is sent (replay revives it).
- 429 and 503 with ``Retry-After`` (seconds or an HTTP date, at most a day): the next try waits
  that long; without it, the schedule decides.
- anything else, a 3xx (redirects are never followed), a timeout, a refused address: a failure;
  the next try follows ``SVC_CDC_RETRY_SCHEDULE`` (5 s, 30 s, 2 min, 10 min, 30 min, 2 h, 6 h,
  12 h, 24 h). When the schedule is exhausted the subscription is ``dead``.

Every attempt is recorded (``GET /cdc/subscriptions/:id/deliveries``). The URL is checked again
when connecting (the ``kernel.base.outbound`` client): the host is resolved now, a loopback, private,
link-local or metadata address is refused unless the operator opened it
(``SVC_OUTBOUND_ALLOW_NETWORKS``), and the request goes to the checked address.
"""

from __future__ import annotations

import email.utils
import hashlib
import hmac
import logging
import time
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import insert, select, update

from kernel import EventContext, SiteCacheSpec
from kernel.base.ids import uuid7
from kernel.base.outbound import OutboundRefused
from kernel.base.outbound import client as outbound_client
from kernel.db.meta import now_utc
from kernel.events import ConsumerGroup, Event, GroupMember
from plugins.cdc import subscriptions as subs
from plugins.cdc.tables import deliveries, subscriptions

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("svc.cdc")

MAX_RETRY_AFTER = 86_400.0
CLIENT_KEY = "cdc.http"


class DeliveryFailed(Exception):
    """An attempt that did not deliver; ``retry_after`` (seconds) overrides the schedule."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def sign(secret: str, timestamp: int, body: bytes) -> str:
    """The ``X-Svc-Signature`` value for ``body`` sent at ``timestamp``."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"t={timestamp},v1={digest}"


def retry_after_seconds(value: str | None) -> float | None:
    """``Retry-After`` as seconds from now (delta-seconds or an HTTP date), capped at a day."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return min(float(value), MAX_RETRY_AFTER)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return min(max(0.0, (when - now_utc()).total_seconds()), MAX_RETRY_AFTER)


def client(kernel: Any) -> httpx.AsyncClient:
    """This process's client for deliveries: pooled, no redirects, connect and read timeouts."""
    import httpx

    settings = kernel.settings
    return outbound_client(kernel, CLIENT_KEY, timeout=httpx.Timeout(
        settings.get("cdc_read_timeout"), connect=settings.get("cdc_connect_timeout")))


# The active webhooks of each site, as the dispatcher lists them on every wake-up (a commit in
# the site): cached, so a write costs no query here; a subscription change drops the entry on
# every process (``subs.CHANGED``), and the TTL bounds staleness without Redis.
MEMBERS_CACHE = SiteCacheSpec("cdc_webhooks", max_entries=10_000, ttl=5.0, invalidate_on=(subs.CHANGED,),
                              doc="Active webhook subscriptions per site (the change feed's dispatch).")


async def members(kernel: Any, site_id: str) -> list[GroupMember]:
    """The site's active webhook subscriptions (marking stale the ones retention overtook)."""
    return await kernel.site_caches[MEMBERS_CACHE.name].get_or_load(site_id, None, lambda _: _load(kernel, site_id))


async def _load(kernel: Any, site_id: str) -> list[GroupMember]:
    async with kernel.db.connect() as conn:
        rows = list((await conn.execute(select(subscriptions).where(
            subscriptions.c.site_id == site_id, subscriptions.c.kind == "webhook",
            subscriptions.c.status == "active"))).mappings())
        await conn.rollback()
    rows = await subs.mark_stale(kernel, site_id, rows)
    out = []
    for row in rows:
        if row["status"] == "active":
            types, collections = subs.filters(row)
            out.append(GroupMember(row["id"], types, collections))
    return out


async def _set_status(kernel: Any, site_id: str, subscription_id: str, status: str, reason: str) -> None:
    async with kernel.db.begin() as conn:
        await conn.execute(update(subscriptions).where(
            subscriptions.c.site_id == site_id, subscriptions.c.id == subscription_id,
            subscriptions.c.status == "active").values(status=status, status_reason=reason[:300],
                                                       updated_at=now_utc()))
    await kernel.bus.action(subs.CHANGED, {"siteId": site_id}, EventContext(site_id=site_id, kernel=kernel))


async def _record(kernel: Any, site_id: str, subscription_id: str, delivery_id: str, attempt: int,
                  events: list[Event], status_code: int | None, started: float, error: str | None) -> None:
    async with kernel.db.begin() as conn:
        await conn.execute(insert(deliveries).values(
            site_id=site_id, subscription_id=subscription_id, delivery_id=delivery_id, attempt=attempt,
            status_code=status_code, duration_ms=int((time.monotonic() - started) * 1000),
            error=None if error is None else error[:500], event_count=len(events),
            first_event=str(events[0].id), last_event=str(events[-1].id), attempted_at=now_utc()))


async def deliver(kernel: Any, site_id: str, subscription_id: str, events: list[Event], attempt: int) -> None:
    """One attempt to post ``events`` to the subscription (see the module docstring)."""
    import httpx

    async with kernel.db.connect() as conn:
        row = (await conn.execute(select(subscriptions).where(
            subscriptions.c.site_id == site_id, subscriptions.c.id == subscription_id))).mappings().first()
        await conn.rollback()
    if row is None or row["status"] != "active":
        # Paused, dead or deleted since it was listed: keep the position, send nothing. Resuming
        # or replaying resets the retry state and dispatches again.
        raise DeliveryFailed(f"the subscription is {'gone' if row is None else row['status']}",
                             retry_after=MAX_RETRY_AFTER)
    secret = kernel.secrets.open(site_id, row["secret"], purpose=subs.SECRET_PURPOSE)
    delivery_id = uuid7()
    body = orjson.dumps({"deliveryId": delivery_id, "events": [e.to_dict() for e in events]})
    headers = {"Content-Type": "application/json", "User-Agent": "svc-webhooks/1",
               "X-Svc-Signature": sign(secret, int(time.time()), body), "X-Svc-Delivery": delivery_id}
    started = time.monotonic()
    status_code: int | None = None
    failure: DeliveryFailed | None = None
    try:
        response = await client(kernel).post(row["url"], content=body, headers=headers)
        await response.aclose()
        status_code = response.status_code
        if not 200 <= status_code < 300:
            wait = None
            if status_code in (429, 503):
                wait = retry_after_seconds(response.headers.get("Retry-After"))
            kind = "a redirect (not followed)" if 300 <= status_code < 400 else f"HTTP {status_code}"
            failure = DeliveryFailed(f"the endpoint answered {kind}", retry_after=wait)
    except OutboundRefused as exc:
        failure = DeliveryFailed(f"refused address: {exc}")
    except httpx.TimeoutException as exc:
        failure = DeliveryFailed(f"timed out ({type(exc).__name__})")
    except httpx.HTTPError as exc:
        failure = DeliveryFailed(f"could not connect: {type(exc).__name__}: {exc}"[:300])
    await _record(kernel, site_id, subscription_id, delivery_id, attempt, events, status_code, started,
                  None if failure is None else str(failure))
    if failure is None:
        return
    if status_code == 410:
        await _set_status(kernel, site_id, subscription_id, "dead", "The endpoint answered 410 Gone")
    elif attempt > len(kernel.settings.get("cdc_retry_schedule")):
        await _set_status(kernel, site_id, subscription_id, "dead",
                          f"Every retry failed ({attempt} attempts); the last: {failure}")
    raise failure


def retry_delay(kernel: Any) -> Any:
    schedule = kernel.settings.get("cdc_retry_schedule")

    def delay(attempts: int, error: BaseException) -> float:
        wait = getattr(error, "retry_after", None)
        if wait is not None:
            return float(wait)
        return float(schedule[min(attempts, len(schedule)) - 1])

    return delay


def consumer_group(kernel: Any) -> ConsumerGroup:
    return ConsumerGroup(subs.GROUP, members, deliver, retry_delay=retry_delay(kernel),
                         batch_size=int(kernel.settings.get("cdc_webhook_batch")))

"""Change-feed subscriptions: the bodies, the records, and the state table.

A subscription is ``pull`` (the integrator pages ``/cdc/events`` and commits its position with
``ack``) or ``webhook`` (svc posts the events to ``url``, signed with the subscription's secret;
``webhooks.py``). Both have a position, filters (``collections``, ``operations``) and a status:

- ``active`` and ``paused`` move into each other by ``PATCH { status }``; any other change of
  status through PATCH is 409 ``CONFLICT``;
- ``dead``: a webhook whose retries ran out, or whose endpoint answered 410 Gone;
- ``stale``: the position fell behind retention (events it never got were pruned);
- ``replay`` rewinds the position inside retention and makes any of them ``active`` again.

The record never holds the secret, only ``hasSecret``. Its ``lag`` is the number of events
(matching the filters) after the position and the age in seconds of the oldest of them.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.base.outbound import check_url
from kernel.db.meta import iso, now_utc
from kernel.events import START, Cursor
from kernel.events.subscriptions import SubscriptionTable
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.cdc import feed
from plugins.cdc.tables import deliveries, subscriptions

GROUP = "cdc.webhook"  # the kernel consumer group: a webhook's checkpoint is "cdc.webhook:<id>"
MAX_PER_SITE = 50
KINDS = ("pull", "webhook")
STATUSES = ("active", "paused", "dead", "stale")
SECRET_PURPOSE = "cdc.webhook.secret"
# The action event after a change of a site's subscriptions: it drops the site's entry of the
# ``cdc_webhooks`` cache (the dispatcher's member listing) on every process.
CHANGED = "cdc.subscriptions.changed"
MIN_SECRET, MAX_SECRET = 16, 512
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:@/-]{0,99}$")
BODY_KEYS = {"name", "kind", "url", "secret", "collections", "operations", "status"}
SHAPE = SubscriptionTable(subscriptions, plural="change-feed subscriptions",
                          missing="No such change-feed subscription in this site", max_per_site=MAX_PER_SITE,
                          group=GROUP)
checkpoint_name = SHAPE.checkpoint_name
not_found = SHAPE.not_found
_row = SHAPE.row


# ---------------------------------------------------------------------------------------- bodies


def _list_of(value: Any, name: str) -> list[str]:
    """``collections`` (names) or ``operations`` (create, update, delete) of a body; [] is all."""
    if value is None:
        return []
    if not isinstance(value, list) or len(value) > feed.MAX_COLLECTIONS or not all(
            isinstance(v, str) and "," not in v for v in value):
        raise ApiError.validation(f"'{name}' must be an array of at most {feed.MAX_COLLECTIONS} names",
                                  path=[name])
    # The same rules as the feed's query parameters of the same names.
    parsed = feed.parse_query({name: ",".join(value)}) if value else None
    if parsed is None:
        return []
    if name == "operations":
        return [op for op in feed.OPERATIONS if op in value]
    return list(parsed.collections)


def parse_body(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    """The checked columns of a create or patch body (400 ``VALIDATION_FAILED`` with its path)."""
    reject_unknown(body, BODY_KEYS)
    out: dict[str, Any] = {}
    if creating or "name" in body:
        name = body.get("name")
        if not isinstance(name, str) or not NAME.match(name):
            raise ApiError.validation("'name' is 1 to 100 characters: letters, digits, space and _ . : @ / -",
                                      path=["name"])
        out["name"] = name
    if creating:
        kind = body.get("kind")
        if kind not in KINDS:
            raise ApiError.validation("'kind' is 'pull' or 'webhook'", path=["kind"])
        out["kind"] = kind
    elif "kind" in body:
        raise ApiError.validation("'kind' cannot change; create another subscription", path=["kind"])
    if "url" in body:
        out["url"] = check_url(body["url"], path=["url"])
    if "secret" in body:
        secret = body["secret"]
        if not isinstance(secret, str) or not MIN_SECRET <= len(secret) <= MAX_SECRET:
            raise ApiError.validation(f"'secret' is a string of {MIN_SECRET} to {MAX_SECRET} characters",
                                      path=["secret"])
        out["secret"] = secret
    for name in ("collections", "operations"):
        if creating or name in body:
            out[name] = _list_of(body.get(name), name)
    if creating and out["kind"] == "webhook" and "url" not in out:
        raise ApiError.validation("A webhook subscription needs a 'url'", path=["url"])
    if creating and out["kind"] == "pull" and ("url" in out or "secret" in out):
        raise ApiError.validation("A pull subscription has no url or secret", path=["url" if "url" in out else "secret"])
    if "status" in body:
        if creating:
            raise ApiError.validation("A subscription starts active; pause it with PATCH { status }",
                                      path=["status"])
        if body["status"] not in STATUSES:
            raise ApiError.validation(f"'status' is one of {', '.join(STATUSES)}", path=["status"])
        out["status"] = body["status"]
    return out


# --------------------------------------------------------------------------------------- records


def filters(row: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The event types and collections a subscription receives."""
    return feed.types_for(list(row["operations"] or [])), tuple(row["collections"] or [])


async def position(kernel: Any, row: Any) -> tuple[Cursor, dict[str, Any] | None]:
    """The subscription's cursor and, for a webhook, its checkpoint state."""
    if row["kind"] == "pull":
        return Cursor(int(row["cursor_txid"] or 0), int(row["cursor_id"] or 0)), None
    state = await kernel.events.checkpoint(row["site_id"], checkpoint_name(row["id"]))
    return (state["cursor"] if state else START), state


async def record(kernel: Any, row: Any, *, now: dt.datetime | None = None) -> dict[str, Any]:
    """The answer for one subscription, with its lag and delivery state."""
    cursor, state = await position(kernel, row)
    types, collections = filters(row)
    behind, oldest = await kernel.events.backlog(row["site_id"], cursor, types=types, collections=collections)
    now = now or now_utc()
    out: dict[str, Any] = {
        "id": row["id"], "name": row["name"], "kind": row["kind"], "status": row["status"],
        "statusReason": row["status_reason"], "collections": list(row["collections"] or []),
        "operations": list(row["operations"] or []), "cursor": str(cursor),
        "lag": {"events": behind, "oldestAgeSeconds": None if oldest is None else
                max(0.0, round((now - oldest).total_seconds(), 3))},
        "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"]),
    }
    if row["kind"] == "webhook":
        out["url"] = row["url"]
        out["hasSecret"] = bool(row["secret"])
        out["attempts"] = state["attempts"] if state else 0
        out["lastError"] = state["lastError"] if state else None
        retry_at = state["retryAt"] if state else None
        out["nextRetryAt"] = iso(retry_at) if retry_at and row["status"] == "active" else None
    return out


async def mark_stale(kernel: Any, site_id: str, rows: list[Any]) -> list[Any]:
    """Mark ``stale`` the active or paused subscriptions whose position fell behind retention;
    returns the rows as they are now."""
    earliest = await kernel.events.earliest_cursor(site_id)
    if earliest == START:
        return rows
    out = []
    for row in rows:
        if row["status"] in ("active", "paused") and (await position(kernel, row))[0] < earliest:
            reason = "Events after its position were pruned (retention); replay to resume"
            async with kernel.unit_of_work(site_id) as uow:
                await uow.db.execute(uow.db.update(subscriptions).where(
                    subscriptions.c.id == row["id"], subscriptions.c.status.in_(("active", "paused")))
                    .values(status="stale", status_reason=reason, updated_at=now_utc()))
                row = await _row(uow.db, row["id"])
                uow.action(CHANGED, {"siteId": site_id})
        out.append(row)
    return out


# ------------------------------------------------------------------------------------ operations


async def list_records(ctx: Any) -> list[dict[str, Any]]:
    site_id = ctx.require_site()
    async with ctx.reader() as db:
        rows = await SHAPE.rows(db)
    rows = await mark_stale(ctx.kernel, site_id, rows)
    now = now_utc()
    return [await record(ctx.kernel, row, now=now) for row in rows]


async def get_record(ctx: Any, subscription_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        row = await _row(db, subscription_id)
    [row] = await mark_stale(ctx.kernel, ctx.require_site(), [row])
    return await record(ctx.kernel, row)


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_body(body, creating=True)
    kernel, site_id = ctx.kernel, ctx.require_site()
    if values["kind"] == "webhook":
        if "secret" not in values:
            raise ApiError.validation("A webhook subscription needs a 'secret' to sign its deliveries",
                                      path=["secret"])
        values["secret"] = kernel.secrets.seal(site_id, values["secret"], purpose=SECRET_PURPOSE)
    async with ctx.unit_of_work() as uow:
        await check_room(uow.db, values["name"])
        try:
            subscription_id = await insert(kernel, uow, values)
        except IntegrityError as exc:
            raise ApiError.conflict(f"A subscription named '{values['name']}' already exists in this site") from exc
        uow.action(CHANGED, {"siteId": site_id})
        await audit.record(uow.conn, action="cdc.subscription.create", site_id=site_id, principal=ctx.principal,
                           target_type="cdc_subscription", target_id=subscription_id,
                           details={"name": values["name"], "kind": values["kind"]}, request_id=ctx.request_id)
        saved = await _row(uow.db, subscription_id)
    return await record(kernel, saved)


async def insert(kernel: Any, uow: Any, values: dict[str, Any], *, status: str = "active",
                 reason: str | None = None) -> str:
    """Insert a subscription of checked ``values`` (its secret sealed) in ``uow``; it starts at
    the tail: it gets what happens from now on (replay reaches back inside retention)."""
    site_id, now = uow.site_id, now_utc()
    tail = await kernel.events.head(site_id)
    row = {"id": uuid7(), "status": status, "status_reason": reason, "url": None, "secret": None,
           "cursor_txid": None, "cursor_id": None, "created_at": now, "updated_at": now, **values}
    if values["kind"] == "pull":
        row.update(cursor_txid=tail.txid, cursor_id=tail.id)
    await uow.db.insert(subscriptions, row)
    if values["kind"] == "webhook":
        await SHAPE.start_at_tail(kernel, uow, row["id"], tail)
    return str(row["id"])


async def check_room(db: Any, name: str, *, other_than: str | None = None) -> None:
    await SHAPE.check_room(db, {"name": name}, f"A subscription named '{name}' already exists in this site",
                           other_than=other_than)


async def update(ctx: Any, subscription_id: str, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_body(body, creating=False)
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await _row(db, subscription_id, lock=True)
        if row["kind"] == "pull" and ("url" in values or "secret" in values):
            key = "url" if "url" in values else "secret"
            raise ApiError.validation("A pull subscription has no url or secret", path=[key])
        status = values.get("status")
        if status is not None and status != row["status"]:
            if {status, row["status"]} != {"active", "paused"}:
                how = ("replay it" if row["status"] in ("dead", "stale")
                       else "only active and paused change by PATCH")
                raise ApiError.conflict(f"A subscription cannot go from {row['status']} to {status}: {how}",
                                        status=row["status"])
            values["status_reason"] = None
            if status == "active" and row["kind"] == "webhook":
                # Resumed: deliver from where it stopped with a fresh retry state (a delivery
                # tried while it was paused counted as a failure).
                cursor, _ = await position(kernel, row)
                await kernel.events.set_checkpoint(uow.conn, site_id, checkpoint_name(subscription_id), cursor)
        if "name" in values and values["name"] != row["name"]:
            await check_room(db, values["name"], other_than=subscription_id)
        if "secret" in values:
            values["secret"] = kernel.secrets.seal(site_id, values["secret"], purpose=SECRET_PURPOSE)
        if values:
            try:
                await db.execute(db.update(subscriptions).where(subscriptions.c.id == subscription_id)
                                 .values(**values, updated_at=now_utc()))
            except IntegrityError as exc:
                raise ApiError.conflict(f"A subscription named '{values.get('name')}' already exists") from exc
            uow.action(CHANGED, {"siteId": site_id})
            changed = sorted(k for k in values if k != "status_reason")
            await audit.record(uow.conn, action="cdc.subscription.update", site_id=site_id, principal=ctx.principal,
                               target_type="cdc_subscription", target_id=subscription_id,
                               details={"changed": changed, "status": values.get("status")},
                               request_id=ctx.request_id)
        saved = await _row(db, subscription_id)
    if saved["kind"] == "webhook" and values.get("status") == "active":
        await kernel.events.dispatch_now(site_id, checkpoint_name(subscription_id))
    return await record(kernel, saved)


async def delete(ctx: Any, subscription_id: str) -> None:
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.unit_of_work() as uow:
        row = await _row(uow.db, subscription_id, lock=True)
        await uow.db.execute(uow.db.delete(deliveries).where(deliveries.c.subscription_id == subscription_id))
        await uow.db.execute(uow.db.delete(subscriptions).where(subscriptions.c.id == subscription_id))
        await SHAPE.forget(kernel, uow, subscription_id)
        uow.action(CHANGED, {"siteId": site_id})
        await audit.record(uow.conn, action="cdc.subscription.delete", site_id=site_id, principal=ctx.principal,
                           target_type="cdc_subscription", target_id=subscription_id,
                           details={"name": row["name"], "kind": row["kind"]}, request_id=ctx.request_id)


async def _known_cursor(kernel: Any, site_id: str, value: Any) -> Cursor:
    """The body's ``cursor``: a cursor this feed gave out, not past the site's last event (400)."""
    if not isinstance(value, str):
        raise ApiError.validation("'cursor' is a cursor (a meta.nextCursor of /cdc/events)", path=["cursor"])
    try:
        cursor = Cursor.parse(value)
    except ValueError:
        raise ApiError.validation("'cursor' is not a cursor this feed gave out", path=["cursor"]) from None
    if cursor > await kernel.events.head(site_id):
        raise ApiError.validation("'cursor' is past the last event of this site", path=["cursor"])
    return cursor


async def ack(ctx: Any, subscription_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Commit a pull subscription's position: forward only (409 ``ACK_REGRESSION``), never past
    the tail."""
    reject_unknown(body, {"cursor"})
    kernel, site_id = ctx.kernel, ctx.require_site()
    cursor = await _known_cursor(kernel, site_id, body.get("cursor"))
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await _row(db, subscription_id, lock=True)
        if row["kind"] != "pull":
            raise ApiError.conflict("Only a pull subscription is acknowledged; a webhook's position moves "
                                    "as its deliveries succeed", kind=row["kind"])
        current = Cursor(int(row["cursor_txid"] or 0), int(row["cursor_id"] or 0))
        if cursor < current:
            raise ApiError.conflict("The acknowledgement moves the checkpoint backwards; use replay to rewind",
                                    code="ACK_REGRESSION", cursor=str(current))
        await db.execute(db.update(subscriptions).where(subscriptions.c.id == subscription_id)
                         .values(cursor_txid=cursor.txid, cursor_id=cursor.id, updated_at=now_utc()))
        saved = await _row(db, subscription_id)
    return await record(kernel, saved)


async def replay_cursor(kernel: Any, site_id: str, body: dict[str, Any]) -> Cursor:
    """The position a replay body names: ``{ cursor }`` xor ``{ occurred_after }`` (ISO 8601),
    inside retention (410 ``CURSOR_EXPIRED`` otherwise)."""
    reject_unknown(body, {"cursor", "occurred_after"})
    if ("cursor" in body) == ("occurred_after" in body):
        raise ApiError.validation("Give either 'cursor' or 'occurred_after'", path=["body"])
    if "cursor" in body:
        cursor = await _known_cursor(kernel, site_id, body["cursor"])
    else:
        raw = body["occurred_after"]
        try:
            when = dt.datetime.fromisoformat(raw) if isinstance(raw, str) else None
        except ValueError:
            when = None
        if when is None or when.tzinfo is None:
            raise ApiError.validation("'occurred_after' is an ISO 8601 date-time", path=["occurred_after"])
        cursor = await kernel.events.cursor_before(site_id, when)
    earliest = await kernel.events.earliest_cursor(site_id)
    if cursor < earliest:
        raise feed.expired(earliest, "cursor" if "cursor" in body else "occurred_after")
    return cursor


async def replay(ctx: Any, subscription_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """-- more43: followed in GET /work (kind ``replay``): the record ends when the replay is set
    and, for a webhook, its first dispatch from the cursor ran (later deliveries are the log's)."""
    kernel, site_id = ctx.kernel, ctx.require_site()
    cursor = await replay_cursor(kernel, site_id, body)
    async with ctx.reader() as db:
        label = f"Replay of {(await _row(db, subscription_id))['name']}"
    async with kernel.work.tracked(site_id, "replay", label, ctx.principal, target=("cdc_subscription", subscription_id)):
        return await _replay(ctx, kernel, site_id, subscription_id, cursor)


async def _replay(ctx: Any, kernel: Any, site_id: str, subscription_id: str, cursor: Cursor) -> dict[str, Any]:
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await _row(db, subscription_id, lock=True)
        values: dict[str, Any] = {"status": "active", "status_reason": None, "updated_at": now_utc()}
        if row["kind"] == "pull":
            values.update(cursor_txid=cursor.txid, cursor_id=cursor.id)
        else:
            await kernel.events.set_checkpoint(uow.conn, site_id, checkpoint_name(subscription_id), cursor)
        await db.execute(db.update(subscriptions).where(subscriptions.c.id == subscription_id).values(**values))
        uow.action(CHANGED, {"siteId": site_id})
        await audit.record(uow.conn, action="cdc.subscription.replay", site_id=site_id, principal=ctx.principal,
                           target_type="cdc_subscription", target_id=subscription_id,
                           details={"cursor": str(cursor), "from": row["status"]}, request_id=ctx.request_id)
        saved = await _row(db, subscription_id)
    if saved["kind"] == "webhook":
        await kernel.events.dispatch_now(site_id, checkpoint_name(subscription_id))
    return await record(kernel, saved)


async def dispatch(ctx: Any, subscription_id: str) -> dict[str, Any]:
    """Deliver an active webhook's pending events now, ending a retry's wait."""
    kernel, site_id = ctx.kernel, ctx.require_site()
    async with ctx.reader() as db:
        row = await _row(db, subscription_id)
    if row["kind"] != "webhook":
        raise ApiError.conflict("Only a webhook subscription is dispatched; a pull subscription is read",
                                kind=row["kind"])
    if row["status"] != "active":
        raise ApiError.conflict(f"The subscription is {row['status']}: resume or replay it first",
                                status=row["status"])
    await kernel.events.dispatch_now(site_id, checkpoint_name(subscription_id))
    return {"id": subscription_id, "dispatched": True}


async def list_deliveries(ctx: Any, subscription_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    async with ctx.reader() as db:
        await _row(db, subscription_id)
        mine = deliveries.c.subscription_id == subscription_id
        total = await db.scalar(db.select(deliveries, func.count()).where(mine))
        rows = await db.all(db.select(deliveries).where(mine).order_by(deliveries.c.id.desc())
                            .limit(limit).offset(offset))
    return [delivery_record(r) for r in rows], int(total or 0)


def delivery_record(row: Any) -> dict[str, Any]:
    return {"id": row["delivery_id"], "attempt": row["attempt"], "statusCode": row["status_code"],
            "durationMs": row["duration_ms"], "error": row["error"], "events": row["event_count"],
            "firstEventId": row["first_event"], "lastEventId": row["last_event"],
            "attemptedAt": iso(row["attempted_at"])}

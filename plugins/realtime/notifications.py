"""Notifications: stored per site, broadcast as the ``notification`` frame, sent by web push.

``create`` is the one entry point (``api.notify`` re-exports it): it checks the fields, stores
the row in the caller's unit of work (or its own), and after the commit publishes the frame and
queues the web-push delivery job when VAPID keys are configured. A notification without a
``recipient`` is the site's: its frame goes on the site's ``realtime.notification`` topic
(every connection of the site, studio and audience, in every process). One with a recipient
user goes on ``realtime.notification.<user id>``, which only that user's connections read; it
is listed to that user alone and pushed to that user's subscriptions alone. The frame and the
record keep the API's shape: the recipient is never in them.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sqlalchemy import func, or_

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.policy.privacy import RetentionTarget, rows_before
from kernel.tenancy.scope import SiteDB
from plugins.realtime import push
from plugins.realtime.channel import notification_topic
from plugins.realtime.tables import notifications

SEVERITIES = ("info", "success", "warning", "error")
LIMITS = {"kind": 100, "title": 200, "body": 2000, "deepLink": 2000, "entityId": 200}


def _text(name: str, value: Any, *, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise ApiError.validation(f"'{name}' is required", path=[name])
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise ApiError.validation(f"'{name}' is a {'non-empty ' if required else ''}string", path=[name])
    if len(value) > LIMITS[name] or "\x00" in value:
        raise ApiError.validation(f"'{name}' is at most {LIMITS[name]} characters of text", path=[name])
    return value


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "kind": row["kind"], "severity": row["severity"], "title": row["title"],
            "body": row["body"], "deepLink": row["deep_link"], "entityId": row["entity_id"],
            "ts": iso(row["created_at"])}


_USER_ID = re.compile(r"^[A-Za-z0-9_-]{1,36}$")


def _recipient(value: Any) -> str | None:
    # A programming error, not input: plugins pass a user id they hold (it names a topic).
    if value is not None and not (isinstance(value, str) and _USER_ID.match(value)):
        raise ValueError("a notification's recipient is a user id or None")
    return value


async def create(kernel: Any, site_id: str, *, kind: str, title: str, severity: str = "info",
                 body: str | None = None, deep_link: str | None = None, entity_id: str | None = None,
                 recipient: str | None = None, uow: Any = None) -> dict[str, Any]:
    """Store a notification of ``site_id`` and, after commit, send and push it; its record.
    ``recipient``: the user id it is for (their sessions, list and push subscriptions only);
    None: the whole site."""
    if severity not in SEVERITIES:
        raise ApiError.validation(f"'severity' is one of {', '.join(SEVERITIES)}", path=["severity"])
    row = {"id": uuid7(), "kind": _text("kind", kind, required=True), "severity": severity,
           "title": _text("title", title, required=True), "body": _text("body", body),
           "deep_link": _text("deepLink", deep_link), "entity_id": _text("entityId", entity_id),
           "recipient_id": _recipient(recipient), "created_at": now_utc()}
    out = record(row)
    if uow is None:
        async with kernel.unit_of_work(site_id) as own:
            await _write(kernel, own, site_id, row, out)
    else:
        if uow.site_id != site_id:
            raise ValueError("the unit of work belongs to another site")
        await _write(kernel, uow, site_id, row, out)
    return out


async def create_for(kernel: Any, site_id: str, recipients: list[str], *, uow: Any = None,
                     **fields: Any) -> list[dict[str, Any]]:
    """One notification (``create``'s fields) for each user of ``recipients``, in one unit of
    work (``uow``, or its own); nothing for an empty list. Their records, in order."""
    if uow is None:
        async with kernel.unit_of_work(site_id) as own:
            return await create_for(kernel, site_id, recipients, uow=own, **fields)
    return [await create(kernel, site_id, recipient=user_id, uow=uow, **fields)
            for user_id in dict.fromkeys(recipients)]


NOTIFY_EVENT = "realtime.notify"


async def on_notify_request(event: str, payload: dict[str, Any], ctx: Any) -> None:
    """The bus filter ``realtime.notify``: a plugin that does not require realtime asks for
    notifications in its transaction (``await uow.filter("realtime.notify", { recipients, kind,
    title, severity?, body?, deepLink?, entityId? })``); without realtime nobody answers and
    nothing is written. One notification per user of ``recipients``."""
    await create_for(ctx.kernel, ctx.site_id, list(payload["recipients"]), uow=ctx.uow, kind=payload["kind"],
                     title=payload["title"], severity=payload.get("severity", "info"), body=payload.get("body"),
                     deep_link=payload.get("deepLink"), entity_id=payload.get("entityId"))


async def _write(kernel: Any, uow: Any, site_id: str, row: dict[str, Any], out: dict[str, Any]) -> None:
    await uow.db.insert(notifications, row)
    if push.configured(kernel):
        await uow.enqueue(push.FANOUT_JOB, site_id=site_id, notification_id=row["id"])

    topic = notification_topic(row["recipient_id"])

    async def broadcast() -> None:
        await kernel.topics.publish(site_id, topic, out)

    uow.after_commit(broadcast)


def addressed_to(user_id: str | None) -> Any:
    """The notifications ``user_id`` may see: the site's, and their own (the site's only for a
    caller who is no user, such as an API key)."""
    everyone = notifications.c.recipient_id.is_(None)
    return everyone if user_id is None else or_(everyone, notifications.c.recipient_id == user_id)


async def list_page(kernel: Any, site_id: str, user_id: str | None, *, limit: int, offset: int,
                    handled: bool | None = None) -> tuple[list[dict[str, Any]], int]:
    """The notifications ``user_id`` sees in the site (``addressed_to``), newest first, and their total."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        where = [addressed_to(user_id)] if handled is None else [addressed_to(user_id), (
            notifications.c.handled_at.is_not(None) if handled else notifications.c.handled_at.is_(None))]
        total = await db.scalar(db.select(notifications, func.count()).where(*where))
        rows = await db.all(db.select(notifications).where(*where)
                            .order_by(notifications.c.created_at.desc(), notifications.c.id.desc())
                            .limit(limit).offset(offset))
    return [{**record(r), "handledAt": iso(r["handled_at"])} for r in rows], int(total or 0)


ANYONE = object()  # ``mark_handled`` for a plugin: whoever the notification is for


async def mark_handled(kernel: Any, site_id: str, notification_id: str, handled: bool = True,
                       user_id: Any = ANYONE) -> dict[str, Any]:
    """Mark one notification handled (or not); 404 ``RECORD_NOT_FOUND`` when the site has no such
    one that ``user_id`` sees (another user's is unknown to them, as another site's is). Without
    ``user_id`` (a plugin acting), any notification of the site."""
    seen = [] if user_id is ANYONE else [addressed_to(user_id)]
    async with kernel.unit_of_work(site_id) as uow:
        db = uow.db
        result = await db.execute(db.update(notifications).where(notifications.c.id == notification_id, *seen)
                                  .values(handled_at=now_utc() if handled else None))
        if not result.rowcount:
            raise ApiError(404, "RECORD_NOT_FOUND", "No such notification")
        row = await db.one(db.select(notifications).where(notifications.c.id == notification_id))
    return {**record(row), "handledAt": iso(row["handled_at"])}


async def prune_handled(kernel: Any, site_id: str, older_than: dt.timedelta) -> int:
    """Delete the site's handled notifications handled more than ``older_than`` ago; how many.
    Unhandled notifications are kept."""
    return await prune_handled_before(kernel, site_id, now_utc() - older_than)


async def prune_handled_before(kernel: Any, site_id: str, horizon: dt.datetime) -> int:
    """The retention target ``notifications``: handled notifications handled before ``horizon``."""
    async with kernel.unit_of_work(site_id) as uow:
        result = await uow.db.execute(uow.db.delete(notifications).where(
            notifications.c.handled_at.is_not(None), notifications.c.handled_at < horizon))
    return int(result.rowcount or 0)


async def load(kernel: Any, site_id: str, notification_id: str) -> dict[str, Any] | None:
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(notifications).where(notifications.c.id == notification_id))
    return record(row) if row is not None else None


RETENTION_TARGET = RetentionTarget("notifications", 30, prune_handled_before,
                                   "Handled in-app notifications, by the time they were handled.",
                                   pending=rows_before(notifications, notifications.c.handled_at,
                                                       notifications.c.handled_at.is_not(None)))

"""Content intents (``/agent/intents``): standing goals over content. An intent spawns a goal
(execution ``async``) on its schedule (periodic job ``agents.intents``), unless paused or frozen;
the spawned goal's writes pass the constitution like any other. The JSON shape (``export``) is
what the git integration writes to and reads from ``svc/intents.json``.

Shape: ``{ key, title, description, role?, trigger, budget?, status }`` with ``trigger``
``{ type: "schedule", everySeconds: N }`` (N ≥ 60) or ``{ type: "event", collection, events }``
(``events`` ⊆ create, update, delete).

Event intents are members of the kernel consumer group ``agents.intents`` on the durable event
log (a checkpoint per intent, set to the log's head when the intent becomes active): each
matching item event spawns one goal, with ``{{collection}}`` and ``{{itemId}}`` in the
description replaced by the event's. Events an agent or an intent caused (``agent:``, ``intent:``)
spawn nothing, so an intent that writes what it watches cannot loop.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from sqlalchemy import select

from kernel import SiteCacheSpec
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import aware, iso, now_utc
from kernel.events import ConsumerGroup, Event, GroupMember
from kernel.http.media import reject_unknown
from plugins.accounts import api as accounts_api
from plugins.agents.common import id_param, invalid, parse_budget, require_admin, require_member, site_db
from plugins.agents.goals import goals as goals_mod
from plugins.agents.governance import killswitch
from plugins.agents.governance import roles as roles_mod
from plugins.agents.guard import acting_context
from plugins.agents.tables import intents

KEY = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")
FIELDS = {"key", "title", "description", "role", "trigger", "budget", "status"}
SWEEP_JOB = "agents.intents"
MAX_IMPORT = 500
EVENT_GROUP = "agents.intents"
CHANGED = "agents.intents.changed"  # bus action after an intent is saved or deleted ({"siteId"})
MEMBERS_CACHE = SiteCacheSpec("agents_intent_members", max_entries=10_000, ttl=5.0, invalidate_on=(CHANGED,),
                              doc="Active event intents per site (the agents.intents consumer group).")


def shape(row: Any) -> dict[str, Any]:
    """The exportable JSON shape (no ids, no times)."""
    return {"key": row["key"], "title": row["title"], "description": row["description"], "role": row["role"],
            "trigger": row["trigger"], "budget": row["budget"], "status": row["status"]}


def record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], **shape(row), "source": row["source"], "nextRunAt": iso(row["next_run_at"]),
            "lastGoalId": row["last_goal_id"], "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


def _trigger(value: Any, path: list[str | int]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise invalid("'trigger' is an object with 'type' schedule or event", path)
    kind = value.get("type")
    if kind == "schedule":
        reject_unknown(value, {"type", "everySeconds"})
        every = value.get("everySeconds")
        if isinstance(every, bool) or not isinstance(every, int) or not 60 <= every <= 366 * 86400:
            raise invalid("'everySeconds' is an integer from 60 to 31622400", [*path, "everySeconds"])
        return {"type": "schedule", "everySeconds": every}
    if kind == "event":
        reject_unknown(value, {"type", "collection", "events"})
        coll = value.get("collection")
        if not isinstance(coll, str) or not 0 < len(coll) <= 64:
            raise invalid("'collection' names a collection", [*path, "collection"])
        events = value.get("events", ["create", "update"])
        if not isinstance(events, list) or not events or not set(events) <= {"create", "update", "delete"}:
            raise invalid("'events' is a non-empty list of create, update, delete", [*path, "events"])
        return {"type": "event", "collection": coll, "events": sorted(set(events))}
    raise invalid("'type' is 'schedule' or 'event'", [*path, "type"])


def parse(body: Any, path: list[str | int], *, partial: bool = False) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("An intent is an object", path)
    try:
        reject_unknown(body, FIELDS - ({"key"} if partial else set()))
    except ApiError as exc:
        raise invalid(exc.message, [*path, *(exc.details[0].path or [])]) from None
    out: dict[str, Any] = {}
    if not partial or "key" in body:
        key = body.get("key")
        if not isinstance(key, str) or not KEY.match(key):
            raise invalid("'key' is lowercase letters, digits, '.', '_' and '-', at most 64", [*path, "key"])
        out["key"] = key
    for field, limit, needed in (("title", 200, True), ("description", 20000, True)):
        if field in body or (needed and not partial):
            value = body.get(field)
            if not isinstance(value, str) or not value.strip() or len(value) > limit:
                raise invalid(f"'{field}' is a non-empty string of at most {limit} characters", [*path, field])
            out[field] = value
    if "role" in body:
        if body["role"] is not None and (not isinstance(body["role"], str) or len(body["role"]) > 64):
            raise invalid("'role' names an agent role", [*path, "role"])
        out["role"] = body["role"]
    elif not partial:
        out["role"] = None
    if "trigger" in body or not partial:
        out["trigger"] = _trigger(body.get("trigger"), [*path, "trigger"])
    if "budget" in body:
        out["budget"] = None if body["budget"] is None else parse_budget(body["budget"], [*path, "budget"])
    elif not partial:
        out["budget"] = None
    if "status" in body or not partial:
        status = body.get("status", "active")
        if status not in ("active", "paused"):
            raise invalid("'status' is 'active' or 'paused'", [*path, "status"])
        out["status"] = status
    return out


def _next_run(values: Any, now: dt.datetime, *, first: bool = False) -> dt.datetime | None:
    """When an active schedule intent spawns next: at once when it is new or resumed (``first``),
    then every ``everySeconds``."""
    trigger = values["trigger"]
    if values["status"] != "active" or trigger["type"] != "schedule":
        return None
    return now if first else now + dt.timedelta(seconds=trigger["everySeconds"])


def _watches(row: Any) -> bool:
    return row is not None and row["status"] == "active" and row["trigger"]["type"] == "event"


async def _saved(uow: Any, intent_id: str, before: Any, after: Any) -> None:
    """After an intent is saved or deleted: an event intent that becomes active starts at the
    log's head (what happens from now on); one that stops watching loses its checkpoint."""
    events = uow.kernel.events
    name = f"{EVENT_GROUP}:{intent_id}"
    if _watches(after) and (not _watches(before) or before["trigger"] != after["trigger"]):
        await events.set_checkpoint(uow.conn, uow.site_id, name, await events.head(uow.site_id))
    elif _watches(before) and not _watches(after):
        await events.remove_checkpoint(uow.conn, uow.site_id, name)
    uow.action(CHANGED, {"siteId": uow.site_id})


async def _check_role(conn: Any, site_id: str, name: Any, path: list[str | int]) -> None:
    if name is not None and await roles_mod.load(conn, site_id, name) is None:
        raise invalid(f"No agent role '{name}'", path)


async def _load(db: Any, intent_id: str) -> Any:
    row = await db.one(db.select(intents).where(intents.c.id == id_param(intent_id, "Intent")))
    if row is None:
        raise ApiError.not_found("Intent not found")
    return row


async def list_intents(ctx: Any) -> list[dict[str, Any]]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        rows = await db.all(db.select(intents).order_by(intents.c.key).limit(1000))
    return [record(r) for r in rows]


async def get(ctx: Any, intent_id: str) -> dict[str, Any]:
    site_id = await require_member(ctx)
    async with ctx.kernel.db.connect() as conn:
        return record(await _load(site_db(conn, site_id), intent_id))


def _principal(ctx: Any) -> dict[str, Any]:
    return accounts_api.principal_record(ctx.principal) | {"sessionId": None}


async def create(ctx: Any, body: dict[str, Any], *, source: str = "api") -> dict[str, Any]:
    site_id = await require_admin(ctx)
    values = parse(body, [])
    now = now_utc()
    row = {"id": uuid7(), **values, "source": source, "principal": _principal(ctx),
           "next_run_at": _next_run(values, now, first=True), "last_goal_id": None, "created_at": now,
           "updated_at": now}
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        await _check_role(uow.conn, site_id, values["role"], ["role"])
        if await uow.db.one(uow.db.select(intents, intents.c.id).where(intents.c.key == values["key"])):
            raise ApiError.conflict(f"An intent with key '{values['key']}' exists", code="RECORD_NOT_UNIQUE")
        await uow.db.insert(intents, row)
        await _saved(uow, row["id"], None, row)
    return record(row)


async def update(ctx: Any, intent_id: str, body: dict[str, Any]) -> dict[str, Any]:
    site_id = await require_admin(ctx)
    values = parse(body, [], partial=True)
    values.pop("key", None)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _load(uow.db, intent_id)
        if "role" in values:
            await _check_role(uow.conn, site_id, values["role"], ["role"])
        merged = {**row, **values}
        now = now_utc()
        changes = {**values, "updated_at": now, "principal": _principal(ctx)}
        if "trigger" in values or "status" in values:
            changes["next_run_at"] = _next_run(merged, now, first=True)
        await uow.db.execute(uow.db.update(intents).where(intents.c.id == row["id"]).values(**changes))
        await _saved(uow, row["id"], row, {**row, **changes})
    return record({**row, **changes})


async def set_status(ctx: Any, intent_id: str, status: str) -> dict[str, Any]:
    """``POST /agent/intents/:id/pause`` and ``/resume``."""
    return await update(ctx, intent_id, {"status": status})


async def delete(ctx: Any, intent_id: str) -> None:
    site_id = await require_admin(ctx)
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        row = await _load(uow.db, intent_id)
        await uow.db.execute(uow.db.delete(intents).where(intents.c.id == row["id"]))
        await _saved(uow, row["id"], row, None)


# ---------------------------------------------------------------------- gitops (api.py)

async def export(ctx: Any) -> list[dict[str, Any]]:
    site_id = ctx.require_site()
    async with ctx.kernel.db.connect() as conn:
        db = site_db(conn, site_id)
        rows = await db.all(db.select(intents).order_by(intents.c.key))
    return [shape(r) for r in rows]


async def import_many(ctx: Any, given: list[dict[str, Any]], *, source: str) -> dict[str, list[str]]:
    """Upsert by ``key``, all or nothing (400 with ``[i].field`` paths for a bad intent)."""
    site_id = ctx.require_site()
    if not isinstance(given, list) or len(given) > MAX_IMPORT:
        raise invalid(f"Intents are a list of at most {MAX_IMPORT}", [])
    parsed = [parse(one, [i]) for i, one in enumerate(given)]
    keys = [p["key"] for p in parsed]
    duplicate = next((i for i, k in enumerate(keys) if k in keys[:i]), None)
    if duplicate is not None:
        raise invalid(f"The key '{keys[duplicate]}' appears twice", [duplicate, "key"])
    out: dict[str, list[str]] = {"created": [], "updated": [], "unchanged": []}
    now = now_utc()
    async with ctx.kernel.unit_of_work(site_id, ctx.principal, ctx.request_id) as uow:
        for i, values in enumerate(parsed):
            await _check_role(uow.conn, site_id, values["role"], [i, "role"])
        existing = {r["key"]: r for r in await uow.db.all(uow.db.select(intents))}
        for values in parsed:
            row = existing.get(values["key"])
            if row is None:
                new = {"id": uuid7(), **values, "source": source[:200], "principal": _principal(ctx),
                       "next_run_at": _next_run(values, now, first=True), "last_goal_id": None, "created_at": now,
                       "updated_at": now}
                await uow.db.insert(intents, new)
                await _saved(uow, new["id"], None, new)
                out["created"].append(values["key"])
            elif shape(row) == values:
                out["unchanged"].append(values["key"])
            else:
                await uow.db.execute(uow.db.update(intents).where(intents.c.id == row["id"]).values(
                    **values, source=source[:200], principal=_principal(ctx), updated_at=now,
                    next_run_at=_next_run(values, now, first=True)))
                await _saved(uow, row["id"], row, {**row, **values})
                out["updated"].append(values["key"])
    return out


# ---------------------------------------------------------------------- spawning

async def spawn(kernel: Any, site_id: str, row: Any, now: dt.datetime, event: Event | None = None) -> str | None:
    """Spawn the intent's goal unless a freeze covers the intent (or its role, or the site); for an
    event, ``{{collection}}`` and ``{{itemId}}`` in the description name the event's item."""
    async with kernel.db.connect() as conn:
        frozen = killswitch.covering(await killswitch.active(conn, site_id), goal_ids=set(), role=row["role"],
                                     intent_id=row["id"])
    if frozen is not None:
        return None
    ctx = await acting_context(kernel, site_id, {"id": row["id"], "principal": row["principal"]})
    if ctx is None:
        return None
    description = row["description"]
    if event is not None:
        description = description.replace("{{collection}}", event.collection or "").replace(
            "{{itemId}}", event.item_id or "")
    spec = {"title": row["title"], "description": description, "role": row["role"],
            "execution": "async", "budget": row["budget"] or {}}
    async with kernel.unit_of_work(site_id) as uow:
        role = await roles_mod.load(uow.conn, site_id, row["role"]) if row["role"] else None
        if row["role"] and role is None:
            return None
        goal = goals_mod.new_row(ctx, spec, role, intent_id=row["id"])
        await goals_mod.insert(uow, goal)
        values: dict[str, Any] = {"last_goal_id": goal["id"]}
        if event is None:
            values["next_run_at"] = _next_run(row, now)
        await uow.db.execute(uow.db.update(intents).where(intents.c.id == row["id"]).values(**values))
    return goal["id"]


async def sweep(kernel: Any) -> None:
    """Periodic ``agents.intents``: spawn every due active schedule intent once (the conditional
    update of ``next_run_at`` claims the slot, so across workers it spawns once)."""
    now = now_utc()
    async with kernel.db.connect() as conn:
        due = (await conn.execute(select(intents).where(intents.c.status == "active",
                                                        intents.c.next_run_at <= now).limit(200))).mappings().all()
    for row in due:
        async with kernel.unit_of_work(row["site_id"]) as uow:
            claimed = await uow.db.execute(uow.db.update(intents).where(
                intents.c.id == row["id"], intents.c.next_run_at == row["next_run_at"]).values(
                next_run_at=_next_run(row, max(now, aware(row["next_run_at"])))))
        if claimed.rowcount == 1:
            await spawn(kernel, row["site_id"], row, now)


# ---------------------------------------------------------------------- event intents

async def members(kernel: Any, site_id: str) -> list[GroupMember]:
    async def load(_: Any) -> list[GroupMember]:
        async with kernel.db.connect() as conn:
            db = site_db(conn, site_id)
            rows = await db.all(db.select(intents, intents.c.id, intents.c.trigger).where(
                intents.c.status == "active"))
            await conn.rollback()
        return [GroupMember(r["id"], tuple(f"items.{e}" for e in r["trigger"]["events"]),
                            (r["trigger"]["collection"],)) for r in rows if r["trigger"]["type"] == "event"]

    return await kernel.site_caches[MEMBERS_CACHE.name].get_or_load(site_id, None, load)


async def handle_events(kernel: Any, site_id: str, intent_id: str, events: list[Event], attempt: int) -> None:
    """Spawn one goal per matching event (in log order); events agents caused spawn nothing."""
    for event in events:
        if (event.cause or "").startswith(("agent:", "intent:")):
            continue
        async with kernel.db.connect() as conn:
            row = await site_db(conn, site_id).one(site_db(conn, site_id).select(intents).where(
                intents.c.id == intent_id))
        if not _watches(row):
            return
        await spawn(kernel, site_id, row, now_utc(), event)


def consumer_group(kernel: Any) -> ConsumerGroup:
    return ConsumerGroup(EVENT_GROUP, members, handle_events, batch_size=1)

"""Flows: bodies, records, create, update, delete, listing. No HTTP objects here.

Who may do what: saving, reading and deleting flows, and reading runs, is for site admins
(routes.py); running a manual flow needs admin access or the capability ``flows:run``.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import secrets
from typing import Any

from croniter import croniter
from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from kernel.policy import audit
from plugins.access import api as access_api
from plugins.flows import graph as flowgraph
from plugins.flows import registry
from plugins.flows.tables import flows

TRIGGERS = ("manual", "event", "schedule", "webhook")
STATUSES = ("active", "draft")
ACTIONS = ("create", "update", "delete")
CHANGED = "flows.changed"  # bus action after a flow is saved or deleted ({"siteId"})
EVENT_GROUP = "flows.event"
MAX_PER_SITE = 500
TOKEN_MIN, TOKEN_MAX = 24, 200
REVOKE = ""  # 'triggerOptions.token: null': the webhook answers WEBHOOK_NOT_CONFIGURED until a new token
OPTION_KEYS = {"manual": (), "event": ("collection", "action", "role"), "schedule": ("cron", "role"),
               "webhook": ("token", "role")}


def not_found() -> ApiError:
    return ApiError.not_found("No such flow")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def checkpoint_name(flow_id: str) -> str:
    return f"{EVENT_GROUP}:{flow_id}"


def next_run(cron: str, after: dt.datetime) -> dt.datetime:
    """The first minute after ``after`` the 5-field UTC ``cron`` matches."""
    return croniter(cron, after.astimezone(dt.UTC)).get_next(dt.datetime).astimezone(dt.UTC)


def check_cron(value: Any) -> str:
    if not isinstance(value, str) or len(value) > 200:
        raise ApiError(400, "CRON_INVALID", "'triggerOptions.cron' must be a 5-field cron expression",
                       path=["triggerOptions", "cron"])
    expr = " ".join(value.split())
    valid = len(expr.split(" ")) == 5
    if valid:
        try:
            valid = croniter.is_valid(expr)
            if valid:
                croniter(expr, now_utc()).get_next(dt.datetime)
        except (ValueError, KeyError, OverflowError, RecursionError):
            valid = False
    if not valid:
        raise ApiError(400, "CRON_INVALID", f"'{value[:60]}' is not a valid 5-field cron expression (UTC)",
                       path=["triggerOptions", "cron"])
    return expr


def _filter_list(value: Any, name: str, allowed: tuple[str, ...] | None) -> list[str] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, str) else value
    if not isinstance(values, list) or not values or len(values) > 50 or not all(
            isinstance(v, str) and 0 < len(v) <= 64 for v in values):
        raise ApiError.validation(f"'triggerOptions.{name}' is a string or a list of 1 to 50 strings",
                                  path=["triggerOptions", name])
    if allowed is not None:
        for v in values:
            if v not in allowed:
                raise ApiError.validation(f"'triggerOptions.{name}' values are {', '.join(allowed)}",
                                          path=["triggerOptions", name])
    return list(dict.fromkeys(values))


def parse_body(body: Any, *, creating: bool, current: dict[str, Any] | None = None) -> dict[str, Any]:
    """The checked values of a create or update body (``token``: a proposed or new clear token)."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be an object", path=["body"])
    reject_unknown(body, {"name", "status", "trigger", "triggerOptions", "graph"})
    out: dict[str, Any] = {}
    if "name" in body or creating:
        name = body.get("name")
        if not isinstance(name, str) or not name.strip() or len(name) > 100:
            raise ApiError.validation("'name' is 1 to 100 characters", path=["name"])
        out["name"] = name.strip()
    if "status" in body or creating:
        status = body.get("status", "draft")
        if status not in STATUSES:
            raise ApiError.validation(f"'status' is one of {', '.join(STATUSES)}", path=["status"])
        out["status"] = status
    if "trigger" in body or creating:
        trigger = body.get("trigger")
        if trigger not in TRIGGERS:
            raise ApiError.validation(f"'trigger' is one of {', '.join(TRIGGERS)}", path=["trigger"])
        out["trigger"] = trigger
    if "graph" in body or creating:
        out["graph"] = flowgraph.check_shape(body.get("graph"))
    if "triggerOptions" in body:
        options = body["triggerOptions"]
        if options is None:
            options = {}
        if not isinstance(options, dict):
            raise ApiError.validation("'triggerOptions' is an object", path=["triggerOptions"])
        out["trigger_options"] = options
    elif creating:
        out["trigger_options"] = {}
    return out


def check_trigger_options(trigger: str, options: dict[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The stored trigger options (without a token) and a proposed webhook token, if any."""
    allowed = OPTION_KEYS[trigger]
    for key in options:
        if key not in allowed:
            raise ApiError.validation(f"A {trigger} flow's triggerOptions take {', '.join(allowed) or 'nothing'}",
                                      path=["triggerOptions", key])
    stored: dict[str, Any] = {}
    token = None
    if "role" in options and options["role"] is not None:
        role = options["role"]
        if not isinstance(role, str) or not 0 < len(role) <= 36:
            raise ApiError.validation("'triggerOptions.role' is a role id or a built-in key", path=["triggerOptions",
                                                                                                 "role"])
        stored["role"] = role
    if trigger == "event":
        for name, allowed_values in (("collection", None), ("action", ACTIONS)):
            found = _filter_list(options.get(name), name, allowed_values)
            if found is not None:
                stored[name] = found
    elif trigger == "schedule" and options.get("cron") is not None:
        stored["cron"] = check_cron(options["cron"])
    elif trigger == "webhook" and "token" in options and options["token"] is None:
        token = REVOKE
    elif trigger == "webhook" and options.get("token") is not None:
        token = options["token"]
        if not isinstance(token, str) or not TOKEN_MIN <= len(token) <= TOKEN_MAX or not token.isascii() or any(
                c.isspace() for c in token):
            raise ApiError.validation(f"'triggerOptions.token' is {TOKEN_MIN} to {TOKEN_MAX} printable ASCII "
                                      "characters", path=["triggerOptions", "token"])
    return stored, token


async def resolve_role(conn: Any, site_id: str, role: str | None) -> dict[str, Any]:
    """The role a non-manual flow runs as (``public`` by default), 400 when not of this site."""
    key = role or "public"
    found = await access_api.role_by_system_key(conn, site_id, key) if key in ("admin", "public", "subscriber") \
        else await access_api.role_in_site(conn, site_id, key)
    if found is None:
        raise ApiError.validation(f"No role '{key}' in this site", path=["triggerOptions", "role"])
    return dict(found)


def record(row: Any) -> dict[str, Any]:
    options = dict(row["trigger_options"] or {})
    out = {"id": row["id"], "name": row["name"], "status": row["status"], "trigger": row["trigger"],
           "triggerOptions": options, "graph": row["graph"],
           "next_run_at": iso(row["next_run_at"]) if row["next_run_at"] else None,
           "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}
    if row["trigger"] == "webhook":
        out["hasToken"] = row["token_hash"] is not None
    return out


async def _row(db: Any, flow_id: str) -> Any:
    row = await db.one(db.select(flows).where(flows.c.id == flow_id))
    if row is None:
        raise not_found()
    return row


async def get_row(ctx: Any, flow_id: str) -> Any:
    async with ctx.reader() as db:
        return await _row(db, flow_id)


async def get_record(ctx: Any, flow_id: str) -> dict[str, Any]:
    return record(await get_row(ctx, flow_id))


async def list_records(ctx: Any, status: str | None, trigger: str | None) -> list[dict[str, Any]]:
    if status is not None and status not in STATUSES:
        raise ApiError.validation(f"'status' is one of {', '.join(STATUSES)}", path=["status"])
    if trigger is not None and trigger not in TRIGGERS:
        raise ApiError.validation(f"'trigger' is one of {', '.join(TRIGGERS)}", path=["trigger"])
    async with ctx.reader() as db:
        stmt = db.select(flows)
        if status is not None:
            stmt = stmt.where(flows.c.status == status)
        if trigger is not None:
            stmt = stmt.where(flows.c.trigger == trigger)
        rows = await db.all(stmt.order_by(flows.c.created_at, flows.c.id))
    return [record(r) for r in rows]


async def _settle(ctx: Any, uow: Any, values: dict[str, Any], current: Any | None) -> tuple[dict[str, Any], str | None]:
    """Check the merged flow (graph, trigger options, role) and compute what it stores."""
    merged = {**(dict(current) if current is not None else {}), **values}
    trigger, status = merged["trigger"], merged["status"]
    raw_options = values.get("trigger_options")
    if raw_options is None:
        raw_options = dict(current["trigger_options"] or {}) if current is not None else {}
        if current is not None and current["trigger"] != trigger:
            raw_options = {}
    stored, token = check_trigger_options(trigger, raw_options)
    merged["trigger_options"] = stored
    if status == "active":
        flowgraph.validate(merged["graph"], registry.operations(ctx.kernel))
        if trigger != "manual":
            await resolve_role(uow.conn, uow.site_id, stored.get("role"))
        if trigger == "schedule" and "cron" not in stored:
            raise ApiError(400, "CRON_REQUIRED", "An active schedule flow needs 'triggerOptions.cron'",
                           path=["triggerOptions", "cron"])
    elif stored.get("role") is not None and trigger != "manual":
        await resolve_role(uow.conn, uow.site_id, stored.get("role"))
    merged["next_run_at"] = next_run(stored["cron"], now_utc()) if trigger == "schedule" and "cron" in stored \
        and status == "active" else None
    if trigger == "webhook" and token == REVOKE:
        merged["token_hash"], token = None, None
    elif trigger == "webhook":
        # A new webhook flow gets a token; a revoked one stays revoked until one is proposed.
        if token is None and (current is None or current["trigger"] != "webhook"):
            token = secrets.token_urlsafe(32)
        if token is not None:
            merged["token_hash"] = token_hash(token)
    else:
        merged["token_hash"] = None
    return merged, token


async def _event_checkpoint(ctx: Any, uow: Any, flow_id: str, before: Any | None, after: dict[str, Any]) -> None:
    """An event flow that becomes active starts at the log's tail (what happens from now on)."""
    was = before is not None and before["trigger"] == "event" and before["status"] == "active"
    now = after["trigger"] == "event" and after["status"] == "active"
    if now and not was:
        await ctx.kernel.events.set_checkpoint(uow.conn, uow.site_id, checkpoint_name(flow_id),
                                               await ctx.kernel.events.head(uow.site_id))
    elif was and not now:
        await ctx.kernel.events.remove_checkpoint(uow.conn, uow.site_id, checkpoint_name(flow_id))


async def create(ctx: Any, body: Any) -> dict[str, Any]:
    values = parse_body(body, creating=True)
    async with ctx.unit_of_work() as uow:
        count = await uow.db.scalar(uow.db.select(flows, func.count()))
        if int(count or 0) >= MAX_PER_SITE:
            raise ApiError.forbidden(f"A site has at most {MAX_PER_SITE} flows", limit=MAX_PER_SITE)
        merged, token = await _settle(ctx, uow, values, None)
        now = now_utc()
        row = {"id": uuid7(), "name": merged["name"], "status": merged["status"], "trigger": merged["trigger"],
               "trigger_options": merged["trigger_options"], "graph": merged["graph"],
               "token_hash": merged.get("token_hash"), "next_run_at": merged["next_run_at"],
               "saved_by": ctx.principal.user_id, "created_at": now, "updated_at": now}
        await uow.db.insert(flows, row)
        await _event_checkpoint(ctx, uow, row["id"], None, row)
        uow.action(CHANGED, {"siteId": uow.site_id})
        await audit.record(uow.conn, action="flows.flow.create", site_id=uow.site_id, principal=ctx.principal,
                           target_type="flow", target_id=row["id"],
                           details={"trigger": row["trigger"], "status": row["status"]}, request_id=ctx.request_id)
        saved = await _row(uow.db, row["id"])
    out = record(saved)
    if token is not None:
        out["token"] = token  # returned once; stored only as its hash
    return out


async def update(ctx: Any, flow_id: str, body: Any) -> dict[str, Any]:
    values = parse_body(body, creating=False)
    async with ctx.unit_of_work() as uow:
        current = await _row(uow.db, flow_id)
        merged, token = await _settle(ctx, uow, values, current)
        changes = {k: merged[k] for k in ("name", "status", "trigger", "trigger_options", "graph", "next_run_at")}
        changes["token_hash"] = merged.get("token_hash", current["token_hash"])
        changes.update(saved_by=ctx.principal.user_id, updated_at=now_utc())
        await uow.db.execute(uow.db.update(flows).where(flows.c.id == flow_id).values(**changes))
        await _event_checkpoint(ctx, uow, flow_id, current, merged)
        uow.action(CHANGED, {"siteId": uow.site_id})
        await audit.record(uow.conn, action="flows.flow.update", site_id=uow.site_id, principal=ctx.principal,
                           target_type="flow", target_id=flow_id,
                           # not "tokenRotated": the audit drops details whose name says token
                           details={"fields": sorted(values), "webhookRotated": token is not None},
                           request_id=ctx.request_id)
        saved = await _row(uow.db, flow_id)
    out = record(saved)
    if token is not None:
        out["token"] = token
    return out


async def delete(ctx: Any, flow_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        current = await _row(uow.db, flow_id)
        await uow.db.execute(uow.db.delete(flows).where(flows.c.id == flow_id))
        if current["trigger"] == "event":
            await ctx.kernel.events.remove_checkpoint(uow.conn, uow.site_id, checkpoint_name(flow_id))
        uow.action(CHANGED, {"siteId": uow.site_id})
        await audit.record(uow.conn, action="flows.flow.delete", site_id=uow.site_id, principal=ctx.principal,
                           target_type="flow", target_id=flow_id, details={"trigger": current["trigger"]},
                           request_id=ctx.request_id)

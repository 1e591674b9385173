"""The four ways a flow starts.

- **event**: each active event flow is a member of the kernel consumer group ``flows.event``,
  with its own checkpoint in the durable event log (``flows.event:<flow id>``), set to the
  log's tail when the flow becomes active. The dispatcher hands it the site's item events
  after commit (filtered by ``triggerOptions.collection`` and ``.action``); the flow runs
  there, once per event, so a write never waits for a flow and a flow's failure never fails
  the write. Events caused by a flow run (``flow-run:<id>``) start no flow, so a flow that
  writes the collection it watches cannot loop.
- **schedule**: the periodic job ``flows.schedule`` (every ``SVC_FLOWS_SCHEDULE_SECONDS``)
  advances each due flow's ``next_run_at`` with a conditional update *before* it enqueues
  the run (``flows.run``, deduplicated by flow and slot), so across workers a slot runs once.
- **webhook**: ``POST /flows/:id/trigger``, token compared in constant time against its hash;
  the request waits for the run and answers its outcome truthfully.
- **manual**: ``POST /flows/:id/run`` creates the run and enqueues ``flows.run``; it answers
  at once with ``{ runId, status: "running", startedAt }``.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import select

from kernel import SiteCacheSpec
from kernel.base.errors import ApiError
from kernel.db.meta import iso, now_utc
from kernel.events import ConsumerGroup, Event, GroupMember
from kernel.tenancy.scope import SiteDB
from plugins.flows import runner
from plugins.flows.service import CHANGED, EVENT_GROUP, next_run, not_found, token_hash
from plugins.flows.tables import flows

log = logging.getLogger("svc.flows")
RUN_JOB = "flows.run"
SCHEDULE_JOB = "flows.schedule"
RETENTION_JOB = "flows.retention"
SWEEP_BATCH = 500  # due schedule flows started by one sweep
CAPABILITY = "flows:run"
# docs/flows.md, Data between steps: the webhook input drops these and any header naming a token.
DROPPED_HEADERS = frozenset({"authorization", "cookie", "x-svc-refresh", "x-api-key", "proxy-authorization",
                             "x-flow-token"})


# ---------------------------------------------------------------------- event

MEMBERS_CACHE = SiteCacheSpec("flows_event_members", max_entries=10_000, ttl=5.0, invalidate_on=(CHANGED,),
                              doc="Active event flows per site (the flows.event consumer group).")


def _types(actions: list[str] | None) -> tuple[str, ...]:
    return tuple(f"items.{a}" for a in (actions or ("create", "update", "delete")))


async def members(kernel: Any, site_id: str) -> list[GroupMember]:
    async def load(_: Any) -> list[GroupMember]:
        async with kernel.db.connect() as conn:
            db = SiteDB(site_id, conn)
            rows = await db.all(db.select(flows, flows.c.id, flows.c.trigger_options).where(
                flows.c.trigger == "event", flows.c.status == "active"))
            await conn.rollback()
        out = []
        for row in rows:
            options = row["trigger_options"] or {}
            out.append(GroupMember(row["id"], _types(options.get("action")), tuple(options.get("collection") or ())))
        return out

    return await kernel.site_caches[MEMBERS_CACHE.name].get_or_load(site_id, None, load)


def event_input(event: Event) -> dict[str, Any]:
    """An event flow's ``$trigger``: the thin event (ids and changed field names, no values)."""
    return {"event": event.type, "action": event.type.rpartition(".")[2], "collection": event.collection,
            "key": event.item_id, "fields": list(event.fields) if event.fields is not None else None,
            "eventId": str(event.id), "occurredAt": iso(event.occurred_at)}


async def handle_events(kernel: Any, site_id: str, flow_id: str, events: list[Event], attempt: int) -> None:
    """Run the event flow ``flow_id`` once for each event (in log order). Raising retries the
    batch; a run's own failure does not raise (it is the run's outcome)."""
    for event in events:
        if (event.cause or "").startswith("flow-run:"):
            continue
        async with kernel.db.begin() as conn:
            db = SiteDB(site_id, conn)
            flow = await db.one(db.select(flows, flows.c.status, flows.c.trigger).where(flows.c.id == flow_id))
            if flow is None or flow["status"] != "active" or flow["trigger"] != "event":
                return
            run = await runner.create_run(kernel, conn, site_id, flow_id, "event", event_input(event), claimed=True)
        await runner.execute(kernel, site_id, run["id"], event_input(event), claimed=True)


def consumer_group(kernel: Any) -> ConsumerGroup:
    # One event per batch: a batch that outlives its lease (SVC_EVENTS_LEASE_SECONDS) is handed to
    # another worker, so a batch of one re-runs at most the one flow run that was cut short.
    return ConsumerGroup(EVENT_GROUP, members, handle_events, batch_size=1)


# ---------------------------------------------------------------------- jobs: run, schedule, retention

async def run_job(kernel: Any, site_id: str, run_id: str, input: Any = None) -> None:  # noqa: A002 - job argument
    """The ``flows.run`` job: execute a created run (manual and schedule triggers)."""
    await runner.execute(kernel, site_id, run_id, input)


async def schedule_sweep(kernel: Any) -> int:
    """The ``flows.schedule`` job: start every active schedule flow whose ``next_run_at`` is due;
    how many it started (at most ``SWEEP_BATCH``; the rest at the next sweep). Idempotent
    across workers (see the module docstring)."""
    now = now_utc()
    started = 0
    # One query over every site (the ``next_run_at`` index), not one per site: at 10,000 sites
    # the per-site walk cost 10,000 queries every SVC_FLOWS_SCHEDULE_SECONDS. Each due flow is
    # then claimed in its own site's unit of work.
    async with kernel.db.connect() as conn:
        due = (await conn.execute(
            select(flows.c.site_id, flows.c.id, flows.c.next_run_at, flows.c.trigger_options).where(
                flows.c.next_run_at <= now, flows.c.trigger == "schedule", flows.c.status == "active")
            .order_by(flows.c.next_run_at).limit(SWEEP_BATCH))).mappings().all()
        await conn.rollback()
    for flow in due:
        started += await _start_scheduled(kernel, flow["site_id"], flow, now)
    return started


async def _start_scheduled(kernel: Any, site_id: str, flow: Any, now: Any) -> int:
    cron = (flow["trigger_options"] or {}).get("cron")
    if not cron:
        return 0
    slot = flow["next_run_at"]
    async with kernel.unit_of_work(site_id) as uow:
        moved = await uow.db.execute(uow.db.update(flows).where(
            flows.c.id == flow["id"], flows.c.next_run_at == slot).values(next_run_at=next_run(cron, now)))
        if moved.rowcount != 1:
            return 0  # another worker took this slot
        input_ = {"scheduledAt": iso(slot), "firedAt": iso(now)}
        run = await runner.create_run(kernel, uow.conn, site_id, flow["id"], "schedule", input_)
        await uow.enqueue(RUN_JOB, site_id=site_id, run_id=run["id"], input=input_,
                          dedupe_key=f"{flow['id']}:{iso(slot)}")
    return 1


async def retention_job(kernel: Any) -> None:
    await runner.prune(kernel)


# ---------------------------------------------------------------------- manual

async def run_manual(ctx: Any, flow_id: str, body: Any) -> dict[str, Any]:
    """``POST /flows/:id/run``: admin access or the capability ``flows:run``; only manual flows
    that are active; the body is the input. Runs as the caller."""
    site_id = ctx.require_site()
    principal = ctx.principal
    if not principal.is_admin and not await ctx.kernel.access.has_capability(principal, site_id, CAPABILITY):
        raise ApiError.forbidden(f"Running a flow needs admin access or the capability {CAPABILITY}",
                                 capability=CAPABILITY)
    async with ctx.unit_of_work() as uow:
        flow = await uow.db.one(uow.db.select(flows).where(flows.c.id == flow_id))
        if flow is None or flow["trigger"] != "manual" or flow["status"] != "active":
            raise not_found()
        run = await runner.create_run(ctx.kernel, uow.conn, site_id, flow_id, "manual", body,
                                      actor=runner.actor_of(principal))
        await uow.enqueue(RUN_JOB, site_id=site_id, run_id=run["id"], input=body)
    return {"runId": run["id"], "status": run["status"], "startedAt": iso(run["started_at"])}


# ---------------------------------------------------------------------- webhook

def presented_token(headers: dict[str, str]) -> str | None:
    token = headers.get("x-flow-token")
    if token:
        return token
    auth = headers.get("authorization") or ""
    scheme, _, value = auth.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


def clean_headers(headers: dict[str, str]) -> dict[str, str]:
    """The headers a webhook flow sees: credentials and any header naming a token dropped."""
    return {k: v for k, v in headers.items() if k.lower() not in DROPPED_HEADERS and "token" not in k.lower()}


async def run_webhook(kernel: Any, site_id: str, flow_id: str, headers: dict[str, str],
                      body: Callable[[], Any], query: dict[str, Any]) -> dict[str, Any]:
    """``POST /flows/:id/trigger``: check the token, run the flow and wait for its end. 404 for
    a missing, non-webhook or inactive flow; 401 ``WEBHOOK_NOT_CONFIGURED`` without a token on
    the flow, 401 ``UNAUTHENTICATED`` for a missing or wrong one; ``body()`` parses the body
    (400 for bad JSON) after the token is accepted; 502 ``FLOW_RUN_FAILED`` when
    the run fails (with ``runId``)."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        flow = await db.one(db.select(flows, flows.c.id, flows.c.trigger, flows.c.status, flows.c.token_hash)
                            .where(flows.c.id == flow_id))
        await conn.rollback()
    if flow is None or flow["trigger"] != "webhook" or flow["status"] != "active":
        raise not_found()
    if not flow["token_hash"]:
        raise ApiError(401, "WEBHOOK_NOT_CONFIGURED", "This flow has no webhook token")
    given = presented_token(headers)
    # Both sides are SHA-256 hex digests: equal length, compared in constant time.
    if not given or not hmac.compare_digest(token_hash(given), flow["token_hash"]):
        raise ApiError(401, "UNAUTHENTICATED", "A valid flow token is required (x-flow-token or Bearer)")
    input_ = {"body": body(), "headers": clean_headers(headers), "query": query}
    async with kernel.db.begin() as conn:
        run = await runner.create_run(kernel, conn, site_id, flow_id, "webhook", input_, claimed=True)
    outcome = await runner.execute(kernel, site_id, run["id"], input_, claimed=True)
    if outcome is None:  # cannot happen for a run this request created; stay truthful anyway
        raise ApiError(500, "INTERNAL", "The run could not be started")
    if outcome["status"] != "succeeded":
        error = outcome["error"] or {}
        raise ApiError(502, "FLOW_RUN_FAILED", f"The flow run failed: {error.get('code', 'FAILED')}",
                       extensions={"runId": outcome["runId"], "nodeId": error.get("nodeId"),
                                   "reason": error.get("code")})
    return {k: outcome[k] for k in ("runId", "status", "startedAt", "finishedAt")}



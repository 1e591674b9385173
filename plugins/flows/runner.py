"""Running a flow: one run record, its steps in graph order, bounded, redacted, truthful.

A run is created (``create_run``) by its trigger with status ``running`` and executed
(``execute``) once: the first execution claims it (``attempts`` 0 -> 1); an execution that
finds it claimed but unfinished (its worker died mid-run) marks it ``failed`` with
``INTERRUPTED`` rather than repeat steps that may not be safe to repeat. Within a run, a step
that fails with a retryable error is tried again (up to 3 times) only when its operation is
``retry_safe``.

Bounds (settings): ``SVC_FLOWS_MAX_STEPS`` steps, ``SVC_FLOWS_RUN_TIMEOUT`` seconds for the
whole run, ``SVC_FLOWS_MAX_OUTPUT_BYTES`` of JSON per step output. What is stored: the input,
each step's input (its options as rendered) and output, redacted (``data.redact``), its
status, timing and error code; a step's output is what the run's principal could read (item
operations go through the items API, which masks what it may not see).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import time
from typing import Any

from sqlalchemy import update

from kernel.auth.principal import Principal
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.policy.privacy import prune_rows, sites_holding
from kernel.tenancy.scope import SiteDB
from plugins.flows import data as flowdata
from plugins.flows import graph as flowgraph
from plugins.flows import registry
from plugins.flows.api import Branch, OperationContext, StepFailed
from plugins.flows.service import resolve_role
from plugins.flows.tables import flows, runs

log = logging.getLogger("svc.flows")
MAX_STEP_TRIES = 3


def actor_of(principal: Any) -> dict[str, Any]:
    """What a manual run keeps of its caller, to act as it later (no token, no claims)."""
    return {"kind": principal.kind, "userId": principal.user_id, "apiKeyId": principal.api_key_id,
            "roleId": principal.role_id, "instanceAdmin": bool(principal.is_instance_admin)}


async def create_run(kernel: Any, conn: Any, site_id: str, flow_id: str, trigger: str, input_: Any,
                     actor: dict[str, Any] | None = None, *, claimed: bool = False) -> dict[str, Any]:
    """Insert a ``running`` run in ``conn``'s transaction; its record. ``claimed``: the caller
    executes it itself right after the commit (``execute(..., claimed=True)``), saving a write."""
    row = {"id": uuid7(), "flow_id": flow_id, "trigger": trigger, "status": "running", "actor": actor,
           "attempts": 1 if claimed else 0, "input": flowdata.redact(input_), "steps": [], "error": None, "started_at": now_utc(),
           "finished_at": None, "duration_ms": None}
    await SiteDB(site_id, conn).insert(runs, row)
    return row


def summary(row: Any) -> dict[str, Any]:
    return {"runId": row["id"], "flowId": row["flow_id"], "trigger": row["trigger"], "status": row["status"],
            "startedAt": iso(row["started_at"]), "finishedAt": iso(row["finished_at"]),
            "durationMs": row["duration_ms"]}


def detail(row: Any) -> dict[str, Any]:
    return {**summary(row), "input": row["input"], "steps": row["steps"] or [], "error": row["error"]}


async def principal_for(kernel: Any, conn: Any, site_id: str, flow: Any, actor: dict[str, Any] | None) -> Principal:
    """Whose permissions a run has (docs/flows.md): a manual run its caller's; any other the
    role its flow names (``triggerOptions.role``, default ``public``), never more than the
    site admin who saved it could grant."""
    if flow["trigger"] == "manual" and actor:
        base = Principal(kind=actor.get("kind") or "user", user_id=actor.get("userId"), site_id=site_id,
                         role_id=actor.get("roleId"), api_key_id=actor.get("apiKeyId"),
                         is_instance_admin=bool(actor.get("instanceAdmin")))
    else:
        role = await resolve_role(conn, site_id, (flow["trigger_options"] or {}).get("role"))
        base = Principal(kind="flow", site_id=site_id, role_id=role["id"])
    return await kernel.access.resolve(base, site_id)


async def _claimed(kernel: Any, site_id: str, run_id: str) -> tuple[Any, Any] | None:
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(runs).where(runs.c.id == run_id))
        flow = None if row is None else await db.one(db.select(flows).where(flows.c.id == row["flow_id"]))
        await conn.rollback()
    return None if row is None or flow is None or row["status"] != "running" else (row, flow)


async def _claim(kernel: Any, site_id: str, run_id: str) -> tuple[Any, Any] | None:
    async with kernel.db.begin() as conn:
        db = SiteDB(site_id, conn)
        claimed = await db.execute(db.update(runs).where(runs.c.id == run_id, runs.c.status == "running",
                                                         runs.c.attempts == 0).values(attempts=1))
        row = await db.one(db.select(runs).where(runs.c.id == run_id))
        if row is None:
            return None
        if claimed.rowcount != 1:
            if row["status"] == "running":  # claimed before by an execution that never finished
                await _finish(db, row, "failed", list(row["steps"] or []),
                              {"code": "INTERRUPTED", "message": "The run was interrupted (its worker stopped)"})
            return None
        flow = await db.one(db.select(flows).where(flows.c.id == row["flow_id"]))
        if flow is None:
            return None
        return row, flow


async def _finish(db: SiteDB, row: Any, status: str, steps: list[dict[str, Any]],
                  error: dict[str, Any] | None) -> dt.datetime:
    finished = now_utc()
    started = row["started_at"]
    if started.tzinfo is None:
        started = started.replace(tzinfo=dt.UTC)
    await db.execute(db.update(runs).where(runs.c.id == row["id"]).values(
        status=status, steps=steps, error=flowdata.redact(error), finished_at=finished,
        duration_ms=max(0, int((finished - started).total_seconds() * 1000))))
    return finished


async def execute(kernel: Any, site_id: str, run_id: str, input_: Any, *,
                  claimed: bool = False) -> dict[str, Any] | None:
    """Run the run ``run_id`` (created by ``create_run``) to its end; its summary, or None when
    another execution has it or had it. Never raises for a step's failure: that is the run's
    outcome. ``input_`` is the trigger's input as received (the stored one is redacted).
    ``claimed``: the run was created claimed by this caller (``create_run(claimed=True)``)."""
    found = await (_claimed if claimed else _claim)(kernel, site_id, run_id)
    if found is None:
        return None
    row, flow = found
    settings = kernel.settings
    steps: list[dict[str, Any]] = []
    error: dict[str, Any] | None = None
    try:
        async with kernel.db.connect() as conn:
            principal = await principal_for(kernel, conn, site_id, flow, row["actor"])
            await conn.rollback()
        steps, error = await _walk(kernel, site_id, flow, row, principal, input_,
                                   deadline=time.monotonic() + float(settings.get("flows_run_timeout")))
    except ApiError as exc:
        error = {"code": exc.code, "message": exc.message}
    except Exception:  # noqa: BLE001 - a broken extension operation must not leave the run 'running'
        log.exception("flow run %s of site %s failed unexpectedly", run_id, site_id)
        error = {"code": "INTERNAL", "message": "The run failed unexpectedly (see the server log)"}
    status = "failed" if error else "succeeded"
    async with kernel.db.begin() as conn:
        finished = await _finish(SiteDB(site_id, conn), row, status, steps, error)
    started = row["started_at"]
    return {"runId": run_id, "status": status, "startedAt": iso(started), "finishedAt": iso(finished),
            "error": error}


async def _walk(kernel: Any, site_id: str, flow: Any, row: Any, principal: Principal, input_: Any, *,
                deadline: float) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    graph = flow["graph"] or {"nodes": [], "edges": []}
    operations = registry.operations(kernel)
    nodes = {n["id"]: n for n in graph["nodes"]}
    out_edges: dict[str, list[dict[str, Any]]] = {}
    for edge in graph["edges"]:
        out_edges.setdefault(edge["from"], []).append(edge)
    entry = flowgraph.entry_of(graph)
    if entry is None:
        return [], {"code": "GRAPH_NO_ENTRY", "message": "The flow's graph has no single entry"}
    max_steps = int(kernel.settings.get("flows_max_steps"))
    max_output = int(kernel.settings.get("flows_max_output_bytes"))
    data: dict[str, Any] = {"$trigger": input_, "$last": None}
    active = {entry}
    steps: list[dict[str, Any]] = []
    for node_id in flowgraph.topological(graph["nodes"], graph["edges"]):
        if node_id not in active:
            continue
        node = nodes[node_id]
        if len(steps) >= max_steps:
            return steps, {"code": "STEP_LIMIT", "message": f"The run reached {max_steps} steps", "nodeId": node_id}
        op = operations.get(node["operation"])
        step: dict[str, Any] = {"nodeId": node_id, "operation": node["operation"], "status": "failed",
                                "input": None, "output": None, "attempts": 0, "durationMs": 0}
        steps.append(step)
        if op is None:
            step["error"] = {"code": "GRAPH_UNKNOWN_OPERATION", "message": "The operation is not installed"}
            return steps, {**step["error"], "nodeId": node_id}
        started = time.monotonic()
        ctx = OperationContext(kernel=kernel, site_id=site_id, flow_id=flow["id"], run_id=row["id"], node_id=node_id,
                               principal=principal, data=data, deadline=deadline, cause=f"flow-run:{row['id']}")
        passed = True
        failure: dict[str, Any] | None = None
        while True:
            step["attempts"] += 1
            try:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError
                options = {k: (v if k in op.raw else flowdata.render_value(v, data)) for k, v in node["options"].items()}
                step["input"] = _stored_input(options, max_output)
                async with asyncio.timeout(remaining):
                    result = await op.run(ctx, options)
                if isinstance(result, Branch):
                    passed, result = result.passed, result.output
                size = flowdata.json_size(result)
                if size > max_output:
                    raise StepFailed(f"The output is {size} bytes, more than {max_output}", code="OUTPUT_TOO_LARGE")
                failure = None
                break
            except TimeoutError:
                failure = {"code": "RUN_TIMEOUT", "message": "The run's time limit was reached"}
                break
            except StepFailed as exc:
                failure = {"code": exc.code, "message": str(exc)[:500]}
                if exc.output is not None:
                    step["output"] = flowdata.redact(exc.output)
                if exc.retryable and op.retry_safe and step["attempts"] < MAX_STEP_TRIES \
                        and deadline - time.monotonic() > 0.5:
                    await asyncio.sleep(min(0.2 * 2 ** (step["attempts"] - 1), 2.0))
                    continue
                break
            except ApiError as exc:
                failure = {"code": exc.code, "message": exc.message[:500]}
                break
        step["durationMs"] = int((time.monotonic() - started) * 1000)
        if failure is not None:
            step["error"] = flowdata.redact(failure)  # an upstream's message may hold a NUL
            return steps, {**failure, "nodeId": node_id}
        step["status"] = "succeeded"
        step["output"] = flowdata.redact(result)
        data[node_id] = result
        data["$last"] = result
        want = "true" if passed else "false"
        for edge in out_edges.get(node_id, ()):
            if edge["when"] == want:
                active.add(edge["to"])
    return steps, None


def _stored_input(options: dict[str, Any], max_bytes: int) -> Any:
    """What a step's record keeps of the options its operation received (templates rendered):
    redacted, and ``None`` when larger than ``max_bytes`` of JSON (like an output, bounded)."""
    return flowdata.redact(options) if flowdata.json_size(options) <= max_bytes else None


# ---------------------------------------------------------------------- reading runs

async def list_runs(ctx: Any, flow_id: str, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    from sqlalchemy import func

    async with ctx.reader() as db:
        if await db.one(db.select(flows, flows.c.id).where(flows.c.id == flow_id)) is None:
            raise ApiError.not_found("No such flow")
        total = await db.scalar(db.select(runs, func.count()).where(runs.c.flow_id == flow_id))
        rows = await db.all(db.select(runs).where(runs.c.flow_id == flow_id)
                            .order_by(runs.c.started_at.desc(), runs.c.id.desc()).limit(limit).offset(offset))
    return [summary(r) for r in rows], int(total or 0)


async def get_run(ctx: Any, flow_id: str, run_id: str) -> dict[str, Any]:
    async with ctx.reader() as db:
        row = await db.one(db.select(runs).where(runs.c.id == run_id, runs.c.flow_id == flow_id))
    if row is None:
        raise ApiError.not_found("No such run")
    return detail(row)


async def prune(kernel: Any, now: dt.datetime | None = None) -> int:
    """Delete runs older than ``SVC_FLOWS_RUN_RETENTION_DAYS``; how many. First, runs still
    ``running`` long past ``SVC_FLOWS_RUN_TIMEOUT`` (their worker died) are marked ``failed``
    with ``INTERRUPTED``.

    Across sites on purpose (the job is the instance's, and the horizon the same for every
    site): one UPDATE for the interrupted runs, one query for the sites holding a run to
    prune, then each such site's rows in bounded batches. A site with nothing to prune costs
    no statement (issue 27, "scale")."""
    now = now or now_utc()
    stale = now - dt.timedelta(seconds=float(kernel.settings.get("flows_run_timeout")) + 600)
    before = now - dt.timedelta(days=int(kernel.settings.get("flows_run_retention_days")))
    async with kernel.db.begin() as conn:
        await conn.execute(update(runs).where(runs.c.status == "running", runs.c.started_at < stale).values(
            status="failed", finished_at=now,
            error={"code": "INTERRUPTED", "message": "The run was interrupted (its worker stopped)"}))
    total = 0
    for site_id in await sites_with_runs_before(kernel, before):
        total += await prune_site(kernel, site_id, before)
    return total


async def sites_with_runs_before(kernel: Any, before: dt.datetime, site_ids: Any = None) -> set[str]:
    """The sites (of ``site_ids``, else every site) with a run started before ``before``: one
    query on the ``started_at`` index (the ``flowRuns`` retention target's ``pending``)."""
    return await sites_holding(kernel, runs, runs.c.started_at < before, site_ids=site_ids)


async def prune_site(kernel: Any, site_id: str, before: dt.datetime) -> int:
    """Delete the site's runs started before ``before`` (also the retention target ``flowRuns``)."""
    return await prune_rows(kernel, site_id, runs, runs.c.started_at < before)

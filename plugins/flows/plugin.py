"""Hook implementations of the flows plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from kernel.http.openapi import OptionalBody
from kernel.policy.access import AccessAction
from kernel.policy.privacy import RetentionTarget
from plugins.flows import builtins, hookspecs, registry, routes, runner, schemas, triggers

name = "flows"
requires = ("access", "items", "realtime", "utils")

ERROR_CODES: dict[str, tuple[int, str]] = {
    "GRAPH_DANGLING_EDGE": (400, "An active flow's edge names a node that does not exist (extensions.nodeId)."),
    "GRAPH_CYCLE": (400, "An active flow's graph has a cycle (extensions.nodeId)."),
    "GRAPH_NO_ENTRY": (400, "An active flow's graph has no single node without an incoming edge."),
    "GRAPH_UNKNOWN_OPERATION": (400, "An active flow's node names an operation nobody registered."),
    "CRON_INVALID": (400, "A schedule flow's triggerOptions.cron is not a 5-field cron expression."),
    "CRON_REQUIRED": (400, "An active schedule flow needs triggerOptions.cron."),
    "WEBHOOK_NOT_CONFIGURED": (401, "The webhook flow has no token."),
    "FLOW_RUN_FAILED": (502, "The webhook-triggered run failed (extensions.runId, nodeId, reason)."),
}


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_flow_operations(kernel: Any) -> list[Any]:
    return builtins.operations()


@hookimpl
def register_access_actions(kernel: Any) -> list[AccessAction]:
    return [AccessAction(triggers.CAPABILITY, "Run manual flows (collection *).", capability=True)]


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_FLOWS_MAX_STEPS", 50, parse_int(1), "Most steps one flow run takes."),
        Setting("SVC_FLOWS_RUN_TIMEOUT", 60.0, parse_float(0.1, 3600), "Seconds one flow run may take in all."),
        Setting("SVC_FLOWS_MAX_OUTPUT_BYTES", 262_144, parse_int(1024),
                "Largest JSON output of one flow step, in bytes (a larger one fails the step)."),
        Setting("SVC_FLOWS_REQUEST_TIMEOUT", 10.0, parse_float(0.1, 120),
                "Seconds a flow's request operation waits for an answer."),
        Setting("SVC_FLOWS_MAX_RESPONSE_BYTES", 1_048_576, parse_int(1024),
                "Largest response body a flow's request operation reads, in bytes."),
        Setting("SVC_FLOWS_RUN_RETENTION_DAYS", 30, parse_int(1), "Days flow runs are kept."),
        Setting("SVC_FLOWS_SCHEDULE_SECONDS", 20, parse_int(1),
                "Seconds between scheduler sweeps that start due schedule flows."),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_event_consumers(kernel: Any) -> list[Any]:
    return [triggers.consumer_group(kernel)]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [triggers.MEMBERS_CACHE]


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.task(triggers.RUN_JOB, triggers.run_job, retries=0, timeout=3600, owner="flows")
    jobs.periodic(triggers.SCHEDULE_JOB, triggers.schedule_sweep,
                  every_seconds=int(kernel.settings.get("flows_schedule_seconds")), owner="flows")
    jobs.periodic(triggers.RETENTION_JOB, triggers.retention_job, every_seconds=3600, owner="flows")


@hookimpl
def startup(kernel: Any) -> None:
    registry.refresh(kernel)
    registry.operations(kernel)  # a duplicate operation key stops the app here, at boot


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    one = "/flows/{id}"
    return [
        Route("/flows/operations", routes.OperationsResource(kernel), auth="admin", openapi=ops(
            get=("Registered flow operations and their option hints", None, [schemas.OPERATION], 200))),
        Route("/flows", routes.FlowsResource(), auth="admin", openapi=ops(
            get=("List flows (filter by status, trigger)", None, [schemas.FLOW], 200),
            post=("Create a flow (a webhook flow's token is answered once)", schemas.FLOW_BODY, schemas.FLOW, 201))),
        Route(one, routes.FlowResource(), auth="admin", openapi=ops(
            get=("A flow with its graph", None, schemas.FLOW, 200),
            patch=("Change a flow (an active one must pass graph validation)", schemas.FLOW_PATCH, schemas.FLOW, 200),
            delete=("Delete a flow and its runs", None, None, 204))),
        # flows:run (admin access holds it) is checked before the body, like every declared permission.
        Route(one + "/run", routes.RunResource(), auth="bearer", permission="flows:run", openapi=ops(
            post=("Run a manual flow as the caller; the body (any JSON) is the input", OptionalBody(schemas.ANY_INPUT),
                  schemas.RUN, 202))),
        Route(one + "/trigger", routes.TriggerResource(), auth="public", authenticate=False, openapi=ops(
            post=("Webhook trigger (x-flow-token or Bearer); waits for the run; any body", OptionalBody(schemas.ANY_INPUT),
                  schemas.RUN, 200))),
        Route(one + "/runs", routes.RunsResource(), auth="admin", openapi=ops(
            get=("The flow's runs, newest first", None, [schemas.RUN], 200))),
        Route(one + "/runs/{run_id}", routes.RunDetailResource(), auth="admin", openapi=ops(
            get=("A run with its input and step outputs (redacted)", None, schemas.RUN_DETAIL, 200))),
    ]


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``flowRuns`` (default ``SVC_FLOWS_RUN_RETENTION_DAYS``; the hourly prune keeps applying it)."""
    return [RetentionTarget("flowRuns", int(kernel.settings.get("flows_run_retention_days")), runner.prune_site,
                            "Flow runs (with their step outputs), by start time.",
                            pending=runner.sites_with_runs_before)]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``flowRuns``: runs whose input, step outputs, error or actor hold the subject."""
    from kernel.policy.privacy import rows_target
    from plugins.flows.tables import runs

    return [rows_target("flowRuns", runs, [runs.c.input, runs.c.steps, runs.c.error, runs.c.actor],
                        "Flow runs whose input, step outputs or error hold the subject.")]

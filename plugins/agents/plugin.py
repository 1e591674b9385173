"""Hook implementations of the agents plugin (its table of contents)."""

from __future__ import annotations

from functools import partial
from typing import Any

from kernel import Route, hookimpl, ops
from kernel.http.openapi import OptionalBody
from kernel.http.params import RecordItem, RecordList
from kernel.policy.privacy import RetentionTarget
from plugins.agents import api, guard, routes
from plugins.agents import schemas as s
from plugins.agents.common import (
    DEFAULT_WINDOW,
    ERROR_CODES,
    FREEZE_CAPABILITY,
    STAGING_WINDOW_SETTING,
    require_admin,
    require_capability,
    require_member,
)
from plugins.agents.goals import goals, intents, runner, writes
from plugins.agents.governance import autonomy, roles
from plugins.ai import api as ai
from plugins.settings.api import SettingKey

name = "agents"
requires = ("access", "accounts", "ai", "items", "realtime", "settings")

@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


def _window(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 604800:
        raise ValueError("agents.staging_window_seconds is an integer from 0 to 604800")
    return value


@hookimpl
def register_setting_keys(kernel: Any) -> list[SettingKey]:
    return [SettingKey(STAGING_WINDOW_SETTING, _window, type="integer", description="Seconds a staged agent write waits for a "
                       f"veto before it applies (default {DEFAULT_WINDOW}).")]


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    return [RetentionTarget("agentActions", 30, writes.prune_actions,
                            "Agent write attempts (applied, staged, blocked), by time.",
                            pending=writes.pending_actions)]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    # While a freeze covers a goal, nothing it requested is approved, by any route.
    bus.on_filter(ai.DECIDE_EVENT, guard.refuse_while_frozen)
    # A goal that waits on an approval goes on once it is decided (and its action has run).
    bus.on_filter(ai.DECIDED_EVENT, runner.resume_on_decision)


@hookimpl
def register_event_consumers(kernel: Any) -> list[Any]:
    return [intents.consumer_group(kernel)]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [intents.MEMBERS_CACHE]


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.task(runner.JOB, runner.run_goal, retries=0, timeout=3600, owner="agents")
    jobs.task(writes.APPLY_JOB, writes.apply_job, retries=3, retry_delay=30, timeout=600, owner="agents")
    jobs.periodic("agents.stagings", writes.sweep, every_seconds=60, owner="agents")
    jobs.periodic(intents.SWEEP_JOB, intents.sweep, every_seconds=60, owner="agents")
    jobs.periodic(runner.WAITING_JOB, runner.resume_expired, every_seconds=300, owner="agents")


def _op(summary: str, data: Any, body: Any = None, status: int = 200) -> tuple[str, Any, Any, int]:
    return (summary, body, data, status)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    goal = "/agent/goals/{id}"
    # The caller before the body: each write names the check its service starts with.
    member, admin = {"POST": require_member}, {"POST": require_admin}
    freezer = {"POST": partial(require_capability, capability=FREEZE_CAPABILITY)}
    return [
        Route("/agent/goals", RecordList(goals.list_goals, goals.create, paged=True, query=("status",)),
              auth="bearer", caller=member, openapi=ops(
            get=_op("List goals (query status)", [s.GOAL]),
            post=_op("Create a goal (execution async|sync|none)", s.GOAL_TREE, s.GOAL_BODY, 201))),
        Route(goal, routes.Goal(), auth="bearer", openapi=ops(get=_op("A goal with its children", s.GOAL_TREE))),
        Route(goal + "/decompose", routes.GoalDecompose(), auth="bearer", caller=member, openapi=ops(
            post=_op("Create role-scoped sub-goals sharing the remaining budget", s.GOAL_TREE, s.DECOMPOSE_BODY, 201))),
        Route(goal + "/settle", routes.GoalSettle(), auth="bearer", openapi=ops(
            post=_op("Settle a decomposed goal from its children's terminal states", s.GOAL_TREE))),
        Route("/agent/roles", RecordList(roles.list_roles, roles.create), auth="bearer", caller=admin,
              openapi=ops(
            get=_op("The agent role library", [s.ROLE]),
            post=_op("Create an agent role (admin)", s.ROLE, s.ROLE_BODY, 201))),
        Route("/agent/roles/{name}", RecordItem(roles.read, roles.update, roles.delete), auth="bearer",
              caller={"PATCH": require_admin}, openapi=ops(
            get=_op("An agent role", s.ROLE),
            patch=_op("Change an agent role (admin; autonomy only down)", s.ROLE, s.ROLE_PATCH),
            delete=("Delete an agent role (admin)", None, None, 204))),
        Route("/agent/autonomy", routes.Autonomy(), auth="bearer", openapi=ops(
            get=_op("Trust ledger: grants per role and open incidents", s.LEDGER))),
        Route("/agent/autonomy/promotions", routes.Promotions(), auth="bearer", caller=member, openapi=ops(
            get=_op("Promotion proposals", [s.PROMOTION]),
            post=_op("Propose a higher level for a role", s.PROMOTION, s.PROMOTION_BODY, 201))),
        Route("/agent/autonomy/promotions/{id}/decide", routes.PromotionDecide(), auth="bearer", caller=admin,
              openapi=ops(
            post=_op("Decide a promotion (admin, once)", s.PROMOTION, s.DECIDE_BODY))),
        Route("/agent/staged", routes.Staged(), auth="bearer", openapi=ops(
            get=_op("Stagings with their diffs (query status, default pending)", [s.STAGING]))),
        Route("/agent/staged/{id}", routes.StagedOne(), auth="bearer", openapi=ops(get=_op("A staging", s.STAGING))),
        Route("/agent/staged/{id}/veto", routes.StagedVeto(), auth="bearer", caller=member, openapi=ops(
            post=_op("Veto (discard) a pending staging", s.STAGING, OptionalBody(s.VETO_BODY)))),
        Route("/agent/staged/{id}/apply", routes.StagedApply(), auth="bearer", caller=member, openapi=ops(
            post=_op("Apply a pending suggestion as the caller (suggest level)", s.STAGING))),
        Route("/agent/autonomy/incidents/{id}/resolve", routes.IncidentResolve(), auth="bearer", caller=admin,
              openapi=ops(post=_op("Resolve an open incident (admin, once)", s.INCIDENT,
                                   OptionalBody(s.RESOLVE_BODY)))),
        Route("/agent/approvals/{id}/agent-decide", routes.AgentDecide(), auth="bearer", caller=member, openapi=ops(
            post=_op("Decide an approval as an agent reviewer (review:<domain>)", s.AGENT_DECISION, s.AGENT_DECIDE_BODY))),
        Route("/agent/constitution", routes.Constitution(), auth="bearer", caller=admin, openapi=ops(
            get=_op("Constitution versions", [s.CONSTITUTION]),
            post=_op("Create a draft version (admin)", s.CONSTITUTION, s.CONSTITUTION_BODY, 201))),
        Route("/agent/constitution/compile", routes.ConstitutionCompile(), auth="bearer", caller=admin, openapi=ops(
            post=_op("Compile a stored version ({ id }) or check rules ({ rules }) (admin)", s.COMPILED, s.COMPILE_BODY))),
        Route("/agent/constitution/{id}/compile", routes.ConstitutionCompileOne(), auth="bearer", caller=admin,
              openapi=ops(
            post=_op("Compile a stored version into checks (admin)", s.COMPILED, OptionalBody(s.COMPILE_ONE_BODY)))),
        Route("/agent/constitution/{id}/dry-run", routes.ConstitutionDryRun(), auth="bearer", openapi=ops(
            post=_op("What a version would have blocked of recent agent activity (admin)", s.DRY_RUN))),
        Route("/agent/constitution/{id}/activate", routes.ConstitutionActivate(), auth="bearer", openapi=ops(
            post=_op("Make a compiled version the active one (admin)", s.CONSTITUTION))),
        Route("/agent/kill-switch", routes.KillSwitch(), auth="bearer", caller=freezer, openapi=ops(
            get=_op("Active freezes (all=true: with lifted ones)", [s.FREEZE]),
            post=_op("Freeze a run, intent, role or the site (agents:freeze)", s.FREEZE, s.FREEZE_BODY, 201))),
        Route("/agent/kill-switch/lift", routes.KillSwitchLift(), auth="bearer", caller=freezer, openapi=ops(
            post=_op("Lift a freeze (agents:freeze)", s.FREEZE, s.LIFT_BODY))),
        Route("/agent/intents", RecordList(intents.list_intents, intents.create), auth="bearer", caller=admin,
              openapi=ops(
            get=_op("Content intents", [s.INTENT]),
            post=_op("Create an intent (admin)", s.INTENT, s.INTENT_BODY, 201))),
        Route("/agent/intents/{id}", RecordItem(intents.get, intents.update, intents.delete), auth="bearer",
              caller={"PATCH": require_admin}, openapi=ops(
            get=_op("An intent", s.INTENT), patch=_op("Change an intent (admin)", s.INTENT, s.INTENT_PATCH),
            delete=("Delete an intent (admin)", None, None, 204))),
        Route("/agent/intents/{id}/pause", routes.IntentAction("paused"), auth="bearer", openapi=ops(
            post=_op("Pause an intent (admin)", s.INTENT))),
        Route("/agent/intents/{id}/resume", routes.IntentAction("active"), auth="bearer", openapi=ops(
            post=_op("Resume an intent (admin)", s.INTENT))),
    ]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """The agents' logs that may quote the subject: goals, stagings, write attempts, incidents."""
    from kernel.policy.privacy import rows_target
    from plugins.agents import tables as t

    g, s, a, i = t.goals, t.stagings, t.actions, t.incidents
    return [rows_target("agentGoals", g, [g.c.title, g.c.description, g.c.steps, g.c.error, g.c.principal],
                        "Agent goals the subject set, or whose description, steps or error quote them.",
                        owner_column=g.c.owner),
            rows_target("agentStagings", s, [s.c.before, s.c.after, s.c.reason],
                        "Staged agent writes whose values quote the subject."),
            rows_target("agentActions", a, [a.c.data], "The log of agent write attempts, where it quotes the subject."),
            rows_target("agentIncidents", i, [i.c.detail], "Agent incidents whose detail quotes the subject.")]


# ---------------------------------------------------------------------- for git (its hooks; git does not require agents)

@hookimpl(optionalhook=True)
def gitops_intents(kernel: Any) -> Any:
    """The store GitOps syncs ``svc/intents.json`` into: ``api`` (``export_intents``, ``import_intents``)."""
    return api


@hookimpl(optionalhook=True)
async def git_ci_failed(ctx: Any, role: str, detail: dict[str, Any]) -> None:
    """A failed CI run is an incident of the git sync's role in the trust ledger."""
    await autonomy.record_incident(ctx, role=role, kind="ci_failed", detail=detail)

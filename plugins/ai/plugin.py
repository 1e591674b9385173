"""Hook implementations of the ai plugin (its table of contents)."""

from __future__ import annotations

import logging
from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base import extras
from kernel.base.settings import parse_bool, parse_float, parse_int
from kernel.policy.privacy import RetentionTarget
from plugins.ai import hookspecs, provider, registry, routes, schemas, skills
from plugins.ai.chat import approvals, conversations
from plugins.ai.mcp import sessions
from plugins.settings.api import SettingKey

log = logging.getLogger("svc.ai")

name = "ai"
# files and releases contribute their skills through register_ai_skills: not required.
requires = ("access", "accounts", "items", "realtime", "schema", "settings")

ERROR_CODES: dict[str, tuple[int, str]] = {
    "SKILL_DENIED": (403, "The AI skill needs a capability the session lacks (extensions.skill, capability)."),
    "HITL_REQUIRED": (202, "A dangerous AI skill call waits for a human's approval (data.approvalId)."),
    "AI_PROVIDER_FAILED": (502, "The model provider (SVC_AI_BASE_URL) failed or answered something unusable."),
}
RETENTION_JOB = "ai.retention"
MCP_STATE = "ai.mcp"  # plugins.ai.mcp.mcp.STATE_KEY: the runtime in kernel.state once started


@hookimpl
def register_hookspecs(pm: Any) -> None:
    pm.add_hookspecs(hookspecs)


@hookimpl
def register_ai_skills(kernel: Any) -> list[Any]:
    return skills.builtins()


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_RATE_LIMIT_AI", 60, parse_int(0), "AI chat requests per minute per user (0 disables)."),
        Setting("SVC_AI_BASE_URL", "", provider.parse_base_url, "OpenAI-compatible chat-completions base URL (e.g. "
                "http://127.0.0.1:11434/v1 for Ollama); empty: the command grammar only."),
        Setting("SVC_AI_API_KEY", "", str, "Bearer key for the model provider (never logged).", secret=True),
        Setting("SVC_AI_MODEL", "", str, "Model name sent to the provider."),
        Setting("SVC_AI_TIMEOUT", 60.0, parse_float(1, 600), "Seconds one model round may take."),
        Setting("SVC_AI_MAX_TOOL_ROUNDS", 5, parse_int(1), "Model rounds (tool calls and answers) per chat turn."),
        Setting("SVC_AI_MAX_RESPONSE_BYTES", 1_048_576, parse_int(1024), "Largest provider answer read, in bytes."),
        Setting("SVC_AI_APPROVAL_TTL_HOURS", 24.0, parse_float(0.0001, 24 * 365),
                "Hours a pending approval can be decided; then it is expired."),
        Setting("SVC_AI_APPROVAL_ATTEMPTS", 4, parse_int(1, 20),
                "Runs of an approved call that fails transiently (429, 502-504, network), the first included."),
        Setting("SVC_AI_APPROVAL_RETRY_SECONDS", 30.0, parse_float(0, 86400),
                "Seconds before the first retry of an approved call; doubled for each further one."),
        Setting("SVC_AI_CONVERSATION_RETENTION_DAYS", 90, parse_int(1),
                "Days a conversation is kept after its last message."),
        Setting("SVC_MCP_ENABLED", True, parse_bool, "Serve the MCP endpoint POST /mcp."),
        Setting("SVC_RATE_LIMIT_MCP", 600, parse_int(0), "MCP requests per minute per user (0 disables)."),
    ]


@hookimpl
def register_setting_keys(kernel: Any) -> list[Any]:
    return [SettingKey(approvals.APPROVERS_KEY, approvals.check_approvers, type="array",
                       description="User and role ids who may decide AI approvals besides site admins.")]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """AI chat per minute per user (``SVC_RATE_LIMIT_AI``, docs/settings.md); MCP requests have their own
    bucket."""
    return {"ai": RateBucket("rate_limit_ai", 60.0, "principal"),
            "mcp": RateBucket("rate_limit_mcp", 60.0, "principal")}


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.periodic(RETENTION_JOB, retention_job, every_seconds=3600, owner="ai")
    jobs.task(approvals.RETRY_JOB, approvals.retry_job, retries=0, timeout=600, owner="ai")


async def retention_job(kernel: Any) -> None:
    """Idle MCP sessions; and old conversations unless the privacy plugin runs retention (then
    its ``aiConversations`` target prunes them by each site's own horizon)."""
    if not any(info.name == "privacy" and info.enabled for info in kernel.plugins):
        await conversations.purge(kernel)
    await sessions.purge_sessions(kernel)  # plugins.ai.mcp.sessions: without the MCP SDK


@hookimpl(optionalhook=True)
def register_retention_targets(kernel: Any) -> list[Any]:
    """``aiConversations`` for the privacy plugin's retention (with privacy disabled, the
    ``ai.retention`` job applies ``SVC_AI_CONVERSATION_RETENTION_DAYS`` alone)."""
    return [RetentionTarget("aiConversations", int(kernel.settings.get("ai_conversation_retention_days")),
                            conversations.prune_site, "AI conversations with their messages, by last message.",
                            pending=conversations.pending_sites)]


@hookimpl
def startup(kernel: Any) -> None:
    registry.skills(kernel)  # a duplicate skill name stops the app here, at boot
    if kernel.settings.get("mcp_enabled") and not extras.installed("ai"):  # /mcp answers 503 until then
        log.warning("%s (or SVC_MCP_ENABLED=false)", extras.missing_message("ai", "SVC_MCP_ENABLED: the /mcp endpoint"))


@hookimpl
async def shutdown(kernel: Any) -> None:
    if MCP_STATE in kernel.state:  # the MCP runtime started (a request came)
        from plugins.ai.mcp import mcp

        await mcp.stop(kernel)


class LazyMcpResource:
    """``/mcp``, importing the MCP SDK (about a second of imports) at its first request rather
    than at every start of svc, its CLI included."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self._resource: Any = None

    def _real(self) -> Any:
        if self._resource is None:
            extras.require_for_request("ai", "The MCP endpoint")
            from plugins.ai.mcp import mcp

            self._resource = mcp.McpResource(self.kernel)
        return self._resource

    async def on_post(self, req: Any, resp: Any) -> None:
        await self._real().on_post(req, resp)

    async def on_delete(self, req: Any, resp: Any) -> None:
        await self._real().on_delete(req, resp)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    chat = ops(post=("One copilot turn: a safe skill runs (executed), a dangerous one waits for approval (202 "
                     "HITL_REQUIRED)", schemas.CHAT_BODY, schemas.CHAT, 200))
    chat["post"]["responses"]["202"] = {**chat["post"]["responses"]["200"],
                                        "description": "HITL_REQUIRED: a pending approval, nothing changed"}
    chat["post"]["responses"]["200"]["content"] = {
        **chat["post"]["responses"]["200"]["content"],
        "text/event-stream": {"schema": {
            "type": "object", "required": ["data"],
            "description": "Streamed (Accept: text/event-stream or \"stream\": true), one event at a time: text, tool, "
                           "then done or error (docs/ai.md)",
            "properties": {"event": {"type": "string", "enum": ["text", "tool", "done", "error"]},
                           "data": {"type": "string", "description": "A JSON object"}}}}}
    found = [
        Route("/ai/chat", routes.ChatResource(), auth="bearer", rate_limit="ai", openapi=chat),
        Route("/ai/skills", routes.SkillsResource(), auth="bearer", openapi=ops(
            get=("The skills offered to the caller", None, [schemas.SKILL], 200))),
        Route("/ai/approvals", routes.ApprovalsResource(), auth="bearer", openapi=schemas_with_status(ops(
            get=("Approvals (default: pending); all of the site for an approver, else the caller's own", None,
                 [schemas.APPROVAL], 200)))),
        Route("/ai/approvals/{id}/decide", routes.DecideResource(), auth="bearer", openapi=ops(
            post=("Approve (the action runs once, as the requester now) or reject", schemas.DECIDE_BODY,
                  schemas.APPROVAL, 200))),
        Route("/ai/conversations", routes.ConversationsResource(), auth="bearer", openapi=ops(
            get=("The caller's conversations", None, [schemas.CONVERSATION], 200))),
        Route("/ai/conversations/{id}", routes.ConversationResource(), auth="bearer", openapi=ops(
            delete=("Delete one of the caller's conversations", None, None, 204))),
        Route("/ai/conversations/{id}/messages", routes.MessagesResource(), auth="bearer", openapi=ops(
            get=("A conversation's messages with the skill calls and raw model outputs", None,
                 [schemas.MESSAGE], 200))),
    ]
    if kernel.settings.get("mcp_enabled"):
        found.append(Route("/mcp", LazyMcpResource(kernel), auth="bearer", rate_limit={"POST": "mcp"},
                           openapi=schemas.mcp_operations()))
    return found


def schemas_with_status(operations: dict[str, Any]) -> dict[str, Any]:
    operations["get"]["parameters"] = [schemas.STATUS_PARAM]
    return operations


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``aiConversations`` (a conversation goes whole when one message quotes the subject),
    ``aiApprovals`` and the subject's MCP sessions."""
    from kernel.policy.privacy import ErasureTarget, rows_target
    from plugins.ai import tables as t
    from plugins.ai.chat import conversations as convs

    return [ErasureTarget("aiConversations", convs.erase_subject,
                          "AI conversations of the subject, or with a message quoting them."),
            rows_target("aiApprovals", t.approvals, [t.approvals.c.requester, t.approvals.c.arguments,
                                                      t.approvals.c.summary, t.approvals.c.result, t.approvals.c.error],
                        "AI approvals the subject asked for, or whose arguments or result quote them.",
                        owner_column=t.approvals.c.requester_owner),
            rows_target("aiMcpSessions", t.mcp_sessions, [], "MCP sessions of the subject's accounts.",
                        owner_column=t.mcp_sessions.c.owner)]

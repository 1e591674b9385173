"""What other plugins and extensions may import from ai (declare ``requires = ("ai",)``, or
mark the hook implementation ``optionalhook=True``).

- ``Skill``: one thing the copilot and the MCP server can do (``register_ai_skills``).
- ``SkillContext``: what a skill's ``run(ctx, args)`` gets: who asked, where, and the
  ``items`` context acting as them. A skill reads and writes through the other plugins'
  ``api.py`` as the caller, never around them.
- ``CAPABILITIES``: the forms of ``Skill.capability``.
- ``DECIDE_EVENT``: the bus filter every approval decision runs in its transaction
  (``{ approvalId, skill, decision }``); raise to veto it (the approval stays pending).
- ``DECIDED_EVENT``: the bus filter run in the transaction that records an approval's final
  state (``{ approvalId, skill, status, result, error }``, status ``approved``, ``rejected`` or
  ``failed``), after its action ran.
"""

from __future__ import annotations

from typing import Any

from plugins.ai import gate, provider
from plugins.ai.chat import approvals, chat, grammar
from plugins.ai.schemas import APPROVAL
from plugins.ai.skill import CAPABILITIES, NAME, Skill, SkillContext

DECIDE_EVENT = approvals.DECIDE_EVENT
DECIDED_EVENT = approvals.DECIDED_EVENT

# ---------------------------------------------------------------------- for the agents plugin
# Thin doors onto the ai plugin's machinery.


async def admit(ctx: SkillContext, name: Any, args: Any, path: list[str | int]) -> tuple[Skill, dict[str, Any]]:
    """The gate every skill call passes: the skill, its checked arguments; 400 / 403 ``SKILL_DENIED``."""
    return await gate.admit(ctx, name, args, path)


async def offered(ctx: SkillContext) -> list[Skill]:
    """The skills worth offering ``ctx.principal``."""
    return await gate.offered(ctx)


def parse_command(text: str) -> tuple[str, dict[str, Any]] | None:
    """The offline command grammar: ``(skill, arguments)`` a command names, or None."""
    return grammar.parse(text)


def model_configured(kernel: Any) -> bool:

    return provider.configured(kernel)


async def model_complete(kernel: Any, messages: list[dict[str, Any]],
                         tools: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """One round with the model provider: ``(assistant message, tokens used)``."""
    return await provider.complete_with_usage(kernel, messages, tools)


def tool_listing(skill: Skill) -> dict[str, Any]:

    return chat.tool_listing(skill)


def wrap_result(skill: Skill | None, result: Any) -> str:
    """A tool result as the model sees it (content labelled untrusted)."""
    return chat.wrap(skill, result)


def unpack_tool_call(call: Any) -> tuple[str, Any, Any]:

    return chat._unpack(call)


async def request_approval(ctx: SkillContext, skill: Skill, args: dict[str, Any]) -> dict[str, Any]:
    """A pending approval of ``skill(args)`` requested by ``ctx.principal`` (nothing runs)."""
    return await approvals.request(ctx, skill, args, None)


async def read_approval(ctx: SkillContext, approval_id: Any) -> dict[str, Any]:
    """An approval's record (404 when not this site's)."""
    return approvals.record(await approvals._load(ctx.kernel, ctx.site_id, approval_id))


async def decide_approval(ctx: SkillContext, approval_id: str, decision: str) -> dict[str, Any]:
    """Decide an approval exactly once as ``ctx.principal`` *without* the ``ai.approvers`` check:
    for a caller that authorised the decider itself (the agents plugin's ``review:<domain>``).
    The decider still needs the skill's capability; 409 ``CONFLICT`` when no longer pending."""
    return await approvals.decide(ctx, approval_id, {"decision": decision}, approver_checked=True)


__all__ = ["APPROVAL", "CAPABILITIES", "DECIDE_EVENT", "DECIDED_EVENT", "NAME", "Skill", "SkillContext", "admit", "decide_approval", "model_complete",
           "model_configured", "offered", "parse_command", "read_approval", "request_approval", "tool_listing",
           "unpack_tool_call", "wrap_result"]

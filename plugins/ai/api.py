"""What other plugins and extensions may import from ai (declare ``requires = ("ai",)``, or
mark the hook implementation ``optionalhook=True``).

- ``Skill``: one thing the copilot and the MCP server can do (``register_ai_skills``).
- ``SkillContext``: what a skill's ``run(ctx, args)`` gets: who asked, where, and the
  ``items`` context acting as them. A skill reads and writes through the other plugins'
  ``api.py`` as the caller, never around them.
- ``CAPABILITIES``: the forms of ``Skill.capability``.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

# ``member``: any signed-in principal of the site; ``studio``: a member with a studio role (not
# the frontend realm); ``admin``: site admin; ``items:<action>``: that permission on the
# collection named by the argument ``collection``.
CAPABILITIES = ("member", "studio", "admin", "items:read", "items:create", "items:update", "items:delete")


@dataclass
class SkillContext:
    """One skill call's world: the kernel, the site, the principal acting (the caller, or at
    approval time the requester read again), the request id and the write ``cause``
    (``ai-chat:<conversation>`` or ``ai-approval:<id>``)."""

    kernel: Any
    site_id: str
    principal: Any
    request_id: str = "internal"
    cause: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    def items_context(self) -> Any:
        """The items API's ``ctx`` acting as this call's principal."""
        from plugins.items import api as items

        return items.context(self.kernel, self.site_id, self.principal, self.request_id)


@dataclass(frozen=True)
class Skill:
    """A skill.

    - ``name``: lowercase letters, digits and ``_`` (it is the tool's name for the model and MCP).
    - ``description``: one sentence the model reads.
    - ``run(ctx, args)``: async; returns JSON values. Raise ``ApiError`` to fail (answered as REST
      would answer it).
    - ``parameters``: the JSON schema (an ``object``) of ``args``; checked before anything runs.
    - ``dangerous``: gated: a call creates an approval and changes nothing until a permitted
      approver approves it.
    - ``capability``: one of ``CAPABILITIES``; a caller without it gets 403 ``SKILL_DENIED``.
    - ``summary(args)``: the one line an approver reads (default: the name and arguments).
    - ``untrusted``: the result holds content written by users (item fields): it reaches the model
      delimited and labelled as untrusted data.
    """

    name: str
    description: str
    run: Callable[[SkillContext, dict[str, Any]], Awaitable[Any]]
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {},
                                                                  "additionalProperties": False})
    dangerous: bool = False
    capability: str = "member"
    summary: Callable[[dict[str, Any]], str] | None = None
    untrusted: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not NAME.match(self.name):
            raise ValueError(f"skill name must match {NAME.pattern}, got {self.name!r}")
        if not callable(self.run):
            raise TypeError(f"skill {self.name!r}: run must be callable")
        if self.capability not in CAPABILITIES:
            raise ValueError(f"skill {self.name!r}: capability must be one of {CAPABILITIES}")
        if not isinstance(self.parameters, dict) or self.parameters.get("type") != "object":
            raise ValueError(f"skill {self.name!r}: parameters must be a JSON schema of type object")

    def describe(self, args: dict[str, Any]) -> str:
        """What an approver reads."""
        if self.summary is not None:
            return self.summary(args)[:500]
        import json

        return f"{self.name} {json.dumps(args, sort_keys=True, default=str)}"[:500]

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "dangerous": self.dangerous, "capability": self.capability}


# ---------------------------------------------------------------------- for the agents plugin
# Thin doors onto the ai plugin's machinery (imported late: ai's modules import this one).

async def admit(ctx: SkillContext, name: Any, args: Any, path: list[str | int]) -> tuple[Skill, dict[str, Any]]:
    """The gate every skill call passes: the skill, its checked arguments; 400 / 403 ``SKILL_DENIED``."""
    from plugins.ai import gate

    return await gate.admit(ctx, name, args, path)


async def offered(ctx: SkillContext) -> list[Skill]:
    """The skills worth offering ``ctx.principal``."""
    from plugins.ai import gate

    return await gate.offered(ctx)


def parse_command(text: str) -> tuple[str, dict[str, Any]] | None:
    """The offline command grammar: ``(skill, arguments)`` a command names, or None."""
    from plugins.ai import grammar

    return grammar.parse(text)


def model_configured(kernel: Any) -> bool:
    from plugins.ai import provider

    return provider.configured(kernel)


async def model_complete(kernel: Any, messages: list[dict[str, Any]],
                         tools: list[dict[str, Any]]) -> tuple[dict[str, Any], int]:
    """One round with the model provider: ``(assistant message, tokens used)``."""
    from plugins.ai import provider

    return await provider.complete_with_usage(kernel, messages, tools)


def tool_listing(skill: Skill) -> dict[str, Any]:
    from plugins.ai import chat

    return chat.tool_listing(skill)


def wrap_result(skill: Skill | None, result: Any) -> str:
    """A tool result as the model sees it (content labelled untrusted)."""
    from plugins.ai import chat

    return chat.wrap(skill, result)


def unpack_tool_call(call: Any) -> tuple[str, Any, Any]:
    from plugins.ai import chat

    return chat._unpack(call)


async def request_approval(ctx: SkillContext, skill: Skill, args: dict[str, Any]) -> dict[str, Any]:
    """A pending approval of ``skill(args)`` requested by ``ctx.principal`` (nothing runs)."""
    from plugins.ai import approvals

    return await approvals.request(ctx, skill, args, None)


async def read_approval(ctx: SkillContext, approval_id: Any) -> dict[str, Any]:
    """An approval's record (404 when not this site's)."""
    from plugins.ai import approvals

    return approvals.record(await approvals._load(ctx.kernel, ctx.site_id, approval_id))


async def decide_approval(ctx: SkillContext, approval_id: str, decision: str) -> dict[str, Any]:
    """Decide an approval exactly once as ``ctx.principal`` *without* the ``ai.approvers`` check:
    for a caller that authorised the decider itself (the agents plugin's ``review:<domain>``).
    The decider still needs the skill's capability; 409 ``CONFLICT`` when no longer pending."""
    from plugins.ai import approvals

    return await approvals.decide(ctx, approval_id, {"decision": decision}, approver_checked=True)


__all__ = ["CAPABILITIES", "Skill", "SkillContext", "admit", "decide_approval", "model_complete",
           "model_configured", "offered", "parse_command", "read_approval", "request_approval", "tool_listing",
           "unpack_tool_call", "wrap_result"]

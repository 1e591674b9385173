"""The skill types of the ai plugin (re-exported by ``api.py``, where other plugins and
extensions import them from): ``Skill``, ``SkillContext``, ``CAPABILITIES``."""

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
# The argument a call sets to ask for a change that drops data (as REST's ``?allowDestructive=true``).
DESTRUCTIVE = "allowDestructive"


@dataclass
class SkillContext:
    """One skill call's world: the kernel, the site, the principal acting (the caller, or at
    approval time the requester read again), the request id and the write ``cause``
    (``ai-chat:<conversation>`` or ``ai-approval:<id>``). ``idempotency_key``: set when an
    approved call runs (``ai-approval:<id>``, the same for every retry of it): a skill that calls
    an outside service sends it (an ``Idempotency-Key`` header) so a retry is not done twice."""

    kernel: Any
    site_id: str
    principal: Any
    request_id: str = "internal"
    cause: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    idempotency_key: str | None = None

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

    A call whose arguments set ``allowDestructive: true`` (``DESTRUCTIVE``) is gated like a
    dangerous one, whatever ``dangerous`` says (``needs_approval``): dropping data always waits
    for a human.
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

    def needs_approval(self, args: dict[str, Any]) -> bool:
        """Whether this call waits for an approval: the skill is dangerous, or the call asks to
        drop data (``allowDestructive: true``)."""
        return self.dangerous or args.get(DESTRUCTIVE) is True

    def describe(self, args: dict[str, Any]) -> str:
        """What an approver reads."""
        if self.summary is not None:
            return self.summary(args)[:500]
        import json

        return f"{self.name} {json.dumps(args, sort_keys=True, default=str)}"[:500]

    def listing(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "parameters": self.parameters,
                "dangerous": self.dangerous, "capability": self.capability}

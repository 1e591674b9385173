"""The gate every skill call passes, whoever asks (the command grammar, the model, MCP, an
approval): the skill exists, its arguments match its schema, the principal holds its
capability (else 403 ``SKILL_DENIED``). What the skill then does is checked again by the API
it calls, as the same principal."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.base.jsoncodec import nul_path
from kernel.policy.privacy import masked_reads
from plugins.access import api as access_api
from plugins.ai import registry
from plugins.ai.skill import Skill, SkillContext


def owner_of(principal: Any) -> str:
    """Who owns a conversation or an MCP session: the user, or the API key."""
    if principal.kind == "api_key":
        return f"key:{principal.api_key_id}"
    return f"user:{principal.user_id}"


def find(kernel: Any, name: Any, path: list[str | int]) -> Skill:
    skill = registry.skills(kernel).get(name) if isinstance(name, str) else None
    if skill is None:
        raise ApiError.validation(f"Unknown skill '{str(name)[:64]}'", path=path)
    return skill


def check_arguments(skill: Skill, args: Any, path: list[str | int]) -> dict[str, Any]:
    """``args`` if they match the skill's schema and hold no NUL character; else 400
    ``VALIDATION_FAILED`` at the first problem. A NUL (which PostgreSQL stores in neither text
    nor JSONB, and no skill means) is refused here for every caller, as REST's bodies and MCP's
    messages refuse it: a model's tool call or a command's JSON reaches the gate without either."""
    if not isinstance(args, dict):
        raise ApiError.validation(f"The arguments of '{skill.name}' must be an object", path=path)
    where = nul_path(args)
    if where is not None:
        raise ApiError.validation(f"{skill.name}: a string holds a NUL character (\\u0000), which cannot be stored",
                                  path=[*path, *where])
    from jsonschema import Draft202012Validator  # on the first skill call: ~40 ms no app start needs

    errors = sorted(Draft202012Validator(skill.parameters).iter_errors(args), key=lambda e: list(e.path))
    if errors:
        first = errors[0]
        raise ApiError.validation(f"{skill.name}: {first.message}"[:300], path=[*path, *first.path])
    return args


async def permitted(ctx: SkillContext, skill: Skill, args: dict[str, Any]) -> bool:
    """Whether ``ctx.principal`` holds ``skill.capability`` for these arguments."""
    principal = ctx.principal
    if not principal.is_authenticated:
        return False
    capability = skill.capability
    if capability == "member":
        return principal.is_admin or principal.role_id is not None
    if capability == "admin":
        return principal.is_admin
    if capability == "studio":
        try:
            await access_api.require_studio(ctx.items_context(), "AI")
        except ApiError:
            return False
        return True
    action = capability.partition(":")[2]
    collection = args.get("collection")
    if not isinstance(collection, str):
        return False
    return (await ctx.kernel.access.decide(principal, ctx.site_id, collection, action)).allowed


async def admit(ctx: SkillContext, name: Any, args: Any, path: list[str | int]) -> tuple[Skill, dict[str, Any]]:
    """The skill and its checked arguments, or 400 / 403 ``SKILL_DENIED``."""
    skill = find(ctx.kernel, name, path[:-1] + ["skill"] if path else ["skill"])
    checked = check_arguments(skill, args, path)
    if not await permitted(ctx, skill, checked):
        raise ApiError(403, "SKILL_DENIED", f"The skill '{skill.name}' needs the capability "
                       f"'{skill.capability}', which this session lacks",
                       extensions={"skill": skill.name, "capability": skill.capability})
    return skill, checked


async def run(skill: Skill, ctx: SkillContext, args: dict[str, Any]) -> Any:
    """Run an admitted skill. Its reads are masked (``kernel.policy.privacy.masked_reads``): the result
    goes to a model provider or an MCP client and is kept in conversations and approvals, so a
    protected value (regulated content's sensitive fields) never reaches it in clear."""
    with masked_reads("ai"):
        return await skill.run(ctx, args)


async def offered(ctx: SkillContext) -> list[Skill]:
    """The skills worth offering this principal (a collection-bound capability is checked per call)."""
    out = []
    for skill in sorted(registry.skills(ctx.kernel).values(), key=lambda s: s.name):
        if skill.capability.startswith("items:") or await permitted(ctx, skill, {}):
            out.append(skill)
    return out

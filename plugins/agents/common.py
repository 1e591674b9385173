"""Shared pieces of the agents plugin: levels, error codes, who may do what, body checks."""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api

LEVELS = ("suggest", "stage", "act")
CREATE_MAX_LEVEL = "stage"  # higher only through a decided promotion
BUDGET_PARTS = ("steps", "tokens", "writes")
DEFAULT_BUDGET = {"steps": 20, "tokens": 20000, "writes": 10}
BUDGET_CAPS = {"steps": 200, "tokens": 1_000_000, "writes": 1000}
ROLE_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,63}$")
FREEZE_CAPABILITY = "agents:freeze"
STAGING_WINDOW_SETTING = "agents.staging_window_seconds"
DEFAULT_WINDOW = 3600

ERROR_CODES: dict[str, tuple[int, str]] = {
    "GOAL_NOT_SETTLEABLE": (409, "The goal is not decomposed or a child is not in a terminal state"),
    "GOAL_NOT_DECOMPOSABLE": (409, "Only a pending or decomposed goal can be decomposed"),
    "BUDGET_EXCEEDED": (400, "The requested budget exceeds what is left"),
    "PROMOTION_REQUIRED": (403, "A higher autonomy level needs a decided promotion"),
    "SELF_REVIEW": (403, "An agent never decides what it or its own goal tree requested"),
    "CAPABILITY_REQUIRED": (403, "The token's roles lack the capability the agent route needs"),
    "CONSTITUTION_INVALID": (400, "A rule of the constitution cannot be compiled"),
    "CONSTITUTION_NOT_COMPILED": (409, "Only a compiled constitution version can be activated"),
    "AGENT_FROZEN": (409, "A kill-switch freeze covers this work"),
    "RECORD_NOT_UNIQUE": (409, "A role name or an intent key the site already has"),
    "STAGING_STALE": (409, "The item changed after the agent suggested the change"),
    "PROCESSING_RESTRICTED": (409, "The item's author restricted processing of their data"),
}


def invalid(message: str, path: list[str | int]) -> ApiError:
    return ApiError.validation(message, path=path)


def site_db(conn: Any, site_id: str) -> SiteDB:
    return SiteDB(site_id, conn)


async def require_member(ctx: Any) -> str:
    """The site, for a studio member (401 anonymous, 403 frontend or role-less)."""
    return await access_api.require_studio(ctx, "Agents")


async def require_admin(ctx: Any) -> str:
    site_id = await require_member(ctx)
    if not ctx.principal.is_admin:
        raise ApiError.forbidden("Agents: this needs a site admin")
    return site_id


async def capabilities(ctx: Any, site_id: str) -> set[str]:
    """The token's roles (and policies) by name: its capability set for the agent API."""
    return await access_api.role_names(ctx.kernel, ctx.principal, site_id)


async def require_capability(ctx: Any, capability: str) -> str:
    """The site, for a member holding ``capability`` among its roles (a site admin holds all)."""
    site_id = await require_member(ctx)
    if ctx.principal.is_admin or capability in await capabilities(ctx, site_id):
        return site_id
    raise ApiError(403, "CAPABILITY_REQUIRED", f"This needs the capability '{capability}' (a role of that name)",
                   extensions={"capability": capability})


def owner_of(principal: Any) -> str:
    if principal.kind == "api_key":
        return f"key:{principal.api_key_id}"
    return f"user:{principal.user_id}"


def text(body: dict[str, Any], key: str, *, required: bool, max_len: int, default: str | None = None) -> Any:
    value = body.get(key, default)
    if value is None and not required:
        return default
    if not isinstance(value, str) or not value.strip() or len(value) > max_len:
        raise invalid(f"'{key}' is a non-empty string of at most {max_len} characters", [key])
    return value.strip()


def level(value: Any, path: list[str | int]) -> str:
    if value not in LEVELS:
        raise invalid(f"'{path[-1]}' is one of {', '.join(LEVELS)}", path)
    return str(value)


def parse_budget(value: Any, path: list[str | int], *, partial: bool = True) -> dict[str, int]:
    """A budget object: any of ``steps``, ``tokens``, ``writes`` (integers, 0..cap)."""
    if not isinstance(value, dict):
        raise invalid("'budget' is an object with steps, tokens, writes", path)
    out: dict[str, int] = {}
    for key, amount in value.items():
        if key not in BUDGET_PARTS:
            raise invalid(f"Unknown budget part '{str(key)[:40]}'", [*path, str(key)[:40]])
        if isinstance(amount, bool) or not isinstance(amount, int) or not 0 <= amount <= BUDGET_CAPS[key]:
            raise invalid(f"'{key}' is an integer from 0 to {BUDGET_CAPS[key]}", [*path, key])
        out[key] = amount
    if not partial:
        out = {**DEFAULT_BUDGET, **out}
    return out


def name_param(value: Any) -> str:
    """A role name in a path: unknown shapes are simply not found."""
    if not isinstance(value, str) or not ROLE_NAME.match(value):
        raise ApiError.not_found("Agent role not found")
    return value


def id_param(value: Any, what: str) -> str:
    if not isinstance(value, str) or not 0 < len(value) <= 36:
        raise ApiError.not_found(f"{what} not found")
    return value

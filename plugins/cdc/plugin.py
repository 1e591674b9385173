"""Hook implementations of the cdc plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.settings import parse_int
from plugins.cdc import routes, schemas

name = "cdc"
requires = ("access",)

ERROR_CODES: dict[str, tuple[int, str]] = {
    "CURSOR_EXPIRED": (410, "A change-feed cursor past retention; extensions.earliestCursor is where to resume."),
}


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_RATE_LIMIT_CDC", 600, parse_int(0),
                    "Change-feed requests per minute, per principal and site (bucket `cdc`; 0 disables).")]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """Change-feed pulls per minute, per user or API key and site (a long poll counts once)."""
    return {"cdc": RateBucket("rate_limit_cdc", 60.0, "principal")}


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    get = ops(get=("Page through the site's change events (keyset cursor, optional long poll)", None,
                   [schemas.EVENT], 200))
    get["get"]["parameters"] = list(schemas.EVENTS_PARAMS)
    get["get"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["meta"] = \
        schemas.EVENTS_META
    return [Route("/cdc/events", routes.EventsResource(kernel), auth="bearer", rate_limit="cdc", openapi=get)]

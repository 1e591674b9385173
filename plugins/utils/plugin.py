"""Hook implementations of the utils plugin (its table of contents)."""

from __future__ import annotations

import time
from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.base.settings import parse_bool, parse_int
from plugins.utils import routes, schemas

name = "utils"
requires: tuple[str, ...] = ()


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_METRICS_TOKEN", "", str,
                "The bearer token required to scrape `/metrics`. Empty: no token; then `/metrics` answers "
                "only where `SVC_METRICS_PUBLIC` is on or `SVC_ENV=development`, and is 404 otherwise.",
                secret=True),
        Setting("SVC_METRICS_PUBLIC", False, parse_bool,
                "Serve `/metrics` to anonymous callers in production (an operator's explicit choice, for a "
                "scraper on a private network). Ignored when `SVC_METRICS_TOKEN` is set: the token is then "
                "always needed."),
        Setting("SVC_JSONATA_TIMEOUT_MS", 1000, parse_int(10),
                "Time limit for one JSONata evaluation (the JSONata tool and flows' transform operation)."),
    ]


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    metrics = routes.MetricsResource(kernel)
    # The scrape token is not a JWT: the authenticate chain would reject it, so it is skipped.
    scrape = {"site": "none", "auth": "public", "authenticate": False, "openapi": {"get": schemas.METRICS_OPERATION}}
    return [
        Route("/utils/health", routes.HealthResource(kernel), site="none", auth="public",
              openapi=ops(get=("Health of the database, cache, storage, search and queue", None,
                               schemas.HEALTH, 200))),
        Route("/utils/version", routes.VersionResource(), site="none", auth="public",
              openapi=ops(get=("Version of the service and of its API", None, schemas.VERSION, 200))),
        Route("/metrics", metrics, **scrape),
        Route("/metrics", metrics, prefix="", **scrape),
        Route("/utils/render-template", routes.RenderTemplateResource(), site="optional", auth="bearer",
              openapi=ops(post=("Render a display template", schemas.RENDER_BODY, schemas.RENDER_DATA, 200))),
        Route("/utils/jsonata/test", routes.JsonataTestResource(kernel), site="optional", auth="bearer",
              openapi=ops(post=("Evaluate a JSONata expression", schemas.JSONATA_BODY, schemas.JSONATA_DATA, 200))),
    ]


@hookimpl
def register_openapi(kernel: Any) -> dict[str, Any]:
    return {"components": {"securitySchemes": {"metricsToken": schemas.METRICS_TOKEN_SCHEME}}}


@hookimpl
def startup(kernel: Any) -> None:
    kernel.state[routes.STARTED_AT] = time.monotonic()
    shared = getattr(kernel.state.get("metrics"), "shared", None)
    if shared is not None:  # svc serve --workers N: this worker's figures on the node's /metrics
        shared.start(float(kernel.settings.metrics_refresh_seconds))


@hookimpl
async def shutdown(kernel: Any) -> None:
    shared = getattr(kernel.state.get("metrics"), "shared", None)
    if shared is not None:
        await shared.stop()

"""Utils routes: parse, call the service, shape the answer."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST

from kernel.base.errors import ApiError
from kernel.http.media import body_field, read_json, reject_unknown, send_data
from plugins.utils import health, service
from plugins.utils.jsonata_runner import MAX_EXPRESSION_CHARS, JsonataRunner
from plugins.utils.templates import MAX_TEMPLATE_CHARS, OutputTooLarge, TemplateRefused, render_template

log = logging.getLogger("svc.utils")
NO_STORE = "no-store"
STARTED_AT = "utils.started_at"  # kernel.state key: monotonic time the app started


class HealthResource:
    """``GET /utils/health``: 200 when every check passes, else 503 with the same report."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel
        self.created_at = time.monotonic()
        shadowed = health.shadowed_checks(kernel)
        if shadowed:
            log.warning("health checks %s are built in; the ones plugins registered are ignored", shadowed)

    async def on_get(self, req: Any, resp: Any) -> None:
        started = self.kernel.state.get(STARTED_AT, self.created_at)
        report = await health.health_report(self.kernel, started)
        if report["status"] != "ok":
            raise ApiError(503, "SERVICE_UNAVAILABLE", health.failure_message(report),
                           extensions={"health": report}, headers={"Cache-Control": NO_STORE})
        resp.set_header("Cache-Control", NO_STORE)
        send_data(resp, report)


class VersionResource:
    """``GET /utils/version``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, service.version_info())


class MetricsResource:
    """``GET /metrics`` and ``GET /api/v1/metrics``: the Prometheus text format."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        refused = service.metrics_refusal(self.kernel, req.get_header("Authorization"))
        if refused is not None:
            raise refused
        resp.content_type = CONTENT_TYPE_LATEST
        resp.set_header("Cache-Control", NO_STORE)
        resp.data = await service.metrics_text(self.kernel)


class RenderTemplateResource:
    """``POST /utils/render-template``: ``{ template, data, escape? }`` -> ``{ output }``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, {"template", "data", "escape"})
        template = body_field(body, "template", str, max_length=MAX_TEMPLATE_CHARS)
        data = body_field(body, "data", dict)
        escape = body_field(body, "escape", bool, required=False, default=True)
        try:
            # Bounded work, but up to a few hundred ms on a large `data`: keep it off the event loop.
            output = await asyncio.to_thread(render_template, template, data, escape)
        except (TemplateRefused, OutputTooLarge) as exc:
            raise ApiError.validation(str(exc), path=["template"]) from exc
        send_data(resp, {"output": output})


class JsonataTestResource:
    """``POST /utils/jsonata/test``: ``{ expression, data? }`` -> ``{ result }``."""

    def __init__(self, kernel: Any) -> None:
        settings = kernel.settings
        self.runner = JsonataRunner(settings.jsonata_timeout_ms, settings.max_body_bytes)

    async def on_post(self, req: Any, resp: Any) -> None:
        body = await read_json(req)
        reject_unknown(body, {"expression", "data"})
        expression = body_field(body, "expression", str, max_length=MAX_EXPRESSION_CHARS)
        result = await self.runner.evaluate(expression, body.get("data"))
        send_data(resp, {"result": result})

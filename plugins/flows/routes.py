"""Falcon resources of /flows (thin: parse, call the service, shape the answer)."""

from __future__ import annotations

from typing import Any

import orjson

from kernel import ApiError
from kernel.http.media import read_body, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.flows import registry, runner, service, triggers

MAX_ID = 36
ANY_JSON = (dict, list, str, int, float, bool, type(None))


def _id(raw: str) -> str:
    if not raw or len(raw) > MAX_ID:
        raise service.not_found()
    return raw


def _one(req: Any, name: str) -> str | None:
    value = req.get_param(name)
    if value is not None and (not isinstance(value, str) or len(value) > 20):
        raise ApiError.validation(f"'{name}' is one value", path=[name])
    return value


class OperationsResource:
    """``GET /flows/operations`` (site admin)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        request_context(req).require_site()
        send_data(resp, registry.listing(self.kernel))


class FlowsResource:
    """``GET, POST /flows`` (site admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        data = await service.list_records(ctx, _one(req, "status"), _one(req, "trigger"))
        send_data(resp, data, meta={"total": len(data)})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await service.create(ctx, await read_json(req)), status=201)


class FlowResource:
    """``GET, PATCH, DELETE /flows/{id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await service.get_record(request_context(req), _id(id)))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.update(ctx, _id(id), await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await service.delete(request_context(req), _id(id))
        send_no_content(resp)


class RunResource:
    """``POST /flows/{id}/run`` (admin access or the capability ``flows:run``)."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        body = await read_json(req, expect=ANY_JSON, required=False, empty=None)  # no body: the run sees null
        send_data(resp, await triggers.run_manual(ctx, _id(id), body), status=202)


class TriggerResource:
    """``POST /flows/{id}/trigger`` (no session: the flow's own token)."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        site_id = ctx.require_site()
        headers = {k.lower(): v for k, v in req.headers.items()}
        raw = await read_body(req, ctx.kernel.settings.max_body_bytes)

        def parse() -> Any:  # called once the token is accepted: strangers learn nothing from a 400
            if not raw.strip():
                return None
            try:
                return orjson.loads(raw)
            except orjson.JSONDecodeError:
                if "json" in (req.content_type or ""):
                    raise ApiError.validation("The body is not valid JSON", path=["body"]) from None
                return raw.decode("utf-8", "replace")

        query = {k: v for k, v in req.params.items()}
        send_data(resp, await triggers.run_webhook(ctx.kernel, site_id, _id(id), headers, parse, query))


class RunsResource:
    """``GET /flows/{id}/runs`` (site admin), newest first."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        limit, offset = pagination(req, default_limit=25, max_limit=200)
        data, total = await runner.list_runs(ctx, _id(id), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class RunDetailResource:
    """``GET /flows/{id}/runs/{run_id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str, run_id: str) -> None:
        send_data(resp, await runner.get_run(request_context(req), _id(id), _id(run_id)))

"""Falcon resources of the privacy plugin (the services do the work)."""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.items import api as items
from plugins.privacy import consent, erasure, export, retention


class ConsentsResource:
    """``GET /me/consents``: every consent type of the caller in the site."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        user_id = consent.user_of(ctx.principal)
        async with ctx.reader() as db:
            send_data(resp, await consent.list_consents(db, user_id))


class ConsentResource:
    """``PUT /me/consents/{kind}`` ``{ granted, source, version }``."""

    async def on_put(self, req: Any, resp: Any, kind: str) -> None:
        ctx = request_context(req)
        consent.user_of(ctx.principal)
        send_data(resp, await consent.put_consent(ctx, kind, await read_json(req)))


class RestrictionResource:
    """``GET``/``PUT /me/restriction`` ``{ restricted, reason? }``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        user_id = consent.user_of(ctx.principal)
        async with ctx.reader() as db:
            send_data(resp, await consent.get_restriction(db, user_id))

    async def on_put(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        consent.user_of(ctx.principal)
        send_data(resp, await consent.put_restriction(ctx, await read_json(req)))


class DataExportResource:
    """``GET /me/data-export``: one JSON document, offered as a download."""

    async def on_get(self, req: Any, resp: Any) -> None:
        document = await export.build(request_context(req))
        resp.set_header("Content-Disposition", 'attachment; filename="data-export.json"')
        resp.set_header("Cache-Control", "no-store")
        send_data(resp, document)


class AutomatedDecisionsResource:
    """``GET /me/automated-decisions``: agent-caused revisions of the caller's items."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        user_id = consent.user_of(ctx.principal)
        limit, offset = pagination(req)
        page, total = await items.agent_revisions(ctx, user_id, limit=limit, offset=offset)
        send_data(resp, page, meta=page_meta(total, limit, offset))


class RetentionResource:
    """``GET /retention``: the site's horizons."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await retention.horizons(ctx.kernel, ctx.require_site()))


class RetentionRunResource:
    """``POST /retention/run``: prune the site now; the counts per target."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        body = await read_json(req, required=False)
        if body:
            raise ApiError.validation("POST /retention/run takes no body", path=["body"])
        send_data(resp, await retention.run_site(ctx.kernel, ctx.require_site(), ctx.principal,
                                                 request_id=ctx.request_id))


class ErasuresResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req)
        page, total = await erasure.list_requests(request_context(req), limit, offset)
        send_data(resp, page, meta=page_meta(total, limit, offset))

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await erasure.create(request_context(req), await read_json(req)), status=201)


class ErasureResource:
    async def on_get(self, req: Any, resp: Any, request_id: str) -> None:
        send_data(resp, await erasure.get_request(request_context(req), request_id))


class ErasureConfirmResource:
    async def on_post(self, req: Any, resp: Any, request_id: str) -> None:
        send_data(resp, await erasure.confirm(request_context(req), request_id))


class ErasureExecuteResource:
    async def on_post(self, req: Any, resp: Any, request_id: str) -> None:
        send_data(resp, await erasure.execute(request_context(req), request_id))

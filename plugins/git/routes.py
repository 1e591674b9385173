"""Falcon resources of the git plugin (``integrations``, ``pulls`` and ``webhooks`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import read_body, read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.git import gitops, previews, providers, pulls, webhooks
from plugins.git import integrations as ig

MAX_ID = 36
MAX_NUMBER = 2**31 - 1


def _printable(raw: str, limit: int) -> bool:
    """Not empty, at most ``limit`` characters, none of them a control character (PostgreSQL
    refuses NUL in text: such an id is simply unknown)."""
    return 0 < len(raw) <= limit and not any(ord(c) < 32 or c == "\x7f" for c in raw)


def _id(raw: str) -> str:
    if not _printable(raw, MAX_ID):
        raise ig.not_found()
    return raw


def _number(raw: str) -> int:
    if not raw.isascii() or not raw.isdigit() or len(raw) > 10 or not 0 < int(raw) <= MAX_NUMBER:
        raise ApiError.validation("The pull-request number must be a positive integer", path=["number"])
    return int(raw)


def _ctx(req: Any) -> Any:
    """The request's context; every admin route of git needs the encryption key (400 without)."""
    ctx = request_context(req)
    ctx.kernel.secrets.require()
    return ctx


class IntegrationsResource:
    """``GET, POST /integrations/git`` (site admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        data = await ig.list_records(_ctx(req))
        send_data(resp, data, meta={"total": len(data), "limit": ig.MAX_PER_SITE})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = _ctx(req)
        send_data(resp, await ig.create(ctx, await read_json(req, expect=object)), status=201)


class IntegrationResource:
    """``GET, PATCH, DELETE /integrations/git/{id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await ig.get_record(_ctx(req), _id(id)))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = _ctx(req)
        send_data(resp, await ig.update_record(ctx, _id(id), await read_json(req, expect=object)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        ctx = _ctx(req)
        await previews.disconnect(ctx, _id(id))
        send_no_content(resp)


class RotateSecretResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await ig.rotate_secret(_ctx(req), _id(id)))


class AuthorizeResource:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await ig.authorize(_ctx(req), _id(id)))


class CallbackResource:
    """``GET /integrations/git/oauth/{provider}/callback?code=&state=`` (public)."""

    async def on_get(self, req: Any, resp: Any, provider: str) -> None:
        if provider not in providers.PROVIDERS:
            raise ApiError.not_found("No such git provider")
        ctx = request_context(req)
        resp.set_header("Cache-Control", "no-store")
        send_data(resp, await ig.callback(ctx.kernel, provider, req.get_param("code"), req.get_param("state")))


class WebhookResource:
    """``POST /integrations/git/webhook/{provider}/{site_id}/{integration_id}`` (public, signed)."""

    async def on_post(self, req: Any, resp: Any, provider: str, site_id: str, integration_id: str) -> None:
        ctx = request_context(req)
        raw = await read_body(req, ctx.kernel.settings.max_body_bytes)
        headers = {k.lower(): v for k, v in req.headers.items()}
        send_data(resp, await webhooks.receive(ctx, provider, site_id, integration_id, headers, raw))


class PullsResource:
    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        limit, offset = pagination(req, default_limit=25, max_limit=100)
        data, total = await pulls.list_pulls(_ctx(req), _id(id), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class RefreshResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await pulls.refresh(_ctx(req), _id(id)))


class RunsResource:
    async def on_get(self, req: Any, resp: Any, id: str, number: str) -> None:
        send_data(resp, await pulls.list_runs(_ctx(req), _id(id), _number(number)))


class ValidateResource:
    async def on_post(self, req: Any, resp: Any, id: str, number: str) -> None:
        send_data(resp, await pulls.validate(_ctx(req), _id(id), _number(number)))


class LogResource:
    async def on_get(self, req: Any, resp: Any, id: str, run_id: str) -> None:
        if not _printable(run_id, 40):
            raise ApiError(404, "RECORD_NOT_FOUND", "No such CI run for this integration")
        send_data(resp, await pulls.run_log(_ctx(req), _id(id), run_id))


class GitopsResource:
    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = _ctx(req)
        send_data(resp, await gitops.sync(ctx, _id(id), await read_json(req, expect=object, required=False)))


class ProvenanceResource:
    """``GET /integrations/git/{id}/provenance?collection=&itemId=&number=``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        ctx = _ctx(req)
        collection, item_id, number = req.get_param("collection"), req.get_param("itemId"), req.get_param("number")
        if not collection or not _printable(collection, 64):
            raise ApiError.validation("'collection' is required", path=["query", "collection"])
        if not item_id or not _printable(item_id, 255):
            raise ApiError.validation("'itemId' is required", path=["query", "itemId"])
        send_data(resp, await previews.provenance(ctx, _id(id), collection, item_id,
                                                  None if number is None else _number(number)))

"""Falcon resources of the change-feed subscriptions (``subscriptions.py`` does the work)."""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.cdc import subscriptions as subs
from plugins.cdc.guard import reject_frontend, require_feed_access

MAX_ID = 36


def _id(raw: str) -> str:
    if not raw or len(raw) > MAX_ID:
        raise subs.not_found()
    return raw


class SubscriptionsResource:
    """``GET, POST /cdc/subscriptions`` (site admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        data = await subs.list_records(ctx)
        send_data(resp, data, meta={"total": len(data), "limit": subs.MAX_PER_SITE})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        send_data(resp, await subs.create(ctx, await read_json(req)), status=201)


class SubscriptionResource:
    """``GET, PATCH, DELETE /cdc/subscriptions/{id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        send_data(resp, await subs.get_record(ctx, _id(id)))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        send_data(resp, await subs.update(ctx, _id(id), await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        await subs.delete(ctx, _id(id))
        send_no_content(resp)


class AckResource:
    """``POST /cdc/subscriptions/{id}/ack`` (capability ``cdc:subscribe``)."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await require_feed_access(ctx)
        send_data(resp, await subs.ack(ctx, _id(id), await read_json(req)))


class ReplayResource:
    """``POST /cdc/subscriptions/{id}/replay`` (site admin)."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        send_data(resp, await subs.replay(ctx, _id(id), await read_json(req)))


class DispatchResource:
    """``POST /cdc/subscriptions/{id}/dispatch`` (site admin): 202."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        body = await read_json(req, required=False)
        if body:
            raise ApiError.validation("dispatch takes no body", path=["body"])
        send_data(resp, await subs.dispatch(ctx, _id(id)), status=202)


class DeliveriesResource:
    """``GET /cdc/subscriptions/{id}/deliveries`` (site admin): newest first."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        await reject_frontend(ctx)
        limit, offset = pagination(req, default_limit=25, max_limit=100)
        data, total = await subs.list_deliveries(ctx, _id(id), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))

"""Falcon resources of ``/editorial`` (``service.py`` does the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.editorial import reads, service


class ReviewsResource:
    """``GET /editorial/reviews`` (query ``status``, ``assignee``, ``page``, ``limit``)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req, default_limit=25, max_limit=200)
        data, total = await service.list_reviews(request_context(req), req.get_param("status"),
                                                 req.get_param("assignee"), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class SubmitResource:
    async def on_post(self, req: Any, resp: Any, collection: str, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.submit(ctx, collection, id, await read_json(req)))


class ApproveResource:
    async def on_post(self, req: Any, resp: Any, collection: str, id: str) -> None:
        ctx = request_context(req)
        body = await read_json(req, required=False)
        send_data(resp, await service.decide(ctx, collection, id, "approved", body))


class RejectResource:
    async def on_post(self, req: Any, resp: Any, collection: str, id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await service.decide(ctx, collection, id, "rejected", await read_json(req)))


class ItemStateResource:
    """``GET /editorial/{collection}/{id}``: the item's state and the caller's transitions."""

    async def on_get(self, req: Any, resp: Any, collection: str, id: str) -> None:
        send_data(resp, await reads.item_state(request_context(req), collection, id))


class StatesResource:
    """``GET /editorial/states`` (query ``collection``, ``ids``)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await reads.states_of(request_context(req), req.get_param("collection"),
                                              req.get_param("ids")))


class ReviewersResource:
    """``GET /editorial/reviewers`` (query ``collection``, ``item``)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        send_data(resp, await reads.reviewers(request_context(req), req.get_param("collection"),
                                              req.get_param("item")))

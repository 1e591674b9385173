"""Falcon resources of store sync (``pipelines.py`` and ``sync.py`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from plugins.store_sync import backfill, dead_letters, replay
from plugins.store_sync import pipelines as pl

MAX_ID = 36


def _id(raw: str) -> str:
    if not raw or len(raw) > MAX_ID or "\x00" in raw:  # PostgreSQL refuses NUL in text: names nothing
        raise pl.not_found()
    return raw


async def _body(req: Any, *, required: bool = True) -> Any:
    """Any JSON value: a body of the wrong shape is the plugin's 400 VALIDATION_ERROR."""
    return await read_json(req, expect=object, required=required)


class PipelinesResource:
    """``GET, POST /store-sync/pipelines`` (site admin)."""

    async def on_get(self, req: Any, resp: Any) -> None:
        data = await pl.list_records(request_context(req))
        send_data(resp, data, meta={"total": len(data), "limit": pl.MAX_PER_SITE})

    async def on_post(self, req: Any, resp: Any) -> None:
        send_data(resp, await pl.create(request_context(req), await _body(req)), status=201)


class PipelineResource:
    """``GET, PATCH, DELETE /store-sync/pipelines/{id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await pl.get_record(request_context(req), _id(id)))

    async def on_patch(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await pl.update(request_context(req), _id(id), await _body(req)))

    async def on_delete(self, req: Any, resp: Any, id: str) -> None:
        await pl.delete(request_context(req), _id(id))
        send_no_content(resp)


class LogResource:
    """``GET /store-sync/pipelines/{id}/log`` (site admin): newest first."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        limit, offset = pagination(req, default_limit=25, max_limit=100)
        data, total = await pl.list_log(request_context(req), _id(id), limit, offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class BackfillResource:
    """``POST /store-sync/pipelines/{id}/backfill`` (site admin)."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        ctx = request_context(req)
        pipeline_id = _id(id)
        send_data(resp, await backfill.backfill(ctx, pipeline_id, await _body(req, required=False)))


class DeadLettersResource:
    """``GET /store-sync/pipelines/{id}/dead-letters`` (site admin): newest first, ``status``."""

    async def on_get(self, req: Any, resp: Any, id: str) -> None:
        limit, offset = pagination(req, default_limit=25, max_limit=100)
        data, total = await dead_letters.list_page(request_context(req), _id(id), req.get_param("status"), limit,
                                                   offset)
        send_data(resp, data, meta=page_meta(total, limit, offset))


class DeadLetterResource:
    """``GET, DELETE /store-sync/pipelines/{id}/dead-letters/{letter_id}`` (site admin)."""

    async def on_get(self, req: Any, resp: Any, id: str, letter_id: str) -> None:
        send_data(resp, await dead_letters.get_record(request_context(req), _id(id), _letter(letter_id)))

    async def on_delete(self, req: Any, resp: Any, id: str, letter_id: str) -> None:
        await dead_letters.discard(request_context(req), _id(id), _letter(letter_id))
        send_no_content(resp)


class ReplayResource:
    """``POST /store-sync/pipelines/{id}/dead-letters/{letter_id}/replay`` (site admin)."""

    async def on_post(self, req: Any, resp: Any, id: str, letter_id: str) -> None:
        send_data(resp, await replay.replay(request_context(req), _id(id), _letter(letter_id)))


def _letter(raw: str) -> str:
    if not raw or len(raw) > MAX_ID or "\x00" in raw:
        raise dead_letters.not_found()
    return raw

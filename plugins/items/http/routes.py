"""Falcon resources of ``/items``: parse, call ``api`` (the items API other plugins use too: one
data path), shape the answer. REST writes have no cause; the read options come from the
``X-Svc-Draft`` / ``X-Svc-Locale`` headers (``drafts.ReadOptionsMiddleware``)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from plugins.items import api
from plugins.items.http.params import item_query, list_query
from plugins.items.read.drafts import options_of


class ItemsResource:
    """``/items/{collection}``: list (a singleton: its item), create, and a singleton's upsert."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, collection: str) -> None:
        ctx = request_context(req)
        data, meta = await api.read_collection(ctx, collection, list_query(req), options=options_of(req))
        send_data(resp, data, meta=meta)

    async def on_post(self, req: Any, resp: Any, collection: str) -> None:
        ctx = request_context(req)
        body = await read_json(req, expect=(dict, list))
        send_data(resp, await api.create_body(ctx, collection, body), status=201)

    async def on_patch(self, req: Any, resp: Any, collection: str) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        send_data(resp, await api.upsert_singleton(ctx, collection, body))


class ItemResource:
    """``/items/{collection}/{item_id}``: get, partial update, full replace, soft delete."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        ctx = request_context(req)
        opts = options_of(req)
        item = await api.read(ctx, collection, item_id, query=item_query(req),
                              draft=bool(opts and opts.draft), locale=opts.locale if opts else None)
        # The stored item's version, for a conditional update (docs/items.md, "Conditional updates").
        resp.set_header("ETag", await api.item_etag(ctx, collection, item))
        send_data(resp, item)

    async def on_patch(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        await self._update(req, resp, collection, item_id, replace=False)

    async def on_put(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        await self._update(req, resp, collection, item_id, replace=True)

    async def _update(self, req: Any, resp: Any, collection: str, item_id: str, *, replace: bool) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        if_match = req.get_header("If-Match")
        if if_match is None:  # the plain write: nothing conditional on its path
            send_data(resp, await (api.replace if replace else api.update)(ctx, collection, item_id, body))
            return
        item, tag = await api.update_if_match(ctx, collection, item_id, body, if_match, replace=replace)
        resp.set_header("ETag", tag)
        send_data(resp, item)

    async def on_delete(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        await api.delete(request_context(req), collection, item_id)
        send_no_content(resp)


class DependentsResource:
    """``GET /items/{collection}/{item_id}/dependents``: the dependents descriptor."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await api.describe_dependents(ctx, collection, item_id))


class ResolveDependentsResource:
    """``POST /items/{collection}/{item_id}/resolve-dependents``: one transaction."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_post(self, req: Any, resp: Any, collection: str, item_id: str) -> None:
        ctx = request_context(req)
        body = await read_json(req)
        send_data(resp, await api.resolve_dependents(ctx, collection, item_id, body))

"""Falcon resources of public delivery: resolve the site and the public role, answer 304 from
the cached content version when the client holds the current ETag, else read and answer."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from typing import Any

from kernel import ApiError
from kernel.base.jsoncodec import dumps
from kernel.http.middleware import request_context
from plugins.delivery import caching, hydrate
from plugins.delivery.version import content_version, etag
from plugins.settings.api import get_setting

MENU_KEY_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")


async def answer(req: Any, resp: Any, ctx: Any, produce: Callable[[], Awaitable[Any]], *,
                 extra: str = "", text: bool = False) -> None:
    """The caching protocol of every delivery route (docs/delivery.md, HTTP caching)."""
    kernel = ctx.kernel
    tag = None
    if not caching.is_private(req):
        tag = etag(ctx.site_id, await content_version(kernel, ctx.site_id), extra)
        if caching.matches(req.get_header("If-None-Match"), tag):
            caching.set_public(resp, kernel.settings, tag)
            caching.not_modified(resp)
            return  # nothing read: no hydration, no database query
    try:
        body = await produce()
    except ApiError as error:  # no cache keeps an error (a page may appear any moment)
        error.headers = {**error.headers, **caching.NO_STORE}
        raise
    if tag is None:
        caching.set_private(resp)
    else:
        caching.set_public(resp, kernel.settings, tag)
    if text:
        resp.content_type = "text/plain; charset=utf-8"
        resp.text = body
    else:
        resp.media = body


class PageResource:
    """``GET /deliver/page/{slug}`` (site from the request) and ``/deliver/page/{site_id}/{slug}``."""

    async def on_get(self, req: Any, resp: Any, ref: str) -> None:
        ctx = request_context(req)
        slug = hydrate.check_slug(ref)
        await answer(req, resp, ctx, lambda: _data(hydrate.page(ctx, slug)))

    async def on_get_site(self, req: Any, resp: Any, ref: str, slug: str) -> None:
        ctx = request_context(req)  # the site ``ref`` names, and its public role (Route(site="path"))
        hydrate.check_slug(slug)
        await answer(req, resp, ctx, lambda: _data(hydrate.page(ctx, slug)))


class ItemsResource:
    """``GET /deliver/items/{collection}``: the public item list (the query language)."""

    async def on_get(self, req: Any, resp: Any, collection: str) -> None:
        ctx = request_context(req)

        async def produce() -> dict[str, Any]:
            data, meta = await hydrate.item_list(ctx, collection, req.params)
            return {"data": data} if meta is None else {"data": data, "meta": meta}

        await answer(req, resp, ctx, produce)


class MenuResource:
    """``GET /deliver/menu/{key}``: the setting ``menu.<key>``."""

    async def on_get(self, req: Any, resp: Any, key: str) -> None:
        ctx = request_context(req)
        if not 0 < len(key) <= 95 or not set(key) <= MENU_KEY_CHARS:
            error = ApiError.validation("A menu key is 1 to 95 of A-Z a-z 0-9 _ . -", path=["key"])
            error.headers = caching.NO_STORE
            raise error
        value = await get_setting(ctx.kernel, ctx.site_id, f"menu.{key}")
        if value is None:
            raise hydrate.not_found(f"menu '{key}'")
        digest = hashlib.sha256(dumps(value)).hexdigest()

        async def produce() -> dict[str, Any]:
            return {"data": value}

        await answer(req, resp, ctx, produce, extra=f"menu:{key}:{digest}")


class LlmsTxtResource:
    """``GET /deliver/llms.txt/{site_id}``: the site's public pages as an llms.txt index."""

    async def on_get(self, req: Any, resp: Any, site_id: str) -> None:
        ctx = request_context(req)  # the site the path names (Route(site="path"))
        base = req.prefix.rstrip("/")
        await answer(req, resp, ctx, lambda: hydrate.llms_txt(ctx, ctx.site, base), extra=f"llms:{base}", text=True)


async def _data(found: Awaitable[Any]) -> dict[str, Any]:
    return {"data": await found}

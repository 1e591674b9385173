"""Falcon resources of ``/tm`` (translation memory, lookup, translate, glossary): studio
tooling, closed to anonymous callers and to the frontend realm (``access.api.require_studio``)."""

from __future__ import annotations

from typing import Any

import falcon

from kernel import ApiError
from kernel.http.media import read_json, send_data, send_no_content
from kernel.http.middleware import request_context
from kernel.http.params import pagination
from plugins.access import api as access_api
from plugins.settings.tm import glossary, tm, tm_lookup, translate


async def _studio_only(req: Any, resp: Any, resource: Any, params: Any) -> None:
    await access_api.require_studio(request_context(req), "Translation memory")


def _language_param(req: Any, name: str) -> str | None:
    value = req.get_param(name)
    if value is None or value == "":
        return None
    return tm.language(value, name)


@falcon.before(_studio_only)
class EntriesResource:
    """``GET, POST /tm``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req)
        source = req.get_param("entrySource")
        if source is not None and len(source) > 64:
            raise ApiError.validation("'entrySource' is at most 64 characters", path=["entrySource"])
        q = req.get_param("q")
        if q is not None and not 1 <= len(q) <= 200:
            raise ApiError.validation("'q' is 1 to 200 characters", path=["q"])
        filters = {"source": _language_param(req, "source"), "target": _language_param(req, "target"),
                   "entrySource": source, "q": q}
        data, meta = await tm.list_entries(request_context(req), filters, limit, offset)
        send_data(resp, data, meta=meta)

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        record, created = await tm.upsert(ctx, await read_json(req))
        send_data(resp, record, status=201 if created else 200)


@falcon.before(_studio_only)
class EntryResource:
    """``PATCH, DELETE /tm/{entry_id}``."""

    async def on_patch(self, req: Any, resp: Any, entry_id: str) -> None:
        ctx = request_context(req)
        send_data(resp, await tm.update(ctx, entry_id, await read_json(req)))

    async def on_delete(self, req: Any, resp: Any, entry_id: str) -> None:
        await tm.delete(request_context(req), entry_id)
        send_no_content(resp)


@falcon.before(_studio_only)
class LookupResource:
    """``POST /tm/lookup``: ``{ match }``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, {"match": await tm_lookup.lookup(ctx, await read_json(req))})


@falcon.before(_studio_only)
class TranslateResource:
    """``POST /tm/translate``."""

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        send_data(resp, await translate.translate(ctx, await read_json(req)))


@falcon.before(_studio_only)
class GlossaryResource:
    """``GET, POST /tm/glossary``."""

    async def on_get(self, req: Any, resp: Any) -> None:
        limit, offset = pagination(req)
        data, total = await glossary.list_terms(request_context(req), _language_param(req, "source"),
                                                _language_param(req, "target"), limit, offset)
        send_data(resp, data, meta={"total": total, "limit": limit, "offset": offset})

    async def on_post(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        record, created = await glossary.put_term(ctx, await read_json(req))
        send_data(resp, record, status=201 if created else 200)


@falcon.before(_studio_only)
class GlossaryTermResource:
    """``DELETE /tm/glossary/{term_id}``."""

    async def on_delete(self, req: Any, resp: Any, term_id: str) -> None:
        await glossary.delete_term(request_context(req), term_id)
        send_no_content(resp)

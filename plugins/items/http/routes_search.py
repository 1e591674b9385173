"""``GET /search``: full-text search over items (parse, call ``api.search_items``, answer)."""

from __future__ import annotations

from typing import Any

from kernel import Route, ops
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from kernel.http.params import pagination
from plugins.items import api
from plugins.items.http.openapi import ITEM, with_params
from plugins.items.read.listing import DEFAULT_LIMIT, MAX_LIMIT

HIT = {
    "type": "object",
    "required": ["collection", "id", "score", "item", "highlights"],
    "properties": {
        "collection": {"type": "string"}, "id": {"type": "string"}, "score": {"type": "number"},
        "item": ITEM,
        "highlights": {"type": "object", "additionalProperties": {"type": "string"},
                       "description": "Per matching readable field: an HTML-escaped excerpt, matches in <mark>."},
    },
}
PARAMS = [
    {"name": "q", "in": "query", "required": True, "schema": {"type": "string", "minLength": 1, "maxLength": 200},
     "description": "Words, all required (AND); the last one also matches as a prefix; diacritics ignored."},
    {"name": "collection", "in": "query", "required": False, "schema": {"type": "string"},
     "description": "Search one collection (default: every collection the caller may read)."},
    {"name": "limit", "in": "query", "required": False,
     "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT}, "description": "Page size (default 25)."},
    {"name": "offset", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
     "description": "Hits to skip."},
    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1},
     "description": "1-indexed page (when no offset)."},
]


class SearchResource:
    """``GET /search?q=&collection=&limit=&offset=``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        limit, offset = pagination(req, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)
        data, meta = await api.search_items(ctx, req.get_param("q"), collection=req.get_param("collection") or None,
                                            limit=limit, offset=offset)
        send_data(resp, data, meta=meta)


def search_routes(kernel: Any) -> list[Route]:
    """The search route: site required, anyone may call (the site's permissions filter the
    hits; anonymous callers search with the public role), rate bucket ``items_read``."""
    return [Route("/search", SearchResource(kernel), auth="public", rate_limit="items_read",
                  openapi=with_params(ops(get=("Full-text search over items, ranked and permission-filtered",
                                               None, [HIT], 200)), "get", PARAMS))]

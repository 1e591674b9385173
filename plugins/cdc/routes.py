"""Falcon resources of the change feed."""

from __future__ import annotations

from typing import Any

from kernel.http.media import send_data
from kernel.http.middleware import request_context
from plugins.cdc import feed
from plugins.cdc.guard import require_feed_access

QUERY = ("cursor", "collections", "operations", "limit", "wait")


class EventsResource:
    """``GET /cdc/events``: a page of the site's events (long-polls with ``wait``)."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = await require_feed_access(ctx)
        query = feed.parse_query({name: req.get_param(name) for name in QUERY})
        data, meta = feed.page_body(await feed.pull(self.kernel, site_id, query))
        resp.set_header("Cache-Control", "no-store")
        send_data(resp, data, meta=meta)

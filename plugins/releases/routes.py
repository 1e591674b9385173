"""Falcon resources of ``/releases`` (``service.py`` and ``publisher.py`` do the work)."""

from __future__ import annotations

from typing import Any

from kernel.http.media import read_json, send_data
from kernel.http.middleware import request_context
from plugins.releases import api
from plugins.releases.rollback import parse_body as parse_rollback_body


class RollbackResource:
    """``POST /releases/{id}/rollback`` (body ``{ force? }``): every published item back to its
    revision before the release."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        force = parse_rollback_body(await read_json(req, required=False))
        send_data(resp, await api.rollback(request_context(req), id, force=force))


class PublishResource:
    """``POST /releases/{id}/publish``: ``{ release, status, outcomes }``, 200 even when blocked."""

    async def on_post(self, req: Any, resp: Any, id: str) -> None:
        send_data(resp, await api.publish(request_context(req), id))

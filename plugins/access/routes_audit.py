"""``GET /audit``: the site's audit trail for its admins, newest first.

Filters ``action``, ``actorId``, ``targetType``, ``targetId`` (exact), ``since`` (inclusive)
and ``until`` (exclusive) as ISO 8601 instants; pagination by ``limit`` (at most 200) and
``offset`` or ``page``. Records are written by ``kernel.policy.audit.record``, which already keeps
secrets and values out of them; this route only reads the site's own records.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from kernel import Route, ops
from kernel.base.errors import ApiError
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from kernel.http.params import page_meta, pagination
from kernel.policy.audit import list_entries

# query name -> list_entries argument; exact matches on the stored columns.
TEXT_FILTERS = {"action": "action", "actorId": "actor_id", "targetType": "target_type", "targetId": "target_id"}
MAX_FILTER = 300
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")

ENTRY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "siteId", "action", "actor", "target", "details", "createdAt"],
    "properties": {
        "id": {"type": "string"}, "siteId": {"type": ["string", "null"]}, "action": {"type": "string"},
        "actor": {"type": "object", "properties": {"id": {"type": ["string", "null"]},
                                                   "kind": {"type": ["string", "null"]},
                                                   "impersonatorId": {"type": ["string", "null"]}}},
        "target": {"type": "object", "properties": {"type": {"type": ["string", "null"]},
                                                    "id": {"type": ["string", "null"]}}},
        "details": {"type": "object", "additionalProperties": True}, "ip": {"type": ["string", "null"]},
        "requestId": {"type": ["string", "null"]}, "createdAt": {"type": "string"},
    },
}
_TEXT_PARAM = {"type": "string", "maxLength": MAX_FILTER}
_TIME_PARAM = {"type": "string", "format": "date-time",
               "description": "ISO 8601 date-time (or date); without an offset it is UTC"}
PARAMETERS = [
    *({"name": name, "in": "query", "required": False, "schema": _TEXT_PARAM} for name in TEXT_FILTERS),
    {"name": "since", "in": "query", "required": False, "schema": _TIME_PARAM},
    {"name": "until", "in": "query", "required": False, "schema": _TIME_PARAM},
    {"name": "limit", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
    {"name": "offset", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0}},
    {"name": "page", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 1}},
]


def _text_filter(req: Any, name: str) -> str | None:
    value = req.get_param(name)
    if value is None or value == "":
        return None
    # Control characters cannot be in a stored value, and NUL would break PostgreSQL text.
    if len(value) > MAX_FILTER or _CONTROL.search(value):
        raise ApiError.validation(f"'{name}' must be at most {MAX_FILTER} printable characters",
                                  path=["query", name])
    return value


def parse_instant(value: str | None, name: str) -> dt.datetime | None:
    """An ISO 8601 date or date-time as an aware UTC datetime (naive means UTC), or 400."""
    if value is None or value == "":
        return None
    try:
        if len(value) > 64:
            raise ValueError(value)
        parsed = dt.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        # Normalised to UTC because SQLite compares the stored (UTC, offset-less) text.
        return parsed.astimezone(dt.UTC)
    except (ValueError, OverflowError) as exc:
        raise ApiError.validation(f"'{name}' must be an ISO 8601 date or date-time", path=["query", name]) from exc


class AuditResource:
    """``GET /audit``."""

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def on_get(self, req: Any, resp: Any) -> None:
        ctx = request_context(req)
        site_id = ctx.require_site()
        filters = {arg: _text_filter(req, name) for name, arg in TEXT_FILTERS.items()}
        since = parse_instant(req.get_param("since"), "since")
        until = parse_instant(req.get_param("until"), "until")
        limit, offset = pagination(req)
        async with self.kernel.db.connect() as conn:
            data, total = await list_entries(conn, site_id, since=since, until=until, limit=limit,
                                             offset=offset, **filters)
        send_data(resp, data, meta=page_meta(total, limit, offset))


def audit_routes(kernel: Any) -> list[Route]:
    """The routes, for the access plugin's ``register_routes``."""
    spec = ops(get=("The site's audit trail, newest first", None, [ENTRY_SCHEMA], 200))
    spec["get"]["parameters"] = PARAMETERS
    return [Route("/audit", AuditResource(kernel), site="required", auth="admin", openapi=spec)]

"""Query-string parameters of item reads, read by the query language's ``parse_list_query``.

``list_query(req)`` is the ``ListQuery`` of ``GET /items/{collection}`` (every list parameter,
in the spec's bracket forms and Directus's JSON forms); ``item_query(req)`` that of
``GET /items/{collection}/{id}``, which reads only ``fields`` and ``deep`` (a list's other
parameters mean nothing for one item and are ignored, as Directus does). Names are only shaped
here; the read plan checks them against the schema and the caller's permissions, so GraphQL,
which builds a ``ListQuery`` itself, gets the same answers.
"""

from __future__ import annotations

from typing import Any

from plugins.items.query import ListQuery, parse_list_query
from plugins.items.read.listing import DEFAULT_LIMIT, MAX_LIMIT

ITEM_PARAMS = ("fields", "deep")


def list_query(req: Any) -> ListQuery:
    """The ``ListQuery`` of a list request (400 for malformed parameters)."""
    return parse_list_query(req.params, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)


def item_query(req: Any) -> ListQuery:
    """The ``ListQuery`` of a one-item read: its ``fields`` and ``deep`` only."""
    params = {k: v for k, v in req.params.items() if k.split("[", 1)[0] in ITEM_PARAMS}
    if not params:
        return ListQuery()
    return parse_list_query(params, default_limit=DEFAULT_LIMIT, max_limit=MAX_LIMIT)

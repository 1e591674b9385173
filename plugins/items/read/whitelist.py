"""The whitelist of a query's names, for callers that must not tell hidden from unknown.

``first_unlisted`` walks every name a ``ListQuery`` references (``filter`` keys and dotted paths,
through ``_and``/``_or`` and relations; ``groupBy`` including time buckets; ``aggregate`` and
``sort`` fields) with the same resolver the list compiler uses, but with a stricter ``can_read``:
a name is listed only where it exists in its collection **and** the caller may name it in a
predicate (``ReadAccess.can_filter``). Unknown and hidden names then fail at the same step, in
the same way, so the answer (the query path of the first unlisted name) is never an oracle on
which hidden fields exist. Grammar faults (a bad operator, an operand of the wrong shape) are
raised as the list raises them: they do not depend on the schema or the caller.
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core.guard import ReadAccess
from plugins.items.query import ListQuery
from plugins.items.query.aggregates import compile_aggregate
from plugins.items.query.filters import resolve_filter
from plugins.items.query.ordering import check_path
from plugins.items.query.resolve import STRUCTURAL, Resolver, Scope
from plugins.items.tables import items
from plugins.schema.api import CollectionDef, SchemaSnapshot


def listed(access: ReadAccess, schema: SchemaSnapshot) -> Any:
    """``can_read(collection, name)``: the name exists there and the caller may filter on it."""
    def can(collection: str, name: str) -> bool:
        if not access.can_filter(collection, name):
            return False
        if name in STRUCTURAL:
            return True
        coll = schema.collection(collection)
        return coll is not None and (name in coll.fields or name in schema.nested_fields(collection))
    return can


def first_unlisted(access: ReadAccess, schema: SchemaSnapshot, coll: CollectionDef, query: ListQuery,
                   dialect: str) -> list[Any] | None:
    """The query path (``["query", "filter", ...]``) of the first name outside the whitelist,
    or ``None`` when every name is on it. Faults of listed names (an operand or a function
    that does not fit the field's type) are raised as the list raises them."""
    can = listed(access, schema)
    query, _ = access.bind(query)  # $NOW and the like compare as their values do in the list
    try:
        resolve_filter(query.filter, schema, coll, can_read=can)
        if query.is_aggregate:  # compiled, not run: also checks each function against its field's type
            compile_aggregate(query.aggregate, query.group_by, snapshot=schema, collection=coll, dialect=dialect,
                              table=items, can_read=can)
        resolver = Resolver(schema, can_read=can)
        for name, _ in query.sort:
            path = ["query", "sort", name]
            resolver.target(Scope(coll), check_path(name, path), path)
    except ApiError as exc:
        detail = exc.details[0]
        if exc.status == 403 and (detail.extensions or {}).get("reason") == "field_policy":
            return list(detail.path or [])
        raise
    return None

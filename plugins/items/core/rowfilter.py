"""The row-filter hook point: a permission's ``conditions`` ANDed into item statements.

``apply_row_filter(stmt, decision, dialect=..., table=..., coll=..., snapshot=...)`` is called by
every read, count, update, delete and dependents check of items; ``row_condition`` gives the
condition alone (the list path keeps it in its cached plan). Both compile with the query
language's ``compile_row_filter``: every operator, dotted JSON paths and relations (a related
collection's own read condition is not applied inside a permission's condition: the rule's
author decides what it reads).

A condition that does not compile (its field was dropped since the rule was written, or it
is not a filter at all) **fails closed**: it matches no row, and is logged, so a rule that
cannot be expressed hides items instead of showing them. Relations need the site's schema:
a caller without ``snapshot`` gets a schema of ``coll`` alone, where a relational condition
fails closed too.
"""

from __future__ import annotations

import logging
from types import MappingProxyType
from typing import Any

from sqlalchemy import false
from sqlalchemy.sql.elements import ColumnElement

from plugins.items.query import compile_row_filter
from plugins.items.tables import items
from plugins.schema.api import SchemaSnapshot

log = logging.getLogger("svc.items")


def apply_row_filter(stmt: Any, decision: Any, *, dialect: str, table: Any, coll: Any,
                     snapshot: SchemaSnapshot | None = None) -> Any:
    """``stmt`` with ``decision.row_filter`` ANDed in (unchanged when rows are not restricted)."""
    condition = row_condition(decision, dialect=dialect, table=table, coll=coll, snapshot=snapshot)
    return stmt if condition is None else stmt.where(condition)


def row_condition(decision: Any, *, dialect: str, coll: Any, table: Any = None,
                  snapshot: SchemaSnapshot | None = None) -> ColumnElement[bool] | None:
    """The SQL condition of ``decision.row_filter`` over ``table`` (the items table by default),
    ``None`` when rows are not restricted, ``false()`` when it does not compile."""
    tree = getattr(decision, "row_filter", None)
    if tree is None or tree == {}:
        return None
    if not isinstance(tree, dict):
        log.warning("row filter on '%s' is not an object; it matches nothing", coll.name)
        return false()
    schema = snapshot if snapshot is not None and snapshot.collection(coll.name) is not None else alone(coll)
    try:
        return compile_row_filter(tree, snapshot=schema, collection=coll, dialect=dialect,
                                  table=items if table is None else table)
    except (ValueError, TypeError, RecursionError) as exc:  # the compiler's own 400s are handled inside
        log.warning("row filter on '%s' not compiled (%s); it matches nothing", coll.name, type(exc).__name__)
        return false()


def alone(coll: Any) -> SchemaSnapshot:
    """A schema holding ``coll`` only (no relations)."""
    return SchemaSnapshot(site_id="", version=-1, collections=MappingProxyType({coll.name: coll}))

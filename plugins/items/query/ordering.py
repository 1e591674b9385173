"""``sort``: ORDER BY terms, typed like filters, with one NULL placement on both dialects.

NULL (and a missing key) sorts as the smallest value: first ascending, last descending. That
is SQLite's native order (a NULLS clause would keep SQLite from reading a field's index in
order); PostgreSQL's field indexes are built ``NULLS FIRST`` to match, so a forward or
backward index scan serves either direction on both dialects. ``id`` ends every order as the
tiebreaker (in the direction the request gave it, ascending otherwise), so pages never overlap.

Keys: structural columns and top-level fields on their index expression; paths into JSON
fields by JSON type (null, then numbers, then strings, then booleans, then objects and
arrays); fields of an m2o-related item (``author.name``) through a correlated subquery that
honours the related collection's read condition. Sorting by a to-many relation is refused.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Numeric, case, cast, func, literal, select

from kernel.base.errors import ApiError
from plugins.items.query import filters
from plugins.items.query.ir import Link, Target
from plugins.items.query.parse.limits import MAX_PATH_SEGMENTS, SEGMENT
from plugins.items.query.resolve import CanRead, RowFilterFor, Scope
from plugins.items.query.sql import sqlexpr as sx
from plugins.items.query.sql.compile import FilterCompiler
from plugins.schema.api import CollectionDef, SchemaSnapshot

NOT_NULL_COLUMNS = frozenset({"id", "status", "created_at", "updated_at"})
SORT_PATH = ("query", "sort")


def check_path(name: str, path: Sequence[Any]) -> list[str]:
    """The segments of a sort/groupBy/aggregate name, or 400."""
    segments = name.split(".")
    if len(segments) > MAX_PATH_SEGMENTS or not all(SEGMENT.fullmatch(s) for s in segments):
        raise ApiError.validation(f"'{name[:80]}' is not a field name or a dotted path of at most "
                                  f"{MAX_PATH_SEGMENTS} segments of letters, digits and '_'", path=list(path))
    return segments


def compile_sort(sort: Sequence[tuple[str, bool]], *, snapshot: SchemaSnapshot, collection: CollectionDef | str,
                 dialect: str, table: Any, can_read: CanRead | None = None,
                 row_filter_for: RowFilterFor | None = None, path: Sequence[Any] = SORT_PATH,
                 tiebreak: bool = True) -> list[Any]:
    """ORDER BY terms for ``sort`` (``(name, descending)`` pairs) over ``table``: 400 for unknown
    or unsortable names, 403 ``field_policy`` for unreadable ones."""
    t = table
    coll = snapshot.collection(collection) if isinstance(collection, str) else collection
    assert coll is not None
    resolver = filters.resolver(snapshot, can_read=can_read, row_filter_for=row_filter_for)
    compiler = FilterCompiler(dialect, t)
    terms: list[Any] = []
    for name, descending in sort:
        here = [*path, name]
        segments = check_path(name, here)
        target, links = resolver.target(Scope(coll), segments, here)
        if target.column == "id" and not links:
            # ids are unique: nothing after them can change the order.
            terms.append(t.c.id.desc() if descending else t.c.id.asc())
            return terms
        if any(link.kind != "m2o" for link in links):
            raise ApiError.validation(f"Cannot sort by '{name[:80]}': it crosses a to-many relation", path=here)
        if links and target.category in ("json", "list"):
            raise ApiError.validation(f"Cannot sort by the JSON value '{name[:80]}' of a related item", path=here)
        for expr in sort_keys(compiler, t, links, target, 1):
            if target.column in NOT_NULL_COLUMNS and not links:
                terms.append(expr.desc() if descending else expr.asc())
            else:
                terms.append(sx.ordered(dialect, expr, descending))
    if tiebreak:
        terms.append(t.c.id.asc())
    return terms


def sort_keys(compiler: Any, t: Any, links: list[Link], target: Target, depth: int) -> list[Any]:
    """The expressions that order by ``target`` (several for a JSON value: its type first)."""
    if links:
        return [_related_value(compiler, t, links, target, depth)]
    if target.category not in ("json", "list"):
        return [sx.scalar_expr(compiler.dialect, t, target)]
    keys = sx.keys_of(target)
    if compiler.pg:
        node = sx.pg_node(t, keys)
        kind = func.jsonb_typeof(node)
        rank = case((kind == "number", 0), (kind == "string", 1), (kind == "boolean", 2),
                    (kind.in_(("object", "array")), 3), else_=None)
        text = sx.pg_text(t, keys)
        return [rank, case((kind == "number", cast(node, Numeric))), case((kind.in_(("string", "boolean")), text)),
                case((kind.in_(("object", "array")), node))]
    path = sx.sqlite_path(keys)
    jtype = func.json_type(t.c.data, path)
    rank = case((jtype.in_(("integer", "real")), 0), (jtype == "text", 1), (jtype.in_(("true", "false")), 2),
                (jtype.in_(("object", "array")), 3), else_=None)
    # Within one rank json_extract's values share one SQL type (booleans are 0/1).
    return [rank, func.json_extract(t.c.data, path)]


def _related_value(compiler: Any, t: Any, links: list[Link], target: Target, depth: int) -> Any:
    """The target's value on the item reached through m2o ``links`` (NULL when there is none,
    it is deleted, or the principal may not see it)."""
    link, rest = links[0], links[1:]
    r = sx.depth_alias(compiler.base, depth, prefix="svc_s")
    value = (_related_value(compiler, r, rest, target, depth + 1) if rest
             else sx.scalar_expr(compiler.dialect, r, target))
    conditions = [r.c.site_id == t.c.site_id, r.c.collection_id == literal(link.collection_id),
                  r.c.deleted_at.is_(None), r.c.id == sx.reference_text(compiler.dialect, t, link.holder)]
    if link.row_filter is not None:
        # its own relations sit below every sort alias: no name is shadowed
        conditions.append(compiler.compile(link.row_filter, r, depth + 8))
    return select(value).where(*conditions).limit(1).scalar_subquery()

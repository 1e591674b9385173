"""The checked filter tree (``ir``) as one SQLAlchemy Core boolean over the items table.

``compile_filter(tree, snapshot=..., collection=..., dialect=...)`` resolves and compiles a
filter; ``compile_sort`` and ``compile_aggregate`` (re-exported from ``ordering`` and
``aggregates``) do the same for ``sort`` and ``aggregate``/``groupBy``. The semantics, one
for both dialects and for ``reference.evaluate``, are in
``docs/decisions/items-query-semantics.md``. In short: a comparison with a missing or null
value is never true (only ``_null``/``_nnull`` see them); typed fields compare by their type
on the index expression; JSON paths compare by the operand's JSON type; relational keys are
``EXISTS`` over the related collection's live, readable items of the same site.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import (
    Text,
    and_,
    bindparam,
    case,
    cast,
    exists,
    false,
    func,
    literal,
    literal_column,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.sql import Alias
from sqlalchemy.sql.elements import ColumnElement

from kernel.base.errors import ApiError
from plugins.items.query.filters import FILTER_PATH, resolve_filter
from plugins.items.query.ir import Condition, Const, Exists, Group, Node, Target
from plugins.items.query.resolve import CanRead, RowFilterFor
from plugins.items.query.sql import sqlexpr as sx
from plugins.items.query.sql.sqlite_json import contains as sqlite_contains
from plugins.items.query.sql.sqlite_json import each, scalar_match
from plugins.schema.api import CollectionDef, SchemaSnapshot

log = logging.getLogger("svc.items")
ONE: Any = literal_column("1")
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_NUMBER_TYPES = ("integer", "real")
_ORDER = {"_lt": "__lt__", "_lte": "__le__", "_gt": "__gt__", "_gte": "__ge__"}


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only: what SQLite's ``lower()`` and PostgreSQL's under
    ``COLLATE "C"`` do, so ``_icontains`` means the same on both."""
    return text.translate(_ASCII_LOWER)


def like_pattern(text: str, prefix: str, suffix: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return prefix + escaped + suffix


def compile_filter(tree: Mapping[str, Any] | Node | None, *, snapshot: SchemaSnapshot | None = None,
                   collection: CollectionDef | str | None = None, dialect: str, table: Any,
                   can_read: CanRead | None = None, row_filter_for: RowFilterFor | None = None,
                   path: Sequence[Any] = FILTER_PATH) -> ColumnElement[bool] | None:
    """The SQL condition of a filter over ``table`` (the items table, or an alias of it), or
    ``None`` when there is no filter. ``tree`` is a raw filter (resolved here against
    ``snapshot``/``collection``, raising 400/403) or an already resolved ``ir`` node."""
    if tree is None:
        return None
    if isinstance(tree, (Condition, Group, Const, Exists)):
        node: Node | None = tree
    else:  # raw input (a non-object is a 400 from resolve_filter)
        assert snapshot is not None and collection is not None
        node = resolve_filter(tree, snapshot, collection, can_read=can_read, row_filter_for=row_filter_for, path=path)
    if node is None:
        return None
    return FilterCompiler(dialect, table).compile(node)


def compile_row_filter(tree: Mapping[str, Any] | None, *, snapshot: SchemaSnapshot, collection: CollectionDef | str,
                       dialect: str, table: Any) -> ColumnElement[bool] | None:
    """A permission's read condition (``Decision.row_filter``, variables substituted) as SQL,
    or ``None`` when rows are not restricted. Fails closed: a condition that no longer
    resolves (a field was dropped since the rule was written) matches no row, and is logged."""
    if not tree:
        return None
    try:
        node = resolve_filter(tree, snapshot, collection, path=("conditions",), trusted=True)
    except ApiError as exc:
        log.warning("read condition on '%s' not compiled (%s); it matches nothing",
                    getattr(collection, "name", collection), exc.message)
        return false()
    return FilterCompiler(dialect, table).compile(node) if node is not None else None


class FilterCompiler:
    """Compiles ``ir`` nodes for one dialect over one table (relations alias its base table)."""

    def __init__(self, dialect: str, table: Any) -> None:
        self.dialect = dialect
        self.pg = dialect == sx.PG
        self.table = table
        self.base = table.element if isinstance(table, Alias) else table

    def compile(self, node: Node, t: Any = None, depth: int = 0) -> ColumnElement[bool]:
        """``node`` over ``t`` (default: the compiler's table), ``depth`` relations down."""
        t = self.table if t is None else t
        if isinstance(node, Condition):
            target = node.target
            if target.category in ("json", "list"):
                return self._json(t, node)
            return self._typed(t, node)
        if isinstance(node, Group):
            parts = [self.compile(child, t, depth) for child in node.children]
            return and_(*parts) if node.op == "_and" else or_(*parts)
        if isinstance(node, Exists):
            return self._exists(t, node, depth)
        assert isinstance(node, Const)
        return true() if node.value else false()

    # ------------------------------------------------------------------ relations
    def _exists(self, t: Any, node: Exists, depth: int) -> ColumnElement[bool]:
        """Some live item of the related collection, in the same site, linked to this row
        and visible under its read condition, matches the child filter."""
        link = node.link
        r = sx.depth_alias(self.base, depth + 1)
        conditions = [r.c.site_id == t.c.site_id, r.c.collection_id == literal(link.collection_id),
                      r.c.deleted_at.is_(None)]
        if link.kind == "m2o":
            conditions.append(r.c.id == sx.reference_text(self.dialect, t, link.holder))
        elif link.kind == "o2m":
            # the foreign key as text: the expression a text key's index is built on
            conditions.append(sx.reference_text(self.dialect, r, link.holder) == t.c.id)
        else:  # m2m: the holder is a list of ids on this row
            conditions.append(r.c.id.in_(self._id_list(t, link.holder)))
        if link.row_filter is not None:
            conditions.append(self.compile(link.row_filter, r, depth + 1))
        conditions.append(self.compile(node.child, r, depth + 1))
        return exists(select(ONE).select_from(r).where(*conditions))

    def _id_list(self, t: Any, holder: Any) -> Any:
        keys = (holder.name,)
        if self.pg:
            # jsonb_array_elements_text raises on a non-array: feed it an empty array instead.
            node = sx.pg_node(t, keys)
            array = case((func.jsonb_typeof(node) == "array", node), else_=cast(literal("[]"), JSONB))
            return select(func.jsonb_array_elements_text(array)).correlate(t)
        path = sx.sqlite_path(keys)
        je = each(t.c.data, path)
        # Two levels below the row it reads: correlate explicitly (auto-correlation stops at one).
        return select(je.c.value).where(func.json_type(t.c.data, path) == "array").correlate(t)

    # ------------------------------------------------------------------ typed targets
    def _typed(self, t: Any, node: Condition) -> ColumnElement[bool]:
        target, op, value = node.target, node.op, node.value
        expr = sx.scalar_expr(self.dialect, t, target)
        if op == "_null":
            return expr.is_(None)
        if op == "_nnull":
            return expr.is_not(None)
        if op == "_eq":
            if self.pg and _containable(target):
                # Equality as containment: the GIN index on data serves every field.
                return sx.jsonb(t).contains(sx.nest((target.name,), value))
            return expr == sx.bind_value(self.dialect, target, value)
        if op == "_neq":
            return expr != sx.bind_value(self.dialect, target, value)
        if op in _ORDER:
            return getattr(expr, _ORDER[op])(sx.bind_value(self.dialect, target, value))
        if op == "_between":
            low, high = value
            return expr.between(sx.bind_value(self.dialect, target, low), sx.bind_value(self.dialect, target, high))
        if op == "_in":
            return expr.in_(sx.bind_list(self.dialect, target, value))
        if op == "_nin":
            return expr.not_in(sx.bind_list(self.dialect, target, value))
        return self._text_op(expr, op, value)

    def _text_op(self, expr: Any, op: str, value: str) -> ColumnElement[bool]:
        """``_contains``/``_icontains``/``_starts_with``/``_ends_with`` on a text expression:
        case-sensitive except ``_icontains`` (ASCII case only); ``%``, ``_`` are literal."""
        if self.pg:
            if op == "_icontains":
                lowered = func.lower(expr.collate("C"))
                return lowered.like(like_pattern(ascii_lower(value), "%", "%"), escape="\\")
            prefix = "" if op == "_starts_with" else "%"
            suffix = "" if op == "_ends_with" else "%"
            return expr.like(like_pattern(value, prefix, suffix), escape="\\")
        if op == "_contains":
            return func.instr(expr, value) > 0
        if op == "_icontains":
            return func.instr(func.lower(expr), ascii_lower(value)) > 0
        if op == "_starts_with":
            return func.instr(expr, value) == 1
        if not value:  # every string ends with ""
            return expr.is_not(None)
        return func.substr(expr, -len(value)) == value

    # ------------------------------------------------------------------ JSON targets
    def _json(self, t: Any, node: Condition) -> ColumnElement[bool]:
        return (self._json_pg if self.pg else self._json_sqlite)(t, node)

    def _json_pg(self, t: Any, node: Condition) -> ColumnElement[bool]:
        keys = sx.keys_of(node.target)
        op, value = node.op, node.value
        data = sx.jsonb(t)
        text = sx.pg_text(t, keys)
        if op == "_null":
            return text.is_(None)
        if op == "_nnull":
            return text.is_not(None)
        if op == "_json_contains":
            in_array = data.contains(sx.nest(keys, [value]))
            if value is None:  # a null value is null: it contains nothing (an array may hold null)
                return in_array
            found = data.contains(sx.nest(keys, value))
            # like @> itself: at the top, an array contains a scalar element
            return found if isinstance(value, (dict, list)) else or_(found, in_array)
        node_expr = sx.pg_node(t, keys)
        kind = func.jsonb_typeof(node_expr)
        if op == "_eq":
            return data.contains(sx.nest(keys, value))
        if op == "_neq":
            return and_(text.is_not(None), node_expr != sx.json_bind(value))
        if op in ("_in", "_nin"):
            found = node_expr.in_(bindparam(None, list(value), expanding=True, type_=JSONB()))
            return found if op == "_in" else and_(text.is_not(None), not_(found))
        if op in _ORDER or op == "_between":
            bounds = value if op == "_between" else (value,)
            if isinstance(bounds[0], str):
                compare, expected = text, "string"
                bounds = tuple(bindparam(None, b, type_=Text()) for b in bounds)
            else:
                compare, expected = node_expr, "number"
                bounds = tuple(sx.json_bind(b) for b in bounds)
            test = compare.between(*bounds) if op == "_between" else getattr(compare, _ORDER[op])(bounds[0])
            return and_(kind == expected, test)
        if op in ("_has_key", "_has_any_keys", "_has_all_keys"):
            keys_wanted = [value] if op == "_has_key" else list(value)
            if op == "_has_key":
                test = node_expr.has_key(bindparam(None, value, type_=Text()))
            else:
                array = bindparam(None, keys_wanted, type_=ARRAY(Text()))
                test = node_expr.has_any(array) if op == "_has_any_keys" else node_expr.has_all(array)
            return and_(kind == "object", test)
        # string operators: JSON strings; _contains also finds an element of an array
        element = data.contains(sx.nest(keys, [value])) if op == "_contains" else None
        if not isinstance(value, str):
            return element if element is not None else false()
        test = and_(kind == "string", self._text_op(text, op, value))
        return or_(test, element) if element is not None else test

    def _json_sqlite(self, t: Any, node: Condition) -> ColumnElement[bool]:
        keys = sx.keys_of(node.target)
        op, value = node.op, node.value
        path, jtype, jval = sx.sqlite_value(t, keys)
        if op == "_null":
            return jval.is_(None)
        if op == "_nnull":
            return jval.is_not(None)
        if op == "_eq":
            return scalar_match(jtype, jval, value)
        if op == "_neq":
            return and_(jval.is_not(None), not_(scalar_match(jtype, jval, value)))
        if op in ("_in", "_nin"):
            found = _sqlite_in(jtype, jval, value)
            return found if op == "_in" else and_(jval.is_not(None), not_(found))
        if op in _ORDER or op == "_between":
            bounds = value if op == "_between" else (value,)
            guard = jtype == "text" if isinstance(bounds[0], str) else jtype.in_(_NUMBER_TYPES)
            if op == "_between":
                return and_(guard, jval.between(*(literal(b) for b in bounds)))
            return and_(guard, getattr(jval, _ORDER[op])(literal(bounds[0])))
        if op == "_json_contains":
            return sqlite_contains(t.c.data, path, value)
        if op in ("_has_key", "_has_any_keys", "_has_all_keys"):
            wanted = [value] if op == "_has_key" else list(value)
            tests = []
            for key in wanted:
                je = each(t.c.data, path)
                tests.append(exists(select(ONE).select_from(je).where(je.c.key == literal(key))))
            joined = tests[0] if len(tests) == 1 else (or_(*tests) if op == "_has_any_keys" else and_(*tests))
            return and_(jtype == "object", joined)
        element = None
        if op == "_contains":
            je = each(t.c.data, path)
            element = and_(jtype == "array", exists(select(ONE).select_from(je).where(
                scalar_match(je.c.type, je.c.value, value))))
        if not isinstance(value, str):
            return element if element is not None else false()
        test = and_(jtype == "text", self._text_op(jval, op, value))
        return or_(test, element) if element is not None else test


def _containable(target: Target) -> bool:
    """A top-level field whose ``_eq`` can be containment: its stored JSON value equals the
    operand exactly when the typed expression does (not decimals, which are stored as text
    compared as numbers), and no btree expression index is there to serve it better."""
    field = target.field
    return (field is not None and not target.path and not field.indexed and field.type != "decimal"
            and target.category in ("number", "boolean", "text", "temporal"))


def _sqlite_in(jtype: Any, jval: Any, values: tuple[Any, ...]) -> ColumnElement[bool]:
    strings = [v for v in values if isinstance(v, str)]
    numbers = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    flags = [("true" if v else "false") for v in values if isinstance(v, bool)]
    parts = []
    if strings:
        parts.append(and_(jtype == "text", jval.in_(bindparam(None, strings, expanding=True))))
    if numbers:
        parts.append(and_(jtype.in_(_NUMBER_TYPES), jval.in_(bindparam(None, numbers, expanding=True))))
    if flags:
        parts.append(jtype.in_(flags))
    return or_(*parts) if len(parts) > 1 else parts[0]


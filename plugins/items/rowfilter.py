"""The row-filter hook point: a permission's ``conditions`` ANDed into item statements.

``apply_row_filter(stmt, decision, dialect=..., table=..., coll=...)`` is called by every read,
update and delete of items. Until the query compiler (``plugins/items/query/``) is wired in,
this module compiles the simple forms itself: a top-level content field or the structural
``id``, ``status``, ``sort``, ``userCreated``, ``userUpdated`` with ``_eq``, ``_neq``, ``_in``,
``_nin``, ``_null``, ``_nnull``, combined with ``_and`` / ``_or``. That covers "own items"
(``userCreated = $CURRENT_USER``) and "published only" (``status = published``).

Anything else (dotted paths, relational filters, other operators) **fails closed**: the node
matches no row, so a rule this module cannot express hides items rather than showing them.
The integration step replaces ``compile_condition`` with the compiler's output.
"""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import and_, false, not_, or_, true
from sqlalchemy.sql.elements import ColumnElement

from plugins.items.jsonpath import FIELD_KEY, comparable, expr_for

log = logging.getLogger("svc.items")

# Structural keys a simple condition may use, with the column name and whether it is an int.
_STRUCTURAL = {"id": ("id", False), "status": ("status", False), "sort": ("sort", True),
               "userCreated": ("user_created", False), "userUpdated": ("user_updated", False)}
_OPS = frozenset({"_eq", "_neq", "_in", "_nin", "_null", "_nnull"})


class Unsupported(Exception):
    """A condition this module does not compile (it then matches nothing)."""


def apply_row_filter(stmt: Any, decision: Any, *, dialect: str, table: Any, coll: Any) -> Any:
    """``stmt`` with ``decision.row_filter`` ANDed in (unchanged when rows are not restricted)."""
    tree = getattr(decision, "row_filter", None)
    if not tree:
        return stmt
    return stmt.where(compile_condition(tree, dialect=dialect, table=table, coll=coll))


def compile_condition(tree: Any, *, dialect: str, table: Any, coll: Any) -> ColumnElement[bool]:
    """The SQL condition of a filter tree, or ``false()`` when it is not a supported form."""
    try:
        return _group(tree, dialect, table, coll)
    except Unsupported as exc:
        log.warning("row filter on '%s' not compiled (%s); it matches nothing", coll.name, exc)
        return false()


def _group(node: Any, dialect: str, table: Any, coll: Any) -> ColumnElement[bool]:
    if not isinstance(node, dict) or not node:
        raise Unsupported("a filter must be a non-empty object")
    parts = []
    for key, value in node.items():
        if key in ("_and", "_or"):
            if not isinstance(value, list) or not value:
                raise Unsupported(f"{key} takes a non-empty list")
            subs = [_group(v, dialect, table, coll) for v in value]
            parts.append(and_(*subs) if key == "_and" else or_(*subs))
        else:
            parts.append(_field(key, value, dialect, table, coll))
    return and_(*parts) if len(parts) > 1 else parts[0]


def _column(name: str, dialect: str, table: Any, coll: Any) -> tuple[Any, Any]:
    """The SQL expression of ``name`` and a function turning a rule value into a parameter."""
    if name in _STRUCTURAL:
        column, is_int = _STRUCTURAL[name]

        def structural(value: Any) -> Any:
            if is_int and (isinstance(value, bool) or not isinstance(value, int)):
                raise ValueError("not an integer")
            if not is_int and not isinstance(value, str):
                raise ValueError("not a string")
            return value

        return table.c[column], structural
    if not isinstance(name, str) or not FIELD_KEY.match(name):
        raise Unsupported(f"'{str(name)[:40]}' is not a top-level field")
    fdef = coll.fields.get(name)
    field_type = fdef.type if fdef is not None else "string"

    def content(value: Any) -> Any:
        normal = fdef.validate(value) if fdef is not None else value
        return comparable(dialect, fdef, normal) if fdef is not None else value

    return expr_for(dialect, table.c.data, name, field_type), content


def _field(name: str, ops: Any, dialect: str, table: Any, coll: Any) -> ColumnElement[bool]:
    if not isinstance(ops, dict) or not ops or not set(ops) <= _OPS:
        raise Unsupported(f"only {', '.join(sorted(_OPS))} on '{str(name)[:40]}'")
    expr, param = _column(name, dialect, table, coll)
    parts = []
    for op, value in ops.items():
        if op in ("_null", "_nnull"):
            if not isinstance(value, bool):
                raise Unsupported(f"{op} takes a boolean")
            parts.append(expr.is_(None) if value == (op == "_null") else expr.is_not(None))
        elif op in ("_eq", "_neq"):
            if value is None:
                parts.append(expr.is_(None) if op == "_eq" else expr.is_not(None))
                continue
            try:
                bound = param(value)
            except ValueError:  # a value the field can never hold: equal to nothing
                parts.append(false() if op == "_eq" else expr.is_not(None))
                continue
            parts.append(expr == bound if op == "_eq" else expr != bound)
        else:
            if not isinstance(value, list):
                raise Unsupported(f"{op} takes a list")
            bound = []
            for member in value:
                try:
                    bound.append(param(member))
                except ValueError:
                    continue
            matched = or_(*(expr == b for b in bound)) if bound else false()
            parts.append(matched if op == "_in" else and_(expr.is_not(None), not_(matched)))
    return and_(*parts) if len(parts) > 1 else (parts[0] if parts else true())

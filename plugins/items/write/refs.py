"""Item references held in JSON: finding the items that point at one item, and editing them.

A reference lives in a *holder* field (``plugins.schema.api.relations_pointing_to``) in one of
three shapes: ``id`` (m2o, o2m's foreign key), ``ids`` (m2m: a list of ids) or ``refs`` (m2a:
a list of ``{ collection, id }``). SQL narrows the candidates (the field's expression, which
an ``indexed`` holder's index serves; JSONB containment on PostgreSQL; ``json_each`` on
SQLite); ``holds`` then decides exactly in Python, so both dialects give the same answer.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import exists, false, func, literal_column, select, type_coerce
from sqlalchemy.dialects.postgresql import JSONB

from plugins.items.query.sql.jsonpath import comparable, field_expr, path_literal
from plugins.items.tables import items


def _same_id(value: Any, item_id: str) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return str(value) == item_id
    return isinstance(value, str) and value == item_id


def holds(value: Any, shape: str, target: str, item_id: str) -> bool:
    """Whether a stored holder value references item ``item_id`` of collection ``target``."""
    if shape == "id":
        return _same_id(value, item_id)
    if not isinstance(value, list):
        return False
    if shape == "ids":
        return any(_same_id(v, item_id) for v in value)
    return any(isinstance(v, dict) and v.get("collection") == target and _same_id(v.get("id"), item_id)
               for v in value)


def without(value: Any, shape: str, target: str, item_id: str) -> Any:
    """The holder value with the reference removed (``None`` for a single id)."""
    if shape == "id":
        return None
    return [v for v in value if not holds([v], shape, target, item_id)]


def replaced(value: Any, shape: str, target: str, item_id: str, new_id: Any) -> Any:
    """The holder value pointing at ``new_id`` instead (lists keep their order, no duplicates)."""
    if shape == "id":
        return new_id
    out: list[Any] = []
    for v in value:
        if holds([v], shape, target, item_id):
            v = new_id if shape == "ids" else {**v, "id": new_id}
        if v not in out:
            out.append(v)
    return out


def _candidates(dialect: str, holder: Any, fdef: Any, shape: str, target: str, item_id: str) -> Any:
    """A SQL condition true for (at least) the rows whose holder references the item."""
    if shape == "id":
        value: Any = item_id
        if fdef.type in ("integer", "bigInteger"):
            if not item_id.lstrip("-").isdigit():
                return false()
            value = int(item_id)
        try:
            return field_expr(dialect, items, fdef) == comparable(dialect, fdef, value)
        except (ValueError, ArithmeticError):
            return false()
    if dialect == "postgresql":
        member: Any = item_id if shape == "ids" else {"collection": target, "id": item_id}
        return type_coerce(items.c.data, JSONB).contains({fdef.name: [member]})
    each = func.json_each(items.c.data, path_literal(fdef.name)).table_valued("value").alias("ref_each")
    if shape == "ids":
        match = each.c.value == item_id
    else:
        match = func.json_extract(each.c.value, literal_column("'$.id'")) == item_id
    return exists(select(literal_column("1")).select_from(each).where(match))


async def referencing_rows(db: Any, dialect: str, holder: Any, fdef: Any, shape: str, target: str,
                           item_id: str) -> list[Any]:
    """Live rows of collection ``holder`` whose field ``fdef`` references ``target``/``item_id``."""
    stmt = db.select(items).where(items.c.collection_id == holder.id, items.c.deleted_at.is_(None),
                                  _candidates(dialect, holder, fdef, shape, target, item_id))
    rows = await db.all(stmt.order_by(items.c.id))
    return [r for r in rows if holds((r["data"] or {}).get(fdef.name), shape, target, item_id)]

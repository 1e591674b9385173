"""Schema changes that depend on stored items: bus filters inside the schema change's transaction.

- ``fields.type_change``: every live value must convert (``plugins.schema.api.convert``), else
  409 ``CONFLICT`` with ``extensions.nonConvertible`` (``[{ id, value }]``, at most 20) and
  ``count``; when all convert, the converted values are written in the same transaction.
- ``fields.update``: after a type change the converted values must also satisfy the new
  options (same 409); a field becoming ``required`` gets its default written into the items
  that lack a value, or is refused (409, ``extensions.missing``) when it has no default; a
  field becoming ``unique`` is refused while live items share a value (``extensions.duplicates``).
- ``fields.create``: a default is written into the existing items (as SQL's ``ADD COLUMN ...
  DEFAULT`` would); a required field without a default is refused while items exist.
- ``fields.delete``: the key is stripped from every item's data (deleted items included).
- ``collections.delete``: nothing; items are keyed by the collection's id and vanish with it.
- ``schema.data_check`` (config import): marks the collections and fields that hold live items.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from kernel.base.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.items.core.rows import live_values
from plugins.items.query.sql.jsonpath import NUMERIC_TYPES, raw_expr, with_key, without_key
from plugins.items.tables import items
from plugins.schema.api import convert, transaction_schema, validate_value

MAX_REPORTED = 20
MAX_VALUE_ECHO = 200
# Only the type decides convertibility; the new options are checked by the fields.update filter.
UNBOUNDED = {"maxLength": 10_000_000}


class _Shape:
    """A field as a type and options, for ``validate_value``."""

    def __init__(self, record: dict[str, Any]) -> None:
        self.type = record["type"]
        self.options = record.get("options") or {}


async def _context(ctx: Any, payload: dict[str, Any]) -> tuple[SiteDB, Any]:
    snap = await transaction_schema(ctx)
    coll = snap.collection(payload["collection"])
    return SiteDB(ctx.site_id, ctx.conn), coll


def _echo(value: Any) -> Any:
    if isinstance(value, str) and len(value) > MAX_VALUE_ECHO:
        return value[:MAX_VALUE_ECHO] + "..."
    return value if isinstance(value, (str, int, float, bool)) or value is None else str(value)[:MAX_VALUE_ECHO]


def _refuse(message: str, path: list[str], key: str, found: list[Any], count: int) -> ApiError:
    return ApiError(409, "CONFLICT", message, path=path, extensions={key: found, "count": count})


async def on_type_change(event: str, payload: dict[str, Any], ctx: Any) -> None:
    """Veto a type change unless every live value converts; then write the converted values."""
    db, coll = await _context(ctx, payload)
    if coll is None:
        return
    name, old, new = payload["field"], payload["fromType"], payload["toType"]
    relaxed = UNBOUNDED if new in ("string", "slug") else None
    bad: list[dict[str, Any]] = []
    count = 0
    changed: list[tuple[str, dict[str, Any]]] = []
    async for item_id, data in live_values(db, coll):
        value = data.get(name)
        if value is None:
            continue
        try:
            converted = convert(value, old, new, relaxed)
        except (ValueError, ArithmeticError):
            count += 1
            if len(bad) < MAX_REPORTED:
                bad.append({"id": item_id, "value": _echo(value)})
            continue
        if type(converted) is not type(value) or converted != value:
            changed.append((item_id, {**data, name: converted}))
    if count:
        raise _refuse(f"{count} value(s) of '{name}' cannot become {new}", ["type"], "nonConvertible", bad, count)
    for item_id, data in changed:
        await db.execute(db.update(items).where(items.c.collection_id == coll.id, items.c.id == item_id)
                         .values(data=data))


def _key(type_name: str, value: Any) -> Any:
    if type_name in NUMERIC_TYPES:
        return ("n", Decimal(str(value)).normalize())
    return ("v", repr(value))


async def _check_values(db: SiteDB, coll: Any, name: str, shape: _Shape) -> None:
    bad, count = [], 0
    async for item_id, data in live_values(db, coll):
        value = data.get(name)
        if value is None:
            continue
        try:
            validate_value(shape, value)
        except ValueError:
            count += 1
            if len(bad) < MAX_REPORTED:
                bad.append({"id": item_id, "value": _echo(value)})
    if count:
        raise _refuse(f"{count} value(s) of '{name}' do not fit the new options", ["options"], "nonConvertible",
                      bad, count)


async def _check_unique(db: SiteDB, coll: Any, name: str, type_name: str) -> None:
    seen: dict[Any, list[str]] = {}
    async for item_id, data in live_values(db, coll):
        if data.get(name) is not None:
            seen.setdefault(_key(type_name, data[name]), []).append(item_id)
    duplicates = [{"ids": ids[:MAX_REPORTED]} for ids in seen.values() if len(ids) > 1]
    if duplicates:
        raise _refuse(f"Live items share values of '{name}'; it cannot be unique", ["options", "unique"],
                      "duplicates", duplicates[:MAX_REPORTED], len(duplicates))


async def _fill_or_refuse(db: SiteDB, coll: Any, record: dict[str, Any], dialect: str) -> None:
    """Write the default into items lacking a value; without one, refuse a required field."""
    name = record["field"]
    options = record.get("options") or {}
    lacking = [i async for i, data in live_values(db, coll) if data.get(name) is None]
    if not lacking:
        return
    default = options.get("default")
    if default is None:
        if record.get("required"):
            raise _refuse(f"{len(lacking)} item(s) have no '{name}'; give the field a default or fill them first",
                          ["required"], "missing", lacking[:MAX_REPORTED], len(lacking))
        return
    if options.get("unique") and len(lacking) > 1:
        raise _refuse(f"The default of '{name}' would repeat in {len(lacking)} items of a unique field",
                      ["options", "default"], "missing", lacking[:MAX_REPORTED], len(lacking))
    expr = raw_expr(dialect, items.c.data, name)
    await db.execute(db.update(items).where(items.c.collection_id == coll.id, items.c.deleted_at.is_(None),
                                            expr.is_(None)).values(data=with_key(dialect, items.c.data, name, default)))


async def on_field_create(event: str, payload: dict[str, Any], ctx: Any) -> None:
    db, coll = await _context(ctx, payload)
    if coll is not None:
        await _fill_or_refuse(db, coll, payload["after"], ctx.kernel.db.dialect)


async def on_field_update(event: str, payload: dict[str, Any], ctx: Any) -> None:
    """Check the items against the field as it will be (type, options, required, unique)."""
    db, coll = await _context(ctx, payload)
    if coll is None:
        return
    before, after = payload["before"], payload["after"]
    name = after["field"]
    retyped = before["type"] != after["type"]
    if retyped:  # values were converted by on_type_change; now the new options must hold too
        await _check_values(db, coll, name, _Shape(after))
    if after.get("required") and not before.get("required"):
        await _fill_or_refuse(db, coll, after, ctx.kernel.db.dialect)
    unique_now = bool((after.get("options") or {}).get("unique"))
    if unique_now and (retyped or not (before.get("options") or {}).get("unique")):
        await _check_unique(db, coll, name, after["type"])


async def on_field_delete(event: str, payload: dict[str, Any], ctx: Any) -> None:
    """Strip the field's key from every item of the collection."""
    db, coll = await _context(ctx, payload)
    if coll is None:
        return
    dialect = ctx.kernel.db.dialect
    await db.execute(db.update(items).where(items.c.collection_id == coll.id)
                     .values(data=without_key(dialect, items.c.data, payload["field"])))


async def on_data_check(event: str, payload: Any, ctx: Any) -> Any:
    """``schema.data_check``: mark each target (a collection, or one field of it) that holds live
    items with ``hasData: true``, so a config import refuses to drop it without
    ``allowDestructive=true``. Never raises: a veto here would block even allowed imports."""
    if not isinstance(payload, dict) or ctx.conn is None or not ctx.site_id:
        return None
    db = SiteDB(ctx.site_id, ctx.conn)
    for target in payload.get("targets") or []:
        if not isinstance(target, dict) or not isinstance(target.get("collectionId"), str):
            continue
        stmt = db.select(items, items.c.id).where(items.c.collection_id == target["collectionId"],
                                                  items.c.deleted_at.is_(None))
        field = target.get("field")
        if field:
            try:
                stmt = stmt.where(raw_expr(ctx.kernel.db.dialect, items.c.data, field).is_not(None))
            except ValueError:  # not a field name we could have stored
                continue
        if await db.one(stmt.limit(1)) is not None:
            target["hasData"] = True
    return payload

"""Row writes inside a unit of work: insert, update, soft or hard delete, with their events.

Callers (``path``, ``ondelete``, ``dependents``) have checked access and input already;
this module runs the bus filters, enforces ``unique`` and id uniqueness against live items in
the same transaction, writes, and queues the actions. A filter's replacement ``after`` is
checked again like client input, because flows and extensions can put anything there.

Every insert and update takes a ``guard`` (``grants.WriteGuard``, or ``None`` only for writes
the schema orders whatever the caller may do: ``onDelete`` set null): the written row, as
stored after the filters, must still satisfy the caller's permission, checked here in the
write's transaction, so no path that writes items can skip it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, update
from sqlalchemy.exc import IntegrityError

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.tenancy.scope import SiteDB
from plugins.items.core.grants import WriteGuard, Written
from plugins.items.core.records import STRUCTURAL, item_record
from plugins.items.core.validation import SORT_RANGE, STATUS, Draft
from plugins.items.errors import conflict, validation_errors
from plugins.items.query.sql.jsonpath import comparable, field_expr
from plugins.items.tables import items
from plugins.items.write import events


def dialect_of(uow: Any) -> str:
    return uow.kernel.db.dialect


def _user(uow: Any) -> str | None:
    return getattr(uow.principal, "user_id", None)


def content_of(coll: Any, after: Any, prefix: Sequence[str | int]) -> tuple[dict[str, Any], str | None, Any]:
    """Content, status and sort of an ``after`` a filter handed back, checked (400 on bad values)."""
    if not isinstance(after, dict):
        raise validation_errors([(list(prefix), "An event handler returned an item that is not an object")])
    problems = []
    data: dict[str, Any] = {}
    for key, value in after.items():
        if key in STRUCTURAL:
            continue
        fdef = coll.fields.get(key)
        if fdef is None:
            problems.append(([*prefix, str(key)[:80]], f"Unknown field '{str(key)[:80]}' set by an event handler"))
            continue
        try:
            data[key] = None if value is None else fdef.validate(value)
        except (ValueError, RecursionError) as exc:
            problems.append(([*prefix, key], f"'{key}': {exc}"))
    status = after.get("status")
    if not isinstance(status, str) or not STATUS.match(status):
        problems.append(([*prefix, "status"], "'status' set by an event handler is not valid"))
    sort = after.get("sort")
    if sort is not None and (isinstance(sort, bool) or not isinstance(sort, int)
                             or not SORT_RANGE[0] <= sort <= SORT_RANGE[1]):
        problems.append(([*prefix, "sort"], "'sort' set by an event handler is not a 32-bit integer"))
    if problems:
        raise validation_errors(problems)
    return data, status, sort


async def check_unique(uow: Any, coll: Any, data: dict[str, Any], exclude_id: str | None,
                       prefix: Sequence[str | int]) -> None:
    """409 ``CONFLICT`` when a ``unique`` field's value is held by another live item."""
    db, dialect = uow.db, dialect_of(uow)
    for name, value in data.items():
        fdef = coll.fields.get(name)
        if fdef is None or not fdef.unique or value is None:
            continue
        expr = field_expr(dialect, items, fdef)
        stmt = db.select(items, items.c.id).where(
            items.c.collection_id == coll.id, items.c.deleted_at.is_(None), expr == comparable(dialect, fdef, value))
        if exclude_id is not None:
            stmt = stmt.where(items.c.id != exclude_id)
        if await db.scalar(stmt.limit(1)) is not None:
            raise conflict(f"Another item of '{coll.name}' already has this '{name}'", [*prefix, name], field=name)


def _batch_duplicates(coll: Any, rows: list[dict[str, Any]], prefixes: list[list[Any]]) -> None:
    seen_ids: dict[str, int] = {}
    seen: dict[tuple[str, str], int] = {}
    unique = [n for n, f in coll.fields.items() if f.unique]
    for i, row in enumerate(rows):
        if row["id"] in seen_ids:
            raise conflict(f"The id '{row['id']}' appears twice in the request", [*prefixes[i], "id"])
        seen_ids[row["id"]] = i
        for name in unique:
            value = row["data"].get(name)
            if value is None:
                continue
            key = (name, repr(value))
            if key in seen:
                raise conflict(f"Two items of the request have the same '{name}'", [*prefixes[i], name], field=name)
            seen[key] = i


async def insert_drafts(uow: Any, coll: Any, drafts: list[Draft], prefixes: list[list[Any]],
                        default_status: str, *, guard: WriteGuard | None,
                        keys: Sequence[frozenset[str]] = ()) -> list[dict[str, Any]]:
    """Insert checked drafts (filters, then uniqueness, then one insert, then ``guard``'s check
    of the stored rows, ``keys[i]`` being what the caller wrote of draft ``i``); returns the items."""
    now, user = now_utc(), _user(uow)
    listened = events.has_filters(uow, coll.name, "create")
    rows = []
    for draft, prefix in zip(drafts, prefixes, strict=True):
        row = {"collection_id": coll.id, "id": draft.id or uuid7(), "status": draft.status or default_status,
               "sort": draft.sort, "data": draft.data, "created_at": now, "updated_at": now,
               "user_created": user, "user_updated": user, "deleted_at": None}
        if listened:
            data = await events.run_filters(uow, coll.name, "create", events.payload(
                uow, coll.name, row["id"], after=item_record(row)))
            # A handler may have replaced or changed the item: check it like client input.
            row["data"], row["status"], row["sort"] = content_of(coll, data.get("after"), prefix)
        rows.append(row)
    _batch_duplicates(coll, rows, prefixes)
    db = uow.db
    # An id the caller chose may be taken: look, for a 409 at its path. A fresh uuid7 cannot be,
    # so a create without chosen ids skips the query (a round trip inside the write lock); the
    # insert's IntegrityError below stays the backstop either way.
    chosen = [r["id"] for r, d in zip(rows, drafts, strict=True) if d.id]
    taken = await db.all(db.select(items, items.c.id).where(
        items.c.collection_id == coll.id, items.c.id.in_(chosen))) if chosen else []
    if taken:
        index = next(i for i, r in enumerate(rows) if r["id"] == taken[0]["id"])
        raise conflict(f"An item with id '{rows[index]['id']}' already exists", [*prefixes[index], "id"])
    for row, prefix in zip(rows, prefixes, strict=True):
        await check_unique(uow, coll, row["data"], None, prefix)
    try:
        await db.insert(items, rows)
    except IntegrityError as exc:  # a concurrent writer took an id or a unique value first
        raise conflict("The item conflicts with another item written at the same time", prefixes[0]) from exc
    if guard is not None:
        given = list(keys) or [frozenset(d.data) for d in drafts]
        await guard.confirm(db, coll, [Written(r["id"], k, None, tuple(p))
                                       for r, k, p in zip(rows, given, prefixes, strict=True)])
    created = [item_record(r) for r in rows]
    for item in created:
        events.queue_actions(uow, coll.name, "create", events.payload(uow, coll.name, item["id"], after=item))
    return created


# update_row's statement, built once (``new_<column>`` parameters).
_UPDATED = ("data", "status", "sort", "updated_at", "user_updated")
_UPDATE_ROW = SiteDB.template(
    update(items).where(items.c.collection_id == bindparam("coll"), items.c.id == bindparam("item"))
    .values({name: bindparam(f"new_{name}", type_=items.c[name].type) for name in _UPDATED}), items)


async def update_row(uow: Any, coll: Any, row: Any, data: dict[str, Any], *, guard: WriteGuard | None,
                     keys: frozenset[str] = frozenset(), status: str | None = None,
                     sort: Any = ..., prefix: Sequence[str | int] = (),
                     cause: dict[str, Any] | None = None, selected: bool = False) -> dict[str, Any]:
    """Write ``data`` (the whole new content) and structural changes to a live row; returns it.
    ``guard`` checks the row before and after the write (``keys``: what the caller wrote);
    ``selected``: ``row`` was read in this transaction with ``guard.columns``, so the state
    before the write needs no query of its own."""
    before = item_record(row)
    matched = None
    if guard is not None:  # no query without a conditional pair
        matched = guard.matched(row) if selected else (await guard.before(uow.db, coll, [row["id"]])).get(row["id"])
    new = {**dict(row), "data": data, "updated_at": now_utc(), "user_updated": _user(uow)}
    if status is not None:
        new["status"] = status
    if sort is not ...:
        new["sort"] = sort
    if events.has_filters(uow, coll.name, "update"):
        result = await events.run_filters(uow, coll.name, "update", events.payload(
            uow, coll.name, row["id"], before=before, after=item_record(new), cause=cause))
        new["data"], new["status"], new["sort"] = content_of(coll, result.get("after"), prefix)
    await check_unique(uow, coll, new["data"], row["id"], prefix)
    db = uow.db
    try:
        await db.run(_UPDATE_ROW, {"coll": coll.id, "item": row["id"], **{f"new_{name}": new[name] for name in _UPDATED}})
    except IntegrityError as exc:
        raise conflict("The item conflicts with another item written at the same time", list(prefix)) from exc
    if guard is not None:
        await guard.confirm(db, coll, [Written(row["id"], keys, matched or tuple(False for _ in guard.decision.pairs()),
                                               tuple(prefix))])
    after = item_record(new)
    events.queue_actions(uow, coll.name, "update", events.payload(uow, coll.name, row["id"], before=before,
                                                                  after=after, cause=cause))
    return after


async def delete_rows(uow: Any, coll: Any, rows: list[Any], *, hard: bool = False,
                      cause: dict[str, Any] | None = None) -> None:
    """Soft-delete (or, ``hard``, remove) rows of ``coll`` after their delete filters."""
    payloads = []
    for row in rows:
        data = events.payload(uow, coll.name, row["id"], before=item_record(row), cause=cause)
        payloads.append(await events.run_filters(uow, coll.name, "delete", data))
    if not rows:
        return
    db, ids = uow.db, [r["id"] for r in rows]
    where = (items.c.collection_id == coll.id, items.c.id.in_(ids))
    if hard:
        await db.execute(db.delete(items).where(*where))
    else:
        now = now_utc()
        await db.execute(db.update(items).where(*where, items.c.deleted_at.is_(None)).values(
            deleted_at=now, user_updated=_user(uow)))
    for data in payloads:
        events.queue_actions(uow, coll.name, "delete", data)

"""Erasure (the privacy plugin's ``POST /admin/erasure``): find the items a filter matches, live
or soft-deleted, and remove them for good with everything the items plugin keeps of them.

``matching_ids`` compiles the filter like a list does (the same query language, 400 on a bad
filter), but over every row of the collection: a soft-deleted item still holds the values.
``erase`` hard-deletes the rows in the caller's unit of work, running the delete filters (the
search index drops its rows there) and queueing the delete events (ids only, no values), and
removes the items' revisions, named versions (drafts) and pins in the same transaction. On
SQLite the full-text index is then merged (FTS5 ``optimize``): until segments merge, the words
of deleted rows stay in it.
``onDelete`` is not applied: references to an erased id keep the bare id, which is no personal
value. Admin access is required; the caller (privacy) checks it as well.
"""

from __future__ import annotations

import json
import re
from typing import Any

from sqlalchemy import Text, cast, literal, or_

from kernel.base.errors import ApiError
from kernel.policy.privacy import MAX_TERMS, MIN_TERM
from plugins.items.query.sql.compile import compile_filter
from plugins.items.search import sqlite as fts
from plugins.items.tables import HISTORY_TABLES, items
from plugins.items.write import writes

MAX_ERASE = 10_000


def _admin(ctx: Any) -> None:
    if not ctx.principal.is_admin:
        raise ApiError.forbidden("Erasure needs admin access", reason="admin_only")


async def matching_ids(ctx: Any, db: Any, snap: Any, coll: Any, tree: Any) -> list[str]:
    """The ids of every row of ``coll`` (live or soft-deleted) that ``tree`` matches; a filter is
    required (400 ``VALIDATION_FAILED`` without one), at most ``MAX_ERASE`` rows."""
    _admin(ctx)
    if not isinstance(tree, dict) or not tree:
        raise ApiError.validation("'filter' must be a non-empty filter object", path=["filter"])
    cond = compile_filter(tree, snapshot=snap, collection=coll, dialect=ctx.kernel.db.dialect, table=items)
    if cond is None:
        raise ApiError.validation("'filter' must select records", path=["filter"])
    stmt = db.select(items, items.c.id).where(
        items.c.collection_id == literal(coll.id, literal_execute=True), cond).order_by(items.c.id)
    rows = await db.all(stmt.limit(MAX_ERASE + 1))
    if len(rows) > MAX_ERASE:
        raise ApiError.validation(f"The filter matches more than {MAX_ERASE} records; narrow it", path=["filter"])
    return [r["id"] for r in rows]


async def erase(uow: Any, coll: Any, ids: list[str]) -> int:
    """Hard-delete the rows of ``ids`` that still exist and all their history, inside ``uow``;
    returns how many rows were deleted."""
    _admin(uow)
    db = uow.db
    total = 0
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        rows = list(await db.all(db.select(items).where(items.c.collection_id == coll.id, items.c.id.in_(chunk))))
        await writes.delete_rows(uow, coll, rows, hard=True)
        for table in HISTORY_TABLES:
            await db.execute(db.delete(table).where(table.c.collection_id == coll.id, table.c.item_id.in_(chunk)))
        total += len(rows)
    if total and uow.kernel.db.dialect == "sqlite":
        await fts.purge_deleted(uow.conn)
    return total


# Ids (uuid, hex), ISO dates and times, plain numbers: values many records hold by chance.
_NOT_A_VALUE = re.compile(r"^(?:[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}"
                          r"|\d{4}-\d{2}-\d{2}(?:[T ][0-9:.]+(?:Z|[+-]\d{2}:?\d{2})?)?|[+-]?\d+(?:\.\d+)?)$")


def _strings(node: Any, out: set[str]) -> None:
    if isinstance(node, str):
        text = node.strip()
        if len(text) >= MIN_TERM and not _NOT_A_VALUE.match(text):
            out.add(node)
    elif isinstance(node, dict):
        for value in node.values():
            _strings(value, out)
    elif isinstance(node, list):
        for value in node:
            _strings(value, out)


async def subject_values(uow: Any, snap: Any, coll: Any, ids: list[str]) -> list[str]:
    """The text values the items ``ids`` hold (any field, nested too; no ids, dates or numbers,
    nothing shorter than ``MIN_TERM``, no name of a collection or field of the site: the audit
    trail and the event log name those) that no other item of the collection holds as a whole
    value (another item quoting one in a longer text does not make it shared): what the
    erasure looks for outside items. At most ``MAX_TERMS``, from at most ``2 * MAX_TERMS``
    candidates, each checked with one query."""
    _admin(uow)
    db = uow.db
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start:start + 500]
        for row in await db.all(db.select(items, items.c.data).where(items.c.collection_id == coll.id,
                                                                      items.c.id.in_(chunk))):
            _strings(row["data"], found)
    names = {c.lower() for c in snap.collections} | {
        f.lower() for c in snap.collections.values() for f in c.fields}
    candidates = [v for v in found if v.strip().lower() not in names]
    out: list[str] = []
    # Addresses first, then the shortest (names, numbers people quote): a long text is quoted
    # whole less often, and an encrypted field's ciphertext never is.
    for value in sorted(candidates, key=lambda v: ("@" not in v, len(v), v))[:2 * MAX_TERMS]:
        # Held whole (a JSON string of its own) by another item: quoting it in a text is not holding it.
        forms = {json.dumps(value), json.dumps(value, ensure_ascii=False)}
        shared = await db.scalar(db.select(items, items.c.id).where(
            items.c.collection_id == coll.id, items.c.id.not_in(ids),
            or_(*(cast(items.c.data, Text).icontains(f, autoescape=True) for f in forms))).limit(1))
        if shared is None:
            out.append(value)
        if len(out) >= MAX_TERMS:
            break
    return out


async def erase_group_counts(uow: Any, subject: Any) -> int:
    """The erasure target ``groupCounts``: the kept per-value counts (PostgreSQL's grouped
    counts) of values that were the subject's alone. Their items are gone, so each such value's
    delta rows sum to zero; they go rather than wait for the fold."""
    from plugins.items.tables import group_counts

    if not subject.terms:
        return 0
    done = await uow.db.execute(uow.db.delete(group_counts).where(group_counts.c.value.in_(list(subject.terms))))
    return int(done.rowcount or 0)

"""Nested reads: rows shaped by a ``Projection``, and their m2o/o2m relations read in bulk.

``shape_rows(rows, projection)`` builds the items of one page; ``attach(db, dialect, projection,
rows, items)`` then reads each nested relation with **one query per relation per level** (ids
in ``IN`` lists of at most ``CHUNK``), never one per item:

- m2o: the related items whose ids the page holds, under the related read condition and the
  ``deep`` filter; a missing, deleted or invisible one is ``null``.
- o2m: the related items whose foreign key is one of the page's ids, numbered per parent by
  ``row_number() OVER (PARTITION BY fk ORDER BY ...)`` so ``_limit``/``_offset`` apply to each
  parent in the same query.

Every query is built by the site's ``SiteDB`` (``site_id`` and the related collection's id of
this site), so a relation never reaches another site's items.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import func, select

from kernel.db.meta import iso
from plugins.items.core.grants import mask_row, row_fields
from plugins.items.query.sql import sqlexpr
from plugins.items.read.projection import COLUMN_KEYS, Nested, Projection
from plugins.items.tables import items

CHUNK = 500
_TIMES = frozenset({"createdAt", "updatedAt"})


def shape_rows(rows: Sequence[Any], projection: Projection) -> list[dict[str, Any]]:
    """The items of ``rows`` as ``projection`` shows them (relations not yet attached)."""
    structural = [(name, COLUMN_KEYS[name], name in _TIMES) for name in projection.structural]
    content, readable = projection.content, projection.readable
    out = []
    for row in rows:
        item = {name: (iso(row[key]) if timed else row[key]) for name, key, timed in structural}
        if content is None:
            for key, value in (row["data"] or {}).items():
                if (readable is None or key in readable) and key not in item:
                    item[key] = value
        elif content:
            data = row["data"] or {}
            for key in content:
                if key in data:
                    item[key] = data[key]
        if projection.paired is not None:  # the fields granted on this row only
            item = mask_row(item, row_fields(projection.paired, row))
        out.append(item)
    return out


async def attach(db: Any, dialect: str, projection: Projection, rows: Sequence[Any],
                 shaped: list[dict[str, Any]]) -> None:
    """Read ``projection``'s relations for ``rows`` into ``shaped`` (in place), level by level."""
    for rel in projection.relations:
        if rel.kind == "m2o":
            await _many_to_one(db, dialect, rel, rows, shaped)
        else:
            await _one_to_many(db, dialect, rel, shaped)
    if projection.paired is not None:  # a relation shows only on rows that grant its field
        for row, item in zip(rows, shaped, strict=True):
            granted = row_fields(projection.paired, row)
            if granted is not None:
                for rel in projection.relations:
                    if rel.name not in granted:
                        item.pop(rel.name, None)


def reference_key(value: Any) -> str | None:
    """A stored reference as the id it names (integer references spell the id)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return None
    return str(value)


def chunks(values: list[str]) -> Iterator[list[str]]:
    for start in range(0, len(values), CHUNK):
        yield values[start:start + CHUNK]


def _related_rows(db: Any, rel: Nested, *extra: Any) -> Any:
    """The related collection's live rows of this site, visible and matching ``deep``."""
    return db.select(items, *rel.projection.columns, *extra).where(
        items.c.collection_id == rel.related.id, items.c.deleted_at.is_(None), *rel.conditions)


async def _many_to_one(db: Any, dialect: str, rel: Nested, rows: Sequence[Any], shaped: list[dict[str, Any]]) -> None:
    refs = [reference_key((row["data"] or {}).get(rel.name)) for row in rows]
    wanted = sorted({r for r in refs if r is not None and 0 < len(r) <= 64})
    found: list[Any] = []
    for chunk in chunks(wanted):
        found.extend(await db.all(_related_rows(db, rel).where(items.c.id.in_(chunk))))
    related = shape_rows(found, rel.projection)
    await attach(db, dialect, rel.projection, found, related)
    by_id = {item["id"]: item for item in related}
    for item, ref in zip(shaped, refs, strict=True):
        item[rel.name] = by_id.get(ref) if ref is not None else None


async def _one_to_many(db: Any, dialect: str, rel: Nested, shaped: list[dict[str, Any]]) -> None:
    parents = sorted({item["id"] for item in shaped if isinstance(item.get("id"), str)})
    fk = sqlexpr.reference_text(dialect, items, rel.holder)
    found: list[Any] = []
    for chunk in chunks(parents):
        numbered = func.row_number().over(partition_by=fk, order_by=list(rel.order)).label("svc_rn")
        inner = _related_rows(db, rel, fk.label("svc_fk"), numbered).where(fk.in_(chunk)).subquery()
        page = select(inner).where(inner.c.svc_rn > rel.offset, inner.c.svc_rn <= rel.offset + rel.limit)
        found.extend(await db.all(db.scope(page.order_by(inner.c.svc_fk, inner.c.svc_rn))))
    related = shape_rows(found, rel.projection)
    await attach(db, dialect, rel.projection, found, related)
    by_parent: dict[str, list[Any]] = {}
    for row, item in zip(found, related, strict=True):
        by_parent.setdefault(str(row["svc_fk"]), []).append(item["id"] if rel.ids_only else item)
    for item in shaped:
        if isinstance(item.get("id"), str):
            item[rel.name] = by_parent.get(item["id"], [])

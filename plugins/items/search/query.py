"""The search statement, shared by both databases: AND of words, ranked, permission-filtered.

Each query word gets its own sub-select of index rows (``search_sqlite.term_hits`` or
``search_pg.term_hits``: the one place the dialects differ), already restricted to the
caller's readable fields. The union is grouped by item, and an item qualifies when every word
was found in at least one of its readable fields (the words may sit in different fields).
The items table then adds liveness (soft-deleted items vanish) and each collection's read
row filter, through ``rowfilter.row_condition``, the same compiled condition the list uses.

Score: for every (word, field) hit, the field's length norm (``1 / (1 + ln(1 + words))``),
doubled for the collection's title field, summed. It is computed from the item's own rows
only; a corpus statistic such as BM25's IDF would be shared by all tenants of the index and
would let one site learn how common a word is in the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, case, distinct, func, literal, or_, select, true, union_all

from kernel.policy.access import Decision
from plugins.items.core.rowfilter import row_condition
from plugins.items.search import pg as search_pg
from plugins.items.search import sqlite as search_sqlite
from plugins.items.search.index import search
from plugins.items.search.text import Term
from plugins.items.tables import items

TITLE_WEIGHT = 2.0
TITLE_NAMES = ("title", "name", "headline", "subject", "label")


@dataclass(frozen=True)
class Scope:
    """One collection the caller may search: its read decision, the searchable fields it may
    read (never empty), and the field whose matches weigh double (``None``: none)."""

    coll: Any
    decision: Decision
    fields: tuple[str, ...]
    title: str | None = None


def title_field(coll: Any, fields: tuple[str, ...]) -> str | None:
    """The field that names an item: the first of the display template's fields, else a field
    called title/name/..., else the first ``string`` field. Only among ``fields``."""
    template = coll.meta.get("display_template")
    template = template if isinstance(template, str) else ""
    for name in fields:
        if "{{" + name + "}}" in template.replace(" ", ""):
            return name
    for name in TITLE_NAMES:
        if name in fields:
            return name
    return next((n for n in fields if coll.fields[n].type == "string"), None)


def backend(dialect: str) -> Any:
    """The module that matches one word on this database."""
    return search_pg if dialect == "postgresql" else search_sqlite


def _readable_rows(scopes: list[Scope], table: Any) -> Any:
    """Index rows of the scopes' collections and readable fields (on SQLite the FTS5 scope
    tokens already say so; this keeps the relational rule as the single source of truth)."""
    return or_(*(and_(table.c.collection_id == s.coll.id, table.c.field.in_(s.fields)) for s in scopes))


def _visible_items(scopes: list[Scope], dialect: str, snapshot: Any) -> Any:
    """Items of the scopes' collections that their read row filters let through (``snapshot``,
    the site's schema, lets a condition follow relations)."""
    parts = []
    for s in scopes:
        condition = row_condition(s.decision, dialect=dialect, coll=s.coll, table=items, snapshot=snapshot)
        parts.append(and_(items.c.collection_id == s.coll.id, true() if condition is None else condition))
    return or_(*parts)


def matching_items(site_id: str, dialect: str, terms: list[Term], scopes: list[Scope], snapshot: Any) -> Any:
    """``SELECT score, collection_id, id`` of the live, visible items matching every term, not
    yet ordered or paged; every table in it is filtered on ``site_id``. Keys only: sorting
    thousands of hits with their JSON ``data`` alongside cost more than the matching itself;
    ``page_items`` reads the rows of one page."""
    match = backend(dialect)
    selects = [match.term_hits(i, t, scopes, site_id).where(_readable_rows(scopes, search))
               for i, t in enumerate(terms)]
    hits = (selects[0] if len(selects) == 1 else union_all(*selects)).subquery("hits")
    titles = [(and_(hits.c.collection_id == s.coll.id, hits.c.field == s.title), TITLE_WEIGHT)
              for s in scopes if s.title]
    weight = case(*titles, else_=1.0) if titles else literal(1.0)
    ranked = (
        select(hits.c.collection_id, hits.c.item_id, func.sum(hits.c.norm * weight).label("score"))
        .group_by(hits.c.collection_id, hits.c.item_id)
        .having(func.count(distinct(hits.c.term)) == len(terms))
        .subquery("ranked")
    )
    if not any(s.decision.row_filter for s in scopes):
        # Every index row is a live item (deletes remove them in the same transaction), so
        # without row filters the items table is not needed until ``page_items``. Skipping the
        # join also spares PostgreSQL a nested loop it picks while statistics are stale.
        return select(ranked.c.score, ranked.c.collection_id, ranked.c.item_id.label("id"))
    same_item = and_(items.c.site_id == site_id, items.c.collection_id == ranked.c.collection_id,
                     items.c.id == ranked.c.item_id)
    visible = and_(items.c.deleted_at.is_(None), _visible_items(scopes, dialect, snapshot))
    if dialect == "postgresql":
        # LATERAL ... LIMIT 1 (the limit keeps it from being flattened into a plain join): one
        # primary-key probe per hit whatever the statistics say. With stale ones (a bulk
        # import a minute ago) PostgreSQL otherwise rescans the whole collection per hit:
        # measured 2.5 s instead of 20 ms on 10,000 items.
        item = select(items.c.collection_id, items.c.id).where(same_item, visible).limit(1).lateral("item")
        return select(ranked.c.score, item.c.collection_id, item.c.id).select_from(ranked.join(item, true()))
    return (select(ranked.c.score, items.c.collection_id, items.c.id)
            .select_from(ranked.join(items, same_item)).where(visible))


def ordered(stmt: Any) -> Any:
    """Best first; collection and id break ties so pages never overlap."""
    cols = stmt.selected_columns
    return stmt.order_by(cols.score.desc(), cols.collection_id, cols.id)


def page_items(keys: list[tuple[str, str]], scopes: list[Scope], dialect: str, snapshot: Any) -> Any:
    """``SELECT`` the item rows of one page of keys (``(collection_id, id)``), checked again for
    liveness and the row filters: an item changed since the page was ranked is left out."""
    wanted = or_(*(and_(items.c.collection_id == c, items.c.id == i) for c, i in keys))
    return select(items).where(wanted, items.c.deleted_at.is_(None), _visible_items(scopes, dialect, snapshot))

"""Full-text search over items: the service behind ``GET /search`` (no Falcon here).

``search_items(ctx, SearchQuery(q, collection, limit, offset))`` answers one page of hits the
caller may see, best first. Permissions decide everything that is searched: only collections
the caller may read, only the ``string``/``text`` fields it may read (a word found only in a
hidden field neither matches nor shows in a highlight), only rows its read row filter lets
through, and each item masked like ``GET /items``. Words are AND-ed, the last one is a prefix,
diacritics are ignored (``search_text``); the statement is ``search_query``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from kernel.base.errors import ApiError
from plugins.items.core.context import reading
from plugins.items.core.grants import fields_by_row, mask_row
from plugins.items.core.guard import decide, require
from plugins.items.core.reveal import reveal
from plugins.items.errors import collection_not_found
from plugins.items.read.listing import DEFAULT_LIMIT, shape
from plugins.items.search.index import searchable_fields
from plugins.items.search.query import Scope, matching_items, ordered, page_items, title_field
from plugins.items.search.text import Term, highlight, query_terms
from plugins.items.tables import items
from plugins.schema.api import get_schema

MAX_Q = 200
Q_PATH = ["query", "q"]


@dataclass(frozen=True)
class SearchQuery:
    """A search request, parsed: ``q`` as given, ``collection`` (``None``: all), the page."""

    q: Any
    collection: str | None = None
    limit: int = DEFAULT_LIMIT
    offset: int = 0


def checked_q(q: Any) -> str:
    """``q`` itself, or 400 ``VALIDATION_FAILED`` at ``["query", "q"]`` (missing, blank, too long)."""
    if not isinstance(q, str) or not q.strip():
        raise ApiError.validation("'q' is required: the words to search for", path=Q_PATH)
    if len(q) > MAX_Q:
        raise ApiError.validation(f"'q' takes at most {MAX_Q} characters", path=Q_PATH)
    return q


async def search_scopes(ctx: Any, snap: Any, collection: str | None) -> list[Scope]:
    """The collections to search, each with the searchable fields the caller may read.

    A named collection needs read permission (403 before 404, as for ``/items``: nobody
    learns which collections exist without it); without a name, unreadable ones are skipped.
    """
    if collection is not None:
        decision = await require(ctx, collection, "read")
        coll = snap.collection(collection)
        if coll is None:
            raise collection_not_found(collection)
        candidates = [(coll, decision)]
    else:
        candidates = []
        for name in sorted(snap.collections):
            decision = await decide(ctx, name, "read")
            if decision.allowed:
                candidates.append((snap.collections[name], decision))
    scopes = []
    for coll, decision in candidates:
        # Only fields granted on every row the caller sees: a match in a field hidden on some
        # rows (rules granting different fields under different conditions) would reveal it.
        fields = tuple(f for f in searchable_fields(coll) if decision.everywhere(f))
        if fields:
            scopes.append(Scope(coll, decision, fields, title_field(coll, fields)))
    return scopes


def hit(scope: Scope, row: Any, score: float, terms: list[Term],
        granted: Any = None) -> dict[str, Any]:
    """One result: the item as the caller may read it (``granted``: the fields granted on this
    row, where they depend on it), and a snippet per readable field that matched (HTML-escaped
    text with ``<mark>`` around the matching words)."""
    data = row["data"] or {}
    highlights = {}
    for name in scope.fields:
        value = data.get(name)
        snippet = highlight(value, terms) if isinstance(value, str) else None
        if snippet is not None:
            highlights[name] = snippet
    return {"collection": scope.coll.name, "id": row["id"], "score": round(float(score), 4),
            "item": mask_row(shape(row, scope.decision, None), granted) if scope.decision.paired
            else shape(row, scope.decision, None), "highlights": highlights}


async def search_items(ctx: Any, query: SearchQuery, *, uow: Any = None) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """``(hits, { total, limit, offset })`` for one page of ``query`` (``uow``: read in that
    transaction, its uncommitted writes included)."""
    site_id = ctx.require_site()
    q = checked_q(query.q)
    snap = await get_schema(ctx.kernel, site_id)
    scopes = await search_scopes(ctx, snap, query.collection)
    terms = query_terms(q)
    meta = {"total": 0, "limit": query.limit, "offset": query.offset}
    if not terms or not scopes:  # only punctuation, or nothing the caller may read
        return [], meta
    dialect = ctx.kernel.db.dialect
    stmt = matching_items(site_id, dialect, terms, scopes, snap)
    async with reading(ctx, uow) as db:
        stmt = db.scope(stmt)  # site_id is in every part of it already (search_query)
        # The total rides on the page as a window count (one pass over the hits, not two);
        # only a page past the end needs its own count.
        page = ordered(stmt.add_columns(func.count().over().label("search_total")))
        ranked = await db.all(page.limit(query.limit).offset(query.offset))
        if ranked:
            meta["total"] = int(ranked[0]["search_total"])
        elif query.offset:
            meta["total"] = int(await db.scalar(db.scope(select(func.count()).select_from(stmt.subquery()))) or 0)
        keys = [(r["collection_id"], r["id"]) for r in ranked]
        rows = await db.all(db.scope(page_items(keys, scopes, dialect, snap), items)) if keys else []
        by_id = {s.coll.id: s for s in scopes}
        granted: dict[tuple[str, str], Any] = {}
        for scope in scopes:  # rules granting different fields on different rows
            ids = [r["id"] for r in rows if r["collection_id"] == scope.coll.id]
            if scope.decision.paired and ids:
                found = await fields_by_row(db, scope.coll, scope.decision, ids, dialect=dialect, snapshot=snap)
                granted.update({(scope.coll.id, i): found.get(i, frozenset()) for i in ids})
    by_key = {(r["collection_id"], r["id"]): r for r in rows}
    hits = []
    for r in ranked:
        key = (r["collection_id"], r["id"])
        row = by_key.get(key)
        if row is not None:  # None: deleted or hidden since it was ranked (milliseconds ago)
            hits.append(hit(by_id[r["collection_id"]], row, r["score"], terms, granted.get(key, frozenset())))
    for scope in scopes:  # the read hook per collection (core/reveal.py); highlights never hold sensitive fields
        found = [h["item"] for h in hits if h["collection"] == scope.coll.name]
        await reveal(ctx, snap, scope.coll.name, found, "search", uow=uow)
    return hits, meta

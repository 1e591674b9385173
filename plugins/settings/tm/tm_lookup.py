"""The fuzzy lookup of the translation memory: one ``tm_index.TMIndex`` per (site, language
pair) in the bounded ``tm_index`` site cache, kept up to date in place.

A pair's index is built on its first lookup in a worker. ``tm.changed`` (every worker, through
the bus) removes deleted ids at once and queues upserted ones; the next lookup reads those. After
the cache's TTL (workers without Redis) one count query checks that nothing else moved; entries
created meanwhile are read by their ``created_at``, and a count that still differs rebuilds.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

from sqlalchemy import func

from kernel import SiteCacheSpec
from kernel.http.media import reject_unknown
from kernel.tenancy.scope import SiteDB
from plugins.settings.tables import tm_entries
from plugins.settings.tm import tm
from plugins.settings.tm.tm import entry_record
from plugins.settings.tm.tm_index import TMIndex

INDEX_CACHE = SiteCacheSpec("tm_index", max_entries=16, ttl=10.0,
                            doc="Translation-memory lookup indexes, one per (site, language pair).")
SKEW = dt.timedelta(seconds=5)


def _pair(db: SiteDB, source_lang: str, target_lang: str) -> Any:
    return db.select(tm_entries, tm_entries.c.id, tm_entries.c.source_text, tm_entries.c.created_at).where(
        tm_entries.c.source_lang == source_lang, tm_entries.c.target_lang == target_lang)


async def _fingerprint(db: SiteDB, source_lang: str, target_lang: str) -> tuple[int, Any]:
    row = await db.one(db.select(tm_entries, func.count().label("n"), func.max(tm_entries.c.created_at).label("m"))
                       .where(tm_entries.c.source_lang == source_lang, tm_entries.c.target_lang == target_lang))
    return (row["n"], row["m"]) if row is not None else (0, None)


async def _build(kernel: Any, site_id: str, source_lang: str, target_lang: str) -> TMIndex:
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        rows = await db.all(_pair(db, source_lang, target_lang))
    index = TMIndex.build([(r["id"], r["source_text"]) for r in rows])
    index.watermark = max((r["created_at"] for r in rows), default=None)
    index.lock = asyncio.Lock()  # type: ignore[attr-defined]
    return index


async def _refresh(kernel: Any, site_id: str, source_lang: str, target_lang: str, index: TMIndex) -> TMIndex:
    """Bring ``index`` up to date in place: the ids the bus named, then what was created since
    its watermark; a count that still differs (deletes nobody announced) rebuilds it."""
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        pending, index.pending = index.pending, set()
        index.dirty = False
        if pending:
            found = {r["id"]: r for r in await db.all(_pair(db, source_lang, target_lang)
                                                       .where(tm_entries.c.id.in_(list(pending))))}
            for entry_id in pending:
                if entry_id in found:
                    index.upsert(entry_id, found[entry_id]["source_text"])
                else:
                    index.remove(entry_id)
        count, newest = await _fingerprint(db, source_lang, target_lang)
        if count > len(index) and index.watermark is not None:
            # Created by a worker this one did not hear (no Redis): read the ids created since the
            # watermark (less a margin for clock skew and late commits), then the missing texts.
            recent = await db.all(db.select(tm_entries, tm_entries.c.id).where(
                tm_entries.c.source_lang == source_lang, tm_entries.c.target_lang == target_lang,
                tm_entries.c.created_at >= index.watermark - SKEW))
            missing = [r["id"] for r in recent if r["id"] not in index.slot_of]
            for start in range(0, len(missing), 500):
                for r in await db.all(_pair(db, source_lang, target_lang)
                                      .where(tm_entries.c.id.in_(missing[start:start + 500]))):
                    index.upsert(r["id"], r["source_text"])
        if newest is not None and (index.watermark is None or newest > index.watermark):
            index.watermark = newest
    if count != len(index):
        fresh = await _build(kernel, site_id, source_lang, target_lang)
        fresh.lock = index.lock  # type: ignore[attr-defined]  # the lock its callers hold
        index.__dict__.update(fresh.__dict__)
    return index


async def index_for(kernel: Any, site_id: str, source_lang: str, target_lang: str) -> TMIndex:
    """The pair's index: built on first use, revalidated after the TTL, refreshed when dirty."""
    cache = kernel.site_caches[INDEX_CACHE.name]

    async def load(stale: TMIndex | None) -> TMIndex:
        if stale is None:
            return await _build(kernel, site_id, source_lang, target_lang)
        async with stale.lock:  # type: ignore[attr-defined]
            return await _refresh(kernel, site_id, source_lang, target_lang, stale)

    index = await cache.get_or_load(site_id, (source_lang, target_lang), load)
    if index.dirty:
        async with index.lock:  # type: ignore[attr-defined]
            if index.dirty:
                await _refresh(kernel, site_id, source_lang, target_lang, index)
    return index


def on_changed(kernel: Any) -> Any:
    """The bus handler of ``tm.changed``: apply deletes, queue upserts, mark the index dirty."""

    def handler(event: str, payload: Any, ctx: Any) -> None:
        if not isinstance(payload, dict) or not isinstance(payload.get("siteId"), str):
            return
        index = kernel.site_caches[INDEX_CACHE.name].peek(
            payload["siteId"], (payload.get("sourceLang"), payload.get("targetLang")))
        if index is None:
            return
        for entry_id in payload.get("deleted") or ():
            index.remove(entry_id)
        index.pending.update(payload.get("upserted") or ())
        index.dirty = True

    return handler


async def best_match(kernel: Any, site_id: str, query: str, source_lang: str, target_lang: str,
                     threshold: float) -> dict[str, Any] | None:
    """The best entry for ``query`` scoring at least ``threshold``, with its ``score``."""
    index = await index_for(kernel, site_id, source_lang, target_lang)
    found = index.best(query, threshold)
    if found is None:
        return None
    entry_id, score = found
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(tm_entries).where(tm_entries.c.id == entry_id))
    return None if row is None else {**entry_record(row), "score": score}


async def lookup(ctx: Any, body: dict[str, Any]) -> dict[str, Any] | None:
    reject_unknown(body, {"query", "sourceLang", "targetLang", "threshold"})
    query = tm.text(body.get("query"), "query")
    source_lang = tm.language(body.get("sourceLang"), "sourceLang")
    target_lang = tm.language(body.get("targetLang"), "targetLang")
    threshold = tm.threshold_of(body.get("threshold"))
    return await best_match(ctx.kernel, ctx.site_id, query, source_lang, target_lang, threshold)

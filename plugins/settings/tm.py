"""Translation memory entries: list, upsert, change, delete, and the fuzzy lookup.

An entry is unique per (site, source language, target language, source text); ``POST /tm``
upserts on that. Lookups go through ``tm_index.TMIndex``, one per (site, language pair) in the
bounded ``tm_index`` site cache. Writes announce ``tm.changed`` (``{ siteId, sourceLang,
targetLang, upserted, deleted }``, ids only); every worker applies it to its index in place.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
from typing import Any

from sqlalchemy import func

from kernel import ApiError, SiteCacheSpec
from kernel.db.meta import iso, now_utc
from kernel.ids import uuid7
from kernel.tenancy.scope import SiteDB
from plugins.settings.site_fields import LANGUAGE
from plugins.settings.tables import tm_entries
from plugins.settings.tm_index import TMIndex

CHANGED_EVENT = "tm.changed"
INDEX_CACHE = SiteCacheSpec("tm_index", max_entries=16, ttl=10.0,
                            doc="Translation-memory lookup indexes, one per (site, language pair).")
DEFAULT_THRESHOLD = 75.0
TEXT_MAX = 10_000
DEFAULT_SOURCE = "user"
FIELDS = frozenset({"sourceLang", "targetLang", "sourceText", "targetText", "quality", "context", "source"})
EDITABLE = frozenset({"targetText", "quality", "context", "source"})
SKEW = dt.timedelta(seconds=5)


def entry_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "sourceLang": row["source_lang"], "targetLang": row["target_lang"],
            "sourceText": row["source_text"], "targetText": row["target_text"], "quality": row["quality"],
            "context": row["context"], "source": row["source"], "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


def not_found() -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", "No such translation-memory entry")


def source_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def language(value: Any, name: str) -> str:
    if not isinstance(value, str) or not LANGUAGE.match(value):
        raise ApiError.validation(f"'{name}' must be a language tag such as en or pt-BR", path=[name])
    return value


def text(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > TEXT_MAX:
        raise ApiError.validation(f"'{name}' must be a non-empty string of at most {TEXT_MAX} characters",
                                  path=[name])
    return value


def _optional(body: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "quality" in body:
        quality = body["quality"]
        if quality is not None and (isinstance(quality, bool) or not isinstance(quality, (int, float))
                                    or not 0 <= quality <= 100):
            raise ApiError.validation("'quality' must be a number from 0 to 100", path=["quality"])
        out["quality"] = quality
    if "context" in body:
        context = body["context"]
        if context is not None and (not isinstance(context, str) or len(context) > 500):
            raise ApiError.validation("'context' must be a string of at most 500 characters", path=["context"])
        out["context"] = context
    if "source" in body:
        source = body["source"]
        if not isinstance(source, str) or not source.strip() or len(source) > 64:
            raise ApiError.validation("'source' must be a non-empty string of at most 64 characters",
                                      path=["source"])
        out["source"] = source
    return out


def threshold_of(value: Any) -> float:
    if value is None:
        return DEFAULT_THRESHOLD
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        raise ApiError.validation("'threshold' must be a number from 0 to 100", path=["threshold"])
    return float(value)


# ---------------------------------------------------------------------------- entries


async def list_entries(ctx: Any, filters: dict[str, Any], limit: int, offset: int) -> tuple[list[Any], Any]:
    async with ctx.reader() as db:
        where = []
        if filters.get("source"):
            where.append(tm_entries.c.source_lang == filters["source"])
        if filters.get("target"):
            where.append(tm_entries.c.target_lang == filters["target"])
        if filters.get("entrySource"):
            where.append(tm_entries.c.source == filters["entrySource"])
        rows = await db.all(db.select(tm_entries).where(*where)
                            .order_by(tm_entries.c.updated_at.desc(), tm_entries.c.id).limit(limit).offset(offset))
        total = await db.scalar(db.select(tm_entries, func.count()).where(*where))
    return [entry_record(r) for r in rows], {"total": total, "limit": limit, "offset": offset}


async def upsert_in(uow: Any, values: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Create or update the entry of (languages, source text) in ``uow``; ``(record, created)``."""
    db, now = uow.db, now_utc()
    key = source_hash(values["source_text"])
    row = await db.one(db.select(tm_entries).where(tm_entries.c.source_lang == values["source_lang"],
                                                   tm_entries.c.target_lang == values["target_lang"],
                                                   tm_entries.c.source_hash == key))
    if row is None:
        row = {"id": uuid7(), "source_hash": key, "quality": None, "context": None, "source": DEFAULT_SOURCE,
               **values, "created_at": now, "updated_at": now}
        await db.insert(tm_entries, row)
        created = True
    else:
        changes = {k: v for k, v in values.items() if k not in ("source_lang", "target_lang", "source_text")}
        await db.execute(db.update(tm_entries).where(tm_entries.c.id == row["id"]).values(**changes, updated_at=now))
        row = {**row, **changes, "updated_at": now}
        created = False
    _announce(uow, row["source_lang"], row["target_lang"], upserted=[row["id"]])
    return entry_record(row), created


async def upsert(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    unknown = sorted(set(body) - FIELDS)
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
    values = {"source_lang": language(body.get("sourceLang"), "sourceLang"),
              "target_lang": language(body.get("targetLang"), "targetLang"),
              "source_text": text(body.get("sourceText"), "sourceText"),
              "target_text": text(body.get("targetText"), "targetText"), **_optional(body)}
    async with ctx.unit_of_work() as uow:
        return await upsert_in(uow, values)


async def update(ctx: Any, entry_id: str, body: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - EDITABLE)
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}' (languages and source text cannot change)",
                                  path=[unknown[0]])
    changes = _optional(body)
    if "targetText" in body:
        changes["target_text"] = text(body["targetText"], "targetText")
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await db.one(db.select(tm_entries).where(tm_entries.c.id == entry_id))
        if row is None:
            raise not_found()
        if changes:
            await db.execute(db.update(tm_entries).where(tm_entries.c.id == entry_id)
                             .values(**changes, updated_at=now_utc()))
            row = await db.one(db.select(tm_entries).where(tm_entries.c.id == entry_id))
    return entry_record(row)


async def delete(ctx: Any, entry_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await db.one(db.select(tm_entries).where(tm_entries.c.id == entry_id))
        if row is None:
            raise not_found()
        await db.execute(db.delete(tm_entries).where(tm_entries.c.id == entry_id))
        _announce(uow, row["source_lang"], row["target_lang"], deleted=[entry_id])


def _announce(uow: Any, source_lang: str, target_lang: str, *, upserted: list[str] = (),  # type: ignore[assignment]
              deleted: list[str] = ()) -> None:  # type: ignore[assignment]
    uow.action(CHANGED_EVENT, {"siteId": uow.site_id, "sourceLang": source_lang, "targetLang": target_lang,
                               "upserted": list(upserted), "deleted": list(deleted)})


# ---------------------------------------------------------------------------- the lookup index


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
    unknown = sorted(set(body) - {"query", "sourceLang", "targetLang", "threshold"})
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
    query = text(body.get("query"), "query")
    source_lang = language(body.get("sourceLang"), "sourceLang")
    target_lang = language(body.get("targetLang"), "targetLang")
    threshold = threshold_of(body.get("threshold"))
    return await best_match(ctx.kernel, ctx.site_id, query, source_lang, target_lang, threshold)

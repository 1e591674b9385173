"""Translation memory entries: list, upsert, change, delete, and the lookup body.

An entry is unique per (site, source language, target language, source text); ``POST /tm``
upserts on that. Writes announce ``tm.changed`` (``{ siteId, sourceLang, targetLang, upserted,
deleted }``, ids only); ``tm_lookup`` keeps every worker's lookup indexes up to date with it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlalchemy import func, or_

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.settings.site.site_fields import LANGUAGE
from plugins.settings.tables import tm_entries

CHANGED_EVENT = "tm.changed"
DEFAULT_THRESHOLD = 75.0
TEXT_MAX = 10_000
DEFAULT_SOURCE = "user"
FIELDS = frozenset({"sourceLang", "targetLang", "sourceText", "targetText", "quality", "context", "source"})
EDITABLE = frozenset({"targetText", "quality", "context", "source"})


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
    """A language tag in its canonical case (``EN_us`` is ``en-US``, ``zh-hant`` is ``zh-Hant``),
    so one pair is one memory however a client spells it."""
    if not isinstance(value, str) or not LANGUAGE.match(value):
        raise ApiError.validation(f"'{name}' must be a language tag such as en or pt-BR", path=[name])
    first, *rest = value.replace("_", "-").split("-")
    parts = [first.lower()]
    for part in rest:
        if len(part) == 4 and part.isalpha():
            parts.append(part.title())  # script
        elif (len(part) == 2 and part.isalpha()) or (len(part) == 3 and part.isdigit()):
            parts.append(part.upper())  # region
        else:
            parts.append(part.lower())
    return "-".join(parts)


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
        if filters.get("q"):  # -- studio41: words in the source or the target text, any case
            word = filters["q"].lower()
            where.append(or_(func.lower(tm_entries.c.source_text).contains(word, autoescape=True),
                             func.lower(tm_entries.c.target_text).contains(word, autoescape=True)))
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
    reject_unknown(body, FIELDS)
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

"""The site glossary (``/tm/glossary``): terms always translated the same way per language pair.

A term is unique per (site, pair), compared case-insensitively. The translate pipeline uses it
after the memory: a text that is exactly a term is answered from the glossary; otherwise the
terms found in the text are put in their translated form before the text goes to the provider.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.settings.tables import glossary
from plugins.settings.tm.tm import language
from plugins.settings.tm.tm_index import normalise

FIELDS = frozenset({"sourceLang", "targetLang", "term", "translation"})


def term_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "sourceLang": row["source_lang"], "targetLang": row["target_lang"],
            "term": row["term"], "translation": row["translation"], "createdAt": iso(row["created_at"])}


def _string(value: Any, name: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit:
        raise ApiError.validation(f"'{name}' must be a non-empty string of at most {limit} characters", path=[name])
    return value.strip()


async def list_terms(ctx: Any, source: str | None, target: str | None, limit: int, offset: int) -> tuple[list, int]:
    async with ctx.reader() as db:
        where = []
        if source:
            where.append(glossary.c.source_lang == source)
        if target:
            where.append(glossary.c.target_lang == target)
        rows = await db.all(db.select(glossary).where(*where).order_by(glossary.c.term_key).limit(limit)
                            .offset(offset))
        total = await db.scalar(db.select(glossary, func.count()).where(*where))
    return [term_record(r) for r in rows], total


async def put_term(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Create the term, or change the translation of the pair's existing one; ``(record, created)``."""
    reject_unknown(body, FIELDS)
    source = language(body.get("sourceLang"), "sourceLang")
    target = language(body.get("targetLang"), "targetLang")
    term = _string(body.get("term"), "term", 200)
    translation = _string(body.get("translation"), "translation", 500)
    key = normalise(term)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        row = await db.one(db.select(glossary).where(glossary.c.source_lang == source,
                                                     glossary.c.target_lang == target, glossary.c.term_key == key))
        if row is not None:
            await db.execute(db.update(glossary).where(glossary.c.id == row["id"]).values(translation=translation))
            return term_record({**row, "translation": translation}), False
        row = {"id": uuid7(), "source_lang": source, "target_lang": target, "term": term, "term_key": key,
               "translation": translation, "created_at": now_utc()}
        await db.insert(glossary, row)
    return term_record(row), True


async def delete_term(ctx: Any, term_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        db = uow.db
        result = await db.execute(db.delete(glossary).where(glossary.c.id == term_id))
        if result.rowcount == 0:
            raise ApiError(404, "RECORD_NOT_FOUND", "No such glossary term")


async def terms_for(kernel: Any, site_id: str, source: str, target: str) -> list[dict[str, Any]]:
    from kernel.tenancy.scope import SiteDB

    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        rows = await db.all(db.select(glossary).where(glossary.c.source_lang == source,
                                                      glossary.c.target_lang == target))
    return [term_record(r) for r in rows]


def occurrences(text: str, terms: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The terms found in ``text`` as whole words (case-insensitive), longest first."""
    found = []
    for term in sorted(terms, key=lambda t: -len(t["term"])):
        if re.search(rf"(?<!\w){re.escape(term['term'])}(?!\w)", text, re.I):
            found.append(term)
    return found


def substitute(text: str, terms: list[dict[str, Any]]) -> str:
    """``text`` with each found term replaced by its translation (longest terms first)."""
    for term in terms:
        text = re.sub(rf"(?<!\w){re.escape(term['term'])}(?!\w)", lambda _m, t=term: t["translation"], text,
                      flags=re.I)
    return text

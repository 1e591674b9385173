"""Draft and locale reads: ``X-Svc-Draft: true`` and ``X-Svc-Locale: <code>`` on item reads.

Read options are explicit: ``service``'s (and ``api``'s) reads take ``options`` (a
``ReadOptions``), and ``overlay_read`` then answers, for each item, the content of its version
``draft`` when it has one (else main), and the translations of the locale (``locale``).
``ReadOptionsMiddleware`` parses the two headers of ``GET /items/...`` (400 when malformed) and
keeps them on the request (``options_of(req)``), where the item routes take them; GraphQL and
delivery, which have no such headers, pass ``draft=True`` / ``locale="de"`` to ``items.api``.
Without options nothing is queried: ``overlay_read`` returns at once. Structural keys
(``status``, ``updatedAt``...) always come from main; masks and ``?fields=`` apply to the
overlaid values too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.core.grants import fields_by_row
from plugins.items.read import locale as translations
from plugins.items.tables import items as items_table
from plugins.items.tables import versions
from plugins.schema.api import get_schema

DRAFT_KEY = "draft"
ITEM_READS = "/api/v1/items/"
TRUE, FALSE = frozenset({"true", "1", "yes"}), frozenset({"false", "0", "no", ""})


@dataclass(frozen=True)
class ReadOptions:
    """How item reads are answered: ``draft`` (the version ``draft`` where an item has one)
    and ``locale`` (a normalised language code: its translations)."""

    draft: bool = False
    locale: str | None = None


def read_options(draft: bool = False, locale: str | None = None) -> ReadOptions | None:
    """The ``ReadOptions`` of server code's parameters (400 for a malformed ``locale``), ``None``
    when they ask for nothing."""
    code = translations.parse_locale(locale, path=["locale"]) if locale is not None else None
    if not isinstance(draft, bool):
        raise ApiError.validation("'draft' must be true or false", path=["draft"])
    return ReadOptions(draft, code) if draft or code else None


def parse_headers(draft: str | None, locale: str | None) -> ReadOptions | None:
    """The options of ``X-Svc-Draft`` and ``X-Svc-Locale`` (400 when malformed), ``None``
    when neither asks for anything."""
    wants_draft = False
    if draft is not None:
        value = draft.strip().lower()
        if value not in TRUE | FALSE:
            raise ApiError.validation("X-Svc-Draft must be true or false", path=["headers", "X-Svc-Draft"])
        wants_draft = value in TRUE
    code = translations.parse_locale(locale)
    return ReadOptions(wants_draft, code) if wants_draft or code else None


class ReadOptionsMiddleware:
    """Parses the read options of item reads (``GET /items/...``: 400 when malformed) and keeps
    them on the request for the routes (``options_of``)."""

    async def process_request(self, req: Any, resp: Any) -> None:
        if req.method == "GET" and req.path.startswith(ITEM_READS):
            req.context.svc_read_options = parse_headers(req.get_header("X-Svc-Draft"),
                                                         req.get_header("X-Svc-Locale"))


def options_of(req: Any) -> ReadOptions | None:
    """The read options the middleware parsed from the request's headers."""
    return getattr(req.context, "svc_read_options", None)


async def _drafts(db: Any, coll: Any, ids: list[str]) -> dict[str, dict[str, Any]]:
    rows = await db.all(db.select(versions, versions.c.item_id, versions.c.data).where(
        versions.c.collection_id == coll.id, versions.c.key == DRAFT_KEY, versions.c.item_id.in_(ids)))
    return {r["item_id"]: dict(r["data"] or {}) for r in rows}


async def _stored_translations(db: Any, coll: Any, ids: list[str]) -> dict[str, Any]:
    rows = await db.all(db.select(items_table, items_table.c.id, items_table.c.data).where(
        items_table.c.collection_id == coll.id, items_table.c.id.in_(ids)))
    return {r["id"]: (r["data"] or {}).get(translations.FIELD) for r in rows}


async def overlay_read(ctx: Any, db: Any, coll: Any, page: list[dict[str, Any]], read: Any,
                       fields: tuple[str, ...] | None, opts: ReadOptions | None) -> list[dict[str, Any]]:
    """``page`` (items already masked and projected) as the read options ``opts`` want it for
    the caller of ``ctx``, reading versions, translations and, where read grants depend on the
    row, the fields granted on each, on ``db`` (the read's connection or transaction)."""
    if opts is None or not page:
        return page
    ids = [i["id"] for i in page if isinstance(i.get("id"), str)]
    if not ids:
        return page  # a singleton never written: nothing stored to overlay

    granted: dict[str, Any] = {}

    def visible_on(item_id: Any) -> Any:
        here = granted.get(item_id, frozenset()) if read.paired else None  # fields granted on this row

        def visible(name: str) -> bool:
            return (name in coll.fields and read.field_allowed(name) and (fields is None or name in fields)
                    and (here is None or name in here))
        return visible

    localising = opts.locale is not None and translations.translations_field(coll) is not None \
        and read.field_allowed(translations.FIELD)
    drafts = await _drafts(db, coll, ids) if opts.draft else {}
    stored = await _stored_translations(db, coll, ids) if localising else {}
    if read.paired:
        granted = await fields_by_row(db, coll, read, ids, dialect=ctx.kernel.db.dialect,
                                      snapshot=await get_schema(ctx.kernel, ctx.site_id))
    out = []
    for item in page:
        new = dict(item)
        draft = drafts.get(item.get("id"))
        visible = visible_on(item.get("id"))
        for name, value in (draft or {}).items():
            if visible(name):
                new[name] = value
        here = granted.get(item.get("id"), frozenset()) if read.paired else None
        if localising and opts.locale and (here is None or translations.FIELD in here):
            # The draft's own translations when it has them, else what main stores.
            in_draft = draft is not None and translations.FIELD in draft
            value = draft[translations.FIELD] if in_draft and draft else stored.get(item.get("id"))
            translations.localise(coll, new, value, opts.locale, visible)
        out.append(new)
    return out


async def overlay_one(ctx: Any, db: Any, coll: Any, item: dict[str, Any], read: Any,
                      fields: tuple[str, ...] | None, opts: ReadOptions | None) -> dict[str, Any]:
    """One item as the read options want it (``overlay_read`` of a one-item page)."""
    return (await overlay_read(ctx, db, coll, [item], read, fields, opts))[0]

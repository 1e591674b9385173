"""What delivery answers, read as the site's public role through the items API (one data path).

A page is the item of the ``pages`` collection whose ``slug`` matches. Its ``sections`` field is
hydrated by its kind:

- a ``json`` list: a section that names ``collection`` and ``item`` (an id) gets ``item``
  replaced by that item as the public role reads it; other sections pass through unchanged;
- an ``m2a`` relation (``[{collection, id}]``): each entry becomes ``{collection, item}``;
- an ``m2m`` relation (a list of ids): each id becomes the related item;
- an ``o2m`` alias or an ``m2o``: the items API nests it (``fields=*,sections.*``), with the
  public role's permissions on the related collection (none: the page without ``sections``).

Referenced items are fetched with one list query per collection. A reference the public role
cannot read (missing, deleted, draft, filtered by a rule, collection not readable) is left out,
so nothing hidden leaks, not even its id.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from kernel import ApiError
from plugins.items import api as items
from plugins.schema.api import get_schema

PAGES = "pages"
SLUG = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.~-]{0,199}$")
MAX_SECTIONS = 100
LLMS_MAX_PAGES = 2000


def check_slug(slug: str) -> str:
    """A slug is 1 to 200 URL-safe characters, not starting with a dot or dash (400 otherwise)."""
    if not isinstance(slug, str) or not SLUG.match(slug) or ".." in slug:
        raise _bad_slug()
    return slug


def _bad_slug() -> ApiError:
    error = ApiError.validation("A page slug is 1 to 200 of A-Z a-z 0-9 _ . ~ -, starting with a letter or digit",
                                path=["slug"])
    error.headers = {"Cache-Control": "no-store"}
    return error


def not_found(what: str) -> ApiError:
    """404 ``NOT_FOUND`` that no cache keeps (a page may appear any moment)."""
    return ApiError(404, "NOT_FOUND", f"No public {what}", headers={"Cache-Control": "no-store"})


async def page(ctx: Any, slug: str) -> dict[str, Any]:
    """The public page ``slug`` with its sections hydrated; 404 when the public role cannot
    read it (no ``pages`` collection, no such page, or hidden)."""
    relation = (await get_schema(ctx.kernel, ctx.site_id)).nested_fields(PAGES).get("sections")
    kind = relation.kind if relation is not None else "json"
    by_slug = {"filter": {"slug": {"_eq": slug}}, "limit": 1, "meta": "none"}
    if kind in ("o2m", "m2o"):
        try:  # the items API nests it as the public role
            found = await items.list_items(ctx, PAGES, items.query(fields=["*", "sections.*"], **by_slug))
        except ApiError as error:
            if error.status != 403:
                raise not_found("page") from error
            found = await _public(ctx, PAGES, items.query(**by_slug), "page")  # sections not readable
            for record in found.items:
                record.pop("sections", None)
    else:
        found = await _public(ctx, PAGES, items.query(**by_slug), "page")
    if not found.items:
        raise not_found("page")
    record = dict(found.items[0])
    sections = record.get("sections")
    if isinstance(sections, list) and kind in ("json", "m2a", "m2m"):
        sections = sections[:MAX_SECTIONS]
        if kind == "m2m":
            refs = [(relation.related_collection, item_id) if (item_id := _id(entry)) is not None else None
                    for entry in sections]
            record["sections"] = [item for item in (await _hydrate(ctx, refs)) if item is not None]
        else:
            record["sections"] = await hydrate_sections(ctx, sections, key="id" if kind == "m2a" else "item")
    return record


async def hydrate_sections(ctx: Any, sections: list[Any], *, key: str = "item") -> list[Any]:
    """Each section naming ``collection`` and an id under ``key`` as ``{..., collection, item}``
    with the item read as the public role; unreadable ones left out, others unchanged."""
    refs = [_reference(section, key) for section in sections]
    read = await _hydrate(ctx, refs)
    out: list[Any] = []
    for section, ref, item in zip(sections, refs, read, strict=True):
        if ref is None:
            out.append(section)
        elif item is not None:
            rest = {k: v for k, v in section.items() if k != key}
            out.append({**rest, "item": item})
    return out


async def _hydrate(ctx: Any, refs: list[tuple[str, str] | None]) -> list[dict[str, Any] | None]:
    """The item of each ``(collection, id)`` as the public role reads it (None where it cannot,
    or for a None ref): one list query per collection."""
    wanted: dict[str, list[str]] = {}
    for ref in refs:
        if ref is not None:
            wanted.setdefault(ref[0], []).append(ref[1])
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for collection, ids in wanted.items():
        unique = list(dict.fromkeys(ids))
        try:
            listed = await items.list_items(ctx, collection, items.query(
                filter={"id": {"_in": unique}}, limit=min(len(unique), 200), meta="none"))
        except ApiError as error:
            if error.status in (400, 403, 404):
                continue  # the public role cannot read that collection: its sections are left out
            raise
        for item in listed.items:
            found[(collection, str(item.get("id")))] = item
    return [found.get(ref) if ref is not None else None for ref in refs]


def _id(value: Any) -> str | None:
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return str(value)
    return None


def _reference(section: Any, key: str) -> tuple[str, str] | None:
    if not isinstance(section, dict):
        return None
    collection, item_id = section.get("collection"), _id(section.get(key))
    if isinstance(collection, str) and collection and item_id is not None:
        return collection, item_id
    return None


async def item_list(ctx: Any, collection: str, params: Any) -> tuple[Any, dict[str, Any] | None]:
    """``GET /items/{collection}``'s answer as the public role: ``(items, meta)``."""
    query = items.parse_query(params)
    try:
        return await items.read_collection(ctx, collection, query)
    except ApiError as error:
        if error.status in (403, 404):  # hidden and missing alike: existence is not told
            raise not_found(f"collection '{collection[:64]}'") from error
        raise


async def _public(ctx: Any, collection: str, query: Any, what: str) -> Any:
    try:
        return await items.list_items(ctx, collection, query)
    except ApiError as error:
        if error.status in (400, 403, 404):
            raise not_found(what) from error
        raise


async def llms_txt(ctx: Any, site: dict[str, Any], base_url: str) -> str:
    """The llms.txt index (https://llmstxt.org): the site's name, then one link per public page
    with its title and summary (``summary``, else ``description``)."""
    pages: list[dict[str, Any]] = []
    offset = 0
    while len(pages) < LLMS_MAX_PAGES:
        try:
            batch = await items.list_items(ctx, PAGES, items.query(sort=["slug"], limit=200, offset=offset, meta="none"))
        except ApiError as error:
            if error.status in (400, 403, 404):
                break
            raise
        pages.extend(batch.items)
        if len(batch.items) < 200:
            break
        offset += 200
    name = _line(site.get("name") or site["id"])
    lines = [f"# {name}", "", f"> The public pages of {name}, served by svc.", "", "## Pages", ""]
    for record in pages:
        slug = record.get("slug")
        if not isinstance(slug, str) or not SLUG.match(slug):
            continue
        title = _line(record.get("title") if isinstance(record.get("title"), str) else slug)
        url = f"{base_url}/api/v1/deliver/page/{quote(site['id'])}/{quote(slug)}"
        summary = next((record[k] for k in ("summary", "description") if isinstance(record.get(k), str)), "")
        entry = f"- [{_link_text(title)}]({url})"
        lines.append(entry + (f": {_line(summary)}" if summary.strip() else ""))
    return "\n".join(lines) + "\n"


def _line(text: Any) -> str:
    """One line of text, at most 300 characters (no newline can start a heading of its own)."""
    return " ".join(str(text).split())[:300]


def _link_text(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")

"""What delivery answers, read as the site's public role through the items API (one data path).

A page is the item of the ``pages`` collection whose ``slug`` matches. Its ``sections`` field,
when it is a list, is hydrated: a section that names ``collection`` and ``item`` (an id) gets
``item`` replaced by that item as the public role reads it, fetched with one list query per
referenced collection; a section whose item the public role cannot read (missing, deleted,
draft, filtered by a rule, collection not readable) is left out, so nothing hidden leaks, not
even its id. Other sections pass through unchanged.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

from kernel import ApiError
from plugins.items import api as items

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
    found = await _public(ctx, PAGES, items.query(filter={"slug": {"_eq": slug}}, limit=1, meta="none"), "page")
    if not found.items:
        raise not_found("page")
    record = dict(found.items[0])
    sections = record.get("sections")
    if isinstance(sections, list):
        record["sections"] = await hydrate_sections(ctx, sections[:MAX_SECTIONS])
    return record


async def hydrate_sections(ctx: Any, sections: list[Any]) -> list[Any]:
    """Each referencing section with its item (see the module's docstring)."""
    wanted: dict[str, list[str]] = {}
    for section in sections:
        ref = _reference(section)
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
    out: list[Any] = []
    for section in sections:
        ref = _reference(section)
        if ref is None:
            out.append(section)
        elif ref in found:
            out.append({**section, "item": found[ref]})
    return out


def _reference(section: Any) -> tuple[str, str] | None:
    if not isinstance(section, dict):
        return None
    collection, item_id = section.get("collection"), section.get("item")
    if isinstance(collection, str) and collection and isinstance(item_id, (str, int)) and not isinstance(item_id, bool):
        return collection, str(item_id)
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

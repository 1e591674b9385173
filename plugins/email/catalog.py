"""Layouts and templates of a site: bodies, records, CRUD. Every query goes through ``SiteDB``.

A layout is ``{ name, html }`` with a ``{{content}}`` slot; a template is ``{ key, name, subject,
html?, text?, layoutId? }`` with a key unique per site. Sources are checked by the sandboxed
renderer when saved, so a template that cannot render is refused at once (400), not at send time.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.base.jsoncodec import dumps
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.email import render
from plugins.email.tables import layouts, templates

KEY = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")
MAX_NAME = 200
MAX_SUBJECT = 998
MAX_PER_SITE = 500


def layout_not_found() -> ApiError:
    return ApiError(404, "NOT_FOUND", "No such email layout in this site")


def template_not_found() -> ApiError:
    return ApiError(404, "NOT_FOUND", "No such email template in this site")


def _string(body: dict[str, Any], name: str, most: int, *, required: bool) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise ApiError.validation(f"'{name}' is required", path=[name])
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > most:
        raise ApiError.validation(f"'{name}' is a non-empty string of at most {most} characters", path=[name])
    return value


def layout_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "html": row["html"],
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


def template_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "key": row["key"], "name": row["name"], "subject": row["subject"],
            "html": row["html"], "text": row["text"], "layoutId": row["layout_id"],
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


# ------------------------------------------------------------------------------------- layouts


def parse_layout(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    reject_unknown(body, {"name", "html"})
    out: dict[str, Any] = {}
    if creating or "name" in body:
        out["name"] = _string(body, "name", MAX_NAME, required=True)
    if creating or "html" in body:
        out["html"] = _string(body, "html", render.MAX_SOURCE_CHARS, required=True)
        render.check_layout(out["html"])
    return out


async def _layout_row(db: Any, layout_id: str) -> Any:
    row = await db.one(db.select(layouts).where(layouts.c.id == layout_id))
    if row is None:
        raise layout_not_found()
    return row


async def layout_html(db: Any, layout_id: str | None) -> str | None:
    if layout_id is None:
        return None
    return (await _layout_row(db, layout_id))["html"]


async def list_layouts(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.reader() as db:
        rows = await db.all(db.select(layouts).order_by(layouts.c.name, layouts.c.id))
    return [layout_record(r) for r in rows]


async def _room(db: Any, table: Any) -> None:
    count = await db.scalar(db.select(table, func.count()))
    if count >= MAX_PER_SITE:
        raise ApiError.validation(f"A site has at most {MAX_PER_SITE} of these", path=["body"])


async def create_layout(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_layout(body, creating=True)
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        await _room(uow.db, layouts)
        row_id = uuid7()
        await uow.db.insert(layouts, {"id": row_id, "created_at": now, "updated_at": now, **values})
        return layout_record(await _layout_row(uow.db, row_id))


async def update_layout(ctx: Any, layout_id: str, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_layout(body, creating=False)
    async with ctx.unit_of_work() as uow:
        await _layout_row(uow.db, layout_id)
        if values:
            await uow.db.execute(uow.db.update(layouts).where(layouts.c.id == layout_id)
                                 .values(**values, updated_at=now_utc()))
        return layout_record(await _layout_row(uow.db, layout_id))


async def delete_layout(ctx: Any, layout_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        await _layout_row(uow.db, layout_id)
        used = await uow.db.scalar(uow.db.select(templates, func.count())
                                   .where(templates.c.layout_id == layout_id))
        if used:
            raise ApiError.conflict(f"The layout is used by {used} template(s); change them first")
        await uow.db.execute(uow.db.delete(layouts).where(layouts.c.id == layout_id))


# ----------------------------------------------------------------------------------- templates


def parse_template(body: dict[str, Any], *, creating: bool) -> dict[str, Any]:
    reject_unknown(body, {"key", "name", "subject", "html", "text", "layoutId"})
    out: dict[str, Any] = {}
    if creating or "key" in body:
        key = body.get("key")
        if not isinstance(key, str) or not KEY.match(key):
            raise ApiError.validation("'key' is 1 to 100 characters: a-z, 0-9, '_', '.', '-'", path=["key"])
        out["key"] = key
    if creating or "name" in body:
        out["name"] = _string(body, "name", MAX_NAME, required=True)
    if creating or "subject" in body:
        subject = _string(body, "subject", MAX_SUBJECT, required=True)
        render.check_header_text(subject, ["subject"])
        render.check_source(subject, ["subject"])
        out["subject"] = subject
    for part in ("html", "text"):
        if part in body:
            value = _string(body, part, render.MAX_SOURCE_CHARS, required=False)
            if value is not None:
                render.check_source(value, [part])
            out[part] = value
    if "layoutId" in body:
        layout_id = body["layoutId"]
        if layout_id is not None and (not isinstance(layout_id, str) or not 0 < len(layout_id) <= 36):
            raise ApiError.validation("'layoutId' is a layout id or null", path=["layoutId"])
        out["layout_id"] = layout_id
    if creating and not (out.get("html") or out.get("text")):
        raise ApiError.validation("A template needs 'html' or 'text'", path=["html"])
    return out


async def _template_row(db: Any, template_id: str) -> Any:
    row = await db.one(db.select(templates).where(templates.c.id == template_id))
    if row is None:
        raise template_not_found()
    return row


async def template_by_key(db: Any, key: Any) -> Any:
    """The site's template ``key``; 404 ``NOT_FOUND`` (the spec's code for a missing template)."""
    if not isinstance(key, str) or not KEY.match(key):
        raise template_not_found()
    row = await db.one(db.select(templates).where(templates.c.key == key))
    if row is None:
        raise template_not_found()
    return row


async def _check_layout_ref(db: Any, values: dict[str, Any]) -> None:
    if values.get("layout_id") is not None:
        found = await db.one(db.select(layouts, layouts.c.id).where(layouts.c.id == values["layout_id"]))
        if found is None:  # another site's layout is as unknown as a made-up id
            raise ApiError.validation("No such layout in this site", path=["layoutId"])


async def list_templates(ctx: Any) -> list[dict[str, Any]]:
    async with ctx.reader() as db:
        rows = await db.all(db.select(templates).order_by(templates.c.key))
    return [template_record(r) for r in rows]


async def create_template(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_template(body, creating=True)
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        await _room(uow.db, templates)
        await _check_layout_ref(uow.db, values)
        if await uow.db.one(uow.db.select(templates, templates.c.id).where(templates.c.key == values["key"])):
            raise ApiError.conflict(f"A template with key '{values['key']}' already exists in this site")
        row_id = uuid7()
        row = {"id": row_id, "html": None, "text": None, "layout_id": None, "created_at": now,
               "updated_at": now, **values}
        try:
            await uow.db.insert(templates, row)
        except IntegrityError as exc:
            raise ApiError.conflict(f"A template with key '{values['key']}' already exists") from exc
        return template_record(await _template_row(uow.db, row_id))


async def update_template(ctx: Any, template_id: str, body: dict[str, Any]) -> dict[str, Any]:
    values = parse_template(body, creating=False)
    async with ctx.unit_of_work() as uow:
        current = await _template_row(uow.db, template_id)
        await _check_layout_ref(uow.db, values)
        merged = {**dict(current), **values}
        if not (merged["html"] or merged["text"]):
            raise ApiError.validation("A template needs 'html' or 'text'", path=["html"])
        if "key" in values and values["key"] != current["key"] and await uow.db.one(
                uow.db.select(templates, templates.c.id).where(templates.c.key == values["key"])):
            raise ApiError.conflict(f"A template with key '{values['key']}' already exists in this site")
        if values:
            await uow.db.execute(uow.db.update(templates).where(templates.c.id == template_id)
                                 .values(**values, updated_at=now_utc()))
        return template_record(await _template_row(uow.db, template_id))


async def delete_template(ctx: Any, template_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        await _template_row(uow.db, template_id)
        await uow.db.execute(uow.db.delete(templates).where(templates.c.id == template_id))


async def preview(ctx: Any, key: str, body: dict[str, Any]) -> dict[str, Any]:
    """``{ subject, html, text }`` of template ``key`` with ``variables``, without sending."""
    reject_unknown(body, {"variables"})
    variables = check_variables(body.get("variables"))
    async with ctx.reader() as db:
        row = await template_by_key(db, key)
        layout = await layout_html(db, row["layout_id"])
    return (await render.render_message_async(row["subject"], row["html"], row["text"], layout, variables)).as_dict()


async def preview_source(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``{ subject, html, text }`` of an unsaved template (``subject``, ``html`` and/or ``text``)
    inside the site's layout ``layoutId`` or an unsaved ``layout`` source, with ``variables``,
    without storing or sending: what the studio previews while the template is typed. The
    sources are checked as a save checks them (400 ``VALIDATION_FAILED`` with the part's path)."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body is an object", path=[])
    reject_unknown(body, {"subject", "html", "text", "layoutId", "layout", "variables"})
    parts = parse_template({k: body[k] for k in ("subject", "html", "text", "layoutId") if k in body}, creating=False)
    if "subject" not in parts:
        raise ApiError.validation("'subject' is required", path=["subject"])
    if not (parts.get("html") or parts.get("text")):
        raise ApiError.validation("A template needs 'html' or 'text'", path=["html"])
    variables = check_variables(body.get("variables"))
    layout = body.get("layout")
    if layout is not None:
        if parts.get("layout_id"):
            raise ApiError.validation("Give 'layoutId' or 'layout', not both", path=["layout"])
        if not isinstance(layout, str) or len(layout) > render.MAX_SOURCE_CHARS:
            raise ApiError.validation(f"'layout' is a layout's html of at most {render.MAX_SOURCE_CHARS} characters",
                                      path=["layout"])
        try:
            render.check_layout(layout)
        except ApiError as exc:
            raise ApiError.validation(exc.message, path=["layout"]) from exc
    elif parts.get("layout_id"):
        async with ctx.reader() as db:
            await _check_layout_ref(db, parts)  # another site's layout is as unknown as a made-up id
            layout = await layout_html(db, parts["layout_id"])
    rendered = await render.render_message_async(parts["subject"], parts.get("html"), parts.get("text"), layout,
                                                 variables)
    return rendered.as_dict()


MAX_VARIABLES_CHARS = 100_000
MAX_VARIABLES_DEPTH = 32


def check_variables(value: Any) -> dict[str, Any]:
    """``variables``: a JSON object (absent: empty), at most 32 levels deep and 100,000
    characters as JSON (checked without recursion: a hostile nesting is a 400, not a crash)."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ApiError.validation("'variables' must be an object", path=["variables"])
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_VARIABLES_DEPTH:
            raise ApiError.validation(f"'variables' is nested deeper than {MAX_VARIABLES_DEPTH} levels",
                                      path=["variables"])
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    if len(dumps(value)) > MAX_VARIABLES_CHARS:
        raise ApiError.validation(f"'variables' is larger than {MAX_VARIABLES_CHARS} characters", path=["variables"])
    return value

"""File records: the answer's shape, and reads bounded by the caller's ``media:read`` rule."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func, select

from kernel import ApiError, SiteCacheSpec
from kernel.db.meta import iso
from kernel.http.media import reject_unknown
from plugins.files import permissions
from plugins.files.errors import not_found
from plugins.files.permissions import true_clause
from plugins.files.query import compile_filter, compile_sort
from plugins.files.tables import file_tags, files

MAX_TAGS, MAX_TAG = 50, 100
META_KEYS_PATCH = frozenset({"title", "description", "tags", "folder", "folderId", "focalPoint"})
MAX_DESCRIPTION = 4000
_CONTROL_TEXT = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")  # newlines and tabs allowed
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A file name also holds no U+FFFD: the mark of a character lost in decoding, and what the kernel
# hands a route for a NUL in a path parameter (kernel.http.middleware.storable_path_params).
_NOT_IN_NAMES = re.compile("[\x00-\x1f\x7f\ufffd]")


def record(row: Any) -> dict[str, Any]:
    """The client's view of a file (never its storage key)."""
    return {
        "id": row["id"],
        "key": row["key"],
        "title": row["title"],
        "description": row["description"],
        "type": row["type"],
        "filesize": row["filesize"],
        "width": row["width"],
        "height": row["height"],
        "checksum": row["checksum"],
        "folder": row["folder"],
        "tags": list(row["tags"] or []),
        "folderId": row["folder_id"],
        "focalPoint": None if row["focal_x"] is None else {"x": row["focal_x"], "y": row["focal_y"]},
        "uploadedBy": row["uploaded_by"],
        "createdAt": iso(row["created_at"]),
        "updatedAt": iso(row["updated_at"]),
    }


def check_focal_point(value: Any) -> dict[str, int | None]:
    """``focalPoint`` of a body, ``{x, y}`` whole pixels >= 0 or null, as the two columns (400
    with the path otherwise); ``within`` checks it against the image."""
    if value is None:
        return {"focal_x": None, "focal_y": None}
    if not isinstance(value, dict) or set(value) != {"x", "y"}:
        raise ApiError.validation(
            "'focalPoint' is {x, y} in the image's pixels, or null", path=["focalPoint"]
        )
    for axis in ("x", "y"):
        number = value[axis]
        if isinstance(number, bool) or not isinstance(number, int) or number < 0:
            raise ApiError.validation(
                f"'{axis}' is a whole number of pixels, 0 or more", path=["focalPoint", axis]
            )
    return {"focal_x": value["x"], "focal_y": value["y"]}


def focal_point_within(row: Any, columns: dict[str, int | None]) -> None:
    """400 unless a focal point lies inside the file's image (a raster image with its size)."""
    if columns["focal_x"] is None:
        return
    if row["width"] is None or row["height"] is None:
        raise ApiError.validation(
            "Only an image with a width and height has a focal point", path=["focalPoint"]
        )
    for axis, size in (("x", row["width"]), ("y", row["height"])):
        if columns[f"focal_{axis}"] > size:
            raise ApiError.validation(
                f"'{axis}' is at most the image's {'width' if axis == 'x' else 'height'} ({size})",
                path=["focalPoint", axis],
            )


def check_filename(name: Any, path: list[str] | None = None) -> str:
    """A file name that may be a file's ``key``: 1 to 255 characters, no separator, no control
    character (nor U+FFFD), not hidden. It is only ever a label: storage keys are the server's."""
    where = path or ["key"]
    if not isinstance(name, str) or not 1 <= len(name) <= 255:
        raise ApiError.validation("A file name is 1 to 255 characters", path=where)
    if "/" in name or "\\" in name or _NOT_IN_NAMES.search(name) or name.startswith(".") or name.strip() != name:
        raise ApiError.validation(
            "A file name has no '/', '\\', control characters, leading dot or outer spaces", path=where
        )
    return name


def check_meta(body: dict[str, Any], *, allowed: frozenset[str]) -> dict[str, Any]:
    """``title``, ``description``, ``tags``, ``folder`` and ``focalPoint`` of a body, checked (400 with the path)."""
    reject_unknown(body, allowed)
    out: dict[str, Any] = {}
    for name in ("title", "folder"):
        if name in body:
            value = body[name]
            if value is not None and (
                not isinstance(value, str) or len(value) > 255 or _CONTROL.search(value)
            ):
                raise ApiError.validation(
                    f"'{name}' is a string of at most 255 characters, or null", path=[name]
                )
            out[name] = value
    if "description" in body:
        value = body["description"]
        if value is not None and (
            not isinstance(value, str) or len(value) > MAX_DESCRIPTION or _CONTROL_TEXT.search(value)
        ):
            raise ApiError.validation(
                f"'description' is a text of at most {MAX_DESCRIPTION} characters, or null",
                path=["description"],
            )
        out["description"] = value
    if "tags" in body:
        tags = body["tags"] if body["tags"] is not None else []
        if (
            not isinstance(tags, list)
            or len(tags) > MAX_TAGS
            or not all(isinstance(t, str) and 1 <= len(t) <= MAX_TAG and not _CONTROL.search(t) for t in tags)
        ):
            raise ApiError.validation(
                f"'tags' is a list of at most {MAX_TAGS} strings of 1 to {MAX_TAG} characters", path=["tags"]
            )
        out["tags"] = list(dict.fromkeys(tags))
    if "folderId" in body:  # checked against the site's folders by the service
        out["folder_id"] = body["folderId"]
    if "focalPoint" in body:
        out["focalPoint"] = check_focal_point(body["focalPoint"])
    return out


async def set_tags(db: Any, file_id: str, tags: list[str]) -> None:
    await db.execute(db.delete(file_tags).where(file_tags.c.file_id == file_id))
    if tags:
        await db.insert(file_tags, [{"file_id": file_id, "tag": tag} for tag in tags])


async def row_by_id(db: Any, file_id: str, condition: Any = None, *, lock: bool = False) -> Any:
    """The site's file ``file_id`` within ``condition`` (a permission's rows), or 404."""
    if not isinstance(file_id, str) or not 1 <= len(file_id) <= 36:
        raise not_found()
    stmt = db.select(files).where(files.c.id == file_id)
    if condition is not None:
        stmt = stmt.where(condition)
    row = await db.one(stmt.with_for_update() if lock else stmt)
    if row is None:
        raise not_found()
    return row


async def row_by_key(db: Any, key: str, condition: Any = None) -> Any:
    """The site's file named ``key`` within ``condition``, or None."""
    stmt = db.select(files).where(files.c.key == key)
    if condition is not None:
        stmt = stmt.where(condition)
    return await db.one(stmt)


async def get(ctx: Any, file_id: str) -> dict[str, Any]:
    condition = await permissions.require(ctx, "media:read")
    async with ctx.reader() as db:
        return record(await row_by_id(db, file_id, condition))


FILES_CACHE = SiteCacheSpec(
    "files",
    max_entries=20_000,
    ttl=5.0,
    invalidate_on=("files.create", "files.update", "files.delete"),
    doc="File rows by id for /assets and /media reads of callers whose media:read has no condition.",
)


async def readable(ctx: Any, *, file_id: str | None = None, key: str | None = None) -> Any:
    """The row of a file the caller may read, by id or key (404 otherwise). A caller whose
    ``media:read`` carries no condition reads the row through the ``files`` site cache (the
    hot path of ``/assets``); a condition always goes to the database with it."""
    condition = await permissions.require(ctx, "media:read")
    if file_id is not None and condition is true_clause():
        site_id = ctx.require_site()

        async def load(stale: Any) -> Any:
            async with ctx.reader() as db:
                row = await row_by_id(db, file_id)
            return dict(row)

        return await ctx.kernel.site_caches[FILES_CACHE.name].get_or_load(site_id, file_id, load)
    async with ctx.reader() as db:
        if file_id is not None:
            return await row_by_id(db, file_id, condition)
        row = await row_by_key(db, key or "", condition)
    if row is None:
        raise not_found()
    return row


async def list_page(ctx: Any, query: Any) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """One page of the files the caller may read: ``(records, meta)`` (``total`` unless
    ``meta=none``)."""
    if query.is_aggregate or query.deep:
        raise ApiError.validation("Files take filter, sort, limit, offset, page and meta", path=["query"])
    condition = await permissions.require(ctx, "media:read")
    where = [
        condition,
        compile_filter(await ctx.kernel.access.bind_variables(query.filter, ctx.principal, ctx.site_id)),
    ]
    order = compile_sort(query.sort)
    async with ctx.reader() as db:
        stmt = db.select(files).where(*where).order_by(*order).limit(query.limit).offset(query.offset)
        rows = await db.all(stmt)
        meta: dict[str, int] = {"limit": query.limit, "offset": query.offset}
        if query.with_total:
            count = db.scope(select(func.count()).select_from(files).where(*where), files)
            meta["total"] = int(await db.scalar(count))
    return [record(r) for r in rows], meta

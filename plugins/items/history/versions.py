"""Named versions: parallel drafts of one item's content, promoted onto main when ready.

A version is ``{ key, name, data }``. Creating one snapshots main's content as both ``data``
and ``base`` (main as the version last saw it, with main's ``updatedAt``); PATCH changes
``data`` only, never main. The version's own changes are the fields where ``data`` differs
from ``base``; promote applies exactly those to main through ``write.path.update_item`` (so
validation, field policy, pins and events apply, and a revision is written), then re-bases the
version on the new main. ``mainChanged`` (list, get) and ``meta.mainDiverged`` (promote) say
main was updated since the version was created or last promoted: a promote then may overwrite
someone's newer edit of the same fields. Versions need the collection's ``versioning`` flag to
be created. The version with key ``draft`` is what ``X-Svc-Draft: true`` reads (``drafts``).
"""

from __future__ import annotations

import contextlib
import re
from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel.base.errors import ApiError
from kernel.db.meta import iso, now_utc
from plugins.items.core.context import reading, same_site
from plugins.items.core.reveal import reveal
from plugins.items.core.rows import live_rows
from plugins.items.history.revisions import written_revision
from plugins.items.history.target import (
    ItemTarget,
    content_body,
    load_target,
    mask_item,
    name_field,
    reject_unknown_keys,
)
from plugins.items.tables import items, versions
from plugins.items.write.path import update_item
from plugins.schema.api import get_schema

KEY = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
DRAFT_KEY = "draft"
MAX_PROMOTE_FIELDS = 200


def schema_content(coll: Any, data: Any) -> dict[str, Any]:
    """Content of today's schema only: a field deleted since the snapshot is gone from main too."""
    return {k: v for k, v in (data or {}).items() if k in coll.fields}


def main_changed(version: Any, main: Any) -> bool:
    """Main was updated after the version was created or last promoted."""
    return iso(main["updated_at"]) != iso(version["base_updated_at"])


def version_changes(coll: Any, version: Any) -> dict[str, Any]:
    """The fields the version changed since its base (what promote applies)."""
    base = version["base"] or {}
    return {k: v for k, v in schema_content(coll, version["data"]).items() if v != base.get(k)}


def version_record(row: Any, target: ItemTarget) -> dict[str, Any]:
    """A version as the caller may read it."""
    return {"key": row["key"], "name": row["name"], "data": target.masked(schema_content(target.coll, row["data"])),
            "mainChanged": main_changed(row, target.row), "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"]), "userCreated": row["user_created"],
            "userUpdated": row["user_updated"]}


def _where(target: ItemTarget, key: str | None = None) -> tuple[Any, ...]:
    out = (versions.c.collection_id == target.coll.id, versions.c.item_id == target.row["id"])
    return out if key is None else (*out, versions.c.key == key)


async def _version_row(db: Any, target: ItemTarget, key: Any) -> Any:
    row = None
    if isinstance(key, str) and KEY.match(key):
        row = await db.one(db.select(versions).where(*_where(target, key)))
    if row is None:
        raise ApiError.not_found(f"No version '{str(key)[:64]}' of this item")
    return row


async def list_versions(ctx: Any, collection: str, item_id: str) -> list[dict[str, Any]]:
    """The item's versions, oldest first."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        rows = await db.all(db.select(versions).where(*_where(target)).order_by(versions.c.created_at,
                                                                                 versions.c.key))
    records = [version_record(r, target) for r in rows]
    await reveal_versions(ctx, target, records)
    return records


async def reveal_versions(ctx: Any, target: ItemTarget, records: list[dict[str, Any]], uow: Any = None) -> None:
    """The ``items.read`` hook over the versions' content (``core/reveal.py``)."""
    await reveal(ctx, await get_schema(ctx.kernel, ctx.site_id), target.coll.name, [r["data"] for r in records],
                 "version", uow=uow, ids=[target.row["id"]] * len(records))


async def get_version(ctx: Any, collection: str, item_id: str, key: str, *, uow: Any = None) -> dict[str, Any]:
    """One version (404 ``NOT_FOUND``); ``uow``: read in that transaction."""
    async with reading(ctx, uow) as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        record = version_record(await _version_row(db, target, key), target)
    await reveal_versions(ctx, target, [record], uow)
    return record


# Filter event of a version's content write: ``{ siteId, collection, id, version, before, after }``.
VERSION_WRITE = "items.version_write"


def _user(ctx: Any) -> str | None:
    return getattr(ctx.principal, "user_id", None)


async def create_version(ctx: Any, collection: str, item_id: str, body: Any) -> dict[str, Any]:
    """``POST .../versions`` ``{ key, name? }``: a snapshot of main (409 ``CONFLICT`` on a taken key)."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"key", "name"}))
    key = body.get("key")
    if not isinstance(key, str) or not KEY.match(key):
        raise ApiError.validation("'key' must match ^[a-z0-9][a-z0-9_-]{0,62}$", path=["key"])
    name = name_field(body, key)
    async with ctx.unit_of_work() as u:
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "update")
        if not target.coll.versioning:
            raise ApiError.validation(f"Versioning is not enabled on '{collection}' (collection meta 'versioning')",
                                      path=["collection"], reason="versioning_disabled")
        if await db.one(db.select(versions, versions.c.key).where(*_where(target, key))) is not None:
            raise ApiError(409, "CONFLICT", f"This item already has a version '{key}'", path=["key"])
        now, content = now_utc(), target.content()
        try:
            await db.insert(versions, {
                "collection_id": target.coll.id, "item_id": target.row["id"], "key": key, "name": name,
                "data": content, "base": content, "base_updated_at": target.row["updated_at"], "created_at": now,
                "updated_at": now, "user_created": _user(ctx), "user_updated": _user(ctx)})
        except IntegrityError as exc:  # a concurrent create took the key
            raise ApiError(409, "CONFLICT", f"This item already has a version '{key}'", path=["key"]) from exc
        record = version_record(await _version_row(db, target, key), target)
        await reveal_versions(ctx, target, [record], u)
    return record


async def update_version(ctx: Any, collection: str, item_id: str, key: str, body: Any) -> dict[str, Any]:
    """``PATCH .../versions/{key}`` ``{ data?, name? }``: ``data`` is checked as a partial item
    (the caller's write policy applies) and merged into the version; main is untouched."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"data", "name"}))
    async with ctx.unit_of_work() as u:
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "update")
        row = await _version_row(db, target, key)
        values: dict[str, Any] = {"updated_at": now_utc(), "user_updated": _user(ctx),
                                  "name": name_field(body, row["name"])}
        if body.get("data") is not None:
            before = schema_content(target.coll, row["data"])
            values["data"] = {**before, **content_body(target, body["data"], ["data"])}
            # The same filter event shape as an item update, so a plugin that stores some fields
            # in another form (regulated content encrypts) treats a version's content alike.
            payload = await u.filter(VERSION_WRITE, {"siteId": ctx.site_id, "collection": target.coll.name,
                                                     "id": target.row["id"], "version": key, "before": before,
                                                     "after": values["data"]})
            if isinstance(payload, dict) and isinstance(payload.get("after"), dict):
                values["data"] = schema_content(target.coll, payload["after"])
        await db.execute(db.update(versions).where(*_where(target, row["key"])).values(**values))
        record = version_record(await _version_row(db, target, key), target)
        await reveal_versions(ctx, target, [record], u)
    return record


async def delete_version(ctx: Any, collection: str, item_id: str, key: str) -> None:
    """``DELETE .../versions/{key}``."""
    async with ctx.unit_of_work() as u:
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "update")
        row = await _version_row(db, target, key)
        await db.execute(db.delete(versions).where(*_where(target, row["key"])))


async def compare_version(ctx: Any, collection: str, item_id: str, key: str) -> dict[str, Any]:
    """``{ main, version, changes }``: main as an item, the version's content, and the readable
    fields whose values differ between them."""
    async with ctx.reader() as db:
        target = await load_target(ctx, db, collection, item_id, "read")
        row = await _version_row(db, target, key)
    version = target.masked(schema_content(target.coll, row["data"]))
    main = mask_item(target, target.item)
    await reveal(ctx, await get_schema(ctx.kernel, ctx.site_id), target.coll.name, [main, version], "version",
                 ids=[target.row["id"]] * 2)
    changes = sorted(k for k, v in version.items() if v != main.get(k))
    return {"main": main, "version": version, "changes": changes}


def _promote_fields(coll: Any, body: Any) -> frozenset[str] | None:
    """The optional ``fields`` of a promote body: which of the version's changes to apply."""
    if not isinstance(body, dict):
        raise ApiError.validation("The body must be a JSON object", path=["body"])
    reject_unknown_keys(body, frozenset({"fields"}))
    wanted = body.get("fields")
    if wanted is None:
        return None
    if not isinstance(wanted, list) or len(wanted) > MAX_PROMOTE_FIELDS:
        raise ApiError.validation(f"'fields' must be a list of at most {MAX_PROMOTE_FIELDS} field names",
                                  path=["fields"])
    for i, name in enumerate(wanted):
        if not isinstance(name, str) or name not in coll.fields:
            raise ApiError.validation("'fields' must name content fields of the collection", path=["fields", i])
    return frozenset(wanted)


async def promote_version(ctx: Any, collection: str, item_id: str, key: str, body: Any, *, uow: Any = None,
                          cause: str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """``POST .../versions/{key}/promote`` ``{ fields? }``: apply the version's changes to main in
    one transaction; returns the item and ``{ mainDiverged, revisionId }``. ``uow`` and ``cause``:
    a release promoting in its publish transaction, its revision caused by ``release:<id>``."""
    async with contextlib.AsyncExitStack() as stack:
        u = same_site(ctx, uow) or await stack.enter_async_context(ctx.unit_of_work())
        db = u.db
        target = await load_target(ctx, db, collection, item_id, "update")
        wanted = _promote_fields(target.coll, body)
        row = await _version_row(db, target, key)
        diverged = main_changed(row, target.row)
        changes = version_changes(target.coll, row)
        patch = {k: v for k, v in changes.items() if wanted is None or k in wanted}
        cause = cause or f"promote:{row['key']}"
        item = await update_item(ctx, collection, item_id, patch, uow=u, cause=cause)
        written = await written_revision(db, target.coll, target.row["id"], cause)
        # Re-base on the new main: promoted fields now match it; the version keeps only the
        # changes it did not promote, and takes main's values everywhere else.
        main = await db.one(live_rows(db, target.coll).where(items.c.id == target.row["id"]))
        content = dict(main["data"] or {})
        pending = {k: v for k, v in changes.items() if k not in patch}
        await db.execute(db.update(versions).where(*_where(target, row["key"])).values(
            data={**content, **pending}, base=content, base_updated_at=main["updated_at"], updated_at=now_utc(),
            user_updated=_user(ctx)))
    return item, {"mainDiverged": diverged, "revisionId": written}

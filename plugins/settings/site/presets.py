"""View presets and bookmarks (``/presets``).

Scope comes from ownership: ``userId`` set is user scope, ``roleId`` set is role scope,
neither is global. A member sees its own user presets, the presets of every role of its role
chain (its role, then each ``parentId`` up) and the global ones; an admin sees all of the site.
The effective default of a collection is the first found of: the user's, each role's of the
chain in order, the global one. Every answer carries ``sourceScope`` (``user``, ``role``,
``global``). A member manages its own user presets; role and global ones need admin.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, or_

from kernel import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from kernel.http.media import reject_unknown
from plugins.access import api as access_api
from plugins.settings.tables import presets

EDITABLE = ("layout", "layoutQuery", "layoutOptions", "filter", "search", "bookmark", "icon", "color")
CREATE_KEYS = frozenset({"collection", "userId", "roleId", *EDITABLE})
COLUMNS = {"layout": "layout", "layoutQuery": "layout_query", "layoutOptions": "layout_options",
           "filter": "filter", "search": "search", "bookmark": "bookmark", "icon": "icon", "color": "color"}
LIMITS = {"layout": 64, "search": 500, "bookmark": 200, "icon": 64, "color": 32}


def scope_of(row: Any) -> str:
    return "user" if row["user_id"] else "role" if row["role_id"] else "global"


def preset_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "collection": row["collection"], "userId": row["user_id"], "roleId": row["role_id"],
            "bookmark": row["bookmark"], "layout": row["layout"], "layoutQuery": row["layout_query"],
            "layoutOptions": row["layout_options"], "filter": row["filter"], "search": row["search"],
            "icon": row["icon"], "color": row["color"], "sourceScope": scope_of(row),
            "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}


def not_found() -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", "No such preset")


def _values(body: dict[str, Any]) -> dict[str, Any]:
    """The column values of the editable keys a body holds, checked."""
    out: dict[str, Any] = {}
    for key in EDITABLE:
        if key not in body:
            continue
        value = body[key]
        if key in LIMITS:
            if value is not None and (not isinstance(value, str) or not value.strip() or len(value) > LIMITS[key]):
                raise ApiError.validation(f"'{key}' must be a non-empty string of at most {LIMITS[key]} characters",
                                          path=[key])
        elif value is not None and not isinstance(value, dict):
            raise ApiError.validation(f"'{key}' must be an object", path=[key])
        out[COLUMNS[key]] = value
    return out


async def _chain(ctx: Any) -> tuple[str, ...]:
    snapshot = await ctx.kernel.access.snapshot(ctx.principal, ctx.site_id)
    return tuple(snapshot.role_ids)


def _visible(user_id: str | None, chain: tuple[str, ...]) -> Any:
    """Rows a member sees: its user presets, its role chain's, and the global ones."""
    clauses = [and_(presets.c.user_id.is_(None), presets.c.role_id.is_(None))]
    if user_id:
        clauses.append(presets.c.user_id == user_id)
    if chain:
        clauses.append(presets.c.role_id.in_(chain))
    return or_(*clauses)


def _collection(value: Any, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value or len(value) > 64:
        raise ApiError.validation("'collection' must be a collection name", path=["collection"])
    return value


async def list_presets(ctx: Any, collection: str | None, *, bookmarks_only: bool = False) -> list[dict[str, Any]]:
    """Presets the caller sees (an admin: all of the site), user scope first, then the role
    chain in order, then global; bookmarks by name."""
    collection = _collection(collection, required=False)
    chain = await _chain(ctx)
    user_id = ctx.principal.user_id
    async with ctx.reader() as db:
        stmt = db.select(presets)
        if not ctx.principal.is_admin:
            stmt = stmt.where(_visible(user_id, chain))
        if collection is not None:
            stmt = stmt.where(presets.c.collection == collection)
        if bookmarks_only:
            stmt = stmt.where(presets.c.bookmark.is_not(None))
        rows = await db.all(stmt)

    def rank(row: Any) -> tuple[Any, ...]:
        if row["user_id"]:
            order = 0 if row["user_id"] == user_id else 1
        elif row["role_id"]:
            order = 2 + (chain.index(row["role_id"]) if row["role_id"] in chain else len(chain))
        else:
            order = 3 + len(chain)
        return (row["collection"], order, row["bookmark"] or "", row["id"])

    return [preset_record(r) for r in sorted(rows, key=rank)]


async def get_one(ctx: Any, preset_id: str) -> dict[str, Any]:
    """One preset the caller sees (an admin: any of the site), else 404."""
    async with ctx.reader() as db:
        stmt = db.select(presets).where(presets.c.id == preset_id)
        if not ctx.principal.is_admin:
            stmt = stmt.where(_visible(ctx.principal.user_id, await _chain(ctx)))
        row = await db.one(stmt)
    if row is None:
        raise not_found()
    return preset_record(row)


async def effective(ctx: Any, collection: Any) -> dict[str, Any] | None:
    """The caller's default view of ``collection``: user, then role chain, then global."""
    collection = _collection(collection)
    chain = await _chain(ctx)
    user_id = ctx.principal.user_id
    async with ctx.reader() as db:
        rows = await db.all(db.select(presets).where(presets.c.collection == collection,
                                                     presets.c.bookmark.is_(None), _visible(user_id, chain)))
    by_owner = {(r["user_id"], r["role_id"]): r for r in rows}
    for owner in [(user_id, None)] * bool(user_id) + [(None, role) for role in chain] + [(None, None)]:
        if owner in by_owner:
            return preset_record(by_owner[owner])
    return None


async def _check_owner(ctx: Any, conn: Any, user_id: Any, role_id: Any) -> None:
    """Who may own what: admins anything of the site; a member only its own user presets."""
    if user_id is not None and role_id is not None:
        raise ApiError.validation("A preset has a userId or a roleId, not both", path=["roleId"])
    principal = ctx.principal
    if user_id is not None:
        if not isinstance(user_id, str):
            raise ApiError.validation("'userId' must be a user id", path=["userId"])
        if user_id == principal.user_id:
            return
        if not principal.is_admin:
            raise ApiError.forbidden("Members manage their own presets; other users' need admin")
        if await access_api.membership(conn, ctx.site_id, user_id) is None:
            raise ApiError.validation("'userId' is not a member of this site", path=["userId"])
        return
    if not principal.is_admin:
        raise ApiError.forbidden("Role and global presets need admin")
    if role_id is not None and await access_api.role_in_site(conn, ctx.site_id, role_id) is None:
        raise ApiError.validation("'roleId' is not a role of this site", path=["roleId"])


async def _unique(db: Any, collection: str, user_id: Any, role_id: Any, bookmark: Any, skip: str | None) -> None:
    """One default view per (scope owner, collection); bookmark names unique per owner."""
    stmt = db.select(presets, presets.c.id).where(
        presets.c.collection == collection,
        presets.c.user_id.is_(None) if user_id is None else presets.c.user_id == user_id,
        presets.c.role_id.is_(None) if role_id is None else presets.c.role_id == role_id,
        presets.c.bookmark.is_(None) if bookmark is None else presets.c.bookmark == bookmark)
    if skip is not None:
        stmt = stmt.where(presets.c.id != skip)
    if await db.one(stmt) is not None:
        what = f"a bookmark '{bookmark}'" if bookmark else "a default preset"
        raise ApiError.conflict(f"This scope already has {what} for '{collection}'")


async def create(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    reject_unknown(body, CREATE_KEYS)
    collection = _collection(body.get("collection"))
    values = _values(body)
    user_id, role_id = body.get("userId"), body.get("roleId")
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        await _check_owner(ctx, uow.conn, user_id, role_id)
        await _unique(uow.db, collection, user_id, role_id, values.get("bookmark"), None)
        row = {"id": uuid7(), "collection": collection, "user_id": user_id, "role_id": role_id,
               **{c: None for c in COLUMNS.values()}, **values, "created_at": now, "updated_at": now}
        await uow.db.insert(presets, row)
    return preset_record({**row, "site_id": ctx.site_id})


async def _editable(ctx: Any, db: Any, preset_id: str) -> Any:
    """The row, if the caller sees it (else 404) and may change it (else 403)."""
    row = await db.one(db.select(presets).where(presets.c.id == preset_id))
    principal = ctx.principal
    if row is None:
        raise not_found()
    if principal.is_admin or (row["user_id"] is not None and row["user_id"] == principal.user_id):
        return row
    visible = row["user_id"] is None and (row["role_id"] is None or row["role_id"] in await _chain(ctx))
    if not visible:
        raise not_found()
    raise ApiError.forbidden("Role and global presets need admin")


async def update_preset(ctx: Any, preset_id: str, body: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(body) - set(EDITABLE))
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}' (the scope of a preset cannot change)",
                                  path=[unknown[0]])
    values = _values(body)
    async with ctx.unit_of_work() as uow:
        row = await _editable(ctx, uow.db, preset_id)
        if "bookmark" in values:
            await _unique(uow.db, row["collection"], row["user_id"], row["role_id"], values["bookmark"], preset_id)
        if values:
            values["updated_at"] = now_utc()
            await uow.db.execute(uow.db.update(presets).where(presets.c.id == preset_id).values(**values))
        row = await uow.db.one(uow.db.select(presets).where(presets.c.id == preset_id))
    return preset_record(row)


async def delete_preset(ctx: Any, preset_id: str) -> None:
    async with ctx.unit_of_work() as uow:
        await _editable(ctx, uow.db, preset_id)
        await uow.db.execute(uow.db.delete(presets).where(presets.c.id == preset_id))

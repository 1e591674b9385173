"""``GET, PATCH /me/preferences``: one blob per user, the same in every site (identity-global).

A PATCH merges shallowly: each top-level key replaces the stored one, ``null`` removes it.
``saveAction`` is ``stay``, ``return`` or ``create_new``, or null to fall back to the site's
default. The answer's ``data`` is the stored blob as it is, with ``saveAction`` null when the user
has none, so a client that reads the blob and writes it back never pins the site default as the
user's own choice; ``meta.saveAction`` is the effective value (the user's, else the current site's
``defaultSaveAction``, else ``stay``) and ``meta.saveActionSource`` says which (``user``, ``site``).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.base.jsoncodec import dumps
from kernel.db.meta import now_utc
from plugins.settings.site import site_config
from plugins.settings.site.site_fields import SAVE_ACTIONS
from plugins.settings.tables import preferences

MAX_BYTES = 32_768


def _user_id(ctx: Any) -> str:
    user_id = ctx.principal.user_id
    if ctx.principal.kind not in ("user", "external") or not user_id:
        raise ApiError.forbidden("Preferences belong to users; this principal is not one")
    return user_id


async def stored_preferences(conn: Any, user_id: str) -> dict[str, Any] | None:
    row = (await conn.execute(select(preferences.c.data).where(preferences.c.user_id == user_id))).first()
    return dict(row[0]) if row is not None else None


async def answer(ctx: Any, blob: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(data, meta)``: the blob (``saveAction`` null when unset), and the effective save action
    in ``meta``: the user's, else the site's default."""
    data = {**blob, "saveAction": blob.get("saveAction")}
    effective, source = data["saveAction"], "user"
    if effective is None:
        source = "site"
        if ctx.site_id is not None:
            effective = (await site_config.cached_config(ctx.kernel, ctx.site_id)).get("defaultSaveAction")
        effective = effective or "stay"
    return data, {"saveAction": effective, "saveActionSource": source}


async def get_preferences(ctx: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    user_id = _user_id(ctx)
    async with ctx.kernel.db.connect() as conn:
        blob = await stored_preferences(conn, user_id) or {}
    return await answer(ctx, blob)


def check_patch(body: dict[str, Any]) -> None:
    for key in body:
        if not isinstance(key, str) or not key or len(key) > 100:
            raise ApiError.validation("A preference key is a string of 1 to 100 characters", path=[str(key)[:100]])
    action = body.get("saveAction")
    if action is not None and action not in SAVE_ACTIONS:
        raise ApiError.validation(f"'saveAction' must be one of {', '.join(SAVE_ACTIONS)}, or null",
                                  path=["saveAction"])


async def patch_preferences(ctx: Any, body: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    user_id = _user_id(ctx)
    check_patch(body)
    try:
        blob = await _merge(ctx, user_id, body)
    except IntegrityError:  # a concurrent first write made the row: merge into it
        blob = await _merge(ctx, user_id, body)
    return await answer(ctx, blob)


async def _merge(ctx: Any, user_id: str, body: dict[str, Any]) -> dict[str, Any]:
    async with ctx.kernel.db.begin() as conn:
        stored = await stored_preferences(conn, user_id)
        blob = dict(stored or {})
        for key, value in body.items():
            if value is None:
                blob.pop(key, None)
            else:
                blob[key] = value
        size = len(dumps(blob))
        if size > MAX_BYTES:
            raise ApiError.validation(f"Preferences would be {size} bytes of JSON; at most {MAX_BYTES} are allowed",
                                      path=["body"])
        if stored is None:
            await conn.execute(insert(preferences).values(user_id=user_id, data=blob, updated_at=now_utc()))
        else:
            await conn.execute(update(preferences).where(preferences.c.user_id == user_id)
                               .values(data=blob, updated_at=now_utc()))
    return blob

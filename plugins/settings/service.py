"""Settings: list, read, write, export and apply (no HTTP here; routes and the manifest call it)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from kernel import ApiError
from kernel.db.meta import iso, now_utc
from plugins.settings import keys, store

BUNDLE_VERSION = "svc.settings@v1"


def max_bytes(kernel: Any) -> int:
    return int(kernel.settings.get("settings_max_value_bytes"))


async def list_settings(ctx: Any) -> dict[str, Any]:
    """``{ key: value }`` of the site: everything for an admin, the public keys for others."""
    reg = keys.registry(ctx.kernel)
    admin = ctx.principal.is_admin
    async with ctx.reader() as db:
        rows = await store.read_rows(db)
    return {r["key"]: store.shown(ctx.kernel, ctx.site_id, reg, r) for r in rows
            if admin or reg.is_public(r["key"])}


async def get_one(ctx: Any, key: str) -> dict[str, Any]:
    """``{ key, value }``; 403 for a non-admin on a non-public key, 404 when unset."""
    key = keys.check_key(key)
    reg = keys.registry(ctx.kernel)
    if not ctx.principal.is_admin and not reg.is_public(key):
        raise ApiError.forbidden(f"Setting '{key}' is readable by admins only")
    async with ctx.reader() as db:
        row = await db.one(db.select(store.settings).where(store.settings.c.key == key))
    if row is None:
        raise ApiError(404, "RECORD_NOT_FOUND", f"Setting '{key}' is not set")
    return {"key": key, "value": store.shown(ctx.kernel, ctx.site_id, reg, row)}


def checked_changes(kernel: Any, reg: keys.Registry, body: dict[str, Any]) -> dict[str, Any]:
    """Every ``key -> value`` of a body checked (key form, owner's validation, size cap)."""
    limit = max_bytes(kernel)
    return {keys.check_key(k, [k]): keys.check_value(reg, k, v, limit) for k, v in body.items()}


async def patch_settings(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Write several settings in one transaction (``null`` unsets one); answers the listing."""
    reg = keys.registry(ctx.kernel)
    changes = checked_changes(ctx.kernel, reg, body)
    await _write(ctx, reg, changes, "settings.update")
    return await list_settings(ctx)


async def _write(ctx: Any, reg: keys.Registry, changes: dict[str, Any], action: str) -> None:
    """One transaction of ``store.write``; a concurrent first write of the same key is 409."""
    try:
        async with ctx.unit_of_work() as uow:
            await store.write(ctx.kernel, uow, reg, changes, action=action)
    except IntegrityError as exc:
        raise ApiError.conflict("Another request set one of these settings at the same moment; "
                                "send it again") from exc


async def put_one(ctx: Any, key: str, value: Any) -> dict[str, Any]:
    """Set (or with ``null`` unset) one setting; answers ``{ key, value }``."""
    key = keys.check_key(key)
    reg = keys.registry(ctx.kernel)
    value = keys.check_value(reg, key, value, max_bytes(ctx.kernel))
    await _write(ctx, reg, {key: value}, "settings.update")
    shown = dict(store.HAS_SECRET) if value is not None and reg.is_secret(key) else value
    return {"key": key, "value": shown}


async def exportable(kernel: Any, db: Any) -> list[tuple[str, Any]]:
    """``(key, value)`` of every setting but the secrets, by key."""
    reg = keys.registry(kernel)
    return [(r["key"], r["value"]) for r in await store.read_rows(db)
            if r["sealed"] is None and not reg.is_secret(r["key"])]


async def export_bundle(ctx: Any) -> dict[str, Any]:
    """The bundle ``apply_bundle`` takes back unchanged: every setting except secrets."""
    async with ctx.reader() as db:
        pairs = await exportable(ctx.kernel, db)
    return {"version": BUNDLE_VERSION, "exportedAt": iso(now_utc()), "settings": dict(pairs)}


async def apply_bundle(ctx: Any, bundle: dict[str, Any], replace: bool = False) -> dict[str, Any]:
    """Write a bundle's settings in one transaction. ``replace``: also unset the (non-secret)
    settings the bundle does not hold. Answers ``{ applied, removed }`` (key lists)."""
    unknown = sorted(set(bundle) - {"version", "exportedAt", "settings"})
    if unknown:
        raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
    if bundle.get("version", BUNDLE_VERSION) != BUNDLE_VERSION:
        raise ApiError.validation(f"Unsupported bundle version; this server reads {BUNDLE_VERSION}",
                                  path=["version"])
    values = bundle.get("settings")
    if not isinstance(values, dict):
        raise ApiError.validation("'settings' must be an object of key to value", path=["settings"])
    reg = keys.registry(ctx.kernel)
    changes = checked_changes(ctx.kernel, reg, values)
    removed: list[str] = []
    async with ctx.unit_of_work() as uow:
        if replace:
            removed = [k for k, _ in await exportable(ctx.kernel, uow.db) if k not in changes]
            changes.update({k: None for k in removed})
        await store.write(ctx.kernel, uow, reg, changes, action="settings.apply")
    return {"applied": sorted(k for k in values if values[k] is not None), "removed": sorted(removed)}

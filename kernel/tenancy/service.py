"""Sites: create, list, read, rename, delete. Instance-level; no site scope applies here."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from kernel.base.errors import ApiError
from kernel.cache.sitecache import SiteCacheSpec
from kernel.db.meta import iso, now_utc
from kernel.hooks.plugins import call_all
from kernel.tenancy.tables import sites

if TYPE_CHECKING:
    from kernel.core.context import Kernel

SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
SITE_EVENT = "sites.changed"
# Every request looks its site up here. Dropped through the bus on change (every site cache
# drops a site on ``sites.changed``), and after the TTL for workers that share no Redis.
SITE_CACHE = SiteCacheSpec("sites", max_entries=10_000, ttl=5.0,
                           doc="Site records, looked up on every request.")


def site_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "name": row["name"], "createdAt": iso(row["created_at"])}


def validate_site_id(site_id: Any) -> str:
    if not isinstance(site_id, str) or not SITE_ID.match(site_id):
        raise ApiError.validation(
            "Site id must match ^[a-z0-9][a-z0-9_-]{0,62}$", path=["id"]
        )
    return site_id


def validate_name(name: Any, path: str = "name") -> str:
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ApiError.validation("Name must be a non-empty string of at most 200 characters", path=[path])
    return name.strip()


async def list_sites(kernel: Kernel, limit: int = 200, offset: int = 0) -> tuple[list[dict[str, Any]], int]:
    async with kernel.db.connect() as conn:
        rows = (await conn.execute(select(sites).order_by(sites.c.id).limit(limit).offset(offset))).mappings()
        out = [site_record(r) for r in rows]
        total = (await conn.execute(select(func.count()).select_from(sites))).scalar_one()
    return out, total


async def get_site(kernel: Kernel, site_id: str) -> dict[str, Any] | None:
    async with kernel.db.connect() as conn:
        row = (await conn.execute(select(sites).where(sites.c.id == site_id))).mappings().first()
    return site_record(row) if row else None


async def get_site_cached(kernel: Kernel, site_id: str) -> dict[str, Any] | None:
    """Site lookup on every request, through the ``sites`` cache (an unknown site is not kept)."""

    async def load(stale: Any) -> dict[str, Any] | None:
        return await get_site(kernel, site_id) if SITE_ID.match(site_id) else None

    return await kernel.site_caches[SITE_CACHE.name].get_or_load(site_id, None, load)


def forget_site(kernel: Kernel, site_id: str) -> None:
    """Drop a site from every site cache of this process (the bus does it on every other)."""
    kernel.site_caches.invalidate_site(site_id)


async def create_site(kernel: Kernel, site_id: Any, name: Any = None, principal: Any = None) -> dict[str, Any]:
    site_id = validate_site_id(site_id)
    name = validate_name(name if name is not None else site_id)
    async with kernel.unit_of_work(None, principal) as uow:
        record = {"id": site_id, "name": name, "created_at": now_utc()}
        try:
            await uow.conn.execute(insert(sites).values(**record))
        except IntegrityError as exc:
            raise ApiError.conflict(f"Site '{site_id}' already exists") from exc
        site = site_record(record)
        await call_all(kernel.pm.hook.site_created, kernel=kernel, site=site, conn=uow.conn)
        uow.action(SITE_EVENT, {"id": site_id, "op": "create"})
    return site


async def rename_site(kernel: Kernel, site_id: str, name: Any, principal: Any = None) -> dict[str, Any]:
    name = validate_name(name)
    async with kernel.unit_of_work(None, principal) as uow:
        result = await uow.conn.execute(update(sites).where(sites.c.id == site_id).values(name=name))
        if result.rowcount == 0:
            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
        uow.action(SITE_EVENT, {"id": site_id, "op": "update"})
    forget_site(kernel, site_id)
    site = await get_site(kernel, site_id)
    assert site is not None
    return site


async def delete_site(kernel: Kernel, site_id: str, principal: Any = None) -> None:
    """Delete a site and, through ``site_deleted``, every plugin's rows of it, in one transaction."""
    async with kernel.unit_of_work(None, principal) as uow:
        exists = (await uow.conn.execute(select(sites.c.id).where(sites.c.id == site_id))).first()
        if not exists:
            raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
        await call_all(kernel.pm.hook.site_deleted, kernel=kernel, site_id=site_id, conn=uow.conn)
        await uow.conn.execute(delete(sites).where(sites.c.id == site_id))
        uow.action(SITE_EVENT, {"id": site_id, "op": "delete"})
    forget_site(kernel, site_id)


async def ensure_default_site(kernel: Kernel) -> None:
    """First start on an empty database: create the site ``default``."""
    async with kernel.db.connect() as conn:
        count = (await conn.execute(select(func.count()).select_from(sites))).scalar_one()
    if count == 0:
        try:
            await create_site(kernel, "default", "Default site")
        except ApiError as exc:  # another worker created it first
            if exc.status != 409:
                raise

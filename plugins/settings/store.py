"""Settings storage: rows of ``svc_settings``, the bounded ``settings`` cache, and writes.

Reads through ``read_cached`` go to the kernel's ``settings`` site cache, one entry per
(site, key). A write commits, then emits the ``settings.changed`` action with the site id:
the kernel drops the site's entries in this process and, through the bus's Redis fan-out, in
every other one (``invalidate_on``). Workers without Redis trust an entry for the TTL only.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select

from kernel import ApiError, SiteCacheSpec
from kernel.db.meta import now_utc
from kernel.policy.audit import record as audit_record
from kernel.tenancy.scope import SiteDB
from plugins.settings.keys import Registry
from plugins.settings.tables import settings

CHANGED_EVENT = "settings.changed"
SETTINGS_CACHE = SiteCacheSpec("settings", max_entries=20_000, ttl=30.0, invalidate_on=(CHANGED_EVENT,),
                               doc="Site settings, one entry per (site, key); dropped on settings.changed.")
SECRET_PURPOSE = "setting"
HAS_SECRET = {"hasSecret": True}


def _opened(kernel: Any, site_id: str, row: Any) -> Any:
    """The value of a row; a sealed (secret) one is opened."""
    if row["sealed"] is not None:
        from kernel.base.jsoncodec import loads

        return loads(kernel.secrets.open(site_id, row["sealed"], purpose=f"{SECRET_PURPOSE}:{row['key']}"))
    return row["value"]


async def read_cached(kernel: Any, site_id: str, key: str) -> tuple[bool, Any]:
    """``(found, value)`` of one setting, through the ``settings`` cache."""

    async def load(stale: Any) -> tuple[bool, Any]:
        async with kernel.db.connect() as conn:
            db = SiteDB(site_id, conn)
            row = await db.one(db.select(settings).where(settings.c.key == key))
        return (False, None) if row is None else (True, _opened(kernel, site_id, row))

    return await kernel.site_caches[SETTINGS_CACHE.name].get_or_load(site_id, key, load)


async def read_every_site(kernel: Any, key: str) -> dict[str, Any]:
    """``{site_id: value}`` of ``key`` in every site that sets it, in one query across sites
    (an instance-wide job's read; it bypasses the per-site cache on purpose)."""
    async with kernel.db.connect() as conn:
        rows = (await conn.execute(select(settings).where(settings.c.key == key))).mappings().all()
        await conn.rollback()
    return {row["site_id"]: _opened(kernel, row["site_id"], row) for row in rows}


async def drop_prefix(conn: Any, prefix: str) -> dict[str, list[str]]:
    """Delete every site's settings whose key starts with ``prefix`` (an instance-wide cleanup in
    the caller's transaction: an uninstalled extension's ``ext.<name>.``); ``{site_id: keys}``."""
    match = settings.c.key.startswith(prefix, autoescape=True)
    rows = (await conn.execute(select(settings.c.site_id, settings.c.key).where(match))).all()
    dropped: dict[str, list[str]] = {}
    for site_id, key in rows:
        dropped.setdefault(site_id, []).append(key)
    if dropped:
        await conn.execute(settings.delete().where(match))
    return dropped


async def read_rows(db: SiteDB) -> list[Any]:
    """Every setting row of the site, by key."""
    return list(await db.all(db.select(settings).order_by(settings.c.key)))


def shown(kernel: Any, site_id: str, reg: Registry, row: Any) -> Any:
    """A row's value as an answer shows it: a secret only as ``{ hasSecret: true }``."""
    if row["sealed"] is not None or reg.is_secret(row["key"]):
        return dict(HAS_SECRET)
    return row["value"]


async def write(kernel: Any, uow: Any, reg: Registry, changes: dict[str, Any], *, action: str) -> None:
    """Store ``changes`` (``key -> value``; ``None`` unsets) in the unit of work; values are
    already checked. Audited (key names only) and announced after commit."""
    if not changes:
        return
    db, site_id = uow.db, uow.site_id
    existing = {r["key"] for r in await db.all(db.select(settings, settings.c.key)
                                               .where(settings.c.key.in_(list(changes))))}
    new = [k for k, v in changes.items() if v is not None and k not in existing]
    limit = int(kernel.settings.get("settings_max_keys"))
    if new:
        count = await db.scalar(db.select(settings, func.count()))
        if count + len(new) > limit:
            raise ApiError.validation(f"A site holds at most {limit} settings", path=[new[0]])
    now = now_utc()
    user = getattr(uow.principal, "user_id", None)
    for key, value in changes.items():
        if value is None:
            if key in existing:
                await db.execute(db.delete(settings).where(settings.c.key == key))
            continue
        columns: dict[str, Any] = {"value": value, "sealed": None}
        if reg.is_secret(key):
            from kernel.base.jsoncodec import dumps

            kernel.secrets.require()
            columns = {"value": None, "sealed": kernel.secrets.seal(site_id, dumps(value),
                                                                    purpose=f"{SECRET_PURPOSE}:{key}")}
        if key in existing:
            await db.execute(db.update(settings).where(settings.c.key == key)
                             .values(**columns, updated_at=now, updated_by=user))
        else:
            await db.insert(settings, {"key": key, **columns, "updated_at": now, "updated_by": user})
    names = sorted(changes)
    await audit_record(uow.conn, action=action, site_id=site_id, principal=uow.principal,
                       target_type="settings", target_id=",".join(names)[:300], details={"names": names})
    uow.action(CHANGED_EVENT, {"siteId": site_id, "keys": names})

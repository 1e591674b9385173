"""The site configuration (``GET, PATCH /site``), custom-domain site resolution and the site's
browser origins.

``name`` lives in the kernel's ``svc_sites`` row; the rest in ``svc_site_config`` (``domain``
in a column unique across the deployment). A change commits, then announces
``site.config.changed`` (``{ siteId }``): every worker drops the site's ``site_config`` entry
and its whole ``site_domains`` map (through the bus's Redis fan-out), so allowed origins and
Host resolution follow at once.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError

from kernel import ApiError, SiteCacheSpec
from kernel.db.meta import iso, now_utc
from kernel.policy.audit import record as audit_record
from kernel.tenancy.scope import SiteDB
from kernel.tenancy.tables import sites
from plugins.settings.site import site_fields
from plugins.settings.tables import site_config

CHANGED_EVENT = "site.config.changed"
SITES_EVENT = "sites.changed"
CONFIG_CACHE = SiteCacheSpec("site_config", max_entries=10_000, ttl=30.0, invalidate_on=(CHANGED_EVENT,),
                             doc="Site configuration (origins, defaults), one entry per site.")
# Host -> site id ("" for a host no site claims). Kept under the site id "" and emptied as a
# whole on every configuration change: a domain moving between sites must not linger.
DOMAIN_CACHE = SiteCacheSpec("site_domains", max_entries=10_000, ttl=30.0,
                             doc="Custom domain to site id, for Host-based site resolution.")
NULLABLE = tuple(k for k in site_fields.KEYS if k != "name")


def record(site: dict[str, Any], row: Any) -> dict[str, Any]:
    """The answer of ``GET /site``: every key, null when unset, the two enums' defaults applied."""
    config = dict(row["config"]) if row is not None else {}
    out: dict[str, Any] = {"id": site["id"], "name": site["name"]}
    for key in NULLABLE:
        out[key] = row["domain"] if key == "domain" and row is not None else config.get(key)
    for key, default in site_fields.DEFAULTS.items():
        if out[key] is None:
            out[key] = default
    out["createdAt"] = site.get("createdAt")
    return out


async def _site_row(conn: Any, site_id: str) -> dict[str, Any]:
    row = (await conn.execute(select(sites).where(sites.c.id == site_id))).mappings().first()
    if row is None:
        raise ApiError(404, "SITE_NOT_FOUND", f"Unknown site '{site_id}'")
    return {"id": row["id"], "name": row["name"], "createdAt": iso(row["created_at"])}


async def _config_row(db: SiteDB) -> Any:
    return await db.one(db.select(site_config))


async def get_site_config(kernel: Any, site_id: str) -> dict[str, Any]:
    """The site's configuration record, read now."""
    async with kernel.db.connect() as conn:
        site = await _site_row(conn, site_id)
        row = await _config_row(SiteDB(site_id, conn))
    return record(site, row)


async def cached_config(kernel: Any, site_id: str) -> dict[str, Any]:
    """The configuration through the ``site_config`` cache (hot paths: origins, defaults)."""

    async def load(stale: Any) -> dict[str, Any]:
        try:
            return await get_site_config(kernel, site_id)
        except ApiError:
            return {}

    return await kernel.site_caches[CONFIG_CACHE.name].get_or_load(site_id, None, load)


async def patch_site_config(ctx: Any, body: dict[str, Any]) -> dict[str, Any]:
    """Apply a partial update (every key checked first; nothing is written on a bad one)."""
    changes = {key: site_fields.check(key, value) for key, value in body.items()}
    site_id = ctx.site_id
    try:
        async with ctx.unit_of_work() as uow:
            await _write(uow, site_id, changes)
    except IntegrityError as exc:  # two sites claiming one domain at the same moment
        raise domain_taken(changes.get("domain")) from exc
    return await get_site_config(ctx.kernel, site_id)


def domain_taken(domain: Any) -> ApiError:
    return ApiError(409, "DOMAIN_TAKEN", f"The domain '{domain}' belongs to another site", path=["domain"])


async def _write(uow: Any, site_id: str, changes: dict[str, Any]) -> None:
    conn, db = uow.conn, uow.db
    await _site_row(conn, site_id)
    if "name" in changes:
        await conn.execute(update(sites).where(sites.c.id == site_id).values(name=changes["name"]))
        uow.action(SITES_EVENT, {"id": site_id, "op": "update"})
    row = await _config_row(db)
    config = dict(row["config"]) if row is not None else {}
    domain = row["domain"] if row is not None else None
    for key, value in changes.items():
        if key == "domain":
            domain = value
        elif key != "name" and value is None:
            config.pop(key, None)
        elif key != "name":
            config[key] = value
    if domain is not None:
        owner = (await conn.execute(select(site_config.c.site_id).where(site_config.c.domain == domain))).scalar()
        if owner is not None and owner != site_id:
            raise domain_taken(domain)
    if row is None:
        await db.insert(site_config, {"domain": domain, "config": config, "updated_at": now_utc()})
    else:
        await db.execute(db.update(site_config).values(domain=domain, config=config, updated_at=now_utc()))
    await audit_record(conn, action="site.update", site_id=site_id, principal=uow.principal,
                       target_type="site", target_id=site_id, details={"fields": sorted(changes)})
    uow.action(CHANGED_EVENT, {"siteId": site_id})


async def site_of_host(kernel: Any, host: str | None) -> str | None:
    """The site whose ``domain`` is ``host`` (cached; unknown hosts too), or None."""
    host = (host or "").strip().lower().rstrip(".")
    if not host or len(host) > 253:
        return None

    async def load(stale: Any) -> str:
        async with kernel.db.connect() as conn:
            found = (await conn.execute(select(site_config.c.site_id)
                                        .where(site_config.c.domain == host))).scalar()
        return found or ""

    found = await kernel.site_caches[DOMAIN_CACHE.name].get_or_load("", host, load)
    return found or None


def forget_domains(kernel: Any) -> Any:
    """The bus handler that empties the ``site_domains`` map (every configuration change, every
    site created or deleted)."""

    def handler(event: str, payload: Any, ctx: Any) -> None:
        kernel.site_caches[DOMAIN_CACHE.name].invalidate(None)

    return handler


async def allowed_origins(kernel: Any, site_id: str) -> list[str]:
    """A site's ``siteUrl`` and ``domain`` are its browser origins."""
    config = await cached_config(kernel, site_id)
    return [value for value in (config.get("siteUrl"), config.get("domain")) if value]

"""Preview sites: with ``syncConfig.preview``, opening or syncing a pull request seeds the site
``<siteId>__pr-<number>`` from the PR's ``svc/manifest.json`` (the config import) and
``svc/content.json`` (``{ "<collection>": [items...] }``, written through the items API with the
cause ``git:<integrationId>/pr-<number>@<sha>``); closing or merging it deletes that site with
the kernel's ``delete_site`` (every plugin's rows of it go, through ``site_deleted``).

The work runs in the job ``git.preview`` (queued in the webhook's transaction, deduplicated per
pull request, the latest action winning), so the webhook answers at once and a provider error is
retried. A seed starts from an empty site: an existing preview is deleted first. A preview site is
a site like any other: isolated by the kernel's tenancy, reachable only by who may reach it (the
instance admin; members of the parent site are not members of it).
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from typing import Any

from sqlalchemy import select

from kernel import ApiError
from kernel.auth.principal import Principal
from kernel.db.meta import iso, now_utc
from kernel.events.tables import events
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from kernel.tenancy.service import SITE_ID, create_site, delete_site, get_site
from plugins.access import api as access_api
from plugins.git import integrations as ig
from plugins.git import providers
from plugins.git.pulls import manifest_of
from plugins.git.tables import deliveries, integrations
from plugins.git.tables import previews as preview_marks
from plugins.items import api as items_api
from plugins.schema import api as schema_api

log = logging.getLogger("svc.git")
JOB = "git.preview"
SWEEP_JOB = "git.previews.sweep"
DELIVERY_DAYS = 30
CONTENT_PATH = "svc/content.json"
MAX_CONTENT = 4 * 1024 * 1024
MAX_ITEMS = 1000
SEED_ACTIONS = {"opened", "synchronize", "reopened", "open", "update", "reopen"}
TEARDOWN_ACTIONS = {"closed", "close", "merge", "merged"}


def preview_site_id(site_id: str, number: int) -> str | None:
    """``<siteId>__pr-<number>``, or None when it would not be a valid site id (too long)."""
    candidate = f"{site_id}__pr-{number}"
    return candidate if SITE_ID.match(candidate) else None


async def is_preview_of(kernel: Any, preview: str, parent: str) -> bool:
    """Whether site ``preview`` exists and is a preview git made for site ``parent``."""
    if await get_site(kernel, preview) is None:
        return False
    async with kernel.db.connect() as conn:
        db = SiteDB(preview, conn)
        return await db.one(db.select(preview_marks).where(preview_marks.c.parent_site_id == parent)) is not None


async def sweep_job(kernel: Any) -> None:
    """Periodic ``git.previews.sweep``: delete the preview sites whose parent site is gone (a
    site's deletion cannot delete other sites inside its own transaction), and forget webhook
    delivery ids older than ``DELIVERY_DAYS`` (a provider redelivers within hours)."""
    async with kernel.db.begin() as conn:
        await conn.execute(deliveries.delete().where(
            deliveries.c.received_at < now_utc() - dt.timedelta(days=DELIVERY_DAYS)))
    async with kernel.db.connect() as conn:
        # Instance-level maintenance: the markers of every preview site, across sites.
        marks = (await conn.execute(select(preview_marks.c.site_id, preview_marks.c.parent_site_id))).all()
    for preview, parent in marks:
        if await get_site(kernel, parent) is None and await get_site(kernel, preview) is not None:
            await delete_site(kernel, preview)
            log.info("git preview %s deleted: its parent site %s is gone", preview, parent)


async def seeder(kernel: Any, preview: str) -> Principal:
    """The principal that seeds a preview site: its built-in admin role (resolved by access)."""
    async with kernel.db.connect() as conn:
        role = await access_api.role_by_system_key(conn, preview, "admin")
    return await kernel.access.resolve(Principal(kind="git", site_id=preview, role_id=role["id"]), preview)


def cause_of(integration_id: str, number: int, sha: str) -> str:
    return f"git:{integration_id}/pr-{number}@{sha[:40]}"


def schema_only(manifest: dict[str, Any]) -> dict[str, Any]:
    """The manifest without its ``webhooks`` and ``settings`` sections: a PR (perhaps from a fork)
    must not make the preview call out to addresses of its choosing or change its settings."""
    return {k: v for k, v in manifest.items() if k not in ("webhooks", "settings", "managedScopes")}


async def queue(uow: Any, row: Any, number: int, action: str, sha: str) -> str | None:
    """Queue a seed or a teardown for a pull-request webhook action, when previews are on."""
    if not (row["sync_config"] or {}).get("preview"):
        return None
    kind = "seed" if action in SEED_ACTIONS else "teardown" if action in TEARDOWN_ACTIONS else None
    if kind is None or preview_site_id(row["site_id"], number) is None:
        return None
    await uow.kernel.jobs.enqueue(JOB, uow=uow, dedupe_key=f"{row['id']}:{number}", replace=True,
                                  site_id=row["site_id"], integration_id=row["id"], number=number, kind=kind, sha=sha)
    return kind


async def preview_job(kernel: Any, site_id: str, integration_id: str, number: int, kind: str, sha: str) -> None:
    """Job ``git.preview``: seed or tear down one pull request's preview site."""
    preview = preview_site_id(site_id, number)
    if preview is None:
        return
    if kind == "teardown":
        await teardown(kernel, site_id, integration_id, number)
        return
    async with kernel.unit_of_work(site_id) as uow:
        row = await uow.db.one(uow.db.select(integrations).where(integrations.c.id == integration_id))
    if row is None or not (row["sync_config"] or {}).get("preview") or row["token"] is None:
        return
    repo = await ig.repo_of(kernel, row)
    manifest, problem = await manifest_of(repo, sha)
    raw = await repo.file(CONTENT_PATH, sha)
    content = _content(raw)
    if await get_site(kernel, preview) is not None:
        if not await is_preview_of(kernel, preview, site_id):
            log.warning("git preview %s not seeded: a site of that id exists and is not its preview", preview)
            return
        await delete_site(kernel, preview)
    await create_site(kernel, preview, f"Preview of {site_id} #{number}")
    async with kernel.unit_of_work(preview) as uow:
        await uow.db.insert(preview_marks, {"parent_site_id": site_id, "integration_id": integration_id,
                                            "number": number, "sha": sha[:64], "seeded_at": now_utc()})
    principal = await seeder(kernel, preview)
    if isinstance(manifest, dict):
        async with kernel.unit_of_work(preview, principal) as uow:
            await schema_api.config_apply(uow, schema_only(manifest), "merge", allow_destructive=True)
    if content:
        # The preview's public role reads what the parent's public role reads, no more.
        async with kernel.unit_of_work(preview) as uow:
            await access_api.copy_public_reads(uow, site_id, sorted(content), f"Public reads of {site_id}")
    ctx = items_api.context(kernel, preview, principal, request_id=f"git-preview-{number}")
    written = 0
    for collection, items in content.items():
        if items:
            await items_api.create_many(ctx, collection, items, cause=cause_of(integration_id, number, sha))
            written += len(items)
    async with kernel.unit_of_work(site_id) as uow:
        await audit.record(uow.conn, action="git.preview.seeded", site_id=site_id, target_type="git_integration",
                           target_id=integration_id, details={"number": number, "siteId": preview, "sha": sha,
                                                              "items": written, "manifest": problem is None})


def _content(raw: bytes | None) -> dict[str, list[dict[str, Any]]]:
    if raw is None:
        return {}
    if len(raw) > MAX_CONTENT:
        raise providers.ProviderError(f"{CONTENT_PATH} is larger than {MAX_CONTENT} bytes")
    try:
        found = json.loads(raw)
    except ValueError:
        raise providers.ProviderError(f"{CONTENT_PATH} is not valid JSON") from None
    if not isinstance(found, dict) or not all(isinstance(v, list) and all(isinstance(i, dict) for i in v)
                                              for v in found.values()):
        raise providers.ProviderError(f"{CONTENT_PATH} must map collection names to lists of items")
    if sum(len(v) for v in found.values()) > MAX_ITEMS:
        raise providers.ProviderError(f"{CONTENT_PATH} holds more than {MAX_ITEMS} items")
    return found


async def disconnect(ctx: Any, integration_id: str) -> None:
    """Delete the integration, then tear down its pull requests' preview sites."""
    for number in await ig.delete(ctx, integration_id):
        await teardown(ctx.kernel, ctx.require_site(), integration_id, number)


async def teardown(kernel: Any, site_id: str, integration_id: str, number: int) -> bool:
    """Delete the preview site, if it exists; True when one was deleted."""
    preview = preview_site_id(site_id, number)
    if preview is None or not await is_preview_of(kernel, preview, site_id):
        return False
    await delete_site(kernel, preview)
    if await get_site(kernel, site_id) is not None:
        async with kernel.unit_of_work(site_id) as uow:
            await audit.record(uow.conn, action="git.preview.torn_down", site_id=site_id,
                               target_type="git_integration", target_id=integration_id,
                               details={"number": number, "siteId": preview})
    return True


async def provenance(ctx: Any, integration_id: str, collection: str, item_id: str,
                     number: int | None) -> list[dict[str, Any]]:
    """The git writes of an item, newest first, from the causes of its writes in the event log
    (``git:<integrationId>/pr-<number>@<sha>``): in this site, or with ``number`` in that pull
    request's preview site (which belongs to this site). The log is pruned by the kernel's
    retention, so older writes drop out."""
    async with ctx.reader() as db:
        await ig.row_of(db, integration_id)
    where = ctx.site_id
    if number is not None:
        where = preview_site_id(ctx.site_id, number)
        if where is None or not await is_preview_of(ctx.kernel, where, ctx.site_id):
            raise ApiError(404, "RECORD_NOT_FOUND", f"No preview site for pull request #{number}")
    prefix = f"git:{integration_id}/"
    async with ctx.kernel.db.connect() as conn:
        db = SiteDB(where, conn)
        rows = await db.all(db.select(events).where(
            events.c.collection == collection, events.c.item_id == item_id,
            events.c.cause.like(prefix.replace("_", "\\_") + "%", escape="\\"))
            .order_by(events.c.id.desc()).limit(100))
    out = []
    for row in rows:
        pr, _, sha = row["cause"][len(prefix):].partition("@")
        found = int(pr[3:]) if pr.startswith("pr-") and pr[3:].isdigit() else None
        out.append({"type": row["type"], "number": found, "sha": sha or None, "siteId": where,
                    "at": iso(row["occurred_at"])})
    return out

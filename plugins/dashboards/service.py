"""Dashboards and panels: create, list, read, change, move and delete (no Falcon).

Who may: ``access.py`` (rules on ``svc_dashboards``). Every query is scoped to the request's
site through ``SiteDB``, so another site's dashboard or panel is 404 ``RECORD_NOT_FOUND``
exactly like a missing one. A panel's query is checked against the writer's whitelist when it
is written (``panels.check``), so a panel cannot be saved naming fields its author may not read.
"""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import func

from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.db.meta import iso, now_utc
from plugins.dashboards import access, live, panels
from plugins.dashboards.bodies import (
    check_query_for_type,
    dashboard_values,
    panel_query,
    panel_values,
    query_from_json,
)
from plugins.dashboards.tables import dashboards
from plugins.dashboards.tables import panels as panel_rows

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def dashboard_record(row: Any, panel_count: int | None = None) -> dict[str, Any]:
    out = {"id": row["id"], "name": row["name"], "icon": row["icon"], "color": row["color"], "note": row["note"],
           "createdBy": row["created_by"], "createdAt": iso(row["created_at"]), "updatedAt": iso(row["updated_at"])}
    if panel_count is not None:
        out["panelCount"] = panel_count
    return out


def panel_record(row: Any) -> dict[str, Any]:
    return {"id": row["id"], "dashboardId": row["dashboard_id"], "name": row["name"], "type": row["type"],
            "position": row["position"], "query": row["query"], "createdAt": iso(row["created_at"]),
            "updatedAt": iso(row["updated_at"])}


def not_found(what: str = "dashboard") -> ApiError:
    return ApiError(404, "RECORD_NOT_FOUND", f"No such {what} in this site")


def _minted(value: str) -> bool:
    """Whether ``value`` could be an id this plugin minted (a UUID): anything else cannot exist,
    and is not sent to the database (PostgreSQL refuses NUL in text)."""
    return bool(_UUID.fullmatch(value))


async def load_dashboard(db: Any, dashboard_id: str) -> Any:
    """The dashboard ``dashboard_id`` of ``db``'s site, or 404."""
    if not _minted(dashboard_id):
        raise not_found()
    row = await db.one(db.select(dashboards).where(dashboards.c.id == dashboard_id))
    if row is None:
        raise not_found()
    return row


async def load_panel(db: Any, dashboard_id: str, panel_id: str) -> Any:
    """The panel ``panel_id`` of dashboard ``dashboard_id`` in ``db``'s site, or 404 (one query:
    the panel row is tied to its dashboard, and both to the site)."""
    if not (_minted(dashboard_id) and _minted(panel_id)):
        raise not_found("panel")
    row = await db.one(db.select(panel_rows).where(panel_rows.c.id == panel_id,
                                                   panel_rows.c.dashboard_id == dashboard_id))
    if row is None:
        raise not_found("panel")
    return row


# ---------------------------------------------------------------------- dashboards

async def list_dashboards(ctx: Any, limit: int, offset: int) -> tuple[list[dict[str, Any]], int]:
    """A page of the site's dashboards, oldest first, each with its ``panelCount``."""
    await access.require(ctx, "read")
    async with ctx.reader() as db:
        total = await db.scalar(db.select(dashboards, func.count()))
        rows = await db.all(db.select(dashboards).order_by(dashboards.c.created_at, dashboards.c.id)
                            .limit(limit).offset(offset))
        counts: dict[str, int] = {}
        if rows:
            counted = await db.all(db.select(panel_rows, panel_rows.c.dashboard_id, func.count().label("n"))
                                   .where(panel_rows.c.dashboard_id.in_([r["id"] for r in rows]))
                                   .group_by(panel_rows.c.dashboard_id))
            counts = {r["dashboard_id"]: int(r["n"]) for r in counted}
    return [dashboard_record(r, counts.get(r["id"], 0)) for r in rows], int(total or 0)


async def get_dashboard(ctx: Any, dashboard_id: str) -> dict[str, Any]:
    """One dashboard with its panels."""
    await access.require(ctx, "read")
    async with ctx.reader() as db:
        row = await load_dashboard(db, dashboard_id)
        found = await _panels_of(db, dashboard_id)
    return {**dashboard_record(row, len(found)), "panels": await _as_seen(ctx, found)}


async def create_dashboard(ctx: Any, body: Any) -> dict[str, Any]:
    await access.require(ctx, "create")
    values = dashboard_values(body, partial=False)
    now = now_utc()
    row = {"id": uuid7(), **values, "created_by": ctx.principal.user_id, "created_at": now, "updated_at": now}
    async with ctx.unit_of_work() as uow:
        await uow.db.insert(dashboards, row)
        live.changed(uow, "create", row["id"], [k for k, v in values.items() if v is not None])
    return {**dashboard_record(row, 0), "panels": []}


async def update_dashboard(ctx: Any, dashboard_id: str, body: Any) -> dict[str, Any]:
    await access.require(ctx, "update")
    values = dashboard_values(body, partial=True)
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await load_dashboard(db, dashboard_id)
        if values:
            await db.execute(db.update(dashboards).where(dashboards.c.id == dashboard_id)
                             .values(**values, updated_at=now_utc()))
            live.changed(uow, "update", dashboard_id, values)
        row = await load_dashboard(db, dashboard_id)
        found = await _panels_of(db, dashboard_id)
    return {**dashboard_record(row, len(found)), "panels": await _as_seen(ctx, found)}


async def delete_dashboard(ctx: Any, dashboard_id: str) -> None:
    """Delete a dashboard and its panels."""
    await access.require(ctx, "delete")
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await load_dashboard(db, dashboard_id)
        await db.execute(db.delete(panel_rows).where(panel_rows.c.dashboard_id == dashboard_id))
        await db.execute(db.delete(dashboards).where(dashboards.c.id == dashboard_id))
        live.changed(uow, "delete", dashboard_id)


# ---------------------------------------------------------------------- panels

async def _panels_of(db: Any, dashboard_id: str) -> list[dict[str, Any]]:
    rows = await db.all(db.select(panel_rows).where(panel_rows.c.dashboard_id == dashboard_id)
                        .order_by(panel_rows.c.created_at, panel_rows.c.id))
    return [panel_record(r) for r in rows]


async def _as_seen(ctx: Any, panels_: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The panels as the caller may see them: a panel whose query names a collection or field the
    caller may not read answers ``query: null`` (its field names and filter values are the
    collection's, not the dashboard's); it still shows, and running it answers 400/403 as ever."""
    if ctx.principal.is_admin:
        return panels_
    out = []
    for panel in panels_:
        if panel["query"] is not None:
            try:
                await panels.check(ctx, query_from_json(panel["query"]), ["query"])
            except ApiError:
                panel = {**panel, "query": None}
        out.append(panel)
    return out


async def list_panels(ctx: Any, dashboard_id: str) -> list[dict[str, Any]]:
    await access.require(ctx, "read")
    async with ctx.reader() as db:
        await load_dashboard(db, dashboard_id)
        found = await _panels_of(db, dashboard_id)
    return await _as_seen(ctx, found)


async def create_panel(ctx: Any, dashboard_id: str, body: Any) -> dict[str, Any]:
    """Add a panel (an ``update`` of its dashboard); its query is checked as the caller runs it."""
    await access.require(ctx, "update")
    values = panel_values(body, partial=False)
    check_query_for_type(values["type"], values["query"])
    async with ctx.reader() as db:
        await load_dashboard(db, dashboard_id)
    if values["query"] is not None:
        await panels.check(ctx, values["query"], ["query"])
    now = now_utc()
    row = {"id": uuid7(), "dashboard_id": dashboard_id, **values,
           "query": None if values["query"] is None else values["query"].to_json(),
           "created_at": now, "updated_at": now}
    async with ctx.unit_of_work() as uow:
        await load_dashboard(uow.db, dashboard_id)
        await uow.db.insert(panel_rows, row)
        await _touch(uow.db, dashboard_id, now)
        live.changed(uow, "update", dashboard_id, ["panels"])
    return panel_record(row)


async def update_panel(ctx: Any, dashboard_id: str, panel_id: str, body: Any) -> dict[str, Any]:
    """Change a panel's name, type, query or ``position`` (a move)."""
    await access.require(ctx, "update")
    values = panel_values(body, partial=True)
    async with ctx.reader() as db:
        current = await load_panel(db, dashboard_id, panel_id)
    panel_type = values.get("type", current["type"])
    query = values["query"] if "query" in values else (
        None if current["query"] is None else query_from_json(current["query"]))
    check_query_for_type(panel_type, query)
    if "query" in values and query is not None:
        await panels.check(ctx, query, ["query"])
    if "query" in values:
        values["query"] = None if query is None else query.to_json()
    now = now_utc()
    async with ctx.unit_of_work() as uow:
        db = uow.db
        await load_panel(db, dashboard_id, panel_id)
        if values:
            await db.execute(db.update(panel_rows).where(panel_rows.c.id == panel_id).values(**values, updated_at=now))
            await _touch(db, dashboard_id, now)
            live.changed(uow, "update", dashboard_id, ["panels"])
        row = await load_panel(db, dashboard_id, panel_id)
    return panel_record(row)


async def delete_panel(ctx: Any, dashboard_id: str, panel_id: str) -> None:
    await access.require(ctx, "update")
    async with ctx.unit_of_work() as uow:
        await load_panel(uow.db, dashboard_id, panel_id)
        await uow.db.execute(uow.db.delete(panel_rows).where(panel_rows.c.id == panel_id))
        await _touch(uow.db, dashboard_id, now_utc())
        live.changed(uow, "update", dashboard_id, ["panels"])


async def _touch(db: Any, dashboard_id: str, now: Any) -> None:
    await db.execute(db.update(dashboards).where(dashboards.c.id == dashboard_id).values(updated_at=now))


# ---------------------------------------------------------------------- running

async def run_panel(ctx: Any, dashboard_id: str, panel_id: str) -> tuple[dict[str, Any], bool]:
    """``({data, meta}, cached)`` of a stored panel, run as the caller."""
    site_id = await access.require(ctx, "read")
    async with ctx.reader() as db:
        row = await load_panel(db, dashboard_id, panel_id)
    if row["query"] is None:
        raise ApiError.validation("A label panel has no query to run", path=["query"])
    return await panels.run(ctx, site_id, query_from_json(row["query"]), ["query"], panel_id=panel_id)


async def preview(ctx: Any, dashboard_id: str, body: Any) -> dict[str, Any]:
    """Dry-run a PanelQuery (the body) on a dashboard the caller may see; never cached."""
    site_id = await access.require(ctx, "read")
    async with ctx.reader() as db:
        await load_dashboard(db, dashboard_id)
    result, _ = await panels.run(ctx, site_id, panel_query(body, []), [], panel_id=None)
    return result

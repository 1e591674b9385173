"""Hook implementations of the dashboards plugin (its table of contents)."""

from __future__ import annotations

from functools import partial
from typing import Any

from kernel import Route, Setting, hookimpl, ops
from kernel.http.params import RecordItem, RecordList
from plugins.dashboards import access, cache, routes, schemas, service
from plugins.dashboards.panels import INVALID_FIELD

name = "dashboards"
requires = ("items",)
description = "Insight dashboards: panels that aggregate a collection's items as the caller."


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_DASHBOARDS_CACHE_TTL", 30.0, cache.parse_ttl,
                    "Seconds a panel's answer is cached per caller access (0 turns the cache off; at most 3600).")]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {INVALID_FIELD: (400, "A panel query names a field that does not exist or that the caller may not "
                                 "read (the same answer for both).")}


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    bump = cache.on_change(kernel)
    for event in cache.INVALIDATING:
        bus.on_action(event, bump)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    listing = ops(get=("List the site's dashboards", None, [schemas.DASHBOARD], 200),
                  post=("Create a dashboard", schemas.DASHBOARD_BODY, schemas.DASHBOARD_DETAIL, 201))
    listing["get"]["parameters"] = list(schemas.LIST_PARAMS)
    run = "Run a panel as the caller: rows { bucket?, group?, value }, meta { executedAt, rowCount, durationMs }"
    # The caller before the body: each write names the svc_dashboards action its service requires.
    may = {action: partial(access.require, action=action) for action in ("read", "create", "update")}
    return [
        Route("/dashboards", RecordList(service.list_dashboards, service.create_dashboard, paged=True),
              auth="bearer", caller={"POST": may["create"]}, openapi=listing),
        Route("/dashboards/{id}",
              RecordItem(service.get_dashboard, service.update_dashboard, service.delete_dashboard),
              auth="bearer", caller={"PATCH": may["update"]}, openapi=ops(
            get=("A dashboard with its panels", None, schemas.DASHBOARD_DETAIL, 200),
            patch=("Change a dashboard", schemas.DASHBOARD_PATCH, schemas.DASHBOARD_DETAIL, 200),
            delete=("Delete a dashboard and its panels", None, None, 204))),
        Route("/dashboards/{id}/panels", routes.PanelsResource(), auth="bearer", caller={"POST": may["update"]},
              openapi=ops(
            get=("The dashboard's panels", None, [schemas.PANEL], 200),
            post=("Add a panel", schemas.PANEL_BODY, schemas.PANEL, 201))),
        # Runs are item reads: they count against the caller's ``items_read`` bucket like /items.
        Route("/dashboards/{id}/panels/preview", routes.PreviewResource(), auth="bearer", rate_limit="items_read",
              caller=may["read"],
              openapi=ops(post=("Dry-run a PanelQuery (the body)", schemas.PANEL_QUERY, [schemas.ROW], 200))),
        Route("/dashboards/{id}/panels/{panel_id}", routes.PanelResource(), auth="bearer",
              caller={"PATCH": may["update"]}, openapi=ops(
            patch=("Change or move a panel", schemas.PANEL_PATCH, schemas.PANEL, 200),
            delete=("Delete a panel", None, None, 204))),
        Route("/dashboards/{id}/panels/{panel_id}/data", routes.PanelDataResource(), auth="bearer",
              rate_limit="items_read", openapi=ops(post=(run, None, [schemas.ROW], 200))),
    ]

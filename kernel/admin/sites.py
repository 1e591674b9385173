"""The kernel's own tenancy hooks: the sites routes and the default site (the ``sites`` cache is
dropped on ``sites.changed`` by kernel/cache/sitecache.py, like every site cache)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel.admin import sites_routes as routes
from kernel.hooks.hookspecs import hookimpl
from kernel.http.openapi import SITE_SCHEMA, ops
from kernel.http.routing import Route
from kernel.tenancy import service

name = "kernel.tenancy"


@hookimpl
def register_migrations() -> str:
    return str(Path(__file__).resolve().parent.parent / "db" / "migrations")


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    site_body = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"}},
                 "required": ["id"], "additionalProperties": False}
    return [
        Route("/sites", routes.SitesResource(kernel), site="none", auth="instance-admin", plugin=name,
              openapi=ops(get=("List sites", None, [SITE_SCHEMA], 200),
                          post=("Create a site", site_body, SITE_SCHEMA, 201))),
        Route("/sites/{site_id}", routes.SiteResource(kernel), site="none", auth="instance-admin", plugin=name,
              openapi=ops(get=("Get a site", None, SITE_SCHEMA, 200),
                          patch=("Rename a site", {"type": "object", "properties": {"name": {"type": "string"}},
                                                   "additionalProperties": False}, SITE_SCHEMA, 200),
                          delete=("Delete a site and all its data", None, None, 204))),
    ]


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    from kernel.events.log import forget_site
    from kernel.policy import audit

    await forget_site(conn, site_id)
    await audit.forget_site(conn, site_id)


@hookimpl(trylast=True)
async def startup(kernel: Any) -> None:
    await service.ensure_default_site(kernel)

"""Hook implementations of the delivery plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from kernel.http.routing import API_PREFIX
from plugins.delivery import caching, routes, schemas, version
from plugins.settings.api import SettingKey

name = "delivery"
requires = ("items", "schema", "settings")


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_DELIVER_SMAXAGE", 60, parse_int(0),
                "Seconds shared caches keep a public delivery answer (s-maxage); 0 disables public caching "
                "(Cache-Control: public, no-cache: every use revalidates with the ETag)."),
        Setting("SVC_DELIVER_SWR", 300, parse_int(0),
                "Seconds a shared cache may serve a stale delivery answer while it revalidates."),
        Setting("SVC_DELIVER_VERSION_TTL", 10.0, parse_float(0.1, 3600),
                "Seconds a worker trusts its cached content version of a site when no change message "
                "arrives (several workers without Redis): the longest an ETag can lag a write."),
        Setting("SVC_RATE_LIMIT_DELIVER", 1200, parse_int(0),
                "Public delivery requests per minute per client IP (bucket `deliver`; 0 disables)."),
    ]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [version.cache_spec(kernel)]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    moved = version.on_change(kernel)
    for event in version.MOVED_BY:
        bus.on_action(event, moved, priority=0)


@hookimpl
def register_middleware(kernel: Any) -> list[Any]:
    return [caching.ErrorsAreNotCached(f"{API_PREFIX}/deliver/")]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    return {"deliver": RateBucket("rate_limit_deliver", 60.0, "ip")}


@hookimpl
def register_setting_keys(kernel: Any) -> list[Any]:
    return [SettingKey("menu.", schemas.check_menu, public=True, type="json",
                       description="A menu served by GET /deliver/menu/<key>: a JSON object or array.")]


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    page = routes.PageResource()
    # Falcon wants one field name per level: ``ref`` is the slug in the first route and the
    # site id in the second (``/deliver/page/:slug`` and ``/deliver/page/:site_id/:slug``), which
    # names its site in the path (Route(site="path"): the kernel resolves it and its public role).
    common = {"auth": "public", "authenticate": False, "rate_limit": "deliver"}
    return [
        Route("/deliver/page/{ref}", page, **common, openapi=ops(
            get=("A page with its sections hydrated (site from X-Svc-Site, subdomain or domain)", None,
                 schemas.PAGE, 200))),
        Route("/deliver/page/{ref}/{slug}", page, site="path", site_param="ref", suffix="site",
              openapi_path="/deliver/page/{site_id}/{slug}", **common, openapi=ops(
            get=("A page of the named site with its sections hydrated", None, schemas.PAGE, 200))),
        Route("/deliver/items/{collection}", routes.ItemsResource(), **common, openapi=ops(
            get=("The public item list (query language, public permissions)", None, [schemas.ITEM], 200))),
        Route("/deliver/menu/{key}", routes.MenuResource(), **common, openapi=ops(
            get=("The menu setting menu.<key>", None, schemas.MENU, 200))),
        Route("/deliver/llms.txt/{site_id}", routes.LlmsTxtResource(), site="path", **common, openapi=ops(
            get=("The site's public pages as an llms.txt index (text/plain)", None, None, 200))),
    ]

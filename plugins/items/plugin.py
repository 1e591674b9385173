"""Hook implementations of the items plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_int
from plugins.items.core import etags, live
from plugins.items.core.guard import caller_may
from plugins.items.errors import ERROR_CODES
from plugins.items.history import events as history_events
from plugins.items.history import retention as history_retention
from plugins.items.history import revisions
from plugins.items.http import openapi as s
from plugins.items.http.routes import (
    DependentsResource,
    ItemResource,
    ItemsResource,
    ResolveDependentsResource,
)
from plugins.items.http.routes_history import history_routes
from plugins.items.http.routes_search import search_routes
from plugins.items.read import counts, drafts, group_counts, readplan
from plugins.items.search import events as search_events
from plugins.items.tables import item_counts, items
from plugins.items.upkeep import (
    indexes,
    pg_statistics,
    planner_stats,
    schema_hooks,
    search_backfill,
    small_indexes,
)

name = "items"
# The kernel refuses to start without this plugin: other features read data through it.
essential = True
requires = ("schema", "access")
# Anyone may call: the site's permissions decide (anonymous callers act with the public role).
AUTH = "public"
READ_WRITE_LIMITS = {"GET": "items_read", "*": "items_write"}


@hookimpl
def register_settings() -> list[Setting]:
    return [Setting("SVC_ITEMS_INDEX_MIN_ITEMS", 1000, parse_int(0),
                    "Live items a collection holds before its non-unique field indexes are made "
                    "(0: with the field). Each index weighs on every write and plan of the one "
                    "items table, so many sites of small collections must not each have theirs."),
            Setting("SVC_RATE_LIMIT_ITEMS_READ", 6000, parse_int(0), "Item reads per minute per user (0 disables)."),
            Setting("SVC_RATE_LIMIT_ITEMS_WRITE", 600, parse_int(0), "Item writes per minute per user (0 disables)."),
            Setting("SVC_MAX_BATCH", 1000, parse_int(1), "Most items one bulk create may carry.")]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """Item reads and writes per minute, per user or API key and site (``SVC_RATE_LIMIT_ITEMS_*``,
    docs/settings.md)."""
    return {"items_read": RateBucket("rate_limit_items_read", 60.0, "principal"),
            "items_write": RateBucket("rate_limit_items_write", 60.0, "principal")}


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {**ERROR_CODES, **revisions.ERROR_CODES, **etags.ERROR_CODES}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    # The caller before the body: a write names the action its service requires first.
    create, update = caller_may("create"), caller_may("update")
    return [
        *history_routes(AUTH),  # revisions, revert, versions, pins (routes_history.py)
        *search_routes(kernel),  # GET /search (routes_search.py)
        Route("/items/{collection}", ItemsResource(kernel), auth=AUTH, rate_limit=READ_WRITE_LIMITS,
              caller={"POST": create, "PATCH": caller_may("create", "update", denied_as="write")}, openapi=s.with_params(ops(
                  get=("List items (a singleton: its item)", None, s.COLLECTION_READ, 200),
                  post=("Create an item, or many (array) in one transaction", s.CREATE_BODY, s.CREATED, 201),
                  patch=("Create or update a singleton's item", s.ITEM_BODY, s.ITEM, 200)), "get", s.LIST_PARAMS)),
        Route("/items/{collection}/{item_id}", ItemResource(kernel), auth=AUTH, rate_limit=READ_WRITE_LIMITS,
              caller={"PATCH": update, "PUT": update}, openapi=s.conditional(s.with_params(ops(
                  get=("Get an item", None, s.ITEM, 200),
                  patch=("Update an item's given fields", s.ITEM_BODY, s.ITEM, 200),
                  put=("Replace an item's content", s.ITEM_BODY, s.ITEM, 200),
                  delete=("Soft-delete an item (onDelete enforced)", None, None, 204)), "get", s.ITEM_PARAMS))),
        Route("/items/{collection}/{item_id}/dependents", DependentsResource(kernel), auth=AUTH,
              rate_limit="items_read", openapi=ops(
                  get=("The items referencing this one, by relation", None, s.DESCRIPTOR, 200))),
        Route("/items/{collection}/{item_id}/resolve-dependents", ResolveDependentsResource(kernel), auth=AUTH,
              rate_limit="items_write", caller=caller_may("read"), openapi=ops(
                  post=("Set null, reassign or delete one relation's dependents", s.RESOLVE_BODY, s.RESOLVED,
                        200))),
    ]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [readplan.READ_PLAN_CACHE]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """Schema changes that need the items' data (filters) and field indexes (actions); each
    committed item write's live signal (``core/live.py``)."""
    for op in live.OPERATIONS:
        bus.on_action(f"items.{op}", live.publish)
    bus.on_filter("fields.type_change", schema_hooks.on_type_change)
    bus.on_filter("fields.create", schema_hooks.on_field_create)
    bus.on_filter("fields.update", schema_hooks.on_field_update)
    bus.on_filter("fields.delete", schema_hooks.on_field_delete)
    bus.on_filter("schema.data_check", schema_hooks.on_data_check)
    maintain = indexes.on_field_change(kernel)
    for event in ("fields.create", "fields.update", "fields.delete"):
        bus.on_action(event, maintain)
    history_events.register(bus)  # revisions, pins, translations checks on item writes
    search_events.register(bus)  # the search index, written in each write's transaction
    planner_stats.register(bus, kernel)  # SQLite: ANALYZE as the items grow
    counts.register(bus, kernel)  # PostgreSQL: fold the item counts' delta rows
    group_counts.register_handlers(bus, kernel)  # PostgreSQL: kept group counts, and their folding
    indexes.register(bus, kernel)  # SVC_ITEMS_INDEX_MIN_ITEMS: indexes of grown collections


@hookimpl
def register_commands(subparsers: Any, kernel_factory: Any) -> None:
    """``svc items drop-small-indexes``: the field indexes of small collections that earlier
    deployments made (small_indexes.py)."""
    small_indexes.register_command(subparsers, kernel_factory)


@hookimpl
def register_middleware(kernel: Any) -> list[Any]:
    """``X-Svc-Draft`` / ``X-Svc-Locale`` of item reads, parsed onto the request (drafts.py)."""
    return [drafts.ReadOptionsMiddleware()]


@hookimpl
def startup(kernel: Any) -> None:
    """Index items the search index misses and refresh SQLite's planner statistics, in the
    background (search_backfill.py, planner_stats.py); make PostgreSQL's expression statistics
    for the fields that exist (pg_statistics.py)."""
    search_backfill.start(kernel)
    planner_stats.start(kernel)
    pg_statistics.start(kernel)
    counts.start(kernel)
    group_counts.start(kernel)
    indexes.start(kernel)


@hookimpl
async def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    """The site's items go first, so the triggers' count deltas they leave (``svc_item_counts``
    has no foreign key: it is written by triggers) can go with the rest of the counts."""
    await conn.execute(delete(items).where(items.c.site_id == site_id))
    await conn.execute(delete(item_counts).where(item_counts.c.site_id == site_id))
    await group_counts.forget_site(conn, site_id)


@hookimpl
async def shutdown(kernel: Any) -> None:
    await search_backfill.stop(kernel)
    await planner_stats.stop(kernel)
    await pg_statistics.stop(kernel)
    await counts.stop(kernel)
    await group_counts.stop(kernel)
    await indexes.stop(kernel)


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``revisions`` (the privacy plugin applies the horizon; docs/privacy.md)."""
    return [history_retention.TARGET]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``groupCounts``: the kept per-value counts of the subject's values (the erased items and
    their history go in ``plugins.items.api.erase`` itself)."""
    from kernel.policy.privacy import ErasureTarget
    from plugins.items.erase import erase_group_counts

    return [ErasureTarget("groupCounts", erase_group_counts, "Kept grouped counts of values only the subject held.")]

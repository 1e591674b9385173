"""Hook implementations of the cdc plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl, ops
from kernel.base.settings import parse_float, parse_int
from kernel.policy.access import AccessAction
from kernel.policy.privacy import RetentionTarget
from plugins.cdc import config_section, guard, routes, schemas, upkeep, webhooks
from plugins.cdc import routes_subscriptions as rs

name = "cdc"
requires = ("access",)

ERROR_CODES: dict[str, tuple[int, str]] = {
    "CURSOR_EXPIRED": (410, "A change-feed cursor past retention; extensions.earliestCursor is where to resume."),
    "ACK_REGRESSION": (409, "A pull subscription's ack moved its position backwards."),
}


DEFAULT_SCHEDULE = (5.0, 30.0, 120.0, 600.0, 1800.0, 7200.0, 21600.0, 43200.0, 86400.0)


def parse_schedule(raw: str) -> tuple[float, ...]:
    """``SVC_CDC_RETRY_SCHEDULE``: comma list of seconds between tries, 1 to 20 of them."""
    values = tuple(parse_float(0.01, 7 * 86400)(part) for part in raw.split(","))
    if not 1 <= len(values) <= 20:
        raise ValueError("must list 1 to 20 delays")
    return values


@hookimpl
def register_access_actions(kernel: Any) -> list[AccessAction]:
    return [AccessAction(guard.CAPABILITY, "Subscribe to the change feed (collection *).", capability=True)]


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_RATE_LIMIT_CDC", 600, parse_int(0),
                "Change-feed requests per minute, per principal and site (bucket `cdc`; 0 disables)."),
        Setting("SVC_CDC_RETRY_SCHEDULE", DEFAULT_SCHEDULE, parse_schedule,
                "Seconds before each retry of a failed webhook delivery (comma list); when they are "
                "exhausted the subscription is dead."),
        Setting("SVC_CDC_CONNECT_TIMEOUT", 5.0, parse_float(0.1, 60), "Seconds to connect to a webhook endpoint."),
        Setting("SVC_CDC_READ_TIMEOUT", 15.0, parse_float(0.1, 50),
                "Seconds to wait for a webhook endpoint's answer (below SVC_EVENTS_LEASE_SECONDS)."),
        Setting("SVC_CDC_WEBHOOK_BATCH", 100, parse_int(1), "Most events in one webhook delivery."),
    ]


@hookimpl
def register_event_consumers(kernel: Any) -> list[Any]:
    return [webhooks.consumer_group(kernel)]


@hookimpl
def register_site_caches(kernel: Any) -> list[Any]:
    return [webhooks.MEMBERS_CACHE]


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.periodic("cdc.upkeep", upkeep.run, every_seconds=3600, owner="cdc")


@hookimpl
def config_sections(kernel: Any) -> list[Any]:
    return [config_section.WebhooksSection(kernel)]


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    """Change-feed pulls per minute, per user or API key and site (a long poll counts once)."""
    return {"cdc": RateBucket("rate_limit_cdc", 60.0, "principal")}


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    get = ops(get=("Page through the site's change events (keyset cursor, optional long poll)", None,
                   [schemas.EVENT], 200))
    get["get"]["parameters"] = list(schemas.EVENTS_PARAMS)
    get["get"]["responses"]["200"]["content"]["application/json"]["schema"]["properties"]["meta"] = \
        schemas.EVENTS_META
    one = "/cdc/subscriptions/{id}"
    return [
        Route("/cdc/events", routes.EventsResource(kernel), auth="bearer", rate_limit="cdc", openapi=get),
        Route("/cdc/subscriptions", rs.SubscriptionsResource(), auth="admin", openapi=ops(
            get=("List the change-feed subscriptions with their lag", None, [schemas.SUBSCRIPTION], 200),
            post=("Create a pull or webhook subscription (at most 50 per site)", schemas.SUBSCRIPTION_BODY,
                  schemas.SUBSCRIPTION, 201))),
        Route(one, rs.SubscriptionResource(), auth="admin", openapi=ops(
            get=("A subscription with its lag", None, schemas.SUBSCRIPTION, 200),
            patch=("Change its filters, url or secret; pause or resume", schemas.SUBSCRIPTION_PATCH,
                   schemas.SUBSCRIPTION, 200),
            delete=("Delete it (audited)", None, None, 204))),
        Route(one + "/ack", rs.AckResource(), auth="bearer", rate_limit="cdc", openapi=ops(
            post=("Commit a pull subscription's position (forward only)", schemas.ACK_BODY,
                  schemas.SUBSCRIPTION, 200))),
        Route(one + "/replay", rs.ReplayResource(), auth="admin", openapi=ops(
            post=("Rewind inside retention, from a cursor or a time; revives dead and stale (audited)",
                  schemas.REPLAY_BODY, schemas.SUBSCRIPTION, 200))),
        Route(one + "/dispatch", rs.DispatchResource(), auth="admin", openapi=ops(
            post=("Deliver a webhook's pending events now", None, schemas.DISPATCH, 202))),
        Route(one + "/deliveries", rs.DeliveriesResource(), auth="admin", openapi=ops(
            get=("Delivery attempts, newest first", None, [schemas.DELIVERY], 200))),
    ]


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``changeFeedEvents``: the site's events in the log (default ``SVC_CDC_RETENTION_DAYS``;
    the kernel's hourly prune still applies that global bound, a site may only shorten it)."""
    async def prune(kernel: Any, site_id: str, before: Any) -> int:
        return await kernel.events.prune_before(site_id, before)

    async def pending(kernel: Any, before: Any, site_ids: Any = None) -> set[str]:
        return set(await kernel.events.sites_to_prune(before, site_ids))

    return [RetentionTarget("changeFeedEvents", int(kernel.settings.cdc_retention_days), prune,
                            "Change-feed events (ids and field names only) of the site.", pending=pending)]


@hookimpl
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Where this plugin keeps sealed secrets (a webhook's signing secret): checked at start (kernel/sealed.py)."""
    from plugins.cdc.tables import subscriptions

    return [subscriptions.c.secret]

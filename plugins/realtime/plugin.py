"""Hook implementations of the realtime plugin (its table of contents)."""

from __future__ import annotations

import types
from typing import Any

from kernel import RateBucket, Route, Setting, hookimpl
from kernel.base.settings import parse_float, parse_int
from kernel.messaging.slots import connection_limiter
from plugins.realtime import channel, notifications, push, routes, schemas, tickets

name = "realtime"
requires = ("accounts", "access", "items")

ERROR_CODES: dict[str, tuple[int, str]] = {
    "PUSH_NOT_CONFIGURED": (404, "No VAPID key pair is configured (SVC_VAPID_PUBLIC_KEY, SVC_VAPID_PRIVATE_KEY, "
                                 "SVC_VAPID_SUBJECT)."),
    "SUBSCRIBE_FORBIDDEN": (403, "A realtime frame (not HTTP): subscribing to a collection outside the ticket."),
    "TOO_MANY_SUBSCRIPTIONS": (429, "A realtime frame (not HTTP): the connection holds "
                                    "SVC_REALTIME_MAX_SUBSCRIPTIONS subscriptions already."),
    "CLIENT_TOO_SLOW": (408, "A realtime socket closed with 4408: the client did not read its frames."),
}


@hookimpl
def register_settings() -> list[Setting]:
    return [
        Setting("SVC_REALTIME_MAX_CONNECTIONS", 50, parse_int(0),
                "Concurrent realtime WebSocket connections per site, across workers (Redis); 0: no limit."),
        Setting("SVC_REALTIME_MAX_SUBSCRIPTIONS", 100, parse_int(1),
                "Subscriptions one realtime connection may hold."),
        Setting("SVC_REALTIME_PING_SECONDS", 25.0, parse_float(0.05, 3600),
                "Idle seconds after which the realtime channel sends a ping frame."),
        Setting("SVC_REALTIME_SEND_TIMEOUT_SECONDS", 10.0, parse_float(0.05, 600),
                "Seconds a realtime client may take to accept a frame before it is closed with 4408."),
        Setting("SVC_REALTIME_QUEUE_SIZE", 256, parse_int(1),
                "Frames waiting for one realtime client before it is closed with 4408."),
        Setting("SVC_REALTIME_LEASE_SECONDS", 60.0, parse_float(1.0, 3600),
                "Lease of a connection slot in Redis, renewed every third; a dead worker's slots expire after it."),
        Setting("SVC_RATE_LIMIT_REALTIME_TICKETS", 60, parse_int(0),
                "Realtime tickets per minute, per principal and site (bucket `realtime_tickets`; 0 disables)."),
        Setting("SVC_RATE_LIMIT_PUSH", 60, parse_int(0),
                "Push subscription writes and tests per minute, per principal and site (bucket `push`; 0 disables)."),
        Setting("SVC_VAPID_PUBLIC_KEY", "", push.parse_public_key,
                "Web push application-server public key (base64url uncompressed P-256 point; `svc push keygen`)."),
        Setting("SVC_VAPID_PRIVATE_KEY", "", push.parse_private_key,
                "Web push private key (base64url of 32 bytes; `svc push keygen`).", secret=True),
        Setting("SVC_VAPID_SUBJECT", "", push.parse_subject,
                "VAPID contact (`mailto:ops@example.com` or an https URL), the JWT's `sub`."),
    ]


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return dict(ERROR_CODES)


@hookimpl
def register_rate_limits(kernel: Any) -> dict[str, RateBucket]:
    return {"realtime_tickets": RateBucket("rate_limit_realtime_tickets", 60.0, "principal"),
            "push": RateBucket("rate_limit_push", 60.0, "principal")}


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    return [
        Route("/realtime/ticket", routes.TicketResource(kernel, tickets.STUDIO), rate_limit="realtime_tickets",
              openapi=schemas.ticket_op("A studio ticket for the realtime channel (one minute, one use)")),
        Route("/realtime/audience-ticket", routes.TicketResource(kernel, tickets.AUDIENCE),
              rate_limit="realtime_tickets",
              openapi=schemas.ticket_op("An end-user ticket for the realtime channel (one minute, one use)")),
        Route("/realtime", channel.RealtimeSocket(kernel), auth="public", tickets=True),
        Route("/push/vapid-public-key", routes.VapidKeyResource(kernel), site="optional",
              openapi=schemas.VAPID_OP),
        Route("/push/status", routes.PushStatusResource(kernel), openapi=schemas.STATUS_OP),
        Route("/push/test", routes.PushTestResource(kernel), rate_limit="push", openapi=schemas.TEST_OP),
        Route("/push/subscriptions", routes.PushSubscriptionsResource(kernel), rate_limit="push",
              openapi=schemas.SUBSCRIPTIONS_OPS),
        Route("/notifications", routes.NotificationsResource(kernel), openapi=schemas.NOTIFICATIONS_OP),
        Route("/notifications/{notification_id}", routes.NotificationResource(kernel),
              openapi=schemas.NOTIFICATION_OP),
    ]


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """``realtime.notify``: notifications asked for by plugins that do not require this one."""
    bus.on_filter(notifications.NOTIFY_EVENT, notifications.on_notify_request)


@hookimpl
async def authenticate_ticket(ticket: str, request: Any, kernel: Any, route: Any) -> Any:
    return await tickets.redeem(kernel, ticket, request)


@hookimpl
def register_jobs(jobs: Any, kernel: Any) -> None:
    jobs.task(push.FANOUT_JOB, push.fanout, retries=3, retry_delay=10, owner=name)
    jobs.task(push.SEND_JOB, push.send_retry, retries=0, owner=name)


@hookimpl
def register_commands(subparsers: Any, kernel_factory: Any) -> None:
    cmd = subparsers.add_parser("push", help="web push: `svc push keygen` prints a new VAPID key pair")
    actions = cmd.add_subparsers(dest="push_command", required=True)
    keygen = actions.add_parser("keygen", help="print a new VAPID key pair as SVC_VAPID_* lines")

    def run(args: Any) -> int:
        public, private = push.new_key_pair()
        print(f"SVC_VAPID_PUBLIC_KEY={public}")
        print(f"SVC_VAPID_PRIVATE_KEY={private}")
        return 0

    keygen.set_defaults(func=run)


@hookimpl
async def startup(kernel: Any) -> None:
    push.check_keys(kernel)
    limiter = connection_limiter(kernel, "realtime", kernel.settings.get("realtime_max_connections"),
                                 kernel.settings.get("realtime_lease_seconds"))
    limiter.start()
    kernel.state["realtime"] = types.SimpleNamespace(limiter=limiter)


@hookimpl
async def shutdown(kernel: Any) -> None:
    state = kernel.state.pop("realtime", None)
    if state is not None:
        await state.limiter.stop()


@hookimpl
def register_retention_targets(kernel: Any) -> list[Any]:
    """``notifications`` (handled ones; the privacy plugin applies the horizon)."""
    return [notifications.RETENTION_TARGET]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``notifications`` quoting the subject and the subject's web push subscriptions."""
    from kernel.policy.privacy import rows_target
    from plugins.realtime.tables import notifications as n
    from plugins.realtime.tables import push_subscriptions as p

    return [rows_target("notifications", n, [n.c.title, n.c.body, n.c.deep_link, n.c.entity_id],
                        "Notifications whose title, text or link quote the subject, or meant for them.",
                        user_column=n.c.recipient_id),
            rows_target("pushSubscriptions", p, [], "Web push subscriptions of the subject's accounts.",
                        user_column=p.c.user_id)]

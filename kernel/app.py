"""The app factory: ``create_app(settings=None, plugins=None)`` builds one Falcon ASGI app.

Each app has its own plugin manager, database engine, bus, cache, storage, mailer, job queue
and rate limiter, so tests (and several apps in one process) never share state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

import falcon
import falcon.asgi

from kernel.admin.work import WorkLog
from kernel.auth.usercache import USER_CACHE
from kernel.base import outbound
from kernel.base.errors import KERNEL_ERROR_CODES
from kernel.base.secrets import Secrets
from kernel.base.settings import Settings
from kernel.cache import make_cache
from kernel.cache.sitecache import SiteCaches, SiteCacheSpec
from kernel.core.context import Kernel
from kernel.db import Database
from kernel.db.engine import db_timeouts, default_sqlite_path
from kernel.events import EventLog
from kernel.hooks.plugins import call_all, make_plugin_manager
from kernel.http.cors import CorsMiddleware
from kernel.http.errors import install_error_handlers
from kernel.http.extsink import SINK_PATTERN, ExtensionRoutes, ExtensionSink
from kernel.http.media import json_handler
from kernel.http.middleware import RequestGuardMiddleware, RequestIdMiddleware, RouteGateMiddleware
from kernel.http.openapi import OpenApiResource
from kernel.http.ratelimit import check_route_buckets, collect_rate_buckets, make_rate_limiter
from kernel.http.router import SvcRouter
from kernel.http.routing import Route, RouteTable
from kernel.http.websocket import WebSocketGateMiddleware
from kernel.jobs import JobQueue
from kernel.mailer import make_mailer
from kernel.messaging.bus import Bus
from kernel.messaging.topics import Topics
from kernel.metrics.live import register_live_metrics
from kernel.metrics.requests import MetricsMiddleware
from kernel.metrics.stored import register_stored_metrics
from kernel.policy.access import ACCESS_CACHE, AccessControl
from kernel.redisio.redis_fallback import RedisCircuit
from kernel.redisio.redis_writes import RedisWrites
from kernel.storage import make_storage
from kernel.workers.broker import BrokerClient, broker_url
from kernel.workers.fanout_gate import FanoutGate

log = logging.getLogger("svc.app")


def database_url(settings: Settings) -> str:
    return settings.database_url or f"sqlite:///{default_sqlite_path(settings.data_path)}"


def build_kernel(settings: Settings | None = None, plugins: Iterable[Any] | None = None) -> Kernel:
    """Everything but the HTTP app: plugin manager, settings of plugins, services."""
    settings = settings or Settings.from_env()
    pm, infos = make_plugin_manager(settings.plugins_disabled, plugins, settings.trace_hooks,
                                    extra=settings.plugins_extra)
    declared = [s for group in pm.hook.register_settings() for s in (group or [])]
    settings.load_plugin_settings(declared)
    # One state of SVC_REDIS_URL for every part of this process that uses it (kernel.redisio.redis_fallback).
    circuit = RedisCircuit(probe_lease=3 * settings.redis_timeout + 1.0)
    # Without Redis, the workers of ``svc serve --workers N`` share the node's broker instead
    # (kernel/workers/broker.py): the bus, the topics and their writes take its URL where Redis's would go.
    bus_channel = f"{settings.redis_namespace}:bus"
    broker = None
    fanout_url = settings.redis_url
    if not settings.redis_url and settings.broker_socket:
        broker = BrokerClient(settings.broker_socket, timeout=settings.redis_timeout, gen_channels=(bus_channel,))
        fanout_url = broker_url(settings.broker_socket)
    writes = RedisWrites(fanout_url, redis_timeout=settings.redis_timeout, client=broker) if fanout_url else None
    kernel = Kernel(
        settings=settings,
        pm=pm,
        plugins=infos,
        db=Database(database_url(settings), pool_timeout=settings.db_pool_timeout, **db_timeouts(settings)),
        bus=Bus(fanout_url, channel=bus_channel, redis_timeout=settings.redis_timeout,
                circuit=circuit, writes=writes, client=broker),
        cache=make_cache(settings, circuit, writes),
        storage=make_storage(settings),
        mailer=make_mailer(settings),
        jobs=JobQueue(settings, name=settings.redis_namespace),
        rate_limiter=make_rate_limiter(settings, circuit, broker),
        site_caches=SiteCaches(settings.site_cache_sizes),
        secrets=Secrets.from_settings(settings),
        redis_circuit=circuit,
        redis_writes=writes,
        broker=broker,
    )
    kernel.bus.kernel = kernel
    if broker is not None:
        kernel.fanout_gate = FanoutGate(settings.broker_socket)
        kernel.bus.gate = kernel.fanout_gate
    declare_site_caches(kernel)
    kernel.topics = Topics(fanout_url, namespace=settings.redis_namespace,
                           queue_size=settings.topic_queue_size, redis_timeout=settings.redis_timeout,
                           circuit=circuit, writes=writes, client=broker)
    kernel.access = AccessControl(kernel)
    kernel.work = WorkLog(kernel)
    kernel.error_codes = dict(KERNEL_ERROR_CODES)
    for codes in pm.hook.register_error_codes():
        kernel.error_codes.update(codes or {})
    # In every process, not only with an HTTP app: an extension's routes name buckets, and are
    # checked against them wherever the extension loads (svc worker included).
    kernel.rate_buckets = collect_rate_buckets(pm, kernel)
    pm.hook.register_event_handlers(bus=kernel.bus, kernel=kernel)
    kernel.events = EventLog(kernel)
    for consumers in pm.hook.register_event_consumers(kernel=kernel):
        for consumer in consumers or []:
            kernel.events.register(consumer)
    kernel.jobs.periodic("events.prune", prune_events, every_seconds=3600, owner="kernel")
    pm.hook.register_jobs(jobs=kernel.jobs, kernel=kernel)
    for checks in pm.hook.register_health_checks(kernel=kernel):
        kernel.health_checks.update(checks or {})
    return kernel


def declare_site_caches(kernel: Kernel) -> None:
    """The kernel's caches and every plugin's, checked against ``SVC_SITE_CACHE_SIZES``, then
    subscribed to their invalidation events."""
    from kernel.tenancy.service import SITE_CACHE

    specs: list[SiteCacheSpec] = [SITE_CACHE, ACCESS_CACHE, USER_CACHE]
    for group in kernel.pm.hook.register_site_caches(kernel=kernel):
        specs.extend(group or [])
    for spec in specs:
        kernel.site_caches.declare(spec)
    kernel.site_caches.check_sizes()
    kernel.site_caches.subscribe(kernel.bus)


async def prune_events(kernel: Kernel) -> None:
    """The hourly job that applies ``SVC_CDC_RETENTION_DAYS`` to the event log."""
    await kernel.events.prune()


def _collect_routes(kernel: Kernel) -> list[Route]:
    routes: list[Route] = []
    for impl in reversed(kernel.pm.hook.register_routes.get_hookimpls()):
        for route in impl.function(kernel=kernel) or []:
            route.plugin = route.plugin or impl.plugin_name
            routes.append(route)
    routes.append(Route("/openapi.json", OpenApiResource(kernel), site="none", auth="public", plugin="kernel"))
    return routes


class SvcApp(falcon.asgi.App):
    """Falcon's ASGI app with the kernel it serves attached as ``app.kernel``."""

    kernel: Kernel


class LifespanMiddleware:
    """ASGI lifespan: start the kernel's services and run ``startup`` hooks; stop them after."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

    async def process_startup(self, scope: Any, event: Any) -> None:
        await startup_kernel(self.kernel)

    async def process_shutdown(self, scope: Any, event: Any) -> None:
        await shutdown_kernel(self.kernel)


async def startup_kernel(kernel: Kernel) -> None:
    """Connect the bus, bind the job queue, run every plugin's ``startup``."""
    if kernel.started:
        return
    await kernel.bus.start()
    await kernel.topics.start()
    kernel.jobs.bind(kernel, asyncio.get_running_loop())
    await call_all(kernel.pm.hook.startup, kernel=kernel)
    if kernel.settings.jobs_inprocess and not kernel.settings.redis_url:
        kernel.state["consumer"] = start_consumer_if_leader(kernel)
    await kernel.events.start()  # the durable consumers' dispatcher (when any is registered)
    kernel.started = True


def start_consumer_if_leader(kernel: Kernel) -> Any:
    """Start the in-process job consumer in one worker process only.

    Without Redis (the embedded default), ``svc serve`` consumes the job queue itself. Claims
    and periodic ticks are safe with any number of consumers, but on SQLite each claim takes
    the write lock: an exclusive lock on a file in the data dir elects the one worker process
    that consumes, so the others do not compete with requests for it.
    """
    import fcntl

    lock = open(kernel.settings.data_path / "queue.lock", "w")  # noqa: SIM115 - held for the app's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    kernel.jobs.start_consumer()
    return lock


async def shutdown_kernel(kernel: Kernel) -> None:
    if not kernel.started:
        return
    kernel.started = False
    await kernel.jobs.stop_consumer()  # running jobs are given back to the queue
    await kernel.events.stop()
    lock = kernel.state.pop("consumer", None)
    if lock is not None:
        lock.close()
    await call_all(kernel.pm.hook.shutdown, kernel=kernel)
    await outbound.close_clients(kernel)
    await kernel.topics.stop()
    await kernel.bus.stop()
    if kernel.redis_writes is not None:
        await kernel.redis_writes.aclose()
    await kernel.cache.close()
    await kernel.rate_limiter.close()
    await kernel.db.dispose()


def create_app(settings: Settings | None = None, plugins: Iterable[Any] | None = None) -> SvcApp:
    """The ASGI app for ``settings`` (default: from the environment) and ``plugins``
    (default: every installed plugin not in ``SVC_PLUGINS_DISABLED``)."""
    kernel = build_kernel(settings, plugins)
    table = RouteTable()
    kernel.routes = _collect_routes(kernel)
    check_route_buckets(kernel.routes, kernel.rate_buckets)
    gate = RouteGateMiddleware(kernel, table)
    middleware: list[Any] = [
        LifespanMiddleware(kernel),
        RequestIdMiddleware(kernel),
        MetricsMiddleware(kernel),
        CorsMiddleware(kernel),
        RequestGuardMiddleware(kernel, table),
        gate,
        WebSocketGateMiddleware(kernel, table, gate),
    ]
    for impl in kernel.pm.hook.register_middleware.get_hookimpls():  # registration order
        middleware.extend(impl.function(kernel=kernel) or [])
    router = SvcRouter()  # built at finish() below; reuses this process's tree for the same templates
    app = SvcApp(middleware=middleware, router=router)
    app.req_options.strip_url_path_trailing_slash = True
    app.req_options.auto_parse_qs_csv = False
    handler = json_handler()
    app.req_options.media_handlers[falcon.MEDIA_JSON] = handler
    app.resp_options.media_handlers[falcon.MEDIA_JSON] = handler
    for route in kernel.routes:
        table.add(route)
        if route.suffix:
            app.add_route(route.template, route.resource, suffix=route.suffix)
        else:
            app.add_route(route.template, route.resource)
    router.finish()
    # Routes that come and go at run time (uploaded extensions) go through one sink.
    kernel.extension_routes = ExtensionRoutes()
    app.add_sink(ExtensionSink(kernel, gate), SINK_PATTERN)
    install_error_handlers(app, kernel)
    register_live_metrics(kernel)
    register_stored_metrics(kernel)
    app.kernel = kernel
    return app

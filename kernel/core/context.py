"""The services handed to hooks (``Kernel``) and the per-request context (``RequestContext``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kernel.auth.principal import ANONYMOUS, Principal
from kernel.base.errors import ApiError
from kernel.core.uow import UnitOfWork
from kernel.tenancy.scope import SiteDB

if TYPE_CHECKING:
    import pluggy

    from kernel.base.secrets import Secrets
    from kernel.base.settings import Settings
    from kernel.cache import Cache
    from kernel.cache.sitecache import SiteCaches
    from kernel.db import Database
    from kernel.hooks.plugins import PluginInfo
    from kernel.jobs import JobQueue
    from kernel.mailer import Mailer
    from kernel.messaging.bus import Bus
    from kernel.messaging.topics import Topics
    from kernel.storage import Storage



@dataclass
class Kernel:
    """Everything a plugin may use: settings, plugin manager, database, bus, cache, storage,
    mailer, jobs, the rate limiter, the live topics, the bounded per-site caches (``site_caches``)
    and the secrets keyring (``secrets``). One per app; no global state."""

    settings: Settings
    pm: pluggy.PluginManager
    plugins: list[PluginInfo]
    db: Database
    bus: Bus
    cache: Cache
    storage: Storage
    mailer: Mailer
    jobs: JobQueue
    rate_limiter: Any
    site_caches: SiteCaches
    secrets: Secrets
    access: Any = None
    events: Any = None  # kernel.events.EventLog
    work: Any = None  # kernel.admin.work.WorkLog: a site's long work with its progress (GET /work)
    routes: list[Any] = field(default_factory=list)
    rate_buckets: dict[str, Any] = field(default_factory=dict)
    error_codes: dict[str, tuple[int, str]] = field(default_factory=dict)
    health_checks: dict[str, Any] = field(default_factory=dict)
    state: dict[str, Any] = field(default_factory=dict)
    extension_routes: Any = None  # kernel.http.extsink.ExtensionRoutes: routes mounted at run time
    started: bool = False
    topics: Topics = None  # type: ignore[assignment]  # set by build_kernel: live per-site signals
    # This process's state of SVC_REDIS_URL, shared by every part using it (kernel.redisio.redis_fallback):
    # a plugin's own Redis-backed part takes ``kernel.redis_circuit.part(component, fallback)``.
    redis_circuit: Any = None
    # ``kernel.redis_writes``: the process's Redis writes sent together (the bus's and the topics'
    # PUBLISH, the cache's bumps), a ``kernel.redisio.redis_writes.RedisWrites``; None without Redis.
    redis_writes: Any = None
    # Without Redis, under ``svc serve --workers N``: the node's broker (``kernel.workers.broker.BrokerClient``)
    # and the gate that holds a request until the other workers' cache drops are applied here.
    broker: Any = None
    fanout_gate: Any = None

    def unit_of_work(self, site_id: str | None, principal: Any = None, request_id: str | None = None,
                     cause: str | None = None, *, inline: bool = False) -> UnitOfWork:
        """One transaction; its durable events commit with it, its actions run after commit.
        ``inline``: it runs only short statements by key (``Database.begin``)."""
        return UnitOfWork(self, site_id, principal, request_id, cause, inline=inline)

    def enabled(self, plugin: str) -> bool:
        return any(p.name == plugin and p.enabled for p in self.plugins)


@dataclass
class RequestContext:
    """What a resource knows about the request it answers."""

    kernel: Kernel
    request_id: str
    site_id: str | None = None
    site: dict[str, Any] | None = None
    principal: Principal = ANONYMOUS
    client_ip: str = ""
    # The matched route's path parameters, set before the route's ``caller`` check runs.
    path_params: dict[str, Any] = field(default_factory=dict)

    def require_site(self) -> str:
        if self.site_id is None:
            raise ApiError.validation("This route needs a site: send X-Svc-Site", path=["headers", "X-Svc-Site"])
        return self.site_id

    def unit_of_work(self, *, inline: bool = False) -> UnitOfWork:
        """A transaction scoped to this request's site and principal (``inline``: see
        ``Kernel.unit_of_work``)."""
        return self.kernel.unit_of_work(self.site_id, self.principal, self.request_id, inline=inline)

    def reader(self) -> SiteReader:
        """Site-scoped reads outside a transaction (``Database.read``: each statement its own
        snapshot); writes go through a unit of work."""
        return SiteReader(self.kernel, self.require_site())


class SiteReader:
    """``async with ctx.reader() as db:`` gives a ``SiteDB`` on a plain connection."""

    def __init__(self, kernel: Kernel, site_id: str) -> None:
        self.kernel = kernel
        self.site_id = site_id
        self._cm: Any = None

    async def __aenter__(self) -> SiteDB:
        self._cm = self.kernel.db.read()
        conn = await self._cm.__aenter__()
        return SiteDB(self.site_id, conn)

    async def __aexit__(self, *exc: Any) -> None:
        await self._cm.__aexit__(*exc)

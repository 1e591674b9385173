"""Every extension point of svc, in one file.

A hook implementation may be a plain function or a coroutine function; the kernel awaits what
needs awaiting. Hooks marked *first result* stop at the first implementation that returns
something other than ``None`` (``tryfirst``/``trylast`` order them). Every hook here is
documented in ``docs/plugin_hooks.md``; a test fails when one is missing.
"""

from __future__ import annotations

from typing import Any

import pluggy

hookspec = pluggy.HookspecMarker("svc")
hookimpl = pluggy.HookimplMarker("svc")


# ---------------------------------------------------------------------------- plugin system


@hookspec
def register_hookspecs(pm: pluggy.PluginManager) -> None:
    """Publish a plugin's own extension points: call ``pm.add_hookspecs(module)``.

    Called once, before any other hook, for every enabled plugin. Synchronous only.
    """


# ---------------------------------------------------------------------------- registration (at boot)


@hookspec
def register_settings() -> list[Any]:
    """Return a list of ``kernel.base.settings.Setting`` the plugin reads.

    They are parsed from the environment at boot; a bad value stops the start with a message
    naming the variable. Read them later with ``kernel.settings.get(name)``. Synchronous.
    """


@hookspec
def register_migrations() -> str | None:
    """Return the path of the plugin's Alembic ``migrations`` folder (its own branch).

    The branch label is the plugin's name; ``svc migrate`` upgrades every branch of the enabled
    plugins. Synchronous.
    """


@hookspec
def register_routes(kernel: Any) -> list[Any]:
    """Return a list of ``kernel.Route`` objects mounted under ``/api/v1``.

    Each route names its path template, its resource (a Falcon responder object built with the
    services it needs), whether it needs a site, its rate-limit bucket and its OpenAPI
    operations. Synchronous; called once per app.
    """


@hookspec
def register_rate_limits(kernel: Any) -> dict[str, Any]:
    """Return the rate-limit buckets the plugin declares: ``{name: kernel.RateBucket(...)}``.

    A bucket has a limit (an integer, or the name of a setting that holds it; ``0`` disables
    it), a window in seconds and what it counts per (``"principal"`` or ``"ip"``). A route
    names a bucket in ``Route(rate_limit=...)``. Bucket names are global: two plugins declaring
    the same name, a limit setting nobody declares, or a route naming a bucket nobody declares
    fail at boot (``PluginError``). Synchronous; called once per app.
    """


@hookspec
def register_middleware(kernel: Any) -> list[Any]:
    """Return Falcon ASGI middleware objects, added after the kernel's own (request id,
    metrics, guard (API version, body size), then site, principal, route auth and rate limit),
    in plugin registration order. Synchronous."""


@hookspec
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """Subscribe to bus events: ``bus.on_filter(event, fn)`` and ``bus.on_action(event, fn)``.

    Both return an unregister handle. Called once per app at boot. Synchronous.
    """


@hookspec
def register_event_consumers(kernel: Any) -> list[Any]:
    """Return a list of ``kernel.events.EventConsumer``: durable consumers of the event log.

    Each gets ``await handle(kernel, site_id, events)`` with batches of one site's committed
    events (``kernel.events.Event``: ids, type, collection, item id, changed field names; no
    values) in log order, at least once: returning acknowledges the batch, raising retries the
    same batch with exponential backoff while other consumers and sites go on. A consumer has
    its own checkpoint per site, kept under its ``name`` (unique, stable across releases);
    ``types`` and ``collections`` narrow what it gets. The handler must be idempotent.
    A ``kernel.events.ConsumerGroup`` in the list stands for consumers that exist per site at
    run time (webhook subscriptions): its ``members(kernel, site_id)`` lists them, and each is
    dispatched on its own (checkpoint ``<group>:<key>``, retries, order).
    Collected once per app at boot. Synchronous.
    """


@hookspec
def register_access_actions(kernel: Any) -> list[Any]:
    """Return the ``kernel.policy.access.AccessAction`` objects a permission rule may name besides the
    kernel's ``create``, ``read``, ``update`` and ``delete`` (files: ``media:read``...; flows:
    the capability ``flows:run``). An action of a disabled plugin is refused in new rules.
    Names are global: two plugins declaring one fail at boot. Synchronous; collected once per
    app (``kernel.access.actions``).
    """


@hookspec
def register_site_caches(kernel: Any) -> list[Any]:
    """Return a list of ``kernel.cache.sitecache.SiteCacheSpec``: the plugin's bounded per-site caches.

    Each becomes ``kernel.site_caches[name]`` (a ``SiteCache``: LRU with a bound, a TTL, per-site
    invalidation, hit and miss counts on ``/metrics``) before ``register_event_handlers`` runs.
    Every cache drops a site's entries on ``sites.changed``, and on the action events named in
    the spec's ``invalidate_on`` (payload ``siteId``). ``SVC_SITE_CACHE_SIZES`` may override the
    bound by name; a name nobody declared stops the start. Synchronous.
    """


@hookspec
def register_jobs(jobs: Any, kernel: Any) -> None:
    """Register background jobs: ``jobs.task(name, fn, retries=, retry_delay=, retry_max_delay=,
    timeout=, owner=)`` for queued jobs and ``jobs.periodic(name, fn, every_seconds=... | cron=...)``
    for ticks.

    Job functions are coroutine functions ``fn(kernel, **args)`` with JSON arguments; they run
    concurrently on a worker's event loop, at least once. Enqueue with ``uow.enqueue(name, ...)``
    (in the write's transaction) or ``kernel.jobs.enqueue(name, ...)``. Synchronous.
    """


@hookspec
def register_error_codes() -> dict[str, tuple[int, str]]:
    """Return ``{ code: (http_status, description) }`` for the error codes a plugin raises.

    Used for docs/errors.md and the OpenAPI document. Synchronous.
    """


@hookspec
def register_commands(subparsers: Any, kernel_factory: Any) -> None:
    """Add ``svc`` sub-commands: ``subparsers.add_parser(name)`` then ``set_defaults(func=...)``.

    ``func(args)`` receives the parsed arguments; ``await kernel_factory(fn)`` runs
    ``await fn(kernel)`` with a started kernel and stops it after. Synchronous.
    """


@hookspec
def register_sealed_columns(kernel: Any) -> list[Any]:
    """Return the SQLAlchemy ``Column`` objects of this plugin's tables that hold
    ``kernel.secrets`` tokens (``sv1.<key id>.<data>``).

    ``svc serve`` and ``svc worker`` look in them once at start: a token of a key that is not
    loaded stops a production start with a message naming the column (``kernel/sealed.py``).
    All implementations are called. Synchronous.
    """


@hookspec
def register_health_checks(kernel: Any) -> dict[str, Any]:
    """Return ``{ name: check }``. A check is an async callable taking no argument or the
    kernel (``async def check()`` or ``async def check(kernel)``); it returns a short status
    (``"ok"``, ``"ok (3 pending)"``) or raises.

    Collected once at boot into ``kernel.health_checks``. ``GET /utils/health`` runs every check
    concurrently, each bounded by 3 seconds; one that raises or times out makes the answer 503
    with ``"<name>: <first line of the error>"`` (credentials masked). A check must not block
    the event loop. The names ``database``, ``cache``, ``storage``, ``search`` and ``queue`` are
    built in and cannot be replaced. Synchronous.
    """


@hookspec
def register_openapi(kernel: Any) -> dict[str, Any] | None:
    """Return a fragment merged into the OpenAPI document, usually ``{ "components": {...} }``.

    Route operations are already documented through ``Route.openapi``; this hook is for shared
    schemas and tags. Synchronous.
    """


# ---------------------------------------------------------------------------- lifecycle


@hookspec
def startup(kernel: Any) -> None:
    """The app is starting: its services exist and the bus is connected. The schema must
    already be migrated (``svc serve``, ``svc worker`` and the test harness do it). May be async."""


@hookspec
def shutdown(kernel: Any) -> None:
    """The app is stopping; release what ``startup`` acquired. May be async."""


@hookspec
def site_created(kernel: Any, site: dict[str, Any], conn: Any) -> None:
    """A site was created, inside its transaction ``conn`` (seed per-site rows here).

    May be async; raising vetoes the creation.
    """


@hookspec
def site_deleted(kernel: Any, site_id: str, conn: Any) -> None:
    """A site is being deleted, inside its transaction ``conn``: remove the plugin's rows of
    that site. May be async."""


# ---------------------------------------------------------------------------- request


@hookspec(firstresult=True)
def resolve_site(request: Any, kernel: Any) -> str | None:
    """Return the site id a request addresses, or ``None`` when it names none.

    First result wins; the kernel's default (``X-Svc-Site``, then the subdomain of
    ``SVC_BASE_DOMAIN``) runs last. May be async.
    """


@hookspec
def authenticate(request: Any, kernel: Any, site: Any) -> Any:
    """Return a ``Principal`` for the request's credentials, ``None`` to pass, or raise ``ApiError``.

    A chain: the first implementation that returns a principal wins. Order: API keys
    (``tryfirst``), external JWT, internal JWT (``trylast``). No principal means anonymous.
    May be async.
    """


@hookspec(firstresult=True)
def authenticate_ticket(ticket: str, request: Any, kernel: Any, route: Any) -> Any:
    """Redeem the ``?ticket=`` of a route declared with ``Route(tickets=True)`` (a WebSocket
    handshake, or an SSE stream a browser's ``EventSource`` opens without headers).

    Return a ``kernel.TicketGrant(site_id, principal)`` for a ticket the plugin minted, ``None``
    for one it does not know, or raise ``ApiError`` (401 for an expired or reused ticket). The
    site comes from the grant: an ``X-Svc-Site`` header on the request is ignored. Tickets are
    meant to be single-use and short-lived; checking that is the minting plugin's duty. No
    plugin claiming the ticket means 401 (close code 4401 on a socket). First result wins.
    May be async.
    """


@hookspec
def site_allowed_origins(kernel: Any, site_id: str) -> list[str] | None:
    """Return the browser origins ``site_id`` allows (its ``siteUrl`` and ``domain``:
    docs/settings-and-site.md, Site configuration).

    Each value may be an origin (``https://blog.example.com``), a URL (its path is dropped) or a
    bare host (``blog.example.com`` means ``https://blog.example.com``). The answers of every
    implementation are merged with ``SVC_CORS_ORIGINS``; CORS answers and the WebSocket Origin
    check both use the result. Called for every request that carries an ``Origin`` header, so
    answer from a cache. May be async.
    """


@hookspec(firstresult=True)
def load_access(kernel: Any, site_id: str, principal: Any) -> Any:
    """Return a ``kernel.policy.access.AccessSnapshot`` for ``principal`` in ``site_id``: its role,
    role chain, teams, admin flag and every permission rule that applies.

    First result wins; implemented by the access plugin. ``kernel.access`` caches the answer
    per (site, principal) until an ``access.changed`` action names the site. May be async.
    """


@hookspec(firstresult=True)
def provision_user(kernel: Any, conn: Any, email: str, password: str | None, roles: dict[str, str]) -> Any:
    """Create a user with ``password`` and a membership in each site of ``roles`` (site id ->
    a built-in role key such as ``subscriber``, or a role id), in the caller's transaction
    ``conn``; return the new user's id.

    For the test harness (``make_member``) and operator tooling, which belong to the kernel and
    so may not import the accounts plugin: no audit record, no event. First result wins;
    implemented by the accounts plugin. May be async.
    """


@hookspec(firstresult=True)
def handle_exception(request: Any, exc: BaseException, kernel: Any) -> Any:
    """Turn an unexpected exception into an ``ApiError`` (or return ``None`` to pass).

    The kernel's default runs last: it logs the trace and answers 500 ``INTERNAL`` with the
    request id, or 503 ``SERVICE_UNAVAILABLE`` with ``Retry-After`` when the database or Redis
    is unreachable (``kernel.db.unavailable``). May be async.
    """


# ---------------------------------------------------------------------------- data lifecycle (retention, erasure, export)
# The consent hooks (consent_state, processing_restricted, marketing_excluded) are the privacy
# plugin's own: plugins/privacy/hookspecs.py.


@hookspec
def register_retention_targets(kernel: Any) -> list[Any]:
    """Return the ``kernel.policy.privacy.RetentionTarget`` objects for the plugin's own tables: a
    name (``revisions``), a default horizon in days and ``prune(kernel, site_id, before)``, an
    async function deleting the site's rows older than the aware datetime ``before`` and
    returning how many it deleted. The privacy plugin reports the horizons (``GET /retention``),
    lets a site change them (setting ``retention``) and runs the prunes (``POST /retention/run``
    and a daily job), so it never touches another plugin's tables. Names are global: two
    plugins declaring one name fail at boot. Synchronous; collected once per app.
    """


@hookspec
def register_erasure_targets(kernel: Any) -> list[Any]:
    """Return the ``kernel.policy.privacy.ErasureTarget`` objects for what the plugin's own tables keep
    of people outside items: a name (``flowRuns``) and ``erase(uow, subject)``, an async function
    that deletes (or, where a row must stay, rewrites) the site's rows holding one of the
    subject's values (``subject.terms``) or belonging to one of their accounts
    (``subject.user_ids``), inside the erasure's transaction, and returns how many rows it
    reached. ``kernel.policy.privacy.erase_rows`` and ``holding`` build the usual ones. The privacy
    plugin runs every target when an erasure executes, after the items are gone. Names are
    global. Synchronous; collected once per app.
    """


@hookspec
def export_personal_data(kernel: Any, site_id: str, user_id: str) -> dict[str, Any] | None:
    """Return ``{ section: JSON value }``: what the plugin keeps about ``user_id`` in ``site_id``
    that belongs in their data export (``GET /me/data-export``), or ``None``. Section names are
    the plugin's own (pageviews answers ``pageviews``); the privacy plugin merges the answers of
    every implementation into one document. Never return secrets or hashes. May be async.
    """

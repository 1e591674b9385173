"""Settings: read once from the environment, validated at boot.

Every variable the kernel reads is declared in ``KERNEL_SETTINGS``; plugins declare theirs
through the ``register_settings`` hook. A bad value fails at start with a message naming the
variable, never at the first request. Nothing below the kernel's config reads ``os.environ``.
"""

from __future__ import annotations

import base64
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from kernel.base.errors import SettingsError
from kernel.base.secrets import Secrets, parse_key_entry


@dataclass(frozen=True)
class Setting:
    """One configuration variable: its env name, default, parser and documentation line."""

    env: str
    default: Any
    parse: Callable[[str], Any] = str
    doc: str = ""
    attr: str | None = None
    secret: bool = False  # a bad value is not echoed in the error (keys, passwords)

    @property
    def name(self) -> str:
        if self.attr:
            return self.attr
        key = self.env[4:] if self.env.startswith("SVC_") else self.env
        return key.lower()


def parse_bool(raw: str) -> bool:
    value = raw.strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"expected true or false, got {raw!r}")


def parse_int(minimum: int = 0, maximum: int | None = None) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        value = int(raw.strip())
        if value < minimum:
            raise ValueError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be at most {maximum}")
        return value

    return parse


def parse_float(minimum: float = 0.0, maximum: float | None = None) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        value = float(raw.strip())
        if not value >= minimum:  # also refuses nan
            raise ValueError(f"must be at least {minimum}")
        if maximum is not None and value > maximum:
            raise ValueError(f"must be at most {maximum}")
        return value

    return parse


def parse_csv(raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


_DEFAULT_PORTS = {"http": 80, "https": 443}


def normalize_origin(value: Any) -> str | None:
    """``scheme://host[:port]`` in lower case, without a default port; ``None`` when ``value``
    is not an http(s) origin or URL. A bare host (``example.com``, a site's ``domain``) means
    ``https://example.com``; a URL's path is dropped (``siteUrl``)."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if not text or text == "null":
        return None
    if "://" not in text:
        text = "https://" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if scheme not in _DEFAULT_PORTS or not host or parts.username is not None:
        return None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}" if port in (None, _DEFAULT_PORTS[scheme]) else f"{scheme}://{host}:{port}"


def parse_origins(raw: str) -> tuple[str, ...]:
    """A comma list of browser origins (``https://app.example.com``); ``*`` is refused, because
    CORS here always allows credentials and so must name each origin."""
    origins = parse_csv(raw)
    for origin in origins:
        if normalize_origin(origin) is None or "://" not in origin:
            raise ValueError(f"{origin!r} is not an origin like https://app.example.com")
    return origins


def parse_encryption_key(raw: str) -> str:
    """``SVC_ENCRYPTION_KEY``: base64 of 32 bytes, optionally ``<key id>:<base64>``."""
    parse_key_entry(raw)
    return raw.strip()


def parse_encryption_keys(raw: str) -> tuple[str, ...]:
    """``SVC_ENCRYPTION_KEYS``: a comma list of keys like ``SVC_ENCRYPTION_KEY``'s."""
    entries = parse_csv(raw)
    for n, entry in enumerate(entries, 1):
        try:
            parse_key_entry(entry)
        except ValueError as exc:
            raise ValueError(f"entry {n}: {exc}") from None
    return entries


CACHE_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789_")


def parse_cache_sizes(raw: str) -> dict[str, int]:
    """``SVC_SITE_CACHE_SIZES``: ``name=entries`` pairs separated by commas (``schema=5000``)."""
    sizes: dict[str, int] = {}
    for part in raw.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep or not name or not set(name) <= CACHE_NAME_CHARS:
            raise ValueError(f"expected name=entries pairs separated by commas, got {part!r}")
        try:
            entries = int(value.strip())
        except ValueError:
            raise ValueError(f"{name}: {value.strip()!r} is not a whole number") from None
        if entries < 0:
            raise ValueError(f"{name}: entries must not be negative")
        if name in sizes:
            raise ValueError(f"{name} is given twice")
        sizes[name] = entries
    return sizes


def parse_database_url(raw: str) -> str:
    scheme = raw.split(":", 1)[0].split("+", 1)[0].lower()
    if scheme not in ("sqlite", "postgresql", "postgres"):
        raise ValueError("must be a sqlite:/// or postgresql:// URL")
    return raw.strip()


def parse_networks(raw: str) -> tuple[Any, ...]:
    """A comma list of CIDR networks (``10.20.0.0/16,127.0.0.1/32``); ValueError on a bad one."""
    import ipaddress

    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip())


def parse_ca_file(raw: str) -> str:
    """A PEM file of CA certificates, checked at boot by loading it; empty: the system's."""
    path = raw.strip()
    if path:
        import ssl

        try:
            ssl.create_default_context(cafile=path)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"cannot load CA certificates from {path!r}: {exc}") from None
    return path


def parse_choice(*choices: str) -> Callable[[str], str]:
    def parse(raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ValueError(f"must be one of {', '.join(choices)}")
        return value

    return parse


KERNEL_SETTINGS: tuple[Setting, ...] = (
    Setting("SVC_ENV", "production", parse_choice("production", "development"),
            "`production` or `development`; development enables GraphQL introspection and the explorer, and lets "
            "outbound requests reach loopback."),
    Setting("SVC_OUTBOUND_ALLOW_NETWORKS", (), parse_networks,
            "Comma list of CIDR networks that outbound requests a tenant configures (webhooks, flow requests, "
            "push, issuers, file import, translation, git, store sync) may reach although they are loopback, "
            "private or link-local; a metadata address only when named exactly (`169.254.169.254/32`). Empty: "
            "public addresses only (`SVC_ENV=development` adds loopback)."),
    Setting("SVC_OUTBOUND_CA_FILE", "", parse_ca_file,
            "PEM file of CA certificates outbound HTTPS requests trust besides the public ones (certifi): "
            "a private CA of internal endpoints."),
    Setting("SVC_HOST", "127.0.0.1", str, "Address `svc serve` binds to."),
    Setting("SVC_PORT", 8000, parse_int(1), "Port `svc serve` listens on."),
    Setting("SVC_WORKERS", 1, parse_int(1), "Number of uvicorn worker processes for `svc serve`."),
    Setting("SVC_DATA_DIR", "./svc-data", str,
            "Directory for the embedded database, local files, the job queue and the generated JWT secret."),
    Setting("SVC_DATABASE_URL", "", parse_database_url,
            "Database URL. Empty: SQLite file in the data dir. `postgresql://...` uses psycopg 3."),
    Setting("SVC_DB_CONNECT_TIMEOUT", 10, parse_int(2, 3600),
            "Whole seconds to open a PostgreSQL connection before the request gets 503 (a `connect_timeout` in the URL wins)."),
    Setting("SVC_DB_COMMAND_TIMEOUT", 30.0, parse_float(0, 86400),
            "Seconds PostgreSQL may take to answer one command (a statement, a commit) before the connection "
            "is closed and the request gets 503: a hanging server (paused, blackholed) costs this long, not "
            "forever (0: wait forever)."),
    Setting("SVC_DB_POOL_TIMEOUT", 10.0, parse_float(0.1, 3600),
            "Seconds a request waits for a free pooled database connection before it gets 503."),
    Setting("SVC_REDIS_URL", "", str,
            "Redis URL. Set: cache, rate limits, bus fan-out and live topics between workers use Redis, and jobs run in `svc worker`."),
    Setting("SVC_BROKER_SOCKET", "", str,
            "Set by `svc serve --workers N` for its workers (do not set by hand): the Unix socket of the "
            "node's local broker, which carries fan-out, rate limits and connection caps between them without Redis."),
    Setting("SVC_REDIS_TIMEOUT", 2.0, parse_float(0.05, 600),
            "Seconds any Redis call (connect, command, waiting for a pooled connection) may take; past it the "
            "cache and rate limits fall back to this process and live fan-out is skipped until Redis answers."),
    Setting("SVC_REDIS_NAMESPACE", "svc", str,
            "Prefix of every Redis key and channel, so several deployments can share one Redis."),
    Setting("SVC_STORAGE", "", str,
            "File storage. Empty: `<data dir>/files`. `file:///path` or `s3://bucket[/prefix]`."),
    Setting("SVC_S3_ENDPOINT_URL", "", str, "Endpoint of an S3-compatible store (MinIO, moto, ...)."),
    Setting("SVC_BASE_DOMAIN", "", str,
            "Base domain for subdomain site routing: `<site>.<base domain>` selects the site."),
    Setting("SVC_PLUGINS_DISABLED", (), parse_csv,
            "Comma list of plugins to disable. Essential plugins cannot be disabled."),
    Setting("SVC_PLUGINS_EXTRA", (), parse_csv,
            "Comma list of importable modules registered as extra plugins (development, tests)."),
    Setting("SVC_TRACE_HOOKS", False, parse_bool, "Log every pluggy hook call (debugging)."),
    Setting("SVC_LOG_LEVEL", "info", parse_choice("debug", "info", "warning", "error"), "Log level."),
    Setting("SVC_LOG_FORMAT", "text", parse_choice("text", "json"),
            "`text` (`<time> <LEVEL> <logger>: <message>`) or `json` (one object a line, for a log shipper); "
            "svc's and uvicorn's lines alike."),
    Setting("JWT_SECRET", "", str,
            "Secret signing internal tokens. Empty: generated once and kept in `<data dir>/jwt_secret`.",
            attr="jwt_secret"),
    Setting("SVC_ENCRYPTION_KEY", "", parse_encryption_key,
            "The active key sealing stored secrets: base64 of 32 bytes, optionally `<id>:<base64>`. "
            "Features that store secrets need it.", secret=True),
    Setting("SVC_ENCRYPTION_KEYS", (), parse_encryption_keys,
            "More keys (comma list, same format) that still open the secrets they sealed: key rotation.",
            secret=True),
    Setting("SVC_SITE_MAX_IN_FLIGHT", 16, parse_int(0),
            "Requests of one site a process answers at once; more get 429 at once (0: no cap)."),
    Setting("SVC_SITE_CACHE_SIZES", {}, parse_cache_sizes,
            "Bounds of the per-site caches, `name=entries` pairs (`schema=5000,access=50000`)."),
    Setting("SVC_MAX_BODY_BYTES", 10 * 1024 * 1024, parse_int(1), "Largest request body accepted (413 above)."),
    Setting("SVC_TRUSTED_PROXIES", ("127.0.0.1",), parse_csv,
            "Addresses of load balancers whose X-Forwarded-For is trusted for the client IP (`*`: any)."),
    Setting("SVC_CORS_ORIGINS", (), parse_origins,
            "Allowed browser origins of every site (comma list), besides each site's own (CORS, WebSocket Origin)."),
    Setting("SVC_TOPIC_QUEUE_SIZE", 256, parse_int(1),
            "Messages a live-topic subscriber may have waiting; past that it lags (or is dropped)."),
    Setting("SVC_METRICS_TOP_SITES", 20, parse_int(0, 1000),
            "Sites named in `svc_site_requests_total` per process (the busiest; the rest are `_other`)."),
    Setting("SVC_METRICS_REFRESH_SECONDS", 10.0, parse_float(0, 3600),
            "Seconds a scrape reuses the job-queue and event-lag figures it read from the database."),
    Setting("SVC_NODE_ID", "", str,
            "Name of this node on `/metrics` (`svc_node_info{node}`); empty: the host name."),
    Setting("PROMETHEUS_MULTIPROC_DIR", "", str,
            "Set by `svc serve --workers N` for its workers: prometheus_client's directory of metric files, "
            "so `/metrics` adds up every worker of the node. Not set by hand.", attr="prometheus_multiproc_dir"),
    Setting("SVC_SSE_HEARTBEAT_SECONDS", 15, parse_int(1),
            "Seconds between heartbeat comments on an idle Server-Sent Events stream."),
    Setting("SVC_SMTP_HOST", "", str, "SMTP host. Empty: email is in degraded mode (EMAIL_NOT_CONFIGURED)."),
    Setting("SVC_SMTP_PORT", 25, parse_int(1), "SMTP port."),
    Setting("SVC_SMTP_USER", "", str, "SMTP user name (optional)."),
    Setting("SVC_SMTP_PASSWORD", "", str, "SMTP password (optional)."),
    Setting("SVC_SMTP_TLS", "none", parse_choice("none", "starttls", "tls"), "`none`, `starttls` or `tls`."),
    Setting("SVC_SMTP_CA_FILE", "", parse_ca_file,
            "PEM file of the CAs the SMTP server's certificate is checked against, instead of the system's."),
    Setting("SVC_EMAIL_FROM", "svc@localhost", str, "Default sender address."),
    Setting("SVC_JOBS_INPROCESS", True, parse_bool,
            "Without Redis, run the job consumer inside `svc serve` (one worker holds the lock)."),
    Setting("SVC_JOBS_CONCURRENCY", 10, parse_int(1),
            "Jobs one worker process runs at once (coroutines on its event loop)."),
    Setting("SVC_JOBS_SITE_CONCURRENCY", 5, parse_int(0),
            "Jobs of one site a worker process runs at once, so one site's flood leaves the other slots free "
            "(0, or at least SVC_JOBS_CONCURRENCY: no cap)."),
    Setting("SVC_JOBS_POLL_MS", 1000, parse_int(50),
            "How often an idle worker looks for due jobs enqueued by other processes (milliseconds)."),
    Setting("SVC_JOBS_LEASE_SECONDS", 60, parse_int(5),
            "Lease of a claimed job, renewed while it runs; a dead worker's jobs rerun after it."),
    Setting("SVC_WORKER_METRICS_PORT", 0, parse_int(0, 65535),
            "Port of `svc worker`'s own Prometheus endpoint (`/metrics`); 0: none. `--metrics-port` wins."),
    Setting("SVC_WORKER_METRICS_HOST", "127.0.0.1", str,
            "Address `svc worker`'s metrics endpoint binds to (it has no token: keep it private)."),
    Setting("SVC_JOBS_FAILED_RETENTION_DAYS", 14, parse_int(0),
            "Days failed jobs stay visible in `svc jobs` before they are purged (0 keeps them)."),
    Setting("SVC_EVENTS_DISPATCH", True, parse_bool,
            "Run the durable event consumers in this process (`svc serve` workers, `svc worker`)."),
    Setting("SVC_EVENTS_POLL_SECONDS", 2.0, parse_float(0.05, 3600),
            "How often the event dispatcher looks for events committed by other processes."),
    Setting("SVC_EVENTS_SITE_CONCURRENCY", 4, parse_int(0),
            "Consumers of one site a process's event dispatcher feeds at once, out of its 8 (0, or 8 and more: no cap)."),
    Setting("SVC_EVENTS_BATCH", 100, parse_int(1), "Most events handed to a consumer at once."),
    Setting("SVC_EVENTS_LEASE_SECONDS", 60, parse_int(1),
            "How long a consumer's claim on a site lasts; also the time limit of one batch."),
    Setting("SVC_EVENTS_RETRY_BASE_SECONDS", 1.0, parse_float(0.01, 86400),
            "First retry delay of a failing consumer; doubles on each failure."),
    Setting("SVC_EVENTS_RETRY_MAX_SECONDS", 600.0, parse_float(0.01, 86400),
            "Longest retry delay of a failing consumer."),
    Setting("SVC_CDC_RETENTION_DAYS", 7, parse_int(1), "Days events are kept in the event log."),
)


@dataclass
class Settings:
    """The configuration of one app. Kernel values are attributes; plugin values live in ``extra``."""

    values: dict[str, Any]
    extra: dict[str, Any] = field(default_factory=dict)
    environ: Mapping[str, str] = field(default_factory=dict)
    # Overrides of plugin settings, applied when the plugins declare them (``load_plugin_settings``).
    pending: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:
        for store in ("values", "extra"):
            found = self.__dict__.get(store, {})
            if name in found:
                return found[name]
        raise AttributeError(name)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Read the kernel settings from ``environ`` (default ``os.environ``); overrides win. An
        override the kernel does not declare waits for a plugin to declare it (else, at boot,
        ``SettingsError``)."""
        env = dict(os.environ if environ is None else environ)
        values = {s.name: read_setting(s, env) for s in KERNEL_SETTINGS}
        pending = {key: value for key, value in overrides.items() if key not in values}
        values.update({key: value for key, value in overrides.items() if key in values})
        if values["events_retry_max_seconds"] < values["events_retry_base_seconds"]:
            raise SettingsError("SVC_EVENTS_RETRY_MAX_SECONDS must be at least SVC_EVENTS_RETRY_BASE_SECONDS")
        values["encryption_key"] = values["encryption_key"] or stored_encryption_key(values)
        require_extras(values)
        settings = cls(values=values, environ=env, pending=pending)
        Secrets.from_settings(settings)  # the keys together: ids, the active one (at boot)
        return settings

    def load_plugin_settings(self, declared: list[Setting]) -> None:
        """Parse the settings plugins declare; called once at boot by ``create_app``. An
        override no kernel or plugin setting answers is ``SettingsError``."""
        for setting in declared:
            if setting.name in self.pending:
                self.extra[setting.name] = self.pending[setting.name]
            elif setting.name not in self.extra:
                self.extra[setting.name] = read_setting(setting, self.environ)
        unknown = sorted(set(self.pending) - set(self.extra))
        if unknown:
            raise SettingsError(f"unknown setting {unknown[0]!r}")

    def get(self, name: str, default: Any = None) -> Any:
        """A kernel or plugin setting by name."""
        if name in self.values:
            return self.values[name]
        return self.extra.get(name, default)

    # -- derived values -------------------------------------------------------------------

    @property
    def data_path(self) -> Path:
        """The data dir, created private (0700: it holds the database, secrets and files)."""
        path = self.data_dir_path
        if not path.is_dir():
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return path

    @property
    def data_dir_path(self) -> Path:
        """The data dir's absolute path, created or not."""
        return Path(self.values["data_dir"]).expanduser().resolve()

    @property
    def embedded(self) -> bool:
        """Whether the database is the embedded default (SQLite in the data dir)."""
        return not self.values["database_url"]

    def resolved_jwt_secret(self) -> str:
        """JWT_SECRET, or a secret generated once and kept in the data dir."""
        if not self.values["jwt_secret"]:
            self.values["jwt_secret"] = private_file(self.data_path / "jwt_secret", lambda: secrets.token_urlsafe(48))
        return self.values["jwt_secret"]

    def generate_encryption_key(self) -> bool:
        """On the embedded default without ``SVC_ENCRYPTION_KEY``: the key kept in
        ``<data dir>/encryption_key`` (0600), generated on the first start, so webhooks, store
        sync and git work out of the box. Returns whether this call wrote it."""
        if self.values["encryption_key"] or not self.embedded:
            return False
        path = self.data_path / ENCRYPTION_KEY_FILE
        existed = path.exists()
        self.values["encryption_key"] = private_file(path, new_encryption_key)
        return not existed


ENCRYPTION_KEY_FILE = "encryption_key"


def new_encryption_key() -> str:
    """A fresh ``SVC_ENCRYPTION_KEY`` value: base64 of 32 random bytes."""
    return base64.b64encode(secrets.token_bytes(32)).decode("ascii")


def private_file(path: Path, make: Callable[[], str]) -> str:
    """The text of ``path``, written first with ``make()`` when missing: created 0600 and
    exclusively, so two workers starting together agree on one value."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    else:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(make())
    return path.read_text(encoding="utf-8").strip()


def stored_encryption_key(values: Mapping[str, Any]) -> str:
    """The key a previous start generated in the data dir (embedded default only), or ''."""
    if values["encryption_key"] or values["database_url"]:
        return ""
    path = Path(values["data_dir"]).expanduser().resolve() / ENCRYPTION_KEY_FILE
    if not path.is_file():
        return ""
    try:
        return parse_encryption_key(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise SettingsError(f"{path} (the generated SVC_ENCRYPTION_KEY) is not valid: {exc}") from None


def require_extras(values: Mapping[str, Any]) -> None:
    """The optional extras the configured backends need, checked at boot (kernel/base/extras.py)."""
    from kernel.base.extras import require_at_boot

    if values["database_url"].split(":", 1)[0].split("+", 1)[0].lower() in ("postgresql", "postgres"):
        require_at_boot("postgres", "SVC_DATABASE_URL (PostgreSQL)")
    if values["storage"].lower().startswith("s3://"):
        require_at_boot("s3", "SVC_STORAGE (S3)")


def read_setting(setting: Setting, environ: Mapping[str, str]) -> Any:
    raw = environ.get(setting.env)
    if raw is None or raw == "":
        return setting.default
    try:
        return setting.parse(raw)
    except (ValueError, TypeError) as exc:
        shown = "<hidden>" if setting.secret else repr(raw)
        raise SettingsError(f"{setting.env}={shown} is not valid: {exc}") from exc

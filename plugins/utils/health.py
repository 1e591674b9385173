"""The health report: the built-in checks, the ones plugins register, and how they are run.

A check is an async callable taking no argument or the kernel; it returns a short status
(``"ok"``, ``"ok (3 pending)"``) or raises. Every check runs concurrently under its own timeout,
so one hung dependency costs the probe ``CHECK_TIMEOUT`` seconds, not the sum of all.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import platform
import re
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import text

from kernel import __version__

log = logging.getLogger("svc.utils.health")

CHECK_TIMEOUT = 3.0  # seconds, per check
BUILTIN_CHECKS = ("database", "cache", "storage", "search", "queue")
MAX_REASON = 200

HealthCheck = Callable[..., Awaitable[Any]]

# Credentials can reach exception texts (a driver echoing its DSN, a client its auth header);
# these patterns and the configured secret values themselves are masked before anything is shown.
_URL_USERINFO = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s]+@")
_SECRET_PAIR = re.compile(r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|authorization)(\s*[=:]\s*)\S+")
_SECRET_SETTING = re.compile(r"url|password|secret|key|token|storage")


async def check_database(kernel: Any) -> str:
    """A round trip to the database."""
    await kernel.db.ping()
    return "ok"


async def check_search(kernel: Any) -> str:
    """The full-text engine works: FTS5 on SQLite, ``tsvector``/``tsquery`` on PostgreSQL."""
    db = kernel.db
    if db.dialect == "postgresql":
        async with db.connect() as conn:
            hit = (await conn.execute(
                text("SELECT to_tsvector('simple', :doc) @@ plainto_tsquery('simple', :query)"),
                {"doc": "svc health probe", "query": "probe"},
            )).scalar()
        if hit is not True:
            raise RuntimeError("to_tsvector/plainto_tsquery did not match")
        return "ok"
    # A TEMP table lives only in this connection and never touches the main database file, so the
    # probe takes no write lock; the unique name keeps probes on a reused pooled connection apart.
    table = f"svc_health_fts_{uuid.uuid4().hex[:12]}"
    async with db.engine.connect() as conn:
        await conn.execute(text(f"CREATE VIRTUAL TABLE temp.{table} USING fts5(body)"))
        try:
            await conn.execute(text(f"INSERT INTO temp.{table}(body) VALUES (:body)"),
                               {"body": "svc health probe"})
            found = (await conn.execute(text(f"SELECT count(*) FROM temp.{table} WHERE {table} MATCH :q"),
                                        {"q": "probe"})).scalar_one()
        finally:
            await conn.rollback()
            await conn.execute(text(f"DROP TABLE IF EXISTS temp.{table}"))
            await conn.commit()
    if found != 1:
        raise RuntimeError(f"FTS5 MATCH found {found} rows instead of 1")
    return "ok"


def builtin_checks(kernel: Any) -> dict[str, HealthCheck]:
    """The five checks every deployment answers for, by name."""
    return {
        "database": check_database,
        "cache": lambda: kernel.cache.check(),
        "storage": lambda: kernel.storage.check(),
        "search": check_search,
        "queue": lambda: kernel.jobs.check(),
    }


def all_checks(kernel: Any) -> dict[str, HealthCheck]:
    """Built-in checks, then ``kernel.health_checks`` (a plugin cannot replace a built-in name)."""
    checks = builtin_checks(kernel)
    for name, fn in kernel.health_checks.items():
        if name in checks:
            continue
        checks[name] = fn
    return checks


def shadowed_checks(kernel: Any) -> list[str]:
    """Plugin checks registered under a built-in name (they are ignored)."""
    return sorted(set(kernel.health_checks) & set(BUILTIN_CHECKS))


def _call(fn: HealthCheck, kernel: Any) -> Awaitable[Any]:
    try:
        wants_kernel = bool(inspect.signature(fn).parameters)
    except (TypeError, ValueError):  # some builtins have no signature: call them bare
        wants_kernel = False
    result = fn(kernel) if wants_kernel else fn()
    if not inspect.isawaitable(result):
        raise TypeError(f"the check returned {type(result).__name__}, not an awaitable")
    return result


def secret_values(settings: Any) -> list[str]:
    """Configured values that must never appear in a health message (and their URL passwords)."""
    values: list[str] = []
    named = {**getattr(settings, "values", {}), **getattr(settings, "extra", {})}
    candidates: list[tuple[str, str]] = []
    for name, value in named.items():  # lists of secrets too (SVC_ENCRYPTION_KEYS)
        for item in (value if isinstance(value, (tuple, list)) else (value,)):
            candidates.append((name, item))
    for name, value in candidates:
        if not isinstance(value, str) or len(value) < 4 or not _SECRET_SETTING.search(name):
            continue
        values.append(value)
        try:
            password = urlsplit(value).password
        except ValueError:
            password = None
        if password and len(password) >= 3:
            values.append(password)
    return sorted(set(values), key=len, reverse=True)


def short_reason(exc: BaseException, secrets: list[str]) -> str:
    """One line about ``exc``, masked and cut to ``MAX_REASON`` characters."""
    lines = str(exc).strip().splitlines()
    message = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    for secret in secrets:
        message = message.replace(secret, "***")
    message = _URL_USERINFO.sub(r"\1***@", message)
    message = _SECRET_PAIR.sub(r"\1\2***", message)
    return message[:MAX_REASON]


async def _run_one(name: str, fn: HealthCheck, kernel: Any) -> tuple[str, str | None, float]:
    started = time.perf_counter()
    try:
        status = await asyncio.wait_for(_call(fn, kernel), CHECK_TIMEOUT)
        error = None
    except TimeoutError as exc:
        status = None
        if time.perf_counter() - started >= CHECK_TIMEOUT * 0.99:
            error = f"timed out after {CHECK_TIMEOUT:g} s"
        else:  # the dependency's own timeout, with its own message
            error = short_reason(exc, secret_values(kernel.settings))
        log.warning("health check %s failed: %s", name, error)
    except Exception as exc:  # noqa: BLE001 - any failure of a dependency is a health answer
        status, error = None, short_reason(exc, secret_values(kernel.settings))
        log.warning("health check %s failed: %s", name, error)
    elapsed = round((time.perf_counter() - started) * 1000, 1)
    detail = status if isinstance(status, str) and status.strip() else "ok"
    return detail, error, elapsed


async def health_report(kernel: Any, started_at: float) -> dict[str, Any]:
    """Run every check concurrently; the report has ``status`` ``ok`` or ``error``."""
    checks = all_checks(kernel)
    names = list(checks)
    outcomes = await asyncio.gather(*(_run_one(n, checks[n], kernel) for n in names))
    results: dict[str, str] = {}
    details: dict[str, str] = {}
    timings: dict[str, float] = {}
    for name, (detail, error, elapsed) in zip(names, outcomes, strict=True):
        timings[name] = elapsed
        if error is not None:
            results[name] = f"error: {error}"
            continue
        results[name] = "ok"
        if detail != "ok":
            details[name] = detail[:MAX_REASON]
    failed = any(value.startswith("error") for value in results.values())
    runtime: dict[str, Any] = {
        "python": platform.python_version(),
        # OS and architecture only: the kernel release and host name are not the public's business.
        "platform": f"{platform.system()}-{platform.machine()}",
        "pid": os.getpid(),
        "uptimeSeconds": round(max(0.0, time.monotonic() - started_at), 3),
        "plugins": sorted(p.name for p in kernel.plugins if p.enabled),
        "checkMs": timings,
    }
    if details:
        runtime["checkDetails"] = details
    return {"status": "error" if failed else "ok", "checks": results, "version": __version__, "runtime": runtime}


def failure_message(report: dict[str, Any]) -> str:
    """``"<name>: <short reason>"`` for each failed check, joined by ``; ``."""
    return "; ".join(f"{name}: {value[len('error: '):]}" for name, value in report["checks"].items()
                     if value.startswith("error"))

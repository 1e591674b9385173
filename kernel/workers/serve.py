"""``svc serve --workers N``: one uvicorn server per process, each on its own SO_REUSEPORT socket.

With uvicorn's own multiprocess mode every worker accepts from one shared listening socket, and
whichever process wakes first takes the connection: with 16 keep-alive connections one worker
held 13 to 16 of them (docs/performance.md). Here each worker binds its own socket to the same
address with ``SO_REUSEPORT``, and Linux hashes each new connection over the listening sockets,
so connections spread over the workers.

The parent binds the address first (with ``SO_REUSEPORT``, without listening, so it never gets a
connection): a port held by another program fails the start here with a clear message. It then
starts the workers, restarts one that dies, and stops them all (SIGTERM, uvicorn's graceful
shutdown) on SIGINT or SIGTERM.

The workers are forked from multiprocessing's fork server, a fresh process (no thread, no open
database, none of the parent's state) that imports the kernel, uvicorn and every plugin's module
once (``preloaded``): each worker then only builds and starts its app, instead of importing
everything again as a ``spawn``-ed one did (about 1.2 s of CPU a worker, and as much again for
each worker started in place of a dead one), and the imported code's pages are shared.

Used when ``N > 1``, the port is fixed and the platform has ``SO_REUSEPORT``; otherwise ``svc
serve`` runs ``uvicorn.run`` as before.
"""

from __future__ import annotations

import logging
import multiprocessing
import multiprocessing.connection
import signal
import socket
import sys
from typing import Any

from kernel.base.logconfig import announce

log = logging.getLogger("svc.serve")
APP = "kernel.asgi:app"
RESTART_LIMIT = 10  # workers dying faster than this many times in a row stop the server


# glibc's mallopt parameter: allocations of at least this many bytes get a mapping of their own.
_M_MMAP_THRESHOLD = -3
LARGE_BLOCK = 1 << 20


def return_large_blocks() -> None:
    """Have glibc give every block of 1 MiB or more back to the system when it is freed.

    By default glibc maps such a block on its own only until the first one is freed, then raises
    the threshold (up to 32 MiB) and keeps later ones in its heaps. A login's argon2id hash takes
    19 MiB on a thread: from then on each thread that hashed kept 19 MB, and an idle worker that
    had answered a few logins sat 20 to 60 MB above one that had not. Setting the threshold fixes
    it (glibc stops adjusting it). Elsewhere (musl, macOS) this does nothing.
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, LARGE_BLOCK)
    except (OSError, AttributeError):  # no glibc
        pass


def reuseport_supported(port: int, workers: int) -> bool:
    return workers > 1 and port != 0 and hasattr(socket, "SO_REUSEPORT") and sys.platform.startswith("linux")


def bind_reuseport(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` with SO_REUSEADDR and SO_REUSEPORT, not listening."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def _worker(host: str, port: int, options: dict[str, Any]) -> None:
    """One worker process: its own SO_REUSEPORT socket and one uvicorn server on it."""
    import uvicorn

    from kernel.base.logconfig import configure_logging
    from kernel.base.settings import Settings

    return_large_blocks()
    settings = Settings.from_env()
    configure_logging(settings.log_level, settings.log_format)  # before uvicorn says a word

    sock = bind_reuseport(host, port)
    sock.listen(2048)
    sock.set_inheritable(True)
    config = uvicorn.Config(APP, host=host, port=port, **options)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()


def serve_reuseport(host: str, port: int, workers: int, options: dict[str, Any],
                    metrics_dir: str | None = None) -> int:
    """Run ``workers`` uvicorn processes on SO_REUSEPORT sockets until SIGINT/SIGTERM.
    ``metrics_dir``: the workers' prometheus_client files; a dead worker's live gauges leave it."""
    try:
        guard = bind_reuseport(host, port)
    except OSError as exc:
        announce(f"cannot bind {host}:{port}: {exc}")
        return 1
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(preloaded())
    stopping = False
    received: int | None = None

    def start() -> Any:
        proc = ctx.Process(target=_worker, args=(host, port, options), daemon=False)
        proc.start()
        return proc

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping, received
        stopping, received = True, signum

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    procs = [start() for _ in range(workers)]
    announce(f"serving on http://{host}:{port} with {workers} workers (SO_REUSEPORT)")
    deaths = 0
    try:
        while not stopping:
            multiprocessing.connection.wait([p.sentinel for p in procs], timeout=0.5)
            for i, proc in enumerate(procs):
                if stopping or proc.is_alive():
                    continue
                deaths += 1
                if deaths > RESTART_LIMIT:
                    announce(f"workers keep dying (exit code {proc.exitcode}); stopping")
                    stopping = True
                    break
                announce(f"worker {proc.pid} exited with {proc.exitcode}; starting another")
                if metrics_dir:
                    from kernel.metrics.node import forget_dead_worker

                    forget_dead_worker(metrics_dir, proc.pid)
                procs[i] = start()
    finally:
        if received == signal.SIGINT:  # Ctrl-C reached the workers too (one process group): let them finish
            for proc in procs:
                proc.join(10)
        for proc in procs:
            if proc.is_alive():
                proc.terminate()  # SIGTERM: uvicorn finishes its requests and runs the lifespan end
        for proc in procs:
            proc.join(30)
            if proc.is_alive():
                proc.kill()
                proc.join()
        guard.close()
        _stop_fork_server()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    return 1 if deaths > RESTART_LIMIT else 0


def preloaded() -> list[str]:
    """The modules the fork server imports before it forks a worker: what every worker imports
    anyway (``kernel.app`` with the kernel, uvicorn, each installed plugin's module)."""
    from kernel.hooks.plugins import available_plugins

    return ["kernel.app", "uvicorn", *sorted({ep.module for ep in available_plugins().values()})]


def _stop_fork_server() -> None:
    """End the fork server and wait for it, once its workers are gone: left alone it would end
    when this process does, but unwaited (its CPU, and its workers', never counted as ours)."""
    from multiprocessing import forkserver

    stop = getattr(forkserver._forkserver, "_stop", None)  # CPython's own, used by its tests
    if stop is not None:
        stop()


def start_broker(settings: Any, workers: int) -> Any:
    """The node's broker (``kernel.broker``) for ``workers`` processes without Redis, started on a
    thread of this process, its socket handed to the workers in ``SVC_BROKER_SOCKET``; None when
    there is one process or Redis is configured (Redis is then the path)."""
    import os

    from kernel.workers.broker import BrokerThread, socket_path_for

    if workers <= 1 or settings.redis_url:
        os.environ.pop("SVC_BROKER_SOCKET", None)
        return None
    path = socket_path_for(settings.data_path)
    broker = BrokerThread(path).start()
    os.environ["SVC_BROKER_SOCKET"] = path  # read by the workers' Settings (spawned after this)
    announce(f"the {workers} workers share the local broker at {path} (topics, cache drops, "
             "rate limits, connection caps)")
    return broker


def differences(settings: Any, workers: int) -> list[str]:
    """What still differs between one process and this start's several, one line each (printed
    once by ``svc serve``; the table is in docs/operations.md)."""
    if workers <= 1:
        return []
    lines = ["/metrics: counters add up every worker; the per-process figures (caches, topics) of the workers that "
             "did not take the scrape can be up to SVC_METRICS_REFRESH_SECONDS old",
             f"SVC_SITE_MAX_IN_FLIGHT bounds one site's requests in progress per worker ({workers} times it in all)"]
    if settings.redis_url:
        lines.append("cache drops, revocations, role and setting changes reach the other workers through Redis "
                     "pub/sub, within milliseconds but not before the write answers (a lost message: the "
                     "cache's TTL, at most 5 s for tokens and roles)")
    else:
        lines.append("the shared cache (kernel.cache: dashboard panel results) is per worker: another worker "
                     "may serve a panel's result until its TTL ends")
        lines.append("without SVC_REDIS_URL nothing is shared with another node: several nodes need Redis")
    return lines


def start_line(settings: Any, host: str, port: int) -> str:
    """The start line: where the API answers, and the data dir it serves."""
    shown = f"[{host}]" if ":" in host else host
    where = ""
    if host in ("0.0.0.0", "::", ""):
        shown, where = "127.0.0.1", f" (listening on every address, {host or '0.0.0.0'})"
    from kernel.http.routing import API_PREFIX

    return (f"API at http://{shown}:{port}{API_PREFIX}{where}, data dir {settings.data_dir_path}, "
            f"SVC_ENV={settings.env}")

"""Every outbound connection of the product goes through ``kernel.base.outbound`` (issue 35).

Read from the source with ``ast`` (nothing is imported or run): product code (``kernel/``,
``plugins/``, ``extensions_sdk/``) outside ``kernel/base/outbound.py`` may not create an HTTP client
(httpx's clients, transports and one-shot functions, ``urllib.request``, ``requests``,
``aiohttp``, ``http.client``, ``urllib3``, boto3), open a socket or a connection (``socket``,
``asyncio.open_connection``, ``loop.create_connection``), nor connect to SMTP, Redis or a
database, unless the file is on ``ALLOWED`` with its reason. The entries are infrastructure the
operator configures, never a tenant; the list is kept short, and an entry that no longer needs
to be there fails the test too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("kernel", "plugins", "extensions_sdk")
THE_ONE_PLACE = "kernel/base/outbound.py"

# Reason -> the files it covers (paths from the repository root).
ALLOWED: dict[str, tuple[str, ...]] = {
    "the pytest plugin (fixtures, local test servers); never loaded by a running app":
        ("kernel/testing/__init__.py", "kernel/testing/live.py"),
    "`svc-ext deploy`: the author's command-line client of the server they name (--url); never loaded by an app":
        ("extensions_sdk/deploy.py",),
    "the listening socket of `svc serve` (inbound, bound by the operator's SVC_HOST/SVC_PORT)": ("kernel/workers/serve.py",),
    "the operator's SMTP server (SVC_SMTP_*)": ("kernel/mailer/smtp.py",),
    "the operator's S3 storage (SVC_STORAGE=s3://, boto3)": ("kernel/storage/s3.py",),
    "the operator's Redis (SVC_REDIS_URL)": ("kernel/cache/redis_cache.py", "kernel/redisio/pubsub_listener.py",
                                             "kernel/redisio/redis_writes.py"),
    "the operator's database (SVC_DATABASE_URL, or the SQLite file in SVC_DATA_DIR)":
        ("kernel/db/engine.py",),
    "the Unix socket pair between the server and an extension's runner process (no network)":
        ("extensions_sdk/channel.py", "extensions_sdk/runner.py"),
    # Being added by another change; an entry whose file does not exist yet is not reported stale.
    "the local Unix-socket broker between the processes of one deployment": ("kernel/workers/broker.py",),
}

# Modules whose import alone means a client of their own.
CLIENT_MODULES = ("requests", "aiohttp", "urllib.request", "http.client", "urllib3", "httpcore", "pycurl",
                  "aiosmtplib", "botocore")
# Calls (by the dotted name they resolve to through the file's imports) that make a client or a connection.
CLIENT_CALLS = (
    "httpx.Client", "httpx.AsyncClient", "httpx.HTTPTransport", "httpx.AsyncHTTPTransport", "httpx.get",
    "httpx.post", "httpx.put", "httpx.patch", "httpx.delete", "httpx.head", "httpx.options", "httpx.request",
    "httpx.stream", "socket.socket", "socket.create_connection", "socket.fromfd", "asyncio.open_connection",
    "asyncio.open_unix_connection", "smtplib.SMTP", "smtplib.SMTP_SSL", "smtplib.LMTP", "boto3.client",
    "boto3.resource", "boto3.session.Session", "boto3.Session", "redis.asyncio.from_url", "redis.asyncio.Redis",
    "redis.asyncio.Redis.from_url", "redis.asyncio.Redis.from_pool", "redis.asyncio.ConnectionPool.from_url",
    "redis.asyncio.BlockingConnectionPool.from_url", "redis.from_url", "redis.Redis", "sqlalchemy.create_engine", "sqlalchemy.ext.asyncio.create_async_engine",
    "psycopg.connect", "psycopg.AsyncConnection.connect", "sqlite3.connect", "aiosqlite.connect",
)
# Methods that connect whatever object they are called on (an event loop).
CONNECTING_METHODS = ("create_connection", "open_connection", "create_datagram_endpoint", "sock_connect",
                      "create_unix_connection", "open_unix_connection")


def _dotted(node: ast.expr) -> str | None:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def findings(source: str, filename: str = "<source>") -> list[str]:
    """``"line: what"`` for every client, socket or connection ``source`` makes."""
    tree = ast.parse(source, filename=filename)
    names: dict[str, str] = {}  # local name -> the dotted name it stands for
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
                if alias.name.startswith(CLIENT_MODULES):
                    found.append(f"{node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                names[alias.asname or alias.name] = full
                if full.startswith(CLIENT_MODULES) or node.module.startswith(CLIENT_MODULES):
                    found.append(f"{node.lineno}: from {node.module} import {alias.name}")
    for node in ast.walk(tree):
        targets: list[tuple[int, ast.expr]] = []
        if isinstance(node, ast.Call):
            targets.append((node.lineno, node.func))
        elif isinstance(node, ast.ClassDef):  # a subclass of a client or transport makes one too
            targets += [(node.lineno, base) for base in node.bases]
        for line, func in targets:
            dotted = _dotted(func)
            if dotted is None:
                continue
            head, _, rest = dotted.partition(".")
            resolved = names.get(head, head) + (f".{rest}" if rest else "")
            if resolved in CLIENT_CALLS or dotted in CLIENT_CALLS:
                found.append(f"{line}: {resolved}")
            elif isinstance(func, ast.Attribute) and func.attr in CONNECTING_METHODS:
                found.append(f"{line}: {dotted}")
    return sorted(set(found), key=lambda f: int(f.split(":")[0]))


def _product_files() -> list[Path]:
    return sorted(p for top in PRODUCT for p in (ROOT / top).rglob("*.py")
                  if ".venv" not in p.parts and "tests" not in p.relative_to(ROOT).parts)


def _allowed() -> dict[str, str]:
    return {path: reason for reason, paths in ALLOWED.items() for path in paths}


def test_product_code_makes_no_client_or_socket_outside_kernel_outbound():
    allowed = _allowed()
    offenders = []
    for path in _product_files():
        rel = path.relative_to(ROOT).as_posix()
        if rel == THE_ONE_PLACE or rel in allowed:
            continue
        offenders += [f"{rel}:{finding}" for finding in findings(path.read_text(encoding="utf-8"), rel)]
    assert not offenders, ("outbound requests go through kernel.base.outbound (its `client`), which checks and pins "
                           "every destination; infrastructure the operator configures goes on ALLOWED with its "
                           "reason:\n" + "\n".join(offenders))


def test_every_allowed_file_still_needs_its_entry():
    stale = []
    for rel in _allowed():
        path = ROOT / rel
        if path.exists() and not findings(path.read_text(encoding="utf-8"), rel):
            stale.append(rel)
    assert not stale, f"on ALLOWED but making no client, socket or connection any more: {stale}"


def test_kernel_outbound_is_where_the_client_is_made():
    made = findings((ROOT / THE_ONE_PLACE).read_text(encoding="utf-8"))
    assert any("httpx.AsyncClient" in f for f in made), made


@pytest.mark.parametrize("source", [
    "import httpx\nhttpx.AsyncClient()",
    "import httpx as h\nasync def f():\n    async with h.AsyncClient() as c: ...",
    "from httpx import Client\nClient()",
    "import httpx\nhttpx.get('http://x')",
    "import httpx\nclass T(httpx.AsyncHTTPTransport): ...",
    "import urllib.request\nurllib.request.urlopen('http://x')",
    "from urllib.request import urlopen",
    "import requests",
    "import aiohttp",
    "import http.client",
    "import socket\nsocket.socket()",
    "import socket\nsocket.create_connection(('x', 80))",
    "from socket import create_connection\ncreate_connection(('x', 80))",
    "import asyncio\nasyncio.open_connection('x', 80)",
    "async def f(loop):\n    await loop.create_connection(lambda: None, 'x', 80)",
    "import smtplib\nsmtplib.SMTP('x')",
    "import redis.asyncio as aioredis\naioredis.from_url('redis://x')",
])
def test_the_scan_sees_each_way_of_making_one(source):
    assert findings(source) != []


@pytest.mark.parametrize("source", [
    "import httpx\ndef f(c: httpx.AsyncClient) -> httpx.Response: ...",
    "import httpx\nhttpx.Timeout(5.0)",
    "from urllib.parse import urlsplit\nurlsplit('http://x')",
    "import socket\nsocket.inet_aton('1.2.3.4')",
    "from kernel.base import outbound\noutbound.client(k, 'x', timeout=t)",
])
def test_the_scan_lets_through_what_makes_no_connection(source):
    assert findings(source) == []

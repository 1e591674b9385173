"""Helpers of store sync's tests (a module of their own, not conftest.py, so that no other
area's conftest can shadow them). The tests run against small local servers of the two
protocols, started by the test:

- ``FakeGoogle``: an OAuth 2.0 token endpoint that accepts only the JWT-bearer grant with an
  assertion signed by the test's service-account key (verified with its public key: RS256,
  ``iss``, ``aud``, ``scope``, ``exp``), and the Firestore REST ``documents:commit`` method,
  which accepts only its own access tokens, checks the body's shape and applies the writes to a
  dict of documents.
- ``FakeRtdb``: the Realtime Database REST API (``PUT``/``DELETE`` ``/<path>.json``), which
  accepts only ``auth=<secret>`` and keeps the tree.

Both keep every request, can be told to fail the next requests, and listen on 127.0.0.1, which
the apps allow with ``SVC_OUTBOUND_ALLOW_NETWORKS``.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt as pyjwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

KEY = base64.b64encode(b"y" * 32).decode()
PROJECT = "demo-project"
CLIENT_EMAIL = "sync@demo-project.iam.gserviceaccount.com"
RTDB_SECRET = "rtdb-secret-0123456789"
BASE_ENV = {"SVC_ENCRYPTION_KEY": KEY, "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32",
            "SVC_EVENTS_POLL_SECONDS": "0.2", "SVC_EVENTS_RETRY_BASE_SECONDS": "0.05",
            "SVC_EVENTS_RETRY_MAX_SECONDS": "0.2", "SVC_STORE_SYNC_READ_TIMEOUT": "3"}
PIPES = "/store-sync/pipelines"


def _private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


SERVICE_KEY = _private_key()
SERVICE_PEM = SERVICE_KEY.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                        serialization.NoEncryption()).decode()
OTHER_PEM = _private_key().private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                         serialization.NoEncryption()).decode()


class Server:
    """A threaded local HTTP server; the subclass's ``answer(method, path, query, headers,
    body)`` speaks the protocol. An ``answer`` that raises (an ``assert`` on what the app sent)
    answers 500 and keeps the request in ``broken``; ``stop()`` then fails the test with it, in
    the test's own thread (the fixtures stop the servers)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.fail_next = 0  # answer 503 to this many of the next protocol requests
        self.fail_status = 503
        self.broken: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                with server.lock:
                    try:
                        status, payload = server.answer(self.command, parts.path, parse_qs(parts.query),
                                                        dict(self.headers), body)
                    except Exception as exc:  # noqa: BLE001 - reported in the test's thread by stop()
                        said = f"{self.command} {self.path}: {type(exc).__name__}: {exc}"
                        server.broken.append(f"{said}\n  body: {body[:500]!r}")
                        status, payload = 500, {"error": "the fake server refused this request", "detail": said}
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _handle  # noqa: N815 - the stdlib's names

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def url(self, path: str = "") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _failing(self) -> bool:
        if self.fail_next > 0:
            self.fail_next -= 1
            return True
        return False

    def stop(self) -> None:
        """Stop serving; fail the test if a request broke the protocol's contract."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.broken:
            pytest.fail(f"{type(self).__name__} saw requests that broke its contract:\n" + "\n".join(self.broken),
                        pytrace=False)


class FakeGoogle(Server):
    """The OAuth token endpoint (``/token``) and Firestore's ``documents:commit``."""

    COMMIT = f"/v1/projects/{PROJECT}/databases/(default)/documents:commit"

    def __init__(self) -> None:
        super().__init__()
        self.public_key = SERVICE_KEY.public_key()
        self.tokens: set[str] = set()
        self.grants: list[dict[str, Any]] = []  # the verified claims of each assertion
        self.commits: list[dict[str, Any]] = []  # the bodies of accepted commits
        self.documents: dict[str, dict[str, Any]] = {}
        self.token_answer: Any = None  # when set, the token endpoint answers this (a hostile one)

    def answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
               body: bytes) -> tuple[int, Any]:
        self.requests.append({"method": method, "path": path, "headers": headers, "body": body})
        if path == "/token":
            return self._token(method, headers, body)
        if path == self.COMMIT and method == "POST":
            return self._commit(headers, body)
        return 404, {"error": {"code": 404, "message": "not found"}}

    def _token(self, method: str, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        form = parse_qs(body.decode())
        if method != "POST" or headers.get("Content-Type") != "application/x-www-form-urlencoded":
            return 400, {"error": "invalid_request"}
        if form.get("grant_type") != ["urn:ietf:params:oauth:grant-type:jwt-bearer"]:
            return 400, {"error": "unsupported_grant_type"}
        try:
            claims = pyjwt.decode(form["assertion"][0], self.public_key, algorithms=["RS256"],
                                  audience=self.url("/token"), issuer=CLIENT_EMAIL,
                                  options={"require": ["exp", "iat", "iss", "aud", "scope"]})
        except (KeyError, pyjwt.PyJWTError) as exc:
            return 400, {"error": "invalid_grant", "error_description": str(exc)}
        if claims["scope"] != "https://www.googleapis.com/auth/datastore" or claims["sub"] != CLIENT_EMAIL or \
                claims["exp"] - claims["iat"] > 3600:
            return 400, {"error": "invalid_scope"}
        if self._failing():
            return self.fail_status, {"error": "temporarily_unavailable"}
        self.grants.append(claims)
        if self.token_answer is not None:
            return 200, self.token_answer
        token = f"ya29.{uuid.uuid4().hex}"
        self.tokens.add(token)
        return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}

    def _commit(self, headers: dict[str, str], body: bytes) -> tuple[int, Any]:
        auth = headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or auth[7:] not in self.tokens:
            return 401, {"error": {"code": 401, "message": "Request had invalid authentication credentials.",
                                   "status": "UNAUTHENTICATED"}}
        if self._failing():
            return self.fail_status, {"error": {"code": self.fail_status, "message": "The service is unavailable."}}
        doc = json.loads(body)
        prefix = f"projects/{PROJECT}/databases/(default)/documents/"
        assert set(doc) == {"writes"} and 0 < len(doc["writes"]) <= 500, doc
        for write in doc["writes"]:
            if "delete" in write:
                assert set(write) == {"delete"} and write["delete"].startswith(prefix), write
                self.documents.pop(write["delete"][len(prefix):], None)
            else:
                assert set(write) == {"update"} and set(write["update"]) == {"name", "fields"}, write
                name = write["update"]["name"]
                assert name.startswith(prefix) and len(name[len(prefix):].split("/")) % 2 == 0, name
                self.documents[name[len(prefix):]] = write["update"]["fields"]
        self.commits.append(doc)
        return 200, {"writeResults": [{"updateTime": "2026-11-26T10:00:00Z"} for _ in doc["writes"]],
                     "commitTime": "2026-11-26T10:00:00Z"}


class FakeRtdb(Server):
    """The Realtime Database REST API at ``/<path>.json``, for ``auth=RTDB_SECRET`` only."""

    def __init__(self) -> None:
        super().__init__()
        self.tree: dict[str, Any] = {}
        self.writes: list[tuple[str, str, Any]] = []  # (method, path, value) accepted, in order

    def answer(self, method: str, path: str, query: dict[str, list[str]], headers: dict[str, str],
               body: bytes) -> tuple[int, Any]:
        self.requests.append({"method": method, "path": path, "query": query, "headers": headers, "body": body})
        if query.get("auth") != [RTDB_SECRET]:
            return 401, {"error": "Permission denied"}
        if not path.endswith(".json") or method not in ("PUT", "DELETE"):
            return 400, {"error": "Invalid path or method"}
        if self._failing():
            return self.fail_status, {"error": "Service unavailable"}
        key = path[1:-len(".json")]
        if method == "PUT":
            assert headers.get("Content-Type") == "application/json"
            value = json.loads(body)
            self.tree[key] = value
            self.writes.append((method, key, value))
            return 200, value
        self.tree.pop(key, None)
        self.writes.append((method, key, None))
        return 200, None


def service_account(google: FakeGoogle | None = None, **extra: Any) -> dict[str, Any]:
    """A service-account key as Google issues it (with the extra keys docs/store-sync.md allows)."""
    return {"type": "service_account", "project_id": PROJECT, "private_key_id": "k1", "private_key": SERVICE_PEM,
            "client_email": CLIENT_EMAIL, "client_id": "1234567890",
            "token_uri": google.url("/token") if google else "https://oauth2.googleapis.com/token", **extra}


def env_for(google: FakeGoogle | None) -> dict[str, str]:
    return {**BASE_ENV, **({"SVC_STORE_SYNC_FIRESTORE_URL": google.url()} if google else {})}


async def until(check: Any, timeout: float = 20.0) -> None:
    import asyncio

    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out waiting"
        await asyncio.sleep(0.02)


async def grant_public_read(calls: Any, collection: str, fields: list[str] | None = None,
                            conditions: dict[str, Any] | None = None) -> None:
    """Let the site's public role (a pipeline's default reader) read ``collection``."""
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r["systemKey"] == "public")
    rule: dict[str, Any] = {"collection": collection, "action": "read", "fields": fields or ["*"]}
    if conditions is not None:
        rule["conditions"] = conditions
    await calls.grant([rule], {"roleId": public["id"]})


async def log_of(calls: Any, pipeline_id: str, check: Any) -> list[dict[str, Any]]:
    """The pipeline's log, once ``check(log)`` holds (an entry follows its attempt)."""
    import asyncio

    entries: list[dict[str, Any]] = []
    for _ in range(500):
        entries = await calls.ok("get", f"{PIPES}/{pipeline_id}/log", params={"limit": 100})
        if check(entries):
            return entries
        await asyncio.sleep(0.02)
    raise AssertionError(f"the log never matched: {entries}")

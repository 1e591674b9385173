"""The two targets, over their real protocols.

``docstore``: Cloud Firestore's REST API. Writes go in one ``documents:commit`` request
(``POST {base}/v1/projects/{project}/databases/(default)/documents:commit`` with
``{ writes: [{ update: { name, fields } } | { delete: name }] }``, at most 500 writes, applied
atomically), with ``Authorization: Bearer <access token>``. The token comes from the OAuth 2.0
JWT-bearer grant (RFC 7523, Google's service-account flow): google-auth signs an assertion
(RS256, ``iss``/``sub`` the ``client_email``, ``aud`` the ``token_uri``, ``scope`` datastore,
one hour) with the service account's key, and it is exchanged at the credentials' ``token_uri``
for an access token, kept in this process until a minute before it expires. The exchange is a
plain POST made here (not google-auth's transport) so it follows the outbound rule like every
other request. ``SVC_STORE_SYNC_FIRESTORE_URL`` is the API's base URL.

``rtdb``: the Firebase Realtime Database REST API: ``PUT <databaseUrl>/<path>.json?auth=<secret>``
with the item as JSON, ``DELETE`` of the same URL.

Every URL a site admin gave (``databaseUrl``, ``token_uri``) is checked again at connect time by
the ``kernel.base.outbound`` client (public addresses only, or inside ``SVC_OUTBOUND_ALLOW_NETWORKS``);
the operator's Firestore base URL goes through its ``operator`` client, like other operator
settings. Redirects are not followed. Error messages never carry a secret, a token or the
``auth`` parameter.
"""

from __future__ import annotations

import asyncio
import math
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import orjson

from kernel import ApiError
from kernel.base.outbound import OutboundRefused, check_url
from kernel.base.outbound import client as outbound_client

if TYPE_CHECKING:
    import httpx

CLIENT_KEY = "store_sync.http"
TOKENS_STATE = "store_sync.tokens"
SCOPE = "https://www.googleapis.com/auth/datastore"
GRANT_TYPE = "urn:ietf:params:oauth:grant-type:jwt-bearer"
ASSERTION_LIFETIME = 3600
TOKEN_MARGIN = 60.0  # seconds before expiry a cached token is not used any more
MAX_WRITES = 500  # Firestore's limit of writes in one commit
INT64 = (-(2**63), 2**63 - 1)
MAX_ANSWER = 1 << 20  # bytes of an answer read at most (a hostile endpoint cannot fill memory)
TOKEN = re.compile(r"[\x21-\x7e]{1,4096}")  # an access token fit for an Authorization header


class PushFailed(Exception):
    """The target refused or could not be reached; the message is safe to show and store.
    ``done``: how many of the writes went through before it (the Realtime Database's)."""

    def __init__(self, message: str, done: int = 0) -> None:
        super().__init__(message)
        self.done = done


@dataclass(frozen=True)
class Write:
    """One item's change: ``data`` to write at ``path``, or None to delete it."""

    path: str
    data: dict[str, Any] | None


def parse_base_url(raw: str) -> str:
    """``SVC_STORE_SYNC_FIRESTORE_URL``: an http(s) URL without query (checked at boot)."""
    try:
        url = check_url(raw.strip())
    except ApiError as exc:
        raise ValueError(exc.message) from None
    if "?" in url or "#" in url:
        raise ValueError("must have no query or fragment")
    return url.rstrip("/")


def client(kernel: Any, *, operator: bool = False) -> httpx.AsyncClient:
    """The client for a site admin's URLs, or (``operator``) for the operator's Firestore base URL."""
    import httpx

    settings = kernel.settings
    return outbound_client(kernel, CLIENT_KEY + (".operator" if operator else ""), operator=operator,
                           timeout=httpx.Timeout(settings.get("store_sync_read_timeout"),
                                                 connect=settings.get("store_sync_connect_timeout")))


@dataclass(frozen=True)
class Answer:
    """A target's answer: its status and at most ``MAX_ANSWER`` bytes of its body."""

    status_code: int
    body: bytes

    def json(self) -> Any:
        """The body as JSON; ValueError when it is not."""
        return orjson.loads(self.body)


async def _send(kernel: Any, method: str, url: str, *, operator: bool, what: str, **kw: Any) -> Answer:
    """One request to ``url`` through the outbound rule (``operator``: a URL of the operator's
    settings, any address but the unspecified one), bounded in time (connect plus read
    timeout, for the whole exchange) and in size (``MAX_ANSWER``); PushFailed, whose message
    never holds the URL's query, when it cannot be made."""
    import httpx

    settings = kernel.settings
    budget = float(settings.get("store_sync_connect_timeout")) + float(settings.get("store_sync_read_timeout"))
    try:
        async with asyncio.timeout(budget):
            http = client(kernel, operator=operator)
            response = await http.send(http.build_request(method, url, **kw), stream=True)
            try:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_ANSWER:
                        raise PushFailed(f"{what} answered more than {MAX_ANSWER} bytes")
            finally:
                await response.aclose()
            return Answer(response.status_code, bytes(body))
    except OutboundRefused as exc:
        raise PushFailed(f"{what}: refused address ({exc})") from None
    except (TimeoutError, httpx.TimeoutException) as exc:
        raise PushFailed(f"{what}: timed out ({type(exc).__name__})") from None
    except httpx.HTTPError as exc:
        raise PushFailed(f"{what}: could not connect ({type(exc).__name__})") from None


def _failed(what: str, response: Answer) -> PushFailed:
    kind = "a redirect (not followed)" if 300 <= response.status_code < 400 else f"HTTP {response.status_code}"
    detail = ""
    try:
        body = response.json()
        error = body.get("error") if isinstance(body, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str):
            detail = f": {message[:200]}"
    except ValueError:
        pass
    return PushFailed(f"{what} answered {kind}{detail}")


# ----------------------------------------------------------------------------- Firestore


def firestore_value(value: Any) -> dict[str, Any]:
    """A JSON value as a Firestore ``Value`` (REST's typed union). An array inside an array,
    which Firestore refuses, is written as its JSON text; an integer outside 64 bits as a string."""
    if value is None:
        return {"nullValue": None}
    if isinstance(value, bool):
        return {"booleanValue": value}
    if isinstance(value, int):
        if INT64[0] <= value <= INT64[1]:
            return {"integerValue": str(value)}
        return {"stringValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"stringValue": str(value)}
    if isinstance(value, str):
        return {"stringValue": value}
    if isinstance(value, list):
        return {"arrayValue": {"values": [
            {"stringValue": orjson.dumps(v).decode()} if isinstance(v, list) else firestore_value(v) for v in value]}}
    if isinstance(value, dict):
        return {"mapValue": {"fields": firestore_fields(value)}}
    return {"stringValue": str(value)}


def firestore_fields(data: dict[str, Any]) -> dict[str, Any]:
    return {str(key): firestore_value(value) for key, value in data.items()}


def document_name(project: str, path: str) -> str:
    return f"projects/{project}/databases/(default)/documents/{path}"


def commit_body(project: str, writes: list[Write]) -> dict[str, Any]:
    """The ``documents:commit`` body of ``writes`` (each an update of the whole document, or a
    delete)."""
    out: list[dict[str, Any]] = []
    for write in writes:
        name = document_name(project, write.path)
        if write.data is None:
            out.append({"delete": name})
        else:
            out.append({"update": {"name": name, "fields": firestore_fields(write.data)}})
    return {"writes": out}


def assertion(credentials: dict[str, Any], now: int | None = None) -> str:
    """The signed JWT of the service account's grant (google-auth signs it with RS256; the
    store-sync extra, imported here only: kernel/base/extras.py)."""
    from kernel.base.extras import installed, missing_message

    if not installed("store-sync"):
        raise PushFailed(missing_message("store-sync", "a docstore pipeline's service account"))
    from google.auth import crypt, jwt

    signer = crypt.RSASigner.from_service_account_info(credentials)
    issued = int(time.time()) if now is None else now
    payload = {"iss": credentials["client_email"], "sub": credentials["client_email"],
               "aud": credentials["token_uri"], "scope": SCOPE, "iat": issued, "exp": issued + ASSERTION_LIFETIME}
    return jwt.encode(signer, payload).decode("ascii")


async def access_token(kernel: Any, cache_key: str, credentials: dict[str, Any]) -> str:
    """An OAuth access token for the service account, from this process's cache or a new
    JWT-bearer grant at its ``token_uri``."""
    tokens: dict[str, tuple[str, float]] = kernel.state.setdefault(TOKENS_STATE, {})
    cached = tokens.get(cache_key)
    if cached is not None and cached[1] > time.monotonic():
        return cached[0]
    response = await _send(kernel, "POST", credentials["token_uri"], operator=False, what="the token endpoint",
                           data={"grant_type": GRANT_TYPE, "assertion": assertion(credentials)},
                           headers={"Accept": "application/json"})
    if response.status_code != 200:
        raise _failed("the token endpoint", response)
    try:
        body = response.json()
    except ValueError:
        raise PushFailed("the token endpoint answered something other than JSON") from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not TOKEN.fullmatch(token):
        raise PushFailed("the token endpoint's answer has no access_token")
    lifetime = body.get("expires_in", 3600)
    lifetime = float(lifetime) if isinstance(lifetime, (int, float)) and not isinstance(lifetime, bool) else 3600.0
    if len(tokens) > 10_000:
        tokens.clear()
    tokens[cache_key] = (token, time.monotonic() + max(0.0, min(lifetime, 86_400.0) - TOKEN_MARGIN))
    return token


def forget_token(kernel: Any, cache_key: str) -> None:
    kernel.state.get(TOKENS_STATE, {}).pop(cache_key, None)


async def push_docstore(kernel: Any, cache_key: str, project: str, credentials: dict[str, Any],
                        writes: list[Write]) -> None:
    """Commit ``writes`` to Firestore, 500 at a time; a 401 drops the cached token and the
    next attempt gets a new one."""
    base = str(kernel.settings.get("store_sync_firestore_url")).rstrip("/")
    url = f"{base}/v1/projects/{project}/databases/(default)/documents:commit"
    for start in range(0, len(writes), MAX_WRITES):
        token = await access_token(kernel, cache_key, credentials)
        response = await _send(kernel, "POST", url, operator=True, what="Firestore",
                               content=orjson.dumps(commit_body(project, writes[start:start + MAX_WRITES])),
                               headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
        if response.status_code == 401:
            forget_token(kernel, cache_key)
        if response.status_code != 200:
            raise _failed("Firestore", response)


# ----------------------------------------------------------------------------- Realtime Database


def rtdb_url(credentials: dict[str, Any], path: str) -> str:
    return f"{credentials['databaseUrl']}/{quote(path, safe='/')}.json?auth={quote(credentials['secret'], safe='')}"


async def push_rtdb(kernel: Any, credentials: dict[str, Any], writes: list[Write]) -> int:
    """PUT or DELETE each write in order; stops at the first failure (PushFailed, with how many
    went through in ``done``). Returns how many were written."""
    done = 0
    for write in writes:
        url = rtdb_url(credentials, write.path)
        if write.data is None:
            response = await _send(kernel, "DELETE", url, operator=False, what="the Realtime Database")
        else:
            response = await _send(kernel, "PUT", url, operator=False, what="the Realtime Database",
                                   content=orjson.dumps(write.data), headers={"Content-Type": "application/json"})
        if response.status_code != 200:
            failure = _failed("the Realtime Database", response)
            failure.done = done
            raise failure
        done += 1
    return done

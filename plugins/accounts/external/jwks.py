"""Signing keys of trusted issuers: fetched over http(s), cached per issuer, fail closed.

Keys come from the issuer's ``jwksUri``, or from its ``discoveryUrl`` (OpenID Provider
Configuration, whose ``jwks_uri`` names the set). A key set is kept in process memory for
``KEYS_TTL`` seconds, per issuer and key source, in ``kernel.state`` (no module-level state).
A token whose ``kid`` is not in the set triggers one refetch, at most once per
``UNKNOWN_KID_REFETCH`` seconds per issuer, so key rotation works without letting random kids
hammer the identity provider. An unreachable or malformed key set is never worked around:
the token is refused (401), the cause is logged, and retries wait ``FAILURE_BACKOFF`` seconds.

Every fetch goes through the ``kernel.base.outbound`` client: the configured URL, and the ``jwks_uri``
a discovery document names (checked like a configured one first), are resolved and checked at
connect time by the outbound rule (docs/operations.md#outbound-requests) (no loopback, private, link-local or metadata address
unless the operator opened it); redirects are not followed.
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass, field
from time import monotonic
from typing import TYPE_CHECKING, Any

import jwt

from kernel.base import outbound
from kernel.base.errors import ApiError

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("svc.accounts.jwks")

KEYS_TTL = 600.0
UNKNOWN_KID_REFETCH = 60.0
FAILURE_BACKOFF = 5.0
FETCH_TIMEOUT = 3.0
MAX_DOCUMENT_BYTES = 512 * 1024
STATE_KEY = "accounts.jwks"
CLIENT_KEY = "accounts.jwks"

# Which JWK a token's algorithm may be verified with: key type, and the curve for ECDSA.
_KEY_TYPES = {"RS": "RSA", "PS": "RSA", "ES": "EC"}
_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


class KeySetError(Exception):
    """The key set could not be fetched or read; the message says why (for the log)."""


@dataclass
class _Entry:
    source: tuple[Any, ...]
    keys: list[dict[str, Any]] | None = None
    fetched_at: float = float("-inf")
    forced_at: float = float("-inf")
    failed_at: float = float("-inf")
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


def _entries(kernel: Any) -> dict[str, _Entry]:
    return kernel.state.setdefault(STATE_KEY, {})


def forget(kernel: Any, issuer_id: str) -> None:
    """Drop the cached keys of one issuer (its config changed or it was removed)."""
    _entries(kernel).pop(issuer_id, None)


def _compatible(jwk: dict[str, Any], alg: str) -> bool:
    if jwk.get("kty") != _KEY_TYPES.get(alg[:2]):
        return False
    if alg in _CURVES and jwk.get("crv") != _CURVES[alg]:
        return False
    # A key that names its algorithm is only good for that one (RFC 7517 section 4.4).
    return jwk.get("alg") in (None, alg)


def _usable(jwk: Any) -> bool:
    if not isinstance(jwk, dict) or jwk.get("kty") not in ("RSA", "EC") or jwk.get("use") not in (None, "sig"):
        return False
    try:
        jwt.PyJWK(jwk)
    except jwt.PyJWTError:
        return False
    return True


def parse_key_set(document: Any) -> list[dict[str, Any]]:
    """The usable public signing keys (RSA and EC) of a JWKS document."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise KeySetError("the document is not a JWK set (no 'keys' list)")
    keys = [k for k in document["keys"] if _usable(k)]
    if not keys:
        raise KeySetError("the JWK set holds no usable RSA or EC signing key")
    return keys


async def get_json(client: httpx.AsyncClient, url: str) -> Any:
    try:
        outbound.check_url(url)
    except ApiError as exc:
        raise KeySetError(f"refusing the URL {url[:200]!r}: {exc.message}") from None
    async with client.stream("GET", url, headers={"Accept": "application/json"}) as resp:
        if resp.status_code != 200:
            raise KeySetError(f"{url[:200]} answered HTTP {resp.status_code}")
        body = bytearray()
        async for chunk in resp.aiter_bytes():
            body.extend(chunk)
            if len(body) > MAX_DOCUMENT_BYTES:
                raise KeySetError(f"{url[:200]} answered more than {MAX_DOCUMENT_BYTES} bytes")
    try:
        return json.loads(bytes(body))
    except ValueError as exc:
        raise KeySetError(f"{url[:200]} did not answer JSON") from exc


async def fetch_key_set(kernel: Any, config: dict[str, Any]) -> list[dict[str, Any]]:
    """Fetch the issuer's key set (through discovery when configured so)."""
    import httpx

    # No redirects: the configured URL is what an admin approved. Short timeouts: this runs
    # inside a request, and a slow identity provider must not hold the worker.
    client = outbound.client(kernel, CLIENT_KEY, timeout=httpx.Timeout(FETCH_TIMEOUT))
    try:
        url = config.get("jwksUri")
        if not url:
            discovery = await get_json(client, config["discoveryUrl"])
            if not isinstance(discovery, dict) or not isinstance(discovery.get("jwks_uri"), str):
                raise KeySetError("the discovery document has no 'jwks_uri'")
            # OpenID Connect Discovery 1.0, section 4.3: the document's issuer must be ours.
            if discovery.get("issuer") not in (None, config["issuer"]):
                raise KeySetError("the discovery document names another issuer")
            url = discovery["jwks_uri"]
        return parse_key_set(await get_json(client, url))
    except outbound.OutboundRefused as exc:
        raise KeySetError(f"refused address: {exc}") from exc
    except httpx.HTTPError as exc:
        raise KeySetError(f"{type(exc).__name__}: {exc}") from exc


KEYS_UNAVAILABLE = "keys_unavailable"


def _fetch_failed(issuer: str) -> ApiError:
    return ApiError(401, "UNAUTHENTICATED", f"The signing keys of issuer '{issuer[:100]}' could not be fetched; "
                    "the token cannot be verified", extensions={"reason": KEYS_UNAVAILABLE})


async def _refresh(kernel: Any, entry: _Entry, config: dict[str, Any]) -> None:
    now = monotonic()
    if now - entry.failed_at < FAILURE_BACKOFF:
        raise _fetch_failed(config["issuer"])
    try:
        entry.keys = await fetch_key_set(kernel, config)
    except KeySetError as exc:
        entry.failed_at = now
        log.warning("key set of issuer %r could not be fetched: %s", config["issuer"][:100], exc)
        raise _fetch_failed(config["issuer"]) from exc
    entry.fetched_at = monotonic()


def _select(keys: list[dict[str, Any]], kid: Any, alg: str) -> dict[str, Any] | None:
    candidates = [k for k in keys if _compatible(k, alg)]
    if kid is None:
        # Without a kid only an unambiguous set will do: trying every key is an oracle.
        return candidates[0] if len(candidates) == 1 else None
    return next((k for k in candidates if k.get("kid") == kid), None)


async def signing_key(kernel: Any, issuer_id: str, config: dict[str, Any], kid: Any, alg: str) -> Any:
    """The public key to verify a token of this issuer with ``kid`` and ``alg``, or 401."""
    # Another worker may have changed the config: a new key source (or issuer, which discovery
    # is checked against) starts a new entry even before ``forget`` reaches this process.
    source = (config.get("jwksUri"), config.get("discoveryUrl"), config["issuer"])
    entries = _entries(kernel)
    entry = entries.get(issuer_id)
    if entry is None or entry.source != source:
        entry = entries[issuer_id] = _Entry(source)
    # One fetch at a time per issuer: a burst of requests on a cold cache makes one request.
    async with entry.lock:
        fresh = False
        if entry.keys is None or monotonic() - entry.fetched_at >= KEYS_TTL:
            await _refresh(kernel, entry, config)
            fresh = True
        assert entry.keys is not None
        jwk = _select(entry.keys, kid, alg)
        if jwk is None and not fresh and monotonic() - entry.forced_at >= UNKNOWN_KID_REFETCH:
            entry.forced_at = monotonic()
            await _refresh(kernel, entry, config)
            jwk = _select(entry.keys, kid, alg)
    if jwk is None:
        what = f"kid '{str(kid)[:64]}'" if kid is not None else "no kid"
        raise ApiError.unauthenticated(f"The token's signing key ({what}, {alg}) is not in the key set of "
                                       f"issuer '{config['issuer'][:100]}'")
    try:
        return jwt.PyJWK(jwk, algorithm=alg).key
    except jwt.PyJWTError as exc:
        raise ApiError.unauthenticated("The issuer's signing key cannot be used with the token's algorithm") from exc

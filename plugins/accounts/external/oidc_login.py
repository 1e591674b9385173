"""Login with an OpenID Connect authorization code (PKCE) from a trusted issuer of the site.

``start`` makes a state (256 random bits; only its SHA-256 is stored in ``svc_external_logins``)
and answers the issuer's authorization URL. The PKCE verifier and the nonce are HMAC-SHA256 of
the state under ``JWT_SECRET``: nothing secret is stored, and only the holder of the state can
have the code redeemed. ``login`` spends the state (once), exchanges the code at the issuer's
token endpoint (discovery, through ``kernel.base.outbound``), verifies the ID token against the
issuer's keys (``jwks``), maps its claims as bearer tokens are mapped (``external_auth``) and
starts a session as a password login does. Each failure has its own code
(docs/accounts.md#signing-in-through-an-identity-provider-openid-connect, docs/errors.md).
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import hmac
import logging
import re
import secrets
from dataclasses import dataclass
from time import monotonic
from typing import TYPE_CHECKING, Any
from urllib.parse import quote_plus, urlencode, urlsplit

import jwt

from kernel import Setting
from kernel.auth.principal import Principal
from kernel.base import outbound
from kernel.base.errors import ApiError
from kernel.base.ids import uuid7
from kernel.base.secrets import SecretError
from kernel.base.settings import parse_int
from kernel.db.meta import aware, now_utc
from kernel.policy import audit
from kernel.tenancy.scope import SiteDB
from plugins.access.api import membership
from plugins.accounts import service
from plugins.accounts.external import external_auth, issuers, jwks
from plugins.accounts.external.issuer_config import ALLOWED_ALGORITHMS, CONTROL_CHARS, MAX_TEXT
from plugins.accounts.sessions.sessions import Client, hash_token, start_session
from plugins.accounts.tables import external_logins

if TYPE_CHECKING:
    import httpx

log = logging.getLogger("svc.accounts.oidc")

SETTINGS = [
    Setting(
        "SVC_EXTERNAL_LOGIN_TTL",
        600,
        parse_int(30),
        "Seconds a started OpenID Connect login (its state) may be completed (default 10 minutes).",
    ),
]
CLIENT_KEY = "accounts.oidc"
STATE_KEY = "accounts.oidc.discovery"
DISCOVERY_TTL = 600.0
BASE_SCOPES = ("openid", "email", "profile")
MAX_CODE = 2048
MAX_REDIRECT = 2000
MAX_TOKEN_ANSWER = 256 * 1024
ERROR_CODES = {
    "EXTERNAL_ISSUER_UNKNOWN": (401, "The issuer is not a trusted issuer of this site set up for login."),
    "EXTERNAL_STATE_INVALID": (
        401,
        "The login state is unknown, expired, of another site or issuer, or spent.",
    ),
    "EXTERNAL_CODE_REPLAYED": (401, "This authorization code was already redeemed."),
    "EXTERNAL_CODE_REJECTED": (401, "The issuer's token endpoint refused the authorization code."),
    "EXTERNAL_AUDIENCE_MISMATCH": (401, "The ID token is not addressed to this site's client id."),
    "EXTERNAL_TOKEN_INVALID": (401, "The ID token failed verification (signature, issuer, nonce or claims)."),
    "EXTERNAL_ISSUER_UNAVAILABLE": (
        502,
        "The issuer's discovery document or token endpoint could not be used.",
    ),
}
L = external_logins.c
# Control characters belong in no registered issuer (issuer_config), nor NUL in PostgreSQL text;
# a redirect URI has no whitespace either.
_UNSAFE = re.compile(r"[\s\x00-\x1f\x7f]")


def _error(code: str, message: str, **extensions: Any) -> ApiError:
    return ApiError(ERROR_CODES[code][0], code, message, extensions=extensions or None)


def _derive(kernel: Any, label: str, state: str) -> str:
    """The PKCE verifier or the nonce of ``state`` (43 url-safe characters, RFC 7636 4.1)."""
    mac = hmac.new(
        kernel.settings.resolved_jwt_secret().encode("utf-8"), f"{label}\x00{state}".encode(), hashlib.sha256
    ).digest()
    return base64.urlsafe_b64encode(mac).rstrip(b"=").decode("ascii")


def code_challenge(verifier: str) -> str:
    """RFC 7636 S256: BASE64URL(SHA256(verifier))."""
    return (
        base64.urlsafe_b64encode(hashlib.sha256(verifier.encode("ascii")).digest())
        .rstrip(b"=")
        .decode("ascii")
    )


def _text(body: dict[str, Any], name: str, max_length: int, min_length: int = 1) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not min_length <= len(value) <= max_length:
        raise ApiError.validation(
            f"'{name}' must be a string of {min_length} to {max_length} characters", path=[name]
        )
    return value


def _redirect_uri(value: str) -> str:
    parts = urlsplit(value)
    if not parts.scheme or (not parts.netloc and not parts.path) or parts.fragment or _UNSAFE.search(value):
        raise ApiError.validation(
            "'redirectUri' must be an absolute URI without a fragment", path=["redirectUri"]
        )
    return value


async def _login_issuer(kernel: Any, site_id: str, issuer: str) -> Any:
    """The enabled issuer ``issuer`` of the site, set up for login (``clientId``, ``discoveryUrl``)."""
    row = None
    if not CONTROL_CHARS.search(issuer):  # no registered issuer holds such characters: no query
        async with kernel.db.connect() as conn:
            row = await issuers.find_enabled(conn, site_id, issuer)
    config = dict(row["config"] or {}) if row is not None else {}
    if row is None or not config.get("clientId") or not config.get("discoveryUrl"):
        raise _error(
            "EXTERNAL_ISSUER_UNKNOWN",
            f"'{issuer[:100]}' is not a trusted issuer of this site set up for login (clientId)",
        )
    return row


@dataclass
class _Metadata:
    source: tuple[str, str]
    document: dict[str, Any]
    fetched_at: float


async def provider_metadata(kernel: Any, row: Any) -> dict[str, Any]:
    """The issuer's discovery document (cached ``DISCOVERY_TTL`` seconds per issuer and source);
    its ``issuer`` must be ours and its endpoints http(s) URLs the outbound rule accepts."""
    import httpx

    config = dict(row["config"] or {})
    source = (config["discoveryUrl"], row["issuer"])
    cache: dict[str, _Metadata] = kernel.state.setdefault(STATE_KEY, {})
    entry = cache.get(row["id"])
    if entry is not None and entry.source == source and monotonic() - entry.fetched_at < DISCOVERY_TTL:
        return entry.document
    client = outbound_client(kernel)
    try:
        document = await jwks.get_json(client, config["discoveryUrl"])
        if not isinstance(document, dict) or document.get("issuer") != row["issuer"]:
            raise jwks.KeySetError("the discovery document names another issuer (or none)")
        for name in ("authorization_endpoint", "token_endpoint"):
            value = document.get(name)
            if not isinstance(value, str) or urlsplit(value).scheme not in ("http", "https"):
                raise jwks.KeySetError(f"the discovery document has no http(s) '{name}'")
    except (jwks.KeySetError, httpx.HTTPError, ValueError) as exc:
        log.warning("OpenID configuration of issuer %r could not be used: %s", row["issuer"][:100], exc)
        raise _error(
            "EXTERNAL_ISSUER_UNAVAILABLE",
            f"The OpenID configuration of issuer '{row['issuer'][:100]}' could not be fetched",
        ) from exc
    cache[row["id"]] = _Metadata(source, document, monotonic())
    return document


def outbound_client(kernel: Any) -> httpx.AsyncClient:
    import httpx

    return outbound.client(kernel, CLIENT_KEY, timeout=httpx.Timeout(jwks.FETCH_TIMEOUT * 2))


def _ttl(kernel: Any) -> int:
    return int(kernel.settings.get("external_login_ttl", SETTINGS[0].default))


async def start(kernel: Any, site_id: str, body: dict[str, Any]) -> dict[str, Any]:
    """Begin a login at the issuer: ``{ authorizationUrl, state, expiresIn }``."""
    issuer = _text(body, "issuer", MAX_TEXT)
    redirect_uri = _redirect_uri(_text(body, "redirectUri", MAX_REDIRECT))
    row = await _login_issuer(kernel, site_id, issuer)
    config = dict(row["config"] or {})
    document = await provider_metadata(kernel, row)
    state = secrets.token_urlsafe(32)
    now, ttl = now_utc(), _ttl(kernel)
    async with kernel.db.begin() as conn:
        db = SiteDB(site_id, conn)
        await db.execute(db.delete(external_logins).where(L.expires_at < now))  # prune the site's stale ones
        await db.insert(
            external_logins,
            {
                "id": uuid7(),
                "issuer_id": row["id"],
                "state_hash": hash_token(state),
                "redirect_uri": redirect_uri,
                "created_at": now,
                "expires_at": now + dt.timedelta(seconds=ttl),
                "used_at": None,
                "code_hash": None,
            },
        )
    scopes = list(BASE_SCOPES) + [s for s in config.get("scopes") or [] if s not in BASE_SCOPES]
    query = urlencode(
        {
            "response_type": "code",
            "client_id": config["clientId"],
            "redirect_uri": redirect_uri,
            "scope": " ".join(scopes),
            "state": state,
            "nonce": _derive(kernel, "svc-oidc-nonce", state),
            "code_challenge": code_challenge(_derive(kernel, "svc-oidc-verifier", state)),
            "code_challenge_method": "S256",
        }
    )
    endpoint = document["authorization_endpoint"]
    return {
        "authorizationUrl": f"{endpoint}{'&' if '?' in endpoint else '?'}{query}",
        "state": state,
        "expiresIn": ttl,
    }


async def _spend_state(kernel: Any, site_id: str, issuer_id: str, state: str, code: str) -> str:
    """Mark the state redeemed with ``code``; its redirect URI. Wrong state or replay: 401."""
    async with kernel.db.begin() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(external_logins).where(L.state_hash == hash_token(state)))
        if row is None or row["issuer_id"] != issuer_id or aware(row["expires_at"]) <= now_utc():
            raise _error(
                "EXTERNAL_STATE_INVALID",
                "The login state is unknown, expired, or was issued for another site or issuer; start again",
            )
        replayed = _error("EXTERNAL_CODE_REPLAYED", "This authorization code was already used to sign in")
        if row["used_at"] is not None:
            if hmac.compare_digest(row["code_hash"] or "", hash_token(code)):
                raise replayed
            raise _error("EXTERNAL_STATE_INVALID", "The login state was already spent; start again")
        result = await db.execute(
            db.update(external_logins)
            .where(L.id == row["id"], L.used_at.is_(None))
            .values(used_at=now_utc(), code_hash=hash_token(code))
        )
        if result.rowcount != 1:  # a concurrent login with this state won
            raise replayed
    return str(row["redirect_uri"])


def _client_authentication(
    document: dict[str, Any], client_id: str, secret: str, form: dict[str, str], headers: dict[str, str]
) -> None:
    """A confidential client's credentials: HTTP Basic (``client_secret_basic``, the default of
    OpenID Connect Discovery), or in the form when the provider lists only ``client_secret_post``."""
    methods = document.get("token_endpoint_auth_methods_supported")
    if isinstance(methods, list) and "client_secret_post" in methods and "client_secret_basic" not in methods:
        form["client_secret"] = secret
        return
    # RFC 6749 2.3.1: each part form-urlencoded before the Basic encoding.
    pair = f"{quote_plus(client_id)}:{quote_plus(secret)}".encode()
    headers["Authorization"] = "Basic " + base64.b64encode(pair).decode("ascii")


async def _exchange(
    kernel: Any, row: Any, document: dict[str, Any], code: str, redirect_uri: str, state: str
) -> str:
    """The ID token the token endpoint answers for ``code`` (RFC 6749 4.1.3, RFC 7636 4.5)."""
    import httpx

    config = dict(row["config"] or {})
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": config["clientId"],
        "code_verifier": _derive(kernel, "svc-oidc-verifier", state),
    }
    unavailable = f"The token endpoint of issuer '{row['issuer'][:100]}' could not be used"
    headers = {"Accept": "application/json"}
    try:
        secret = issuers.open_client_secret(kernel, row["site_id"], config)
    except (ApiError, SecretError) as exc:
        log.warning("client secret of issuer %r cannot be opened: %s", row["issuer"][:100], exc)
        raise _error(
            "EXTERNAL_ISSUER_UNAVAILABLE", "The issuer's client secret cannot be opened (SVC_ENCRYPTION_KEY)"
        ) from exc
    if secret is not None:
        _client_authentication(document, config["clientId"], secret, form, headers)
    try:
        outbound.check_url(document["token_endpoint"])
        resp = await outbound_client(kernel).post(document["token_endpoint"], data=form, headers=headers)
        answer = resp.json() if len(resp.content) <= MAX_TOKEN_ANSWER else None
    except (ApiError, httpx.HTTPError, ValueError) as exc:
        log.warning("token endpoint of issuer %r failed: %s", row["issuer"][:100], exc)
        raise _error("EXTERNAL_ISSUER_UNAVAILABLE", unavailable) from exc
    if 400 <= resp.status_code < 500:
        reason = (
            answer.get("error") if isinstance(answer, dict) and isinstance(answer.get("error"), str) else None
        )
        raise _error(
            "EXTERNAL_CODE_REJECTED",
            f"The issuer refused the authorization code ({(reason or 'no reason')[:60]})",
            reason=(reason or "unknown")[:60],
        )
    if resp.status_code != 200 or not isinstance(answer, dict) or not isinstance(answer.get("id_token"), str):
        log.warning(
            "token endpoint of issuer %r answered %d without an id_token",
            row["issuer"][:100],
            resp.status_code,
        )
        raise _error("EXTERNAL_ISSUER_UNAVAILABLE", unavailable + " (no ID token in its answer)")
    return str(answer["id_token"])


def _invalid_token(reason: str, message: str) -> ApiError:
    return _error("EXTERNAL_TOKEN_INVALID", message, reason=reason)


async def verify_id_token(kernel: Any, row: Any, id_token: str, state: str) -> dict[str, Any]:
    """The claims of ``id_token`` after checking algorithm, signature, ``iss``, ``aud`` (the
    client id), ``azp``, ``exp``/``nbf`` (with the issuer's skew) and ``nonce``."""
    config = dict(row["config"] or {})
    try:
        header = jwt.get_unverified_header(id_token)
    except jwt.PyJWTError as exc:
        raise _invalid_token("claims", "The ID token cannot be read") from exc
    alg = header.get("alg")
    if alg not in ALLOWED_ALGORITHMS or alg not in (config.get("algorithms") or []):
        raise _invalid_token(
            "algorithm", f"The ID token's algorithm {str(alg)[:20]!r} is not allowed for this issuer"
        )
    try:
        key = await jwks.signing_key(
            kernel, row["id"], {**config, "issuer": row["issuer"]}, header.get("kid"), alg
        )
    except ApiError as exc:
        if (exc.details[0].extensions or {}).get("reason") == jwks.KEYS_UNAVAILABLE:
            raise _error("EXTERNAL_ISSUER_UNAVAILABLE", exc.message) from exc
        raise _invalid_token("signature", exc.message) from exc
    client_id = config["clientId"]
    try:
        claims = jwt.decode(
            id_token,
            key=key,
            algorithms=[alg],
            audience=client_id,
            issuer=row["issuer"],
            leeway=int(config.get("clockSkewSeconds") or 0),
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise ApiError(401, "TOKEN_EXPIRED", "The ID token has expired; sign in at the issuer again") from exc
    except jwt.InvalidAudienceError as exc:
        raise _error(
            "EXTERNAL_AUDIENCE_MISMATCH",
            f"The ID token is not addressed to this site's client id '{client_id[:100]}'",
        ) from exc
    except jwt.InvalidIssuerError as exc:
        raise _invalid_token("issuer", "The ID token's issuer does not match") from exc
    except jwt.InvalidSignatureError as exc:
        raise _invalid_token("signature", "The ID token's signature does not verify") from exc
    except jwt.PyJWTError as exc:
        raise _invalid_token("claims", f"The ID token's claims are not valid: {str(exc)[:120]}") from exc
    if "azp" in claims and claims["azp"] != client_id:
        raise _error("EXTERNAL_AUDIENCE_MISMATCH", "The ID token was issued to another client (azp)")
    nonce = claims.get("nonce")
    if not isinstance(nonce, str) or not hmac.compare_digest(nonce, _derive(kernel, "svc-oidc-nonce", state)):
        raise _invalid_token("nonce", "The ID token's nonce is not the one this login sent")
    return claims


async def login(kernel: Any, site_id: str | None, body: dict[str, Any], client: Client) -> dict[str, Any]:
    """``{ issuer, code, state }`` -> the password login's answer; every failure is audited."""
    if site_id is None:
        raise ApiError.validation(
            "Name the site to log in to: send X-Svc-Site", path=["headers", "X-Svc-Site"]
        )
    issuer = _text(body, "issuer", MAX_TEXT)
    code = _text(body, "code", MAX_CODE)
    state = _text(body, "state", 256, min_length=16)
    issuer_id = None
    try:
        row = await _login_issuer(kernel, site_id, issuer)
        issuer_id = row["id"]
        redirect_uri = await _spend_state(kernel, site_id, row["id"], state, code)
        document = await provider_metadata(kernel, row)
        claims = await verify_id_token(
            kernel, row, await _exchange(kernel, row, document, code, redirect_uri, state), state
        )
        user_id, _role_id, _email = await external_auth.map_claims(kernel, site_id, row, claims)
        if user_id is None:
            raise ApiError.forbidden(
                "No user of this site is linked to this identity, and the issuer does not "
                "provision users (jitProvisioning)",
                reason="not_provisioned",
            )
        user = await service.find_user(kernel, user_id)
        async with kernel.db.connect() as conn:
            member = await membership(conn, site_id, user_id)
        if user is None or user["status"] != "active" or member is None:
            raise ApiError(
                401, "INVALID_CREDENTIALS", "The account of this identity cannot sign in to this site"
            )
    except ApiError as exc:
        await _audit_failure(kernel, site_id, issuer_id, exc, client)
        raise
    principal = Principal(kind="user", user_id=user["id"], site_id=site_id, email=user["email"])
    async with kernel.unit_of_work(site_id, principal, client.request_id) as uow:
        data = await start_session(kernel, uow.conn, user, site_id, client)
        await audit.record(
            uow.conn,
            action="auth.login",
            site_id=site_id,
            principal=principal,
            target_type="user",
            target_id=user["id"],
            ip=client.ip,
            request_id=client.request_id,
            details={"method": "external", "issuerId": row["id"]},
        )
        uow.action("auth.login", {"userId": user["id"]})
    return data


async def _audit_failure(
    kernel: Any, site_id: str, issuer_id: str | None, exc: ApiError, client: Client
) -> None:
    async with kernel.db.begin() as conn:
        await audit.record(
            conn,
            action="auth.login_failed",
            site_id=site_id,
            target_type="issuer",
            target_id=issuer_id,
            ip=client.ip,
            request_id=client.request_id,
            details={"method": "external", "reason": exc.code},
        )


async def delete_site_rows(conn: Any, site_id: str) -> None:
    db = SiteDB(site_id, conn)
    await db.execute(db.delete(external_logins))

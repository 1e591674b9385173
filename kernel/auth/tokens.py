"""Internal access tokens: HS256 JWTs signed with JWT_SECRET."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from typing import Any

import jwt

from kernel.base.errors import ApiError

ISSUER = "svc"
ALGORITHM = "HS256"
# Tokens this process verified, with the secret that verified them (oldest first): a client sends the same token on every
# request until it expires, and PyJWT's decode costs ~45 µs (its padding check walks every
# character in Python). HS256 is deterministic, so a token that verified once verifies again under
# the same secret; only ``exp`` can change its answer, and it is checked on every hit.
# Revocation is not the token's business (the token version, in kernel/auth/usercache.py).
_VERIFIED: OrderedDict[str, tuple[str, dict[str, Any]]] = OrderedDict()
_VERIFIED_MAX = 4096


def issue_access_token(secret: str, *, user_id: str, site_id: str | None, token_version: int,
                       ttl: int, extra: dict[str, Any] | None = None) -> str:
    """A signed access token for ``user_id``; ``site_id`` binds it to one site (None: instance-wide)."""
    now = int(time.time())
    claims: dict[str, Any] = {
        "iss": ISSUER,
        "sub": user_id,
        "iat": now,
        "exp": now + ttl,
        "jti": uuid.uuid4().hex,
        "ver": token_version,
        "typ": "access",
    }
    if site_id is not None:
        claims["site"] = site_id
    if extra:
        claims.update(extra)
    return jwt.encode(claims, secret, algorithm=ALGORITHM)


def decode_access_token(secret: str, token: str) -> dict[str, Any]:
    """Verify and decode; raises 401 ``TOKEN_EXPIRED`` or ``UNAUTHENTICATED``.

    Only HS256 is accepted, so ``alg: none`` and algorithm-confusion tokens fail here.
    """
    seen = _VERIFIED.get(token)
    if seen is not None and seen[0] == secret:
        claims = seen[1]
        if claims["exp"] <= time.time():
            del _VERIFIED[token]
            raise _expired()
        return dict(claims)
    try:
        claims = jwt.decode(
            token, secret, algorithms=[ALGORITHM], issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise _expired() from exc
    except jwt.PyJWTError as exc:
        raise ApiError.unauthenticated("The access token is not valid") from exc
    if claims.get("typ") != "access" or not isinstance(claims["exp"], (int, float)):
        raise ApiError.unauthenticated("The access token is not valid")
    _VERIFIED[token] = (secret, claims)
    if len(_VERIFIED) > _VERIFIED_MAX:
        _VERIFIED.popitem(last=False)
    return dict(claims)


def _expired() -> ApiError:
    return ApiError(401, "TOKEN_EXPIRED", "The access token has expired; refresh and retry")


def peek_issuer(token: str) -> str | None:
    """The unverified ``iss`` claim, for routing a token to its verifier (never for trust)."""
    if token in _VERIFIED:
        return ISSUER
    try:
        claims = jwt.decode(token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return None
    iss = claims.get("iss")
    return iss if isinstance(iss, str) else None


def bearer_token(authorization: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, else None."""
    if not authorization:
        return None
    scheme, _, value = authorization.partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        return None
    return value.strip()

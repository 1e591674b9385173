"""Internal access tokens: HS256 JWTs signed with JWT_SECRET."""

from __future__ import annotations

import time
import uuid
from typing import Any

import jwt

from kernel.errors import ApiError

ISSUER = "svc"
ALGORITHM = "HS256"


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
    try:
        claims = jwt.decode(
            token, secret, algorithms=[ALGORITHM], issuer=ISSUER,
            options={"require": ["exp", "iat", "sub", "iss"]},
        )
    except jwt.ExpiredSignatureError as exc:
        raise ApiError(401, "TOKEN_EXPIRED", "The access token has expired; refresh and retry") from exc
    except jwt.PyJWTError as exc:
        raise ApiError.unauthenticated("The access token is not valid") from exc
    if claims.get("typ") != "access":
        raise ApiError.unauthenticated("The access token is not valid")
    return claims


def peek_issuer(token: str) -> str | None:
    """The unverified ``iss`` claim, for routing a token to its verifier (never for trust)."""
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

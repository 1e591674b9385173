"""Unsubscribe tokens: stateless HS256 JWTs ``{ siteId, email }`` signed with JWT_SECRET (spec,
Authentication point 11), with no expiry because an old newsletter's link must keep working.

The same secret signs access tokens, so the two must never be interchangeable: an unsubscribe
token carries its own audience (``aud: svc:email-unsubscribe``) and a ``typ`` header, and no
``sub``, ``iss`` or ``exp``, which access-token verification requires; verification here requires
the audience, so an access token (no ``aud``) is refused too. Only HS256 is accepted: ``alg:
none`` in any spelling, and every other algorithm, fail before the signature is looked at.
"""

from __future__ import annotations

import re
from typing import Any

import jwt

from kernel import ApiError

ALGORITHM = "HS256"
AUDIENCE = "svc:email-unsubscribe"
HEADER_TYPE = "unsubscribe+jwt"
_SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_TOKEN_CHARS = 2048


def issue(secret: str, site_id: str, email: str) -> str:
    """A token that unsubscribes ``email`` (lower-cased) from ``site_id``'s marketing mail."""
    claims = {"siteId": site_id, "email": email.lower(), "aud": AUDIENCE}
    return jwt.encode(claims, secret, algorithm=ALGORITHM, headers={"typ": HEADER_TYPE})


def invalid() -> ApiError:
    return ApiError.validation("The unsubscribe link is not valid", path=["token"])


def verify(secret: str, token: Any) -> tuple[str, str]:
    """``(siteId, email)`` of a valid token; 400 ``VALIDATION_FAILED`` for anything else."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise invalid()
    try:
        header = jwt.get_unverified_header(token)
        # Checked before decoding: PyJWT would also refuse, but the rule is ours to state.
        if header.get("alg") != ALGORITHM or header.get("typ") != HEADER_TYPE:
            raise invalid()
        claims = jwt.decode(token, secret, algorithms=[ALGORITHM], audience=AUDIENCE,
                            options={"require": ["aud", "siteId", "email"], "verify_exp": True})
    except jwt.PyJWTError as exc:
        raise invalid() from exc
    site_id, email = claims.get("siteId"), claims.get("email")
    if set(claims) != {"siteId", "email", "aud"} or claims["aud"] != AUDIENCE:
        raise invalid()
    if not isinstance(site_id, str) or not _SITE_ID.match(site_id):
        raise invalid()
    if not isinstance(email, str) or not 3 <= len(email) <= 320 or email != email.lower():
        raise invalid()
    return site_id, email

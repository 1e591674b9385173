"""Unsubscribe tokens: stateless HS256 JWTs ``{ siteId, email }`` signed with JWT_SECRET (spec,
Authentication point 11), with no expiry because an old newsletter's link must keep working.

A token made exactly as the spec says (HS256, claims ``siteId`` and ``email``, nothing else) is
valid, as are the additions a JWT library makes on its own: a ``typ: JWT`` header and an ``iat``
claim. The tokens svc issues also carry an audience (``aud: svc:email-unsubscribe``) and a
``typ: unsubscribe+jwt`` header; both are optional on the way in, and checked when present.

The same secret signs access tokens, so the two must never be interchangeable. An unsubscribe
token holds no claim outside ``siteId``, ``email``, ``aud`` and ``iat``: an access token (``sub``,
``iss``, ``exp``, ``typ: access``...) is refused even when it also carries ``siteId`` and
``email``, and access-token verification, which requires ``sub``, ``iss`` and ``exp``, refuses an
unsubscribe token. Only HS256 is accepted: ``alg: none`` in any spelling, and every other
algorithm, fail before the signature is looked at. The address is compared ignoring case: a
token for ``Ada@Example.com`` unsubscribes ``ada@example.com``.
"""

from __future__ import annotations

import re
from typing import Any

import jwt

from kernel import ApiError

ALGORITHM = "HS256"
AUDIENCE = "svc:email-unsubscribe"
HEADER_TYPE = "unsubscribe+jwt"
HEADER_TYPES = frozenset({HEADER_TYPE, "jwt"})  # compared lower-cased; absent is fine too
CLAIMS = frozenset({"siteId", "email", "aud", "iat"})
_SITE_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
MAX_TOKEN_CHARS = 2048


def issue(secret: str, site_id: str, email: str) -> str:
    """A token that unsubscribes ``email`` (lower-cased) from ``site_id``'s marketing mail."""
    claims = {"siteId": site_id, "email": email.lower(), "aud": AUDIENCE}
    return jwt.encode(claims, secret, algorithm=ALGORITHM, headers={"typ": HEADER_TYPE})


def invalid() -> ApiError:
    return ApiError.validation("The unsubscribe link is not valid", path=["token"])


def verify(secret: str, token: Any) -> tuple[str, str]:
    """``(siteId, email)`` of a valid token, the address lower-cased; 400 ``VALIDATION_FAILED``
    for anything else."""
    if not isinstance(token, str) or not token or len(token) > MAX_TOKEN_CHARS:
        raise invalid()
    try:
        header = jwt.get_unverified_header(token)
        # Checked before decoding: PyJWT would also refuse, but the rule is ours to state.
        typ = header.get("typ")
        if header.get("alg") != ALGORITHM or (typ is not None and (not isinstance(typ, str)
                                                                   or typ.lower() not in HEADER_TYPES)):
            raise invalid()
        # The audience is optional, so PyJWT's check (which requires one when given) is ours below.
        claims = jwt.decode(token, secret, algorithms=[ALGORITHM],
                            options={"require": ["siteId", "email"], "verify_aud": False})
    except jwt.PyJWTError as exc:
        raise invalid() from exc
    if not set(claims) <= CLAIMS or claims.get("aud", AUDIENCE) != AUDIENCE:
        raise invalid()
    site_id, email = claims["siteId"], claims["email"]
    if not isinstance(site_id, str) or not _SITE_ID.match(site_id):
        raise invalid()
    if not isinstance(email, str) or not 3 <= len(email) <= 320 or "@" not in email:
        raise invalid()
    return site_id, email.lower()

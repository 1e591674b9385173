"""Test kit for trusted external issuers (the JWKS and discovery documents are served by the
``http_receiver`` fixture of ``kernel.testing``): signing keys made with ``cryptography``, tokens signed with PyJWT, and a plugin
with a ``/test/whoami`` route that shows the principal the auth chain produced."""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from kernel import Route, hookimpl
from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.http.media import send_data
from kernel.http.middleware import request_context
from kernel.tenancy.scope import SiteDB
from plugins.access.tables import roles

ISSUER = "https://idp.example.test/"
AUDIENCE = "svc-api"
ISSUERS = "/api/v1/admin/auth/issuers"
WHOAMI = "/api/v1/test/whoami"


@dataclass(frozen=True)
class SigningKey:
    """A private key and its public JWK (with ``kid`` and ``alg``)."""

    kid: str
    alg: str
    private: Any

    @property
    def jwk(self) -> dict[str, Any]:
        algo = jwt.algorithms.RSAAlgorithm if self.alg[:2] in ("RS", "PS") else jwt.algorithms.ECAlgorithm
        jwk = algo.to_jwk(self.private.public_key(), as_dict=True)
        return {**jwk, "kid": self.kid, "use": "sig"}

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                      serialization.PublicFormat.SubjectPublicKeyInfo)

    def sign(self, claims: dict[str, Any], *, alg: str | None = None, kid: Any = "same") -> str:
        headers = {} if kid is None else {"kid": self.kid if kid == "same" else kid}
        return jwt.encode(claims, self.private, algorithm=alg or self.alg, headers=headers)


@functools.cache
def _rsa_private() -> Any:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@functools.cache
def _ec_private() -> Any:
    return ec.generate_private_key(ec.SECP256R1())


def rsa_key(kid: str = "rsa-1") -> SigningKey:
    return SigningKey(kid, "RS256", _rsa_private())


def ec_key(kid: str = "ec-1") -> SigningKey:
    return SigningKey(kid, "ES256", _ec_private())


def key_set(*keys: SigningKey) -> dict[str, Any]:
    return {"keys": [k.jwk for k in keys]}


def claims(**overrides: Any) -> dict[str, Any]:
    """Good claims for ``ISSUER``/``AUDIENCE``; ``None`` values drop a claim."""
    now = int(time.time())
    base: dict[str, Any] = {"iss": ISSUER, "aud": AUDIENCE, "sub": "ext-user-1", "iat": now, "exp": now + 300,
                            "email": "ext.user@example.com", "roles": ["editor"]}
    base.update(overrides)
    return {k: v for k, v in base.items() if v is not None}


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned_token(payload: dict[str, Any]) -> str:
    """An ``alg: none`` token."""
    return f"{_b64(json.dumps({'alg': 'none', 'typ': 'JWT'}).encode())}.{_b64(json.dumps(payload).encode())}."


def hmac_token(payload: dict[str, Any], secret: bytes, kid: str) -> str:
    """An HS256 token made by hand (PyJWT refuses a PEM as an HMAC secret, as it should)."""
    head = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
    body = _b64(json.dumps(payload).encode())
    sig = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(sig)}"


def issuer_body(jwks_uri: str, **overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"issuer": ISSUER, "jwksUri": jwks_uri, "audience": AUDIENCE,
                            "algorithms": ["RS256", "ES256"], "roleMapping": {}, "clockSkewSeconds": 0}
    body.update(overrides)
    return {k: v for k, v in body.items() if v is not None}


async def add_role(kernel: Any, site_id: str, name: str, *, admin: bool = False) -> str:
    """A custom role in ``site_id``; its id."""
    role_id = uuid7()
    async with kernel.db.begin() as conn:
        await SiteDB(site_id, conn).insert(roles, {"id": role_id, "name": name, "parent_id": None,
                                                   "admin_access": admin, "system_key": None,
                                                   "created_at": now_utc()})
    return role_id


def bearer(token: str, site: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Svc-Site": site}


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


class WhoAmIResource:
    async def on_get(self, req: Any, resp: Any) -> None:
        p = request_context(req).principal
        send_data(resp, {"kind": p.kind, "userId": p.user_id, "roleId": p.role_id, "admin": p.is_admin,
                         "email": p.email, "siteId": p.site_id})


class WhoAmIPlugin:
    """A test plugin: ``GET /test/whoami`` (bearer) answers the request's principal."""

    name = "whoami"

    @hookimpl
    def register_routes(self, kernel: Any) -> list[Route]:
        return [Route("/test/whoami", WhoAmIResource(), site="required", auth="bearer")]

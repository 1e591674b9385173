"""A small OpenID Connect provider for tests, on a real local HTTP server (``kernel.testing``'s
``HttpReceiver``): discovery, JWKS, an authorization endpoint that signs in one configured person
and redirects with a code, and a token endpoint that redeems each code once, checks the PKCE
verifier (S256), the redirect URI and the client id, and answers an ID token signed with a key
made by ``cryptography`` (PyJWT signs). Tests play the browser with ``authorize``."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode, urlsplit

import httpx
from issuer_kit import ISSUER, SigningKey, key_set, rsa_key

from kernel.testing import HttpReceiver, ReceivedRequest

CLIENT_ID = "svc-client"
REDIRECT_URI = "https://app.example.test/callback"


def _challenge(verifier: str) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()


def _person(tag: str) -> dict[str, Any]:
    return {"sub": f"oidc-user-{tag}", "email": f"oidc.{tag}@example.com", "roles": ["editor"]}


def _json(status: int, document: Any) -> tuple[int, bytes, dict[str, str]]:
    return status, json.dumps(document).encode(), {}


@dataclass
class OidcProvider:
    """``person`` is who signs in at the authorization endpoint; ``overrides`` change (or, with
    None, drop) claims of the next ID tokens; ``token_status`` forces the token endpoint's status."""

    server: HttpReceiver
    key: SigningKey = field(default_factory=rsa_key)
    issuer: str = ISSUER
    client_id: str = CLIENT_ID
    # Users are global identities: each provider signs in a person of its own.
    person: dict[str, Any] = field(default_factory=lambda: _person(secrets.token_hex(4)))
    overrides: dict[str, Any] = field(default_factory=dict)
    token_status: int | None = None
    client_secret: str | None = None  # set: a confidential client, authenticated at the token endpoint
    auth_methods: list[str] = field(default_factory=list)  # how each token request authenticated
    codes: dict[str, dict[str, Any]] = field(default_factory=dict)
    authorize_queries: list[dict[str, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.serve_discovery()
        self.server.serve("/jwks", key_set(self.key))
        self.server.respond("/authorize*", self._authorize)
        self.server.respond("/token", self._token)

    def serve_discovery(self, **extra: Any) -> None:
        """The discovery document, with ``extra`` members (``token_endpoint_auth_methods_supported``)."""
        self.server.serve(
            "/.well-known/openid-configuration",
            {
                "issuer": self.issuer,
                "authorization_endpoint": self.server.url("/authorize"),
                "token_endpoint": self.server.url("/token"),
                "jwks_uri": self.server.url("/jwks"),
                "code_challenge_methods_supported": ["S256"],
                "response_types_supported": ["code"],
                **extra,
            },
        )

    @property
    def discovery_url(self) -> str:
        return self.server.url("/.well-known/openid-configuration")

    def _authorize(self, request: ReceivedRequest) -> tuple[int, bytes, dict[str, str]]:
        query = {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}
        self.authorize_queries.append(query)
        assert query["response_type"] == "code" and query["client_id"] == self.client_id
        assert query["code_challenge_method"] == "S256" and len(query["code_challenge"]) == 43
        assert "openid" in query["scope"].split()
        code = secrets.token_urlsafe(24)
        self.codes[code] = {
            "challenge": query["code_challenge"],
            "nonce": query["nonce"],
            "redirect_uri": query["redirect_uri"],
            "used": False,
        }
        location = f"{query['redirect_uri']}?{urlencode({'code': code, 'state': query['state']})}"
        return 302, b"", {"Location": location}

    def _client_authenticated(self, request: ReceivedRequest, form: dict[str, str]) -> bool:
        """RFC 6749 2.3.1: HTTP Basic (each part form-urlencoded) or ``client_secret`` in the form."""
        basic = request.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            client_id, _, secret = base64.b64decode(basic[6:]).decode().partition(":")
            self.auth_methods.append("client_secret_basic")
            presented = (unquote_plus(client_id), unquote_plus(secret))
        elif "client_secret" in form:
            self.auth_methods.append("client_secret_post")
            presented = (form["client_id"], form["client_secret"])
        else:
            self.auth_methods.append("none")
            return self.client_secret is None
        return presented == (self.client_id, self.client_secret)

    def _token(self, request: ReceivedRequest) -> tuple[int, bytes, dict[str, str]]:
        assert request.method == "POST"
        form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        assert form["grant_type"] == "authorization_code"
        if form.get("client_id") != self.client_id or not self._client_authenticated(request, form):
            return _json(401, {"error": "invalid_client"})
        grant = self.codes.get(form.get("code", ""))
        if grant is None or grant["used"]:
            return _json(400, {"error": "invalid_grant", "error_description": "unknown or used code"})
        grant["used"] = True  # RFC 6749 4.1.2: a code is used once
        if form.get("redirect_uri") != grant["redirect_uri"]:
            return _json(400, {"error": "invalid_grant", "error_description": "redirect_uri differs"})
        if _challenge(form.get("code_verifier", "")) != grant["challenge"]:
            return _json(400, {"error": "invalid_grant", "error_description": "PKCE verification failed"})
        if self.token_status is not None:
            return _json(self.token_status, {"error": "server_error"})
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": self.client_id,
            "iat": now,
            "exp": now + 300,
            "nonce": grant["nonce"],
            **self.person,
            **self.overrides,
        }
        id_token = self.key.sign({k: v for k, v in claims.items() if v is not None})
        return _json(
            200,
            {
                "access_token": secrets.token_urlsafe(16),
                "token_type": "Bearer",
                "expires_in": 300,
                "id_token": id_token,
            },
        )


async def authorize(authorization_url: str) -> dict[str, str]:
    """Play the browser: follow the authorization URL to the provider and read the redirect's
    ``code`` and ``state``."""
    async with httpx.AsyncClient(follow_redirects=False, trust_env=False) as browser:
        resp = await browser.get(authorization_url)
    assert resp.status_code == 302, resp.text
    location = resp.headers["location"]
    assert location.startswith(REDIRECT_URI + "?")
    query = {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}
    return {"code": query["code"], "state": query["state"]}

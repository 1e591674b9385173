"""``authMethod: app``: with the deployment's GitHub App configured, an integration's calls use an
installation token minted with the app's RS256 JWT (checked by the local GitHub server), kept
until shortly before it expires; without it, such an integration needs a token of its own."""

from __future__ import annotations

import datetime as dt
import time

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from git_helpers import connect, git_app, github_pull, json_answer, serve_github_pulls

APP_ID = "4242"
INSTALLATION_TOKEN = "ghs_installation_token_1"


def _keys() -> tuple[str, object]:
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    return pem, private.public_key()


def _token_endpoint(receiver, public_key, minted: list[dict]) -> str:
    path = "/app/installations/77/access_tokens"

    def answer(request):
        scheme, _, presented = request.headers.get("Authorization", "").partition(" ")
        try:
            claims = jwt.decode(presented, public_key, algorithms=["RS256"], issuer=APP_ID)
        except jwt.PyJWTError:
            return json_answer({"message": "A JSON web token could not be decoded"}, 401)
        if request.method != "POST" or scheme != "Bearer" or claims["exp"] - claims["iat"] > 600:
            return json_answer({"message": "bad request"}, 400)
        minted.append(claims)
        expires = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
        return json_answer({"token": INSTALLATION_TOKEN, "expires_at": expires.strftime("%Y-%m-%dT%H:%M:%SZ")}, 201)

    receiver.respond(path, answer)
    return path


async def test_app_integrations_use_minted_installation_tokens(make_app, http_receiver):
    pem, public_key = _keys()
    app, calls, site = await git_app(make_app, http_receiver, SVC_GIT_GITHUB_APP_ID=APP_ID,
                                     SVC_GIT_GITHUB_APP_PRIVATE_KEY=pem.replace("\n", "\\n"))
    minted: list[dict] = []
    _token_endpoint(http_receiver, public_key, minted)
    made = await connect(calls, token=None, authMethod="app", installationId=77)
    path = serve_github_pulls(http_receiver, [github_pull(1)], token=INSTALLATION_TOKEN)
    refresh = f"/integrations/git/{made['id']}/pull-requests/refresh"
    assert await calls.ok("post", refresh) == {"fetched": 1}
    assert await calls.ok("post", refresh) == {"fetched": 1}
    assert len(minted) == 1 and minted[0]["iss"] == APP_ID and minted[0]["iat"] <= time.time()
    assert [r.headers["Authorization"] for r in http_receiver.received(path)] == [f"Bearer {INSTALLATION_TOKEN}"] * 2


async def test_without_the_app_an_app_integration_needs_a_token(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls, token=None, authMethod="app", installationId=77)
    await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/refresh", 409, "GIT_NOT_CONNECTED")


async def test_a_refused_app_jwt_is_a_provider_error(make_app, http_receiver):
    pem, _ = _keys()
    _, other_public = _keys()
    app, calls, site = await git_app(make_app, http_receiver, SVC_GIT_GITHUB_APP_ID=APP_ID,
                                     SVC_GIT_GITHUB_APP_PRIVATE_KEY=pem)
    _token_endpoint(http_receiver, other_public, [])  # the provider knows another key
    made = await connect(calls, token=None, authMethod="app", installationId=77)
    await calls.err("post", f"/integrations/git/{made['id']}/pull-requests/refresh", 502, "GIT_PROVIDER_ERROR")

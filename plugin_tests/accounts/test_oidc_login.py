"""OpenID Connect login (``POST /auth/external/start`` then ``POST /auth/login`` with a code)
against a small provider of the test's own on 127.0.0.1 (``oidc_provider``): the happy path
answers like a password login, and a wrong state, a replayed code, a wrong audience, an expired
token, a bad nonce and an unknown issuer each get their own error. Each test works in a new site
of the module's app."""

from __future__ import annotations

import base64
import json
import secrets
import time

import pytest
import pytest_asyncio
from issuer_kit import ISSUER, ISSUERS, add_role, ec_key
from oidc_provider import CLIENT_ID, REDIRECT_URI, OidcProvider, authorize
from sqlalchemy import select

from kernel.testing import shared_site_with
from plugins.accounts.tables import issuers

START = "/api/v1/auth/external/start"
LOGIN = "/api/v1/auth/login"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(svc_shared_db, svc_template_db, tmp_path_factory):
    # An encryption key, for the confidential clients' sealed secrets.
    env = {"SVC_ENCRYPTION_KEY": base64.b64encode(b"o" * 32).decode()}
    async with shared_site_with(
        svc_shared_db, svc_template_db, tmp_path_factory, rate_limit_auth=0, env=env
    ) as made:
        yield made


@pytest.fixture
def client(shared):
    return shared.app.client


@pytest_asyncio.fixture(loop_scope="module")
async def site(shared):
    return await shared.app.create_site(shared.admin_headers)


@pytest.fixture
def provider(http_receiver):
    return OidcProvider(http_receiver)


async def register(shared, site, provider, **overrides):
    role_id = await add_role(shared.app.kernel, site, "Writer")
    body = {
        "issuer": ISSUER,
        "discoveryUrl": provider.discovery_url,
        "audience": "svc-api",
        "algorithms": ["RS256", "ES256"],
        "clientId": CLIENT_ID,
        "jitProvisioning": True,
        "roleMapping": {"editor": {"roleId": role_id}},
        "clockSkewSeconds": 0,
        **overrides,
    }
    resp = await shared.app.client.post(
        ISSUERS,
        json={k: v for k, v in body.items() if v is not None},
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


async def start(client, site, issuer=ISSUER):
    return await client.post(
        START, json={"issuer": issuer, "redirectUri": REDIRECT_URI}, headers={"X-Svc-Site": site}
    )


async def code_for(client, site, issuer=ISSUER):
    """Start a login in ``site`` and sign in at the provider: ``{ code, state }``."""
    resp = await start(client, site, issuer)
    assert resp.status_code == 200, resp.text
    return await authorize(resp.json()["data"]["authorizationUrl"])


async def login(client, site, grant, issuer=ISSUER):
    return await client.post(LOGIN, json={"issuer": issuer, **grant}, headers={"X-Svc-Site": site})


def error(resp, status, code):
    assert resp.status_code == status, resp.text
    found = resp.json()["errors"][0]
    assert found["code"] == code, resp.text
    return found


async def test_code_login_answers_like_a_password_login(shared, client, site, provider):
    issuer = await register(shared, site, provider)
    started = await start(client, site)
    assert started.status_code == 200, started.text
    data = started.json()["data"]
    assert data["expiresIn"] == 600 and len(data["state"]) >= 43
    grant = await authorize(data["authorizationUrl"])
    sent = provider.authorize_queries[-1]
    assert sent["state"] == data["state"] == grant["state"] and sent["redirect_uri"] == REDIRECT_URI
    assert sent["scope"] == "openid email profile" and sent["nonce"]

    resp = await login(client, site, grant)
    assert resp.status_code == 200, resp.text
    body = resp.json()["data"]
    assert set(body) == {"token", "refreshToken", "expiresIn", "user"}
    assert body["user"]["email"] == provider.person["email"]
    assert "svc_refresh=" in resp.headers["set-cookie"] and "HttpOnly" in resp.headers["set-cookie"]
    # The token is svc's own, bound to the site; the refresh token rotates as after a password login.
    me = await client.get(
        "/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}", "X-Svc-Site": site}
    )
    assert me.status_code == 200 and me.json()["data"]["id"] == body["user"]["id"]
    rotated = await client.post(
        "/api/v1/auth/refresh", json={"refreshToken": body["refreshToken"]}, headers={"X-Svc-Site": site}
    )
    assert rotated.status_code == 200, rotated.text
    assert rotated.json()["data"]["refreshToken"] != body["refreshToken"]
    # The verifier svc sent at the token endpoint matched the challenge (the provider checks).
    token_request = provider.server.received("/token")[-1]
    assert b"code_verifier=" in token_request.body and b"client_secret" not in token_request.body
    audit = await client.get(
        "/api/v1/audit",
        params={"action": "auth.login", "targetId": body["user"]["id"]},
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert [e["details"] for e in audit.json()["data"]] == [{"method": "external", "issuerId": issuer["id"]}]


async def test_the_member_gets_the_mapped_role(shared, client, site, provider):
    issuer = await register(shared, site, provider)
    role_id = issuer["roleMapping"]["editor"]["roleId"]
    body = (await login(client, site, await code_for(client, site))).json()["data"]
    users = await client.get(
        f"/api/v1/users/{body['user']['id']}", headers={**shared.admin_headers, "X-Svc-Site": site}
    )
    assert users.status_code == 200, users.text
    assert users.json()["data"]["roleId"] == role_id


async def test_wrong_state(shared, client, site, provider):
    await register(shared, site, provider)
    grant = await code_for(client, site)
    found = error(
        await login(client, site, {**grant, "state": secrets.token_urlsafe(32)}),
        401,
        "EXTERNAL_STATE_INVALID",
    )
    assert "start again" in found["message"]
    # The provider was never asked: nothing was exchanged for a state svc did not issue.
    assert provider.server.hits["/token"] == 0


async def test_replayed_code(shared, client, site, provider):
    await register(shared, site, provider)
    grant = await code_for(client, site)
    assert (await login(client, site, grant)).status_code == 200
    error(await login(client, site, grant), 401, "EXTERNAL_CODE_REPLAYED")
    assert provider.server.hits["/token"] == 1
    # The same code under a fresh state reaches the provider, which redeems a code once.
    fresh = (await start(client, site)).json()["data"]["state"]
    found = error(await login(client, site, {**grant, "state": fresh}), 401, "EXTERNAL_CODE_REJECTED")
    assert found["extensions"]["reason"] == "invalid_grant"


async def test_spent_state_with_another_code(shared, client, site, provider):
    await register(shared, site, provider)
    grant = await code_for(client, site)
    assert (await login(client, site, grant)).status_code == 200
    error(await login(client, site, {**grant, "code": "another-code"}), 401, "EXTERNAL_STATE_INVALID")


async def test_code_of_another_state_fails_pkce(shared, client, site, provider):
    """An intercepted code presented with the interceptor's own state: svc sends that state's
    verifier, which is not the one the code was issued for."""
    await register(shared, site, provider)
    victim = await code_for(client, site)
    attacker_state = (await start(client, site)).json()["data"]["state"]
    found = error(
        await login(client, site, {"code": victim["code"], "state": attacker_state}),
        401,
        "EXTERNAL_CODE_REJECTED",
    )
    assert found["extensions"]["reason"] == "invalid_grant"


async def test_wrong_audience(shared, client, site, provider):
    await register(shared, site, provider)
    provider.overrides = {"aud": "another-client"}
    error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_AUDIENCE_MISMATCH")
    provider.overrides = {"aud": [CLIENT_ID, "another-client"], "azp": "another-client"}
    error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_AUDIENCE_MISMATCH")
    # The issuer's 'audience' (for bearer tokens) is not the ID token's.
    provider.overrides = {"aud": "svc-api"}
    error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_AUDIENCE_MISMATCH")


async def test_expired_token(shared, client, site, provider):
    await register(shared, site, provider)
    now = int(time.time())
    provider.overrides = {"exp": now - 600, "iat": now - 1200}
    found = error(await login(client, site, await code_for(client, site)), 401, "TOKEN_EXPIRED")
    assert "ID token" in found["message"]


async def test_nonce_signature_and_issuer(shared, client, site, provider):
    await register(shared, site, provider)
    provider.overrides = {"nonce": "not-the-one-svc-sent"}
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_TOKEN_INVALID")
    assert found["extensions"]["reason"] == "nonce"
    provider.overrides = {"nonce": None}
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_TOKEN_INVALID")
    assert found["extensions"]["reason"] == "nonce"
    provider.overrides = {"iss": "https://evil.example.test/"}
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_TOKEN_INVALID")
    assert found["extensions"]["reason"] == "issuer"
    provider.overrides = {}
    provider.key = ec_key("not-published")  # signs with a key the JWKS does not hold
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_TOKEN_INVALID")
    assert found["extensions"]["reason"] == "signature"


async def test_unknown_issuer(shared, client, site, provider):
    await register(shared, site, provider)
    other = "https://unknown.example.test/"
    error(await start(client, site, other), 401, "EXTERNAL_ISSUER_UNKNOWN")
    grant = await code_for(client, site)
    error(await login(client, site, grant, issuer=other), 401, "EXTERNAL_ISSUER_UNKNOWN")
    assert provider.server.hits["/token"] == 0


async def test_control_characters(shared, client, site, provider):
    """Refused before any query: NUL would break PostgreSQL text."""
    await register(shared, site, provider)
    error(await start(client, site, ISSUER + "\x00"), 401, "EXTERNAL_ISSUER_UNKNOWN")
    grant = await code_for(client, site)
    error(await login(client, site, grant, issuer="\x00"), 401, "EXTERNAL_ISSUER_UNKNOWN")
    resp = await client.post(
        START, json={"issuer": ISSUER, "redirectUri": REDIRECT_URI + "\x00"}, headers={"X-Svc-Site": site}
    )
    assert error(resp, 400, "VALIDATION_FAILED")["path"] == ["redirectUri"]


async def test_key_set_unreachable(shared, client, site, provider):
    await register(shared, site, provider)
    provider.server.serve("/jwks", {"error": "down"}, status=503)
    found = error(await login(client, site, await code_for(client, site)), 502, "EXTERNAL_ISSUER_UNAVAILABLE")
    assert "signing keys" in found["message"]


async def test_issuer_without_client_id_is_not_for_login(shared, client, site, provider):
    await register(shared, site, provider, clientId=None)
    error(await start(client, site), 401, "EXTERNAL_ISSUER_UNKNOWN")


async def test_disabled_issuer_signs_no_one_in(shared, client, site, provider):
    issuer = await register(shared, site, provider)
    grant = await code_for(client, site)
    resp = await client.patch(
        f"{ISSUERS}/{issuer['id']}",
        json={"enabled": False},
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert resp.status_code == 200, resp.text
    error(await login(client, site, grant), 401, "EXTERNAL_ISSUER_UNKNOWN")


async def test_cross_tenant(shared, client, site, provider):
    """An issuer trusted by site A does not log anyone into site B, and A's state is no state of B's."""
    await register(shared, site, provider)
    site_b = await shared.app.create_site(shared.admin_headers)
    error(await start(client, site_b), 401, "EXTERNAL_ISSUER_UNKNOWN")
    grant = await code_for(client, site)
    error(await login(client, site_b, grant), 401, "EXTERNAL_ISSUER_UNKNOWN")
    # B trusts the same issuer too: A's state still does not count in B.
    await register(shared, site_b, provider)
    error(await login(client, site_b, grant), 401, "EXTERNAL_STATE_INVALID")
    assert provider.server.hits["/token"] == 0
    # A's login goes on working in A, and its token is bound to A.
    body = (await login(client, site, grant)).json()["data"]
    me_b = await client.get(
        "/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}", "X-Svc-Site": site_b}
    )
    assert me_b.status_code == 401, me_b.text


async def test_no_role_mapping_and_no_provisioning(shared, client, site, provider):
    issuer = await register(shared, site, provider)
    provider.person = {**provider.person, "roles": ["stranger"]}
    found = error(await login(client, site, await code_for(client, site)), 403, "PERMISSION_DENIED")
    assert found["extensions"]["reason"] == "no_role_mapping"
    provider.person = {**provider.person, "roles": ["editor"], "sub": "never-seen"}
    resp = await client.patch(
        f"{ISSUERS}/{issuer['id']}",
        json={"jitProvisioning": False},
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert resp.status_code == 200, resp.text
    found = error(await login(client, site, await code_for(client, site)), 403, "PERMISSION_DENIED")
    assert found["extensions"]["reason"] == "not_provisioned"


async def test_failures_are_audited(shared, client, site, provider):
    issuer = await register(shared, site, provider)
    grant = await code_for(client, site)
    error(
        await login(client, site, {**grant, "state": secrets.token_urlsafe(32)}),
        401,
        "EXTERNAL_STATE_INVALID",
    )
    audit = await client.get(
        "/api/v1/audit",
        params={"action": "auth.login_failed"},
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert [(e["details"], e["target"]["id"]) for e in audit.json()["data"]] == [
        ({"method": "external", "reason": "EXTERNAL_STATE_INVALID"}, issuer["id"])
    ]


async def test_provider_failing(shared, client, site, provider):
    await register(shared, site, provider)
    provider.token_status = 500
    error(await login(client, site, await code_for(client, site)), 502, "EXTERNAL_ISSUER_UNAVAILABLE")


async def test_unreachable_discovery(shared, client, site, provider):
    await register(shared, site, provider, discoveryUrl=provider.server.url("/missing"))
    error(await start(client, site), 502, "EXTERNAL_ISSUER_UNAVAILABLE")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"issuer": ISSUER, "code": "c", "state": "s" * 43, "password": "x"}, "password"),
        ({"issuer": ISSUER, "code": "c", "state": "short"}, "state"),
        ({"issuer": ISSUER, "code": "", "state": "s" * 43}, "code"),
        ({"code": "c", "state": "s" * 43}, "issuer"),
    ],
)
async def test_bad_login_bodies(client, site, body, path):
    resp = await client.post(LOGIN, json=body, headers={"X-Svc-Site": site})
    assert error(resp, 400, "VALIDATION_FAILED")["path"] == [path]


async def test_bad_start_bodies_and_no_site(shared, client, site, provider):
    await register(shared, site, provider)
    for uri in ("/relative", "https://app.example.test/cb#frag", "https://app.example.test/a b"):
        resp = await client.post(
            START, json={"issuer": ISSUER, "redirectUri": uri}, headers={"X-Svc-Site": site}
        )
        assert error(resp, 400, "VALIDATION_FAILED")["path"] == ["redirectUri"]
    resp = await client.post(LOGIN, json={"issuer": ISSUER, "code": "c", "state": "s" * 43})
    assert error(resp, 400, "VALIDATION_FAILED")["path"] == ["headers", "X-Svc-Site"]


async def test_client_id_needs_discovery(shared, site):
    resp = await shared.app.client.post(
        ISSUERS,
        json={
            "issuer": ISSUER,
            "jwksUri": "https://idp.example.test/keys",
            "audience": "svc-api",
            "algorithms": ["RS256"],
            "clientId": CLIENT_ID,
        },
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert error(resp, 422, "VALIDATION_FAILED")["path"] == ["clientId"]


async def test_confidential_client_basic(shared, client, site, provider):
    provider.client_secret = "s3cret:/+ &x"
    issuer = await register(shared, site, provider, clientSecret=provider.client_secret)
    assert issuer["hasClientSecret"] is True and "clientSecret" not in issuer
    got = await client.get(f"{ISSUERS}/{issuer['id']}", headers={**shared.admin_headers, "X-Svc-Site": site})
    assert got.json()["data"]["hasClientSecret"] is True and "clientSecret" not in got.json()["data"]
    async with shared.app.kernel.db.connect() as conn:
        stored = (
            await conn.execute(select(issuers.c.config).where(issuers.c.id == issuer["id"]))
        ).scalar_one()
    assert "s3cret" not in json.dumps(stored) and stored["clientSecretSealed"].startswith("sv1.")
    resp = await login(client, site, await code_for(client, site))
    assert resp.status_code == 200, resp.text
    assert provider.auth_methods == ["client_secret_basic"]


async def test_confidential_client_post_and_a_wrong_secret(shared, client, site, provider):
    provider.client_secret = "right"
    provider.serve_discovery(token_endpoint_auth_methods_supported=["client_secret_post"])
    issuer = await register(shared, site, provider, clientSecret="right")
    assert (await login(client, site, await code_for(client, site))).status_code == 200
    assert provider.auth_methods == ["client_secret_post"]
    headers = {**shared.admin_headers, "X-Svc-Site": site}
    patched = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"clientSecret": "wrong"}, headers=headers)
    assert patched.status_code == 200 and patched.json()["data"]["hasClientSecret"] is True
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_CODE_REJECTED")
    assert found["extensions"]["reason"] == "invalid_client"
    # A PATCH of other fields keeps the secret; null clears it (a public client again).
    patched = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"clientSecret": "right"}, headers=headers)
    assert patched.status_code == 200, patched.text
    patched = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"clockSkewSeconds": 5}, headers=headers)
    assert patched.json()["data"]["hasClientSecret"] is True
    assert (await login(client, site, await code_for(client, site))).status_code == 200
    patched = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"clientSecret": None}, headers=headers)
    assert patched.json()["data"]["hasClientSecret"] is False
    found = error(await login(client, site, await code_for(client, site)), 401, "EXTERNAL_CODE_REJECTED")
    assert found["extensions"]["reason"] == "invalid_client" and provider.auth_methods[-1] == "none"


async def test_client_secret_needs_client_id(shared, client, site, provider):
    resp = await shared.app.client.post(
        ISSUERS,
        json={
            "issuer": ISSUER,
            "discoveryUrl": provider.discovery_url,
            "audience": "svc-api",
            "algorithms": ["RS256"],
            "clientSecret": "s",
        },
        headers={**shared.admin_headers, "X-Svc-Site": site},
    )
    assert error(resp, 422, "VALIDATION_FAILED")["path"] == ["clientSecret"]

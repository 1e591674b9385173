"""External JWTs of trusted issuers: verification against a real local JWKS server, failing
closed once an issuer matches, and falling through to internal auth when none does. The tests
share the module's app (with the whoami route), each in a new site of its own."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio
from issuer_kit import (
    ISSUER,
    ISSUERS,
    WHOAMI,
    WhoAmIPlugin,
    bearer,
    claims,
    ec_key,
    hmac_token,
    issuer_body,
    key_set,
    rsa_key,
    unique,
    unsigned_token,
)

from kernel.testing import shared_site_with
from plugins.accounts.external import jwks

NOT_TRUSTED = "The token's issuer is not trusted by this site"  # the internal step's refusal


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(svc_shared_db, svc_template_db, tmp_path_factory):
    """One app with the whoami route for the module: each test registers its issuers in a new
    site of its own, and the key cache is per issuer, so no test sees another's."""
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory,
                                plugins=[WhoAmIPlugin()]) as made:
        yield made


@pytest.fixture
def svc_app(shared):
    return shared.app


@pytest.fixture
def client(shared):
    return shared.app.client


@pytest.fixture
def admin_headers(shared):
    return shared.admin_headers


@pytest_asyncio.fixture(loop_scope="module")
async def site(shared):
    """A new site of the shared app for this test."""
    return await shared.app.create_site(shared.admin_headers)


@pytest.fixture
def site_headers(shared, site):
    return {**shared.admin_headers, "X-Svc-Site": site}


@pytest.fixture
def server(http_receiver):
    http_receiver.serve("/jwks", key_set(rsa_key(), ec_key()))
    return http_receiver


@pytest.fixture
def register(client, site_headers, server):
    async def make(headers=None, **overrides):
        overrides.setdefault("roleMapping", {"editor": {"systemKey": "subscriber"}})
        resp = await client.post(ISSUERS, json=issuer_body(server.url("/jwks"), **overrides),
                                 headers=headers or site_headers)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return make


@pytest.fixture
def call(client, site):
    async def whoami(token, site_id=None):
        return await client.get(WHOAMI, headers=bearer(token, site_id or site))
    return whoami


def error(resp, status, code="UNAUTHENTICATED"):
    assert resp.status_code == status, resp.text
    assert resp.json()["errors"][0]["code"] == code
    return resp.json()["errors"][0]["message"]


async def test_rs256_and_es256_tokens_authenticate(register, call):
    await register()
    for key in (rsa_key(), ec_key()):
        resp = await call(key.sign(claims()))
        assert resp.status_code == 200, resp.text
        who = resp.json()["data"]
        assert who["kind"] == "external" and who["email"] == "ext.user@example.com"
        assert who["userId"] is None and who["admin"] is False and who["roleId"]


async def test_discovery_url(register, call, server):
    server.serve("/.well-known/openid-configuration", {"issuer": ISSUER, "jwks_uri": server.url("/keys")})
    server.serve("/keys", key_set(rsa_key()))
    await register(jwksUri=None, discoveryUrl=server.url("/.well-known/openid-configuration"))
    assert (await call(rsa_key().sign(claims()))).status_code == 200
    assert server.hits["/keys"] == 1 and server.hits["/jwks"] == 0


async def test_discovery_naming_another_issuer_fails_closed(register, call, server):
    server.serve("/oidc", {"issuer": "https://evil.example.test/", "jwks_uri": server.url("/jwks")})
    await register(jwksUri=None, discoveryUrl=server.url("/oidc"))
    assert "could not be fetched" in error(await call(rsa_key().sign(claims())), 401)


async def test_audience(register, call):
    await register(audience=["svc-api", "other-api"])
    assert (await call(rsa_key().sign(claims(aud="other-api")))).status_code == 200
    assert "audience" in error(await call(rsa_key().sign(claims(aud="someone-else"))), 401)
    assert "aud" in error(await call(rsa_key().sign(claims(aud=None))), 401)


async def test_expired_is_token_expired(register, call):
    await register()
    now = int(time.time())
    error(await call(rsa_key().sign(claims(exp=now - 10, iat=now - 100))), 401, "TOKEN_EXPIRED")


async def test_exp_is_required(register, call):
    await register()
    assert "exp" in error(await call(rsa_key().sign(claims(exp=None))), 401)


async def test_clock_skew(register, call):
    await register(clockSkewSeconds=60)
    now = int(time.time())
    assert (await call(rsa_key().sign(claims(exp=now - 30, iat=now - 100)))).status_code == 200
    assert (await call(rsa_key().sign(claims(nbf=now + 30)))).status_code == 200
    assert "not valid yet" in error(await call(rsa_key().sign(claims(nbf=now + 120))), 401)
    error(await call(rsa_key().sign(claims(exp=now - 90, iat=now - 200))), 401, "TOKEN_EXPIRED")


async def test_no_skew_means_none(register, call):
    await register(clockSkewSeconds=0)
    now = int(time.time())
    error(await call(rsa_key().sign(claims(nbf=now + 30))), 401)


async def test_alg_none_is_refused(register, call):
    await register()
    assert "algorithm" in error(await call(unsigned_token(claims())), 401)


async def test_hs256_with_the_public_key_as_secret_is_refused(register, call):
    await register(algorithms=["RS256"])
    token = hmac_token(claims(), rsa_key().public_pem(), rsa_key().kid)
    assert "'HS256' is not allowed" in error(await call(token), 401)


async def test_alg_outside_the_issuers_list_is_refused(register, call):
    await register(algorithms=["RS256"])
    assert "'PS256' is not allowed" in error(await call(rsa_key().sign(claims(), alg="PS256")), 401)
    assert "'ES256' is not allowed" in error(await call(ec_key().sign(claims())), 401)


async def test_key_of_the_wrong_type_for_the_alg_is_refused(register, call):
    await register(algorithms=["RS256", "ES256"])
    # An ES256 token naming the RSA key's kid: no EC key under that kid.
    token = ec_key().sign(claims(), kid=rsa_key().kid)
    assert "not in the key set" in error(await call(token), 401)


async def test_tampered_signature_and_payload(register, call):
    await register()
    head, body, sig = rsa_key().sign(claims()).split(".")
    flipped = sig[:-4] + ("AAAA" if sig[-4:] != "AAAA" else "BBBB")
    error(await call(f"{head}.{body}.{flipped}"), 401)
    other_body = rsa_key().sign(claims(sub="someone-else")).split(".")[1]
    error(await call(f"{head}.{other_body}.{sig}"), 401)


async def test_token_without_kid_needs_an_unambiguous_key(register, call, server):
    await register()
    # One RSA key (beside an EC key) is unambiguous for RS256.
    assert (await call(rsa_key().sign(claims(), kid=None))).status_code == 200
    server.serve("/jwks", key_set(rsa_key(), rsa_key("rsa-2")))
    await register(issuer="https://two.example.test/")
    token = rsa_key().sign(claims(iss="https://two.example.test/"), kid=None)
    assert "no kid" in error(await call(token), 401)


async def test_unknown_kid_refetches_once_then_rate_limited(register, call, server, monkeypatch):
    clock = {"t": 1000.0}
    monkeypatch.setattr(jwks, "monotonic", lambda: clock["t"])
    await register()
    assert (await call(rsa_key().sign(claims()))).status_code == 200
    assert server.hits["/jwks"] == 1
    assert (await call(rsa_key().sign(claims()))).status_code == 200
    assert server.hits["/jwks"] == 1  # cached
    rotated = rsa_key("rsa-2")
    server.serve("/jwks", key_set(rsa_key(), rotated, ec_key()))
    assert (await call(rotated.sign(claims()))).status_code == 200  # rotation: one refetch
    assert server.hits["/jwks"] == 2
    assert "not in the key set" in error(await call(rsa_key("rsa-9").sign(claims())), 401)
    assert server.hits["/jwks"] == 2  # no second refetch within a minute
    clock["t"] += 61
    error(await call(rsa_key("rsa-9").sign(claims())), 401)
    assert server.hits["/jwks"] == 3  # allowed again after a minute
    clock["t"] += jwks.KEYS_TTL
    assert (await call(rsa_key().sign(claims()))).status_code == 200
    assert server.hits["/jwks"] == 4  # expired keys are fetched again


async def test_cold_cache_burst_fetches_once(register, call, server):
    await register()
    results = await asyncio.gather(*(call(rsa_key().sign(claims())) for _ in range(5)))
    assert [r.status_code for r in results] == [200] * 5
    assert server.hits["/jwks"] == 1


async def test_jwks_server_down_fails_closed(register, call, server):
    await register()
    server.stop()
    message = error(await call(rsa_key().sign(claims())), 401)
    assert "could not be fetched" in message and NOT_TRUSTED not in message


@pytest.mark.parametrize("body,status", [(b"not json", 200), (b'{"keys": []}', 200), (b'{"keys": "x"}', 200),
                                         (b'{"keys": [{"kty": "oct", "k": "c2VjcmV0"}]}', 200),
                                         (b"{}", 500), (b"[]", 200)])
async def test_malformed_or_failing_jwks_fails_closed(register, call, server, body, status):
    server.serve_raw("/jwks", body, status)
    await register()
    assert "could not be fetched" in error(await call(rsa_key().sign(claims())), 401)


async def test_failures_back_off(register, call, server, monkeypatch):
    clock = {"t": 1000.0}
    monkeypatch.setattr(jwks, "monotonic", lambda: clock["t"])
    server.serve_raw("/jwks", b"{}", 503)
    await register()
    error(await call(rsa_key().sign(claims())), 401)
    error(await call(rsa_key().sign(claims())), 401)
    assert server.hits["/jwks"] == 1
    server.serve("/jwks", key_set(rsa_key()))
    clock["t"] += jwks.FAILURE_BACKOFF + 1
    assert (await call(rsa_key().sign(claims()))).status_code == 200
    assert server.hits["/jwks"] == 2


async def test_site_id_claim_must_be_the_request_site(register, call, site):
    await register()
    assert (await call(rsa_key().sign(claims(siteId=site)))).status_code == 200
    assert "another site" in error(await call(rsa_key().sign(claims(siteId="other-site"))), 401)
    await register(issuer="https://mapped.example.test/", claimMapping={"siteId": "tenant"})
    token = rsa_key().sign(claims(iss="https://mapped.example.test/", tenant="other-site", siteId=site))
    assert "another site" in error(await call(token), 401)


async def test_issuer_of_another_site_falls_through(svc_app, client, admin_headers, register, call):
    other = unique("ext-b")
    assert (await client.post("/api/v1/sites", json={"id": other, "name": "B"}, headers=admin_headers)).status_code == 201
    await register(headers={**admin_headers, "X-Svc-Site": other})
    token = rsa_key().sign(claims())
    assert (await call(token, other)).status_code == 200
    assert error(await call(token), 401) == NOT_TRUSTED  # site A trusts no such issuer


async def test_disabled_issuer_falls_through(register, call, client, site_headers):
    issuer = await register()
    token = rsa_key().sign(claims())
    assert (await call(token)).status_code == 200
    resp = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"enabled": False}, headers=site_headers)
    assert resp.status_code == 200
    assert error(await call(token), 401) == NOT_TRUSTED
    await client.delete(f"{ISSUERS}/{issuer['id']}", headers=site_headers)
    assert error(await call(token), 401) == NOT_TRUSTED


async def test_unknown_issuer_and_garbage_fall_through(register, call, client, site):
    await register()
    assert error(await call(rsa_key().sign(claims(iss="https://unknown.example.test/"))), 401) == NOT_TRUSTED
    assert error(await call(rsa_key().sign(claims(iss="x" * 600))), 401) == NOT_TRUSTED
    error(await call("not-a-jwt"), 401)
    # A matched issuer's failure must not be retried as an internal token either.
    assert error(await call(rsa_key().sign(claims(aud="nope"))), 401) != NOT_TRUSTED

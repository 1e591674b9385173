"""Unsubscribe tokens made as the spec says (Authentication 11: HS256 ``{ siteId, email }`` signed
with JWT_SECRET, nothing else), driven through the GET page and the RFC 8058 one-click POST; and
the refusals (``alg: none``, other algorithms, an access token, another site's token)."""

from __future__ import annotations

import base64
import json

import jwt
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives.asymmetric import rsa

from kernel.auth.tokens import issue_access_token
from kernel.testing import JWT_SECRET

PATH = "/api/v1/email/unsubscribe"


def spec_token(site: str, email: str) -> str:
    """Exactly the spec's token: HS256, claims siteId and email, signed with JWT_SECRET."""
    return jwt.encode({"siteId": site, "email": email}, JWT_SECRET, algorithm="HS256")


def _b64(value: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()


async def _suppressed(calls) -> list[tuple[str, str]]:
    return [(s["email"], s["source"]) for s in await calls.ok("get", "/email/suppressions")]


async def test_a_spec_token_unsubscribes_through_the_page_and_one_click(shared_site):
    calls = await shared_site.new_site()
    site, client = calls.headers["X-Svc-Site"], shared_site.app.client

    page = await client.get(PATH, params={"token": spec_token(site, "Ada@Example.com")})
    assert page.status_code == 200, page.text
    assert page.headers["content-type"].startswith("text/html")
    assert "You are unsubscribed" in page.text and "ada@example.com will no longer" in page.text
    assert await _suppressed(calls) == [("ada@example.com", "unsubscribe")]

    # RFC 8058: the token in the query, the body List-Unsubscribe=One-Click (form-encoded).
    one_click = await client.post(PATH, params={"token": spec_token(site, "bob@example.com")},
                                  data={"List-Unsubscribe": "One-Click"})
    assert one_click.status_code == 200, one_click.text
    assert one_click.json()["data"] == {"unsubscribed": True, "changed": True}
    # The token in the form body; the address matches the page's suppression whatever its case.
    again = await client.post(PATH, data={"token": spec_token(site, "ADA@example.COM")})
    assert again.status_code == 200 and again.json()["data"] == {"unsubscribed": True, "changed": False}
    assert await _suppressed(calls) == [("ada@example.com", "unsubscribe"), ("bob@example.com", "unsubscribe")]

    # An admin's suppression, and a mixed-case token for it: already suppressed, nothing added.
    await calls.ok("post", "/email/suppressions", 201, json={"email": "carol@example.com"})
    resp = await client.post(PATH, params={"token": spec_token(site, "Carol@Example.com")})
    assert resp.status_code == 200 and resp.json()["data"]["changed"] is False
    assert len(await _suppressed(calls)) == 3


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def two_sites(shared_site):
    """A site whose tokens are refused below, and a second site they must not act in."""
    a, b = await shared_site.new_site(), await shared_site.new_site()
    return a, b


def _refused_token(case: str, site: str, admin_token: str) -> str:
    claims = {"siteId": site, "email": "eve@example.com"}
    if case == "RS256":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        return jwt.encode(claims, private, algorithm="RS256")
    if case == "an access token with siteId and email":
        return issue_access_token(JWT_SECRET, user_id="u1", site_id=site, token_version=1, ttl=600, extra=claims)
    return {
        "alg none": f"{_b64({'alg': 'none', 'typ': 'JWT'})}.{_b64(claims)}.",
        "alg None": f"{_b64({'alg': 'None'})}.{_b64(claims)}.",
        "HS512": jwt.encode(claims, JWT_SECRET, algorithm="HS512"),
        "HS384": jwt.encode(claims, JWT_SECRET, algorithm="HS384"),
        "another secret": jwt.encode(claims, "another-secret-" * 4, algorithm="HS256"),
        "the admin's access token": admin_token,
        "no email": jwt.encode({"siteId": site}, JWT_SECRET, algorithm="HS256"),
        "another audience": jwt.encode({**claims, "aud": "svc"}, JWT_SECRET, algorithm="HS256"),
    }[case]


CASES = ["alg none", "alg None", "HS512", "HS384", "RS256", "another secret", "the admin's access token",
         "an access token with siteId and email", "no email", "another audience"]


@pytest.mark.filterwarnings("ignore::jwt.warnings.InsecureKeyLengthWarning")  # HS384/HS512 with the test secret
@pytest.mark.parametrize("case", CASES)
async def test_refused_tokens_change_nothing(shared_site, two_sites, case):
    a, _ = two_sites
    site = a.headers["X-Svc-Site"]
    admin_token = shared_site.admin_headers["Authorization"].removeprefix("Bearer ")
    token = _refused_token(case, site, admin_token)
    client = shared_site.app.client
    resp = await client.post(PATH, params={"token": token}, data={"List-Unsubscribe": "One-Click"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    assert resp.json()["errors"][0]["path"] == ["token"]
    page = await client.get(PATH, params={"token": token})
    assert page.status_code == 400 and "This link does not work" in page.text
    assert await _suppressed(a) == []


async def test_another_sites_token_is_refused_there(shared_site, two_sites):
    a, b = two_sites
    site_a, site_b = a.headers["X-Svc-Site"], b.headers["X-Svc-Site"]
    client = shared_site.app.client
    token = spec_token(site_a, "dan@example.com")
    resp = await client.post(PATH, params={"token": token}, headers={"X-Svc-Site": site_b})
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    page = await client.get(PATH, params={"token": token}, headers={"X-Svc-Site": site_b})
    assert page.status_code == 400 and "This link does not work" in page.text
    assert await _suppressed(b) == [] and await _suppressed(a) == []
    # A site that does not exist.
    ghost = spec_token("no-such-site", "dan@example.com")
    assert (await client.post(PATH, params={"token": ghost})).status_code == 400

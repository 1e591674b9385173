"""Malformed session ids on ``/me/sessions/:id`` and ``/sessions/:id``, and bad bodies on
``/auth/logout``: a clear 4xx in the envelope, never a 500 (issue 11, A7). The refused cases
share one app (``shared``, with the auth rate limit off: the cases are many auth calls from one
address): each logs in afresh and checks its own session is untouched."""

from __future__ import annotations

import pytest
import pytest_asyncio

from kernel.testing import MEMBER_PASSWORD, new_member, shared_site_with

LOGOUT = "/api/v1/auth/logout"
REFRESH = "/api/v1/auth/refresh"

# Ids that cannot name a session: wrong shape, too long, a NUL (PostgreSQL refuses it in text),
# path tricks, non-ASCII, percent signs.
MALFORMED_IDS = ["not-a-uuid", "x" * 5000, "%00", "a%00b", "...", "%C3%BC-%E2%82%AC", "%25", "1", "'%20OR%201=1--"]


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


def assert_not_found(resp) -> None:
    assert resp.status_code == 404, resp.text
    assert resp.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared(svc_shared_db, svc_template_db, tmp_path_factory):
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory,
                                env={"SVC_RATE_LIMIT_AUTH": "0"}) as site:
        yield site


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def members(shared):
    """A subscriber and a site admin of the shared site (each case logs in afresh)."""
    return {role: await new_member(shared.app, shared.site, role, login=False)
            for role in ("subscriber", "admin")}


async def fresh_login(shared, email: str) -> dict:
    resp = await shared.app.client.post("/api/v1/auth/login", json={"email": email, "password": MEMBER_PASSWORD},
                                             headers={"X-Svc-Site": shared.site})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
async def test_malformed_ids_on_my_sessions_are_not_found(shared, members, bad_id):
    client, site = shared.app.client, shared.site
    data = await fresh_login(shared, members["subscriber"].email)
    resp = await client.delete(f"/api/v1/me/sessions/{bad_id}", headers=bearer(data["token"], site))
    assert_not_found(resp)
    # Nothing was revoked on the way.
    assert (await client.post(REFRESH, json={"refreshToken": data["refreshToken"]},
                              headers={"X-Svc-Site": site})).status_code == 200


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
async def test_malformed_ids_on_admin_sessions_are_not_found(shared, members, bad_id):
    client, site = shared.app.client, shared.site
    token = (await fresh_login(shared, members["admin"].email))["token"]
    assert_not_found(await client.delete(f"/api/v1/sessions/{bad_id}", headers=bearer(token, site)))
    assert_not_found(await client.delete(f"/api/v1/sessions/{bad_id}", headers=shared.site_headers))


@pytest.mark.parametrize(("body", "path"), [
    ({"refreshToken": 5}, ["refreshToken"]),
    ({"refreshToken": ["a"]}, ["refreshToken"]),
    ({"refreshToken": {"$ne": ""}}, ["refreshToken"]),
    ({"refreshToken": "x" * 600}, ["refreshToken"]),
    ({"refreshToken": "t", "site": "other"}, ["site"]),
    ([1, 2], None),
    ("text", None),
    (5, None),
])
async def test_bad_logout_bodies_are_validation_failed(shared, body, path):
    resp = await shared.app.client.post(LOGOUT, json=body)
    assert resp.status_code == 400, resp.text
    err = resp.json()["errors"][0]
    assert err["code"] == "VALIDATION_FAILED"
    if path is not None:
        assert err["path"] == path


@pytest.mark.parametrize("raw", [b"{nope", b"\xff\xfe", b'{"refreshToken": "a', b"[" * 5000, b"null"])
async def test_unparsable_logout_bodies_are_400(shared, raw):
    resp = await shared.app.client.post(LOGOUT, content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize("token", ["a\u0000b", "\u00fc" * 100, "not-a-token"])
async def test_odd_but_well_typed_logout_tokens_are_already_logged_out(shared, token):
    resp = await shared.app.client.post(LOGOUT, json={"refreshToken": token})
    assert resp.status_code == 204
    resp = await shared.app.client.post(REFRESH, json={"refreshToken": token})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), resp.text


@pytest.mark.parametrize("email", ["a\u0000@example.com", "a@exa\u0000mple.com"])
async def test_a_login_email_holding_a_nul_finds_nobody(shared, email):
    # PostgreSQL cannot compare a NUL: the lookup was a 500 there; it is a wrong email anywhere.
    resp = await shared.app.client.post("/api/v1/auth/login", json={"email": email, "password": MEMBER_PASSWORD},
                                        headers={"X-Svc-Site": shared.site})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "INVALID_CREDENTIALS"), resp.text


async def test_logout_with_another_sites_token_is_refused(client, site, site_b, make_member, login_as):
    member = await make_member([site, site_b])
    in_b = await login_as(member.email, site=site_b)
    resp = await client.post(LOGOUT, json={"refreshToken": in_b["refreshToken"]}, headers={"X-Svc-Site": site})
    assert resp.status_code == 401, resp.text
    assert resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"
    # The session in B lives on.
    assert (await client.post(REFRESH, json={"refreshToken": in_b["refreshToken"]},
                              headers={"X-Svc-Site": site_b})).status_code == 200


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
async def test_malformed_user_ids_on_admin_session_lists_are_not_found(shared, bad_id):
    resp = await shared.app.client.get(f"/api/v1/users/{bad_id}/sessions", headers=shared.site_headers)
    assert_not_found(resp)

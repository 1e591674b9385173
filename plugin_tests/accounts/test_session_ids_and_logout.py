"""Malformed session ids on ``/me/sessions/:id`` and ``/sessions/:id``, and bad bodies on
``/auth/logout``: a clear 4xx in the envelope, never a 500 (issue 11, A7)."""

from __future__ import annotations

import pytest

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


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
async def test_malformed_ids_on_my_sessions_are_not_found(client, site, make_member, login_as, bad_id):
    member = await make_member(site)
    data = await login_as(member.email, site=site)
    resp = await client.delete(f"/api/v1/me/sessions/{bad_id}", headers=bearer(data["token"], site))
    assert_not_found(resp)
    # Nothing was revoked on the way.
    assert (await client.post(REFRESH, json={"refreshToken": data["refreshToken"]},
                              headers={"X-Svc-Site": site})).status_code == 200


@pytest.mark.parametrize("bad_id", MALFORMED_IDS)
async def test_malformed_ids_on_admin_sessions_are_not_found(client, site, site_headers, make_member, login_as,
                                                              bad_id):
    admin = await make_member(site, "admin")
    token = (await login_as(admin.email, site=site))["token"]
    assert_not_found(await client.delete(f"/api/v1/sessions/{bad_id}", headers=bearer(token, site)))
    assert_not_found(await client.delete(f"/api/v1/sessions/{bad_id}", headers=site_headers))  # instance admin


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
async def test_bad_logout_bodies_are_validation_failed(client, body, path):
    resp = await client.post(LOGOUT, json=body)
    assert resp.status_code == 400, resp.text
    err = resp.json()["errors"][0]
    assert err["code"] == "VALIDATION_FAILED"
    if path is not None:
        assert err["path"] == path


@pytest.mark.parametrize("raw", [b"{nope", b"\xff\xfe", b'{"refreshToken": "a', b"[" * 5000, b"null"])
async def test_unparsable_logout_bodies_are_400(client, raw):
    resp = await client.post(LOGOUT, content=raw, headers={"Content-Type": "application/json"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize("token", ["a\u0000b", "\u00fc" * 100, "not-a-token"])
async def test_odd_but_well_typed_logout_tokens_are_already_logged_out(client, token):
    resp = await client.post(LOGOUT, json={"refreshToken": token})
    assert resp.status_code == 204


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
async def test_malformed_user_ids_on_admin_session_lists_are_not_found(client, site_headers, bad_id):
    resp = await client.get(f"/api/v1/users/{bad_id}/sessions", headers=site_headers)
    assert_not_found(resp)

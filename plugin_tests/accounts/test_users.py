"""User admin: /users, /users/{id}, /users/invite and /auth/accept-invite.

The tests share the module's app (mailing through the module's SMTP server, the auth rate limit
off: the tests log in many times from one address), each in new sites of its own
(kernel/testing/shared.py). The users they make have unique addresses; only the app without SMTP
is started by its test."""

from __future__ import annotations

import uuid

import pytest
import pytest_asyncio
from sqlalchemy import insert, select

from kernel.policy.audit import audit_log
from kernel.tenancy.scope import SiteDB
from kernel.testing import ADMIN_EMAIL
from kernel.testing import shared as testing_shared
from plugins.access.api import role_by_system_key
from plugins.access.tables import team_members
from plugins.accounts.api import active_members, members_by_email
from plugins.accounts.tables import users

API = "/api/v1"
RECORD_KEYS = {"id", "email", "firstName", "lastName", "avatar", "status", "roleId"}

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
mailbox, shared_site = testing_shared.module_mailbox, testing_shared.mailing_shared_site


async def role_id(app, site: str, key: str) -> str:
    async with app.kernel.db.connect() as conn:
        return (await role_by_system_key(conn, site, key))["id"]


async def audit_actions(app, site: str) -> list[str]:
    async with app.kernel.db.connect() as conn:
        rows = await conn.execute(select(audit_log.c.action).where(audit_log.c.site_id == site))
        return [r[0] for r in rows]


def tagged(local: str) -> str:
    """An address no other module's shared app made (on PostgreSQL they share a database)."""
    return f"{local}.{uuid.uuid4().hex[:8]}@example.com"


def bearer(token: str, site: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Svc-Site": site}


@pytest_asyncio.fixture(loop_scope="module")
async def site_admin(site, make_member, login_as):
    """A member of ``site`` with its admin role, and their headers."""
    member = await make_member(site, role="admin")
    return member, bearer((await login_as(member.email, site=site))["token"], site)


async def test_create_get_list_and_log_in(svc_app, client, site, site_headers):
    email = tagged("New.Person")
    resp = await client.post(f"{API}/users", json={"email": email, "password": "person-pass-1",
                                                   "firstName": "New"}, headers=site_headers)
    assert resp.status_code == 201, resp.text
    record = resp.json()["data"]
    assert set(record) == RECORD_KEYS and "argon2" not in resp.text and "password" not in resp.text
    assert record["email"] == email.lower() and record["status"] == "active"
    assert record["roleId"] == await role_id(svc_app, site, "subscriber")
    got = await client.get(f"{API}/users/{record['id']}", headers=site_headers)
    assert got.status_code == 200 and got.json()["data"] == record
    listing = await client.get(f"{API}/users", headers=site_headers)
    assert listing.json()["data"] == [record] and listing.json()["meta"]["total"] == 1
    login = await client.post(f"{API}/auth/login", json={"email": record["email"], "password": "person-pass-1"},
                              headers={"X-Svc-Site": site})
    assert login.status_code == 200
    assert "user.create" in await audit_actions(svc_app, site)


async def test_existing_identity_is_added_not_changed(client, site, site_b, site_headers, make_member):
    member = await make_member(site_b)
    resp = await client.post(f"{API}/users", json={"email": member.email, "password": "takeover-pass",
                                                   "firstName": "Mallory"}, headers=site_headers)
    assert resp.status_code == 201 and resp.json()["data"]["id"] == member.id
    assert resp.json()["data"]["firstName"] is None  # the identity's own fields are untouched
    again = await client.post(f"{API}/users", json={"email": member.email}, headers=site_headers)
    assert again.status_code == 409 and again.json()["errors"][0]["code"] == "CONFLICT"
    login = await client.post(f"{API}/auth/login", json={"email": member.email, "password": member.password},
                              headers={"X-Svc-Site": site})
    assert login.status_code == 200


async def test_list_filters_and_pagination(svc_app, client, site, site_headers):
    admin_role = await role_id(svc_app, site, "admin")
    alice, bob, carol = tagged("alice0"), tagged("bob1"), tagged("carol2")  # hex digits: no "ali"
    for email, name, status in [(alice, "Alice", "active"), (bob, "Bob", "suspended"), (carol, "Carol", "active")]:
        body = {"email": email, "firstName": name, "status": status}
        if name == "Carol":
            body["roleId"] = admin_role
        assert (await client.post(f"{API}/users", json=body, headers=site_headers)).status_code == 201

    async def emails(query: str) -> list[str]:
        resp = await client.get(f"{API}/users?{query}", headers=site_headers)
        assert resp.status_code == 200, resp.text
        return [u["email"] for u in resp.json()["data"]]

    assert await emails("status=suspended") == [bob]
    assert await emails(f"roleId={admin_role}") == [carol]
    assert await emails("search=ALI") == [alice]
    assert await emails("search=%25") == []  # LIKE wildcards are matched literally
    assert await emails("limit=2&offset=1") == [bob, carol]
    meta = (await client.get(f"{API}/users?limit=1&page=2", headers=site_headers)).json()["meta"]
    assert meta["total"] == 3 and meta["offset"] == 1


@pytest.mark.parametrize("query", ["status=gone", "limit=0", "limit=201", "offset=-1", "page=x",
                                   "search=" + "x" * 201, "search=%00", "roleId=%00"])
async def test_list_bad_query_is_validation_failed(shared_site, query):
    resp = await shared_site.app.client.get(f"{API}/users?{query}", headers=shared_site.site_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"


@pytest.mark.parametrize(("body", "path"), [
    ({"email": "x@example.com", "isInstanceAdmin": True}, "isInstanceAdmin"),
    ({"email": "x@example.com", "is_instance_admin": True}, "is_instance_admin"),
    ({"email": "x@example.com", "token_version": 9}, "token_version"),
    ({"email": "x@example.com", "password_hash": "$argon2id$..."}, "password_hash"),
    ({"email": "x@example.com", "status": "god"}, "status"),
    ({"email": "x@example.com", "password": "short"}, "password"),
    ({"email": "x@example.com", "password": 12345678}, "password"),
    ({"email": "x@example.com", "roleId": "no-such-role"}, "roleId"),
    ({"email": "x@example.com", "firstName": {"a": 1}}, "firstName"),
    ({"email": "not an email"}, "email"),
    ({"email": "<x@example.com>"}, "email"),
    ({"email": "Name <x@example.com>"}, "email"),
    ({"email": "x\x00@example.com"}, "email"),
    ({"email": "x@example.com", "roleId": "\x00"}, "roleId"),
    ({}, "email"),
])
async def test_create_bad_input_is_validation_failed(shared_site, body, path):
    client, site_headers = shared_site.app.client, shared_site.site_headers
    resp = await client.post(f"{API}/users", json=body, headers=site_headers)
    assert resp.status_code == 400, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "VALIDATION_FAILED" and error["path"] == [path]


async def test_role_of_another_site_is_refused(svc_app, client, site_headers, site_b):
    foreign = await role_id(svc_app, site_b, "admin")
    resp = await client.post(f"{API}/users", json={"email": "x@example.com", "roleId": foreign}, headers=site_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["roleId"]


async def test_cross_tenant_user_is_not_found(svc_app, client, site, site_b, site_headers, make_member):
    stranger = await make_member(site_b)
    for method in ("GET", "DELETE"):
        resp = await client.request(method, f"{API}/users/{stranger.id}", headers=site_headers)
        assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    resp = await client.patch(f"{API}/users/{stranger.id}", json={"firstName": "X"}, headers=site_headers)
    assert resp.status_code == 404
    assert (await client.get(f"{API}/users?search={stranger.email}", headers=site_headers)).json()["data"] == []
    assert (await client.get(f"{API}/users/%00", headers=site_headers)).status_code == 404
    # the members other plugins ask for (privacy, editorial) are the site's only (access's members(db))
    async with svc_app.kernel.db.connect() as conn:
        here, there = SiteDB(site, conn), SiteDB(site_b, conn)
        assert await members_by_email(here, [stranger.email.upper()]) == []
        assert await members_by_email(there, [stranger.email.upper()]) == [{"id": stranger.id,
                                                                             "email": stranger.email.lower()}]
        assert stranger.id not in {m["id"] for m in await active_members(here, 1000)}
        assert stranger.id in {m["id"] for m in await active_members(there, 1000)}


async def test_role_change_takes_effect_and_is_audited(svc_app, client, site, site_headers, make_member, login_as):
    member = await make_member(site)
    headers = bearer((await login_as(member.email, site=site))["token"], site)
    assert (await client.get(f"{API}/users", headers=headers)).status_code == 403
    admin_role = await role_id(svc_app, site, "admin")
    resp = await client.patch(f"{API}/users/{member.id}", json={"roleId": admin_role}, headers=site_headers)
    assert resp.status_code == 200 and resp.json()["data"]["roleId"] == admin_role
    assert (await client.get(f"{API}/users", headers=headers)).status_code == 200
    assert "user.role_changed" in await audit_actions(svc_app, site)


async def test_nobody_changes_their_own_role_or_secrets_here(svc_app, client, site, site_admin):
    member, headers = site_admin
    for body in ({"roleId": await role_id(svc_app, site, "subscriber")}, {"password": "new-password-1"},
                 {"status": "active"}, {"email": "me2@example.com"}):
        resp = await client.patch(f"{API}/users/{member.id}", json=body, headers=headers)
        assert resp.status_code == 403, body
    assert (await client.delete(f"{API}/users/{member.id}", headers=headers)).status_code == 403
    ok = await client.patch(f"{API}/users/{member.id}", json={"firstName": "Me"}, headers=headers)
    assert ok.status_code == 200 and ok.json()["data"]["firstName"] == "Me"


async def test_only_the_instance_admin_changes_the_instance_admin(client, site, site_headers, site_admin):
    resp = await client.post(f"{API}/users", json={"email": ADMIN_EMAIL}, headers=site_headers)
    assert resp.status_code == 201  # the instance admin may add itself to a site
    admin_id = resp.json()["data"]["id"]
    _, headers = site_admin
    assert (await client.get(f"{API}/users/{admin_id}", headers=headers)).status_code == 200
    for method, body in (("PATCH", {"firstName": "Owned"}), ("PATCH", {"status": "suspended"}), ("DELETE", None)):
        resp = await client.request(method, f"{API}/users/{admin_id}", json=body, headers=headers)
        assert resp.status_code == 403, (method, body)
    resp = await client.patch(f"{API}/users/{admin_id}", json={"firstName": "Root"}, headers=site_headers)
    assert resp.status_code == 200


async def test_shared_identity_fields_need_the_instance_admin(client, site, site_b, site_headers, site_admin,
                                                              make_member):
    shared = await make_member([site, site_b])
    _, headers = site_admin
    for body in ({"firstName": "X"}, {"password": "taken-over-1"}, {"status": "suspended"}):
        resp = await client.patch(f"{API}/users/{shared.id}", json=body, headers=headers)
        assert resp.status_code == 403 and resp.json()["errors"][0]["extensions"]["reason"] == "shared_identity"
    ok = await client.patch(f"{API}/users/{shared.id}", json={"firstName": "Shared"}, headers=site_headers)
    assert ok.status_code == 200


async def test_admin_password_change_ends_sessions(client, site, site_headers, site_admin, make_member, login_as):
    member = await make_member(site)
    session = await login_as(member.email, site=site)
    _, headers = site_admin
    resp = await client.patch(f"{API}/users/{member.id}", json={"password": "set-by-admin-1", "lastName": "L"},
                              headers=headers)
    assert resp.status_code == 200 and resp.json()["data"]["lastName"] == "L"
    assert (await client.get(f"{API}/auth/me", headers=bearer(session["token"], site))).status_code == 401
    refreshed = await client.post(f"{API}/auth/refresh", json={"refreshToken": session["refreshToken"]},
                                  headers={"X-Svc-Site": site})
    assert refreshed.status_code == 401
    await login_as(member.email, "set-by-admin-1", site=site)


async def test_suspending_ends_access(client, site, site_headers, make_member, login_as):
    member = await make_member(site)
    session = await login_as(member.email, site=site)
    resp = await client.patch(f"{API}/users/{member.id}", json={"status": "suspended"}, headers=site_headers)
    assert resp.status_code == 200 and resp.json()["data"]["status"] == "suspended"
    assert (await client.get(f"{API}/auth/me", headers=bearer(session["token"], site))).status_code == 401


@pytest.mark.parametrize(("body", "status", "path"), [
    ({"isInstanceAdmin": True}, 400, "isInstanceAdmin"),
    ({"token_version": 2}, 400, "token_version"),
    ({"status": "root"}, 400, "status"),
    ({"roleId": None}, 400, "roleId"),
    ({"avatar": "x" * 501}, 400, "avatar"),
    ({"email": "a@@b"}, 400, "email"),
])
async def test_patch_bad_input(client, site, site_headers, make_member, body, status, path):
    member = await make_member(site)
    resp = await client.patch(f"{API}/users/{member.id}", json=body, headers=site_headers)
    assert resp.status_code == status and resp.json()["errors"][0]["path"] == [path]


async def test_patch_email_conflict(client, site, site_headers, make_member):
    one, two = await make_member(site), await make_member(site)
    resp = await client.patch(f"{API}/users/{one.id}", json={"email": two.email}, headers=site_headers)
    assert resp.status_code == 409 and resp.json()["errors"][0]["code"] == "CONFLICT"


async def test_delete_removes_membership_and_orphan_identity(svc_app, client, site, site_b, site_headers,
                                                             site_b_headers, make_member):
    alone, shared = await make_member(site), await make_member([site, site_b])
    # a row of access naming the identity in another site: no foreign key removes it, accounts does
    team = (await client.post(f"{API}/teams", json={"name": "Crew"}, headers=site_b_headers)).json()["data"]
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(insert(team_members).values(site_id=site_b, team_id=team["id"], user_id=alone.id))
    for member in (alone, shared):
        resp = await client.delete(f"{API}/users/{member.id}", headers=site_headers)
        assert resp.status_code == 204 and resp.content == b""
        assert (await client.get(f"{API}/users/{member.id}", headers=site_headers)).status_code == 404
    async with svc_app.kernel.db.connect() as conn:
        ids = {r[0] for r in await conn.execute(select(users.c.id).where(users.c.id.in_([alone.id, shared.id])))}
    assert ids == {shared.id}
    async with svc_app.kernel.db.connect() as conn:
        left = await conn.execute(select(team_members.c.user_id).where(team_members.c.user_id == alone.id))
        assert left.all() == []
    login = await client.post(f"{API}/auth/login", json={"email": shared.email, "password": shared.password},
                              headers={"X-Svc-Site": site_b})
    assert login.status_code == 200
    assert "user.delete" in await audit_actions(svc_app, site)


async def test_invite_and_accept(svc_app, client, site, site_headers, mailbox):
    guest = tagged("guest")
    resp = await client.post(f"{API}/users/invite", json={"email": guest, "firstName": "Guest"},
                             headers=site_headers)
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["status"] == "invited"
    [first] = await mailbox.wait_for(1, to=guest)
    assert "/accept-invite?token=" in first.get_content()
    again = await client.post(f"{API}/users/invite", json={"email": guest}, headers=site_headers)
    assert again.status_code == 200  # a pending invitation is sent again
    _, second = await mailbox.wait_for(2, to=guest)
    stale = await client.post(f"{API}/auth/accept-invite", json={"token": mailbox.token(first),
                                                                "password": "guest-pass-1"}, headers={"X-Svc-Site": site})
    assert stale.status_code == 400
    accept = await client.post(f"{API}/auth/accept-invite", json={"token": mailbox.token(second),
                                                                 "password": "guest-pass-1"}, headers={"X-Svc-Site": site})
    assert accept.status_code == 200, accept.text
    login = await client.post(f"{API}/auth/login", json={"email": guest, "password": "guest-pass-1"},
                              headers={"X-Svc-Site": site})
    assert login.status_code == 200
    reuse = await client.post(f"{API}/auth/accept-invite", json={"token": mailbox.token(second),
                                                                "password": "other-pass-1"}, headers={"X-Svc-Site": site})
    assert reuse.status_code == 400
    conflict = await client.post(f"{API}/users/invite", json={"email": guest}, headers=site_headers)
    assert conflict.status_code == 409
    assert "user.invite" in await audit_actions(svc_app, site)


async def test_invite_of_an_existing_account_adds_it_without_a_token(client, site, site_b, site_headers,
                                                                     mailbox, make_member):
    member = await make_member(site_b)
    resp = await client.post(f"{API}/users/invite", json={"email": member.email}, headers=site_headers)
    assert resp.status_code == 201 and resp.json()["data"]["status"] == "active"
    [notice] = await mailbox.wait_for(1, to=member.email)
    assert "token=" not in notice.get_content()


async def test_invite_bad_input(client, site_headers):
    for body in ({}, {"email": "x@example.com", "password": "nope-nope-1"}, {"email": "bad"},
                 {"email": "x@example.com", "roleId": 5}):
        resp = await client.post(f"{API}/users/invite", json=body, headers=site_headers)
        assert resp.status_code == 400, body


async def test_invite_without_smtp(make_app):
    app = await make_app()  # no SMTP host
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}"}
    await app.client.post(f"{API}/sites", json={"id": "nomail", "name": "N"}, headers=headers)
    resp = await app.client.post(f"{API}/users/invite", json={"email": "x@example.com"},
                                 headers={**headers, "X-Svc-Site": "nomail"})
    assert resp.status_code == 503 and resp.json()["errors"][0]["code"] == "EMAIL_NOT_CONFIGURED"


async def test_users_routes_need_admin_and_a_site(client, site, make_member, login_as, admin_headers):
    member = await make_member(site)
    headers = bearer((await login_as(member.email, site=site))["token"], site)
    for method, path in (("GET", "/users"), ("POST", "/users"), ("POST", "/users/invite"),
                         ("GET", f"/users/{member.id}")):
        assert (await client.request(method, f"{API}{path}", json={}, headers=headers)).status_code == 403
    resp = await client.get(f"{API}/users")  # the site is resolved before the credentials
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]
    resp = await client.get(f"{API}/users", headers=admin_headers)
    assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == ["headers", "X-Svc-Site"]


async def test_literal_subscriber_access_route_wins_over_user_id(client, site_headers):
    resp = await client.get(f"{API}/users/subscriber-access", headers=site_headers)
    assert resp.status_code == 200, resp.text
    assert not (resp.json()["data"] and "email" in resp.json()["data"][0])

"""External JWTs: role mapping (roleId, systemKey, defaultRoleId, never implicit admin) and
just-in-time provisioning of users and memberships.

The tests share the module's app (kernel/testing/shared.py), each registering its issuer in a new
site; the tokens of each test name an email address of its own (identities are instance-wide)."""

from __future__ import annotations

import pytest
import pytest_asyncio
from issuer_kit import (
    ISSUERS,
    WHOAMI,
    WhoAmIPlugin,
    add_role,
    bearer,
    claims,
    issuer_body,
    key_set,
    rsa_key,
    unique,
)
from sqlalchemy import func, select, update

from kernel.policy.audit import audit_log
from kernel.tenancy.scope import SiteDB
from kernel.testing import shared as testing_shared
from kernel.testing import shared_site_with
from plugins.access.api import membership, role_by_system_key, set_membership
from plugins.access.tables import roles
from plugins.accounts.service import create_user
from plugins.accounts.tables import external_identities, users

svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_site(svc_shared_db, svc_template_db, tmp_path_factory):
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, plugins=[WhoAmIPlugin()]) as shared:
        yield shared


@pytest.fixture
def server(http_receiver):
    http_receiver.serve("/jwks", key_set(rsa_key()))
    return http_receiver


@pytest.fixture
def register(client, site_headers, server):
    async def make(**overrides):
        resp = await client.post(ISSUERS, json=issuer_body(server.url("/jwks"), **overrides), headers=site_headers)
        assert resp.status_code == 201, resp.text
        return resp.json()["data"]
    return make


@pytest.fixture
def who(client, site):
    email = f"{unique('ext')}@example.com"  # the test's own identity, unless a test names one

    async def whoami(expect=200, **claim_overrides):
        claim_overrides.setdefault("email", email)
        resp = await client.get(WHOAMI, headers=bearer(rsa_key().sign(claims(**claim_overrides)), site))
        assert resp.status_code == expect, resp.text
        return resp.json()["data"] if expect == 200 else resp.json()["errors"][0]
    return whoami


async def system_role(svc_app, site, key):
    async with svc_app.kernel.db.connect() as conn:
        return (await role_by_system_key(conn, site, key))["id"]


async def test_mapping_by_role_id_and_system_key(svc_app, site, register, who):
    editor = await add_role(svc_app.kernel, site, "Editor")
    await register(roleMapping={"editor": {"roleId": editor}, "reader": {"systemKey": "subscriber"},
                                "boss": {"systemKey": "admin"}})
    assert (await who(roles=["editor"]))["roleId"] == editor
    assert (await who(roles="reader"))["roleId"] == await system_role(svc_app, site, "subscriber")
    boss = await who(roles=["unmapped", "boss"])
    assert boss["admin"] is True and boss["roleId"] == await system_role(svc_app, site, "admin")
    # First mapped role in the claim's order wins.
    assert (await who(roles=["editor", "boss"]))["admin"] is False


async def test_roles_claim_path_from_claim_mapping(svc_app, site, register, who):
    editor = await add_role(svc_app.kernel, site, "Editor")
    await register(roleMapping={"editor": {"roleId": editor}},
                   claimMapping={"roles": "realm_access.roles", "email": "mail", "externalId": "oid"})
    found = await who(roles=None, realm_access={"roles": ["editor"]}, mail="m@example.com", oid="o-1")
    assert found["roleId"] == editor and found["email"] == "m@example.com"
    assert "subject" in (await who(expect=401, realm_access={"roles": ["editor"]}))["message"]


async def test_no_mapping_is_403_never_admin(register, who):
    await register(roleMapping={"editor": {"systemKey": "subscriber"}})
    for claimed in (["admin"], "admin", [], None, 5, [{"name": "editor"}]):
        err = await who(expect=403, roles=claimed)
        assert err["code"] == "PERMISSION_DENIED" and err["extensions"]["reason"] == "no_role_mapping"


async def test_default_role_applies_when_nothing_maps(svc_app, site, register, who, client, site_headers):
    viewer = await add_role(svc_app.kernel, site, "Viewer")
    issuer = await register(defaultRoleId=viewer)
    assert (await who(roles=["admin"]))["roleId"] == viewer
    # A default role that later gains admin access is not used: never implicit admin.
    async with svc_app.kernel.db.begin() as conn:
        db = SiteDB(site, conn)
        await db.execute(db.update(roles).where(roles.c.id == viewer).values(admin_access=True))
    svc_app.kernel.access.invalidate(site)
    assert (await who(expect=403, roles=["admin"]))["code"] == "PERMISSION_DENIED"
    resp = await client.patch(f"{ISSUERS}/{issuer['id']}", json={"clockSkewSeconds": 5}, headers=site_headers)
    assert resp.status_code == 422 and resp.json()["errors"][0]["path"] == ["defaultRoleId"]


async def test_mapped_role_that_was_deleted_is_no_mapping(svc_app, site, register, who):
    doomed = await add_role(svc_app.kernel, site, "Doomed")
    await register(roleMapping={"editor": {"roleId": doomed}})
    assert (await who())["roleId"] == doomed
    async with svc_app.kernel.db.begin() as conn:
        db = SiteDB(site, conn)
        await db.execute(db.delete(roles).where(roles.c.id == doomed))
    assert (await who(expect=403))["code"] == "PERMISSION_DENIED"


async def count(svc_app, stmt):
    async with svc_app.kernel.db.connect() as conn:
        return (await conn.execute(stmt)).scalar_one()


async def test_jit_creates_user_and_membership_once(svc_app, client, site, register, who):
    editor = await add_role(svc_app.kernel, site, "Editor")
    await register(jitProvisioning=True, roleMapping={"editor": {"roleId": editor}})
    name = unique("New.Person")
    first = await who(email=f"{name}@Example.com")
    second = await who(email=f"{name}@Example.com")
    assert first["userId"] and first["userId"] == second["userId"] and first["roleId"] == editor
    email = f"{name.lower()}@example.com"
    assert await count(svc_app, select(func.count()).select_from(users).where(users.c.email == email)) == 1
    assert await count(svc_app, select(func.count()).select_from(external_identities)
                       .where(external_identities.c.site_id == site)) == 1
    async with svc_app.kernel.db.connect() as conn:
        member = await membership(conn, site, first["userId"])
        user = (await conn.execute(select(users).where(users.c.id == first["userId"]))).mappings().one()
    assert member["role_id"] == editor and user["status"] == "active" and user["password_hash"] is None
    assert await count(svc_app, select(func.count()).select_from(audit_log).where(
        audit_log.c.site_id == site, audit_log.c.action == "user.provisioned")) == 1
    me = await client.get("/api/v1/auth/me", headers=bearer(rsa_key().sign(claims(email=email)), site))
    assert me.status_code == 200 and me.json()["data"]["email"] == email


async def test_jit_needs_an_email(register, who):
    await register(jitProvisioning=True, roleMapping={"editor": {"systemKey": "subscriber"}})
    assert "email" in (await who(expect=401, email=None))["message"]
    assert "email" in (await who(expect=401, email="not-an-email"))["message"]


async def test_jit_membership_follows_the_token_and_never_grants_admin(svc_app, site, register, who):
    editor = await add_role(svc_app.kernel, site, "Editor")
    viewer = await add_role(svc_app.kernel, site, "Viewer")
    await register(jitProvisioning=True, roleMapping={"editor": {"roleId": editor}, "viewer": {"roleId": viewer}})
    user_id = (await who(roles=["editor"]))["userId"]
    # An admin made the user a site admin behind the issuer's back: the token still decides.
    async with svc_app.kernel.db.begin() as conn:
        await set_membership(conn, site, user_id, await system_role(svc_app, site, "admin"))
    svc_app.kernel.access.invalidate(site)
    seen = await who(roles=["viewer"])
    assert seen["roleId"] == viewer and seen["admin"] is False and seen["userId"] == user_id
    async with svc_app.kernel.db.connect() as conn:
        assert (await membership(conn, site, user_id))["role_id"] == viewer


async def test_jit_does_not_take_over_password_accounts(svc_app, site, register, who, make_member):
    await register(jitProvisioning=True, roleMapping={"editor": {"systemKey": "subscriber"}})
    member = await make_member(site, role="subscriber")
    err = await who(expect=403, email=member.email)
    assert err["extensions"]["reason"] == "identity_conflict"
    err = await who(expect=403, email="admin@example.com", sub="wants-to-be-admin")
    assert err["extensions"]["reason"] == "identity_conflict"


async def test_jit_links_a_passwordless_member_of_the_site(svc_app, site, register, who):
    await register(jitProvisioning=True, roleMapping={"editor": {"systemKey": "subscriber"}})
    invited, elsewhere = f"{unique('invited')}@example.com", f"{unique('elsewhere')}@example.com"
    async with svc_app.kernel.db.begin() as conn:
        user_id = await create_user(svc_app.kernel, conn, email=invited, password=None)
        await set_membership(conn, site, user_id, await system_role(svc_app, site, "public"))
    assert (await who(email=invited))["userId"] == user_id
    # A passwordless identity that is no member of this site is not linked.
    async with svc_app.kernel.db.begin() as conn:
        await create_user(svc_app.kernel, conn, email=elsewhere, password=None)
    assert (await who(expect=403, email=elsewhere, sub="s2"))["extensions"]["reason"] == "identity_conflict"


async def test_without_jit_the_principal_is_stateless(svc_app, site, register, who):
    await register(roleMapping={"editor": {"systemKey": "subscriber"}})
    before = await count(svc_app, select(func.count()).select_from(external_identities))  # other tests' sites
    assert (await who())["userId"] is None
    assert await count(svc_app, select(func.count()).select_from(external_identities)) == before


async def test_suspended_jit_user_is_refused(svc_app, site, register, who):
    await register(jitProvisioning=True, roleMapping={"editor": {"systemKey": "subscriber"}})
    user_id = (await who())["userId"]
    async with svc_app.kernel.db.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user_id).values(status="suspended"))
    assert "not active" in (await who(expect=401))["message"]

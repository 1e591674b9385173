"""A personal API key (``/me/api-keys``) has an owner and stops working the moment its owner's
place in the site changes: the role changes, the membership ends, the person is suspended,
deleted or erased (docs/accounts.md#my-account). A site key made through ``/api-keys`` has no
owner and outlives the admin who made it. Each check uses the key itself on the very next request.
The tests share the module's app (kernel/testing/shared.py, the auth rate limit off), each in new sites."""

from __future__ import annotations

from sqlalchemy import select

from kernel.testing import shared as testing_shared
from plugins.access.api import role_by_system_key
from plugins.accounts.tables import api_keys

API = "/api/v1"

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b, shared_site = testing_shared.site, testing_shared.site_b, testing_shared.login_shared_site


def bearer(token: str, site: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", "X-Svc-Site": site}


async def _my_key(svc_app, member, site: str | None = None) -> dict:
    """A personal key of ``member`` in ``site`` (their first site by default), made in a session
    of that site (sessions are bound to one site)."""
    headers = member.headers
    if site is not None:
        headers = bearer(await svc_app.login(member.email, member.password, site=site), site)
    resp = await svc_app.client.post(f"{API}/me/api-keys", json={"name": "laptop"}, headers=headers)
    assert resp.status_code == 201, resp.text
    return resp.json()["data"]


async def _status(client, key: dict, site: str) -> int:
    return (await client.get(f"{API}/collections", headers=bearer(key["key"], site))).status_code


async def _works(client, key: dict, site: str) -> None:
    assert await _status(client, key, site) == 200


async def _refused(client, key: dict, site: str) -> None:
    resp = await client.get(f"{API}/collections", headers=bearer(key["key"], site))
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED", resp.text


async def _owner_of(svc_app, key_id: str) -> list:
    async with svc_app.kernel.db.connect() as conn:
        return list((await conn.execute(select(api_keys.c.owner_id).where(api_keys.c.id == key_id))).all())


async def _role(svc_app, site: str, key: str) -> str:
    async with svc_app.kernel.db.connect() as conn:
        return (await role_by_system_key(conn, site, key))["id"]


async def test_a_role_change_revokes_the_keys_of_that_site_only(
    svc_app, client, site, site_b, site_headers, make_member
):
    member = await make_member([site, site_b], "admin", login=True)
    here, there = await _my_key(svc_app, member), await _my_key(svc_app, member, site_b)
    assert await _owner_of(svc_app, here["id"]) == [(member.id,)]
    await _works(client, here, site)
    same = await client.patch(f"{API}/users/{member.id}", json={"firstName": "Ada"}, headers=site_headers)
    assert same.status_code == 200, same.text
    await _works(client, here, site)  # no role change, no revocation
    lowered = await client.patch(
        f"{API}/users/{member.id}",
        json={"roleId": await _role(svc_app, site, "subscriber")},
        headers=site_headers,
    )
    assert lowered.status_code == 200, lowered.text
    await _refused(client, here, site)
    assert await _owner_of(svc_app, here["id"]) == []
    await _works(client, there, site_b)  # site B's role did not change


async def test_removal_from_the_site_revokes_its_keys_and_keeps_the_other_sites(
    svc_app, client, site, site_b, site_headers, make_member
):
    member = await make_member([site, site_b], login=True)
    here, there = await _my_key(svc_app, member), await _my_key(svc_app, member, site_b)
    removed = await client.delete(f"{API}/users/{member.id}", headers=site_headers)
    assert removed.status_code == 204, removed.text
    await _refused(client, here, site)
    await _works(client, there, site_b)


async def test_suspension_revokes_the_keys_of_every_site(
    svc_app, client, site, site_b, site_headers, make_member
):
    member = await make_member([site, site_b], login=True)
    here, there = await _my_key(svc_app, member), await _my_key(svc_app, member, site_b)
    await _works(client, here, site)
    suspended = await client.patch(
        f"{API}/users/{member.id}", json={"status": "suspended"}, headers=site_headers
    )
    assert suspended.status_code == 200, suspended.text
    await _refused(client, here, site)
    await _refused(client, there, site_b)


async def test_deleting_the_identity_deletes_its_keys(svc_app, client, site, site_headers, make_member):
    member = await make_member(site, login=True)
    key = await _my_key(svc_app, member)
    removed = await client.delete(f"{API}/users/{member.id}", headers=site_headers)
    assert removed.status_code == 204, removed.text
    await _refused(client, key, site)
    assert await _owner_of(svc_app, key["id"]) == []


async def test_an_erased_account_loses_its_keys_in_that_site(
    svc_app, client, site, site_b, calls, make_member
):
    # Also a member of B, so the identity stays: the erasure ends the membership of this site only.
    member = await make_member([site, site_b], login=True)
    key, there = await _my_key(svc_app, member), await _my_key(svc_app, member, site_b)
    await calls.collection("patients", {"email": "string"}, meta={"personalData": True})
    await calls.create("patients", {"email": member.email})
    req = await calls.ok(
        "post",
        "/admin/erasure",
        201,
        json={"collection": "patients", "filter": {"email": {"_eq": member.email}}, "reason": "Art. 17"},
    )
    done = await calls.ok("post", f"/admin/erasure/{req['id']}/execute")
    assert done["reached"]["accounts"] == 1
    await _refused(client, key, site)
    await _works(client, there, site_b)


async def test_a_site_key_outlives_the_admin_who_made_it(svc_app, client, site, site_headers, make_member):
    maker = await make_member(site, "admin", login=True)
    made = await client.post(
        f"{API}/api-keys",
        json={"name": "ci", "roleId": await _role(svc_app, site, "subscriber")},
        headers=maker.headers,
    )
    assert made.status_code == 201, made.text
    key = made.json()["data"]
    assert await _owner_of(svc_app, key["id"]) == [(None,)]
    # It is the site's key, not the maker's personal one: /me/api-keys neither lists nor revokes it.
    assert (await client.get(f"{API}/me/api-keys", headers=maker.headers)).json()["data"] == []
    mine = await client.delete(f"{API}/me/api-keys/{key['id']}", headers=maker.headers)
    assert mine.status_code == 404
    removed = await client.delete(f"{API}/users/{maker.id}", headers=site_headers)
    assert removed.status_code == 204, removed.text
    await _works(client, key, site)

"""The caller's own account (docs/accounts.md#my-account): ``PATCH /auth/me`` changes the name
only, and personal API keys under ``/me/api-keys`` act with the creator's role, are listed and
revoked by their creator only, and stay within their site."""

from __future__ import annotations

from kernel.testing import shared as testing_shared
from plugins.access.api import role_by_system_key

# Every test writes and reads in sites of its own: they share the module's app (the auth rate
# limit off: its tests log in many times), each in new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

API = "/api/v1"


def bearer(token: str, site: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}", **({"X-Svc-Site": site} if site else {})}


async def test_a_person_changes_their_own_name_and_nothing_else(client, site, make_member):
    member = await make_member(site, login=True)
    resp = await client.patch(
        f"{API}/auth/me", json={"firstName": " Ada ", "lastName": "Lovelace"}, headers=member.headers
    )
    assert resp.status_code == 200, resp.text
    assert resp.json()["data"] == {
        "id": member.id,
        "email": member.email,
        "firstName": "Ada",
        "lastName": "Lovelace",
        "avatar": None,
    }
    me = await client.get(f"{API}/auth/me", headers=member.headers)
    assert me.json()["data"]["firstName"] == "Ada"
    cleared = await client.patch(f"{API}/auth/me", json={"lastName": None}, headers=member.headers)
    assert cleared.json()["data"]["lastName"] is None and cleared.json()["data"]["firstName"] == "Ada"
    for body, path in (
        ({"email": "new@example.com"}, "email"),
        ({"firstName": "x" * 201}, "firstName"),
        ({"lastName": 5}, "lastName"),
    ):
        refused = await client.patch(f"{API}/auth/me", json=body, headers=member.headers)
        assert refused.status_code == 400, refused.text
        [error] = refused.json()["errors"]
        assert error["code"] == "VALIDATION_FAILED" and error["path"] == [path]
    assert (await client.get(f"{API}/auth/me", headers=member.headers)).json()["data"][
        "email"
    ] == member.email
    assert (await client.patch(f"{API}/auth/me", json={"firstName": "Eve"})).status_code == 401


async def test_personal_api_keys_act_with_the_creators_role(svc_app, client, site, site_headers, make_member):
    member = await make_member(site, login=True)
    other = await make_member(site, login=True)
    created = await client.post(f"{API}/me/api-keys", json={"name": "my laptop"}, headers=member.headers)
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    async with svc_app.kernel.db.connect() as conn:
        subscriber = (await role_by_system_key(conn, site, "subscriber"))["id"]
    assert (
        data["key"].startswith("svk_")
        and data["roleId"] == subscriber
        and data["role"]["systemKey"] == "subscriber"
    )
    # A member cannot choose a role (no key above their own).
    admin_role = await client.post(
        f"{API}/me/api-keys", json={"name": "x", "roleId": subscriber}, headers=member.headers
    )
    assert admin_role.status_code == 400 and admin_role.json()["errors"][0]["path"] == ["roleId"]
    bad = await client.post(f"{API}/me/api-keys", json={"name": ""}, headers=member.headers)
    assert bad.status_code == 400 and bad.json()["errors"][0]["path"] == ["name"]

    listed = await client.get(f"{API}/me/api-keys", headers=member.headers)
    assert listed.status_code == 200 and data["key"] not in listed.text
    [item] = listed.json()["data"]
    assert (item["id"], item["name"], item["prefix"]) == (data["id"], "my laptop", data["key"][4:12])
    assert (await client.get(f"{API}/me/api-keys", headers=other.headers)).json()["data"] == []
    # The site's admin sees it among the site's keys.
    assert data["id"] in {
        k["id"] for k in (await client.get(f"{API}/api-keys", headers=site_headers)).json()["data"]
    }

    # The key works in its site; another member cannot revoke it; its creator can, and it stops.
    assert (await client.get(f"{API}/me/sites", headers=bearer(data["key"], site))).status_code != 401
    assert (await client.get(f"{API}/api-keys", headers=bearer(data["key"], site))).status_code == 403
    theirs = await client.delete(f"{API}/me/api-keys/{data['id']}", headers=other.headers)
    assert theirs.status_code == 404 and theirs.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    assert (await client.delete(f"{API}/me/api-keys/%00", headers=member.headers)).status_code == 404
    # An API key is no person: it makes no keys.
    by_key = await client.post(f"{API}/me/api-keys", json={"name": "k"}, headers=bearer(data["key"], site))
    assert by_key.status_code == 403
    gone = await client.delete(f"{API}/me/api-keys/{data['id']}", headers=member.headers)
    assert gone.status_code == 204
    assert (await client.get(f"{API}/auth/me", headers=bearer(data["key"], site))).status_code == 401
    assert (await client.get(f"{API}/me/api-keys", headers=member.headers)).json()["data"] == []


async def test_personal_api_keys_stay_in_their_site(svc_app, client, admin_headers, make_member):
    site_a = await svc_app.create_site(admin_headers)
    site_b = await svc_app.create_site(admin_headers)
    member = await make_member([site_a, site_b], login=True)
    created = await client.post(f"{API}/me/api-keys", json={"name": "a only"}, headers=member.headers)
    assert created.status_code == 201, created.text
    key_id = created.json()["data"]["id"]
    # Its tokens are bound to one site (docs/decisions/site-bound-tokens.md): a session in B.
    in_b = bearer(await svc_app.login(member.email, member.password, site=site_b), site_b)
    assert (await client.get(f"{API}/me/api-keys", headers=in_b)).json()["data"] == []
    refused = await client.delete(f"{API}/me/api-keys/{key_id}", headers=in_b)
    assert refused.status_code == 404 and refused.json()["errors"][0]["code"] == "RECORD_NOT_FOUND"
    assert [
        k["id"] for k in (await client.get(f"{API}/me/api-keys", headers=member.headers)).json()["data"]
    ] == [key_id]
    # Without a site there is no key to list.
    assert (await client.get(f"{API}/me/api-keys", headers=bearer(member.token))).status_code == 400

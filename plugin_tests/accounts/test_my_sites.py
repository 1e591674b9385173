"""``GET /me/sites`` (docs/accounts.md#my-sites): the sites a user may sign in to, for the
studio's site switcher. A member sees its own memberships with its role in each, never a site it
does not belong to; the instance admin sees every site; an API key is not a user."""

from __future__ import annotations

from kernel.testing import API, Calls


async def test_a_member_lists_its_own_sites_with_its_role(svc_app, calls, site, make_member, admin_headers):
    other = await svc_app.create_site(admin_headers, prefix="other", name="Other site")
    elsewhere = await svc_app.create_site(admin_headers, prefix="elsewhere", name="Not mine")
    member = await make_member([site, other], "subscriber")
    token = await svc_app.login(member.email, member.password, site=site)
    mine = await Calls(svc_app.client, {"Authorization": f"Bearer {token}"}).ok("get", "/me/sites")
    assert [s["id"] for s in mine] == sorted([site, other])
    subscriber = [r for r in await calls.ok("get", "/roles") if r["systemKey"] == "subscriber"]
    assert [(s["roleId"], s["roleName"]) for s in mine if s["id"] == site] == [(subscriber[0]["id"], subscriber[0]["name"])]
    assert elsewhere not in {s["id"] for s in mine}
    named = {s["id"]: s["name"] for s in mine}
    assert named[other] == "Other site"


async def test_the_same_list_whichever_site_the_token_names(svc_app, site, make_member, admin_headers):
    other = await svc_app.create_site(admin_headers, prefix="other")
    member = await make_member([site, other], "subscriber")
    token_of_site = await svc_app.login(member.email, member.password, site=site)
    token_of_other = await svc_app.login(member.email, member.password, site=other)
    first = await Calls(svc_app.client, {"Authorization": f"Bearer {token_of_site}"}).ok("get", "/me/sites")
    second = await Calls(svc_app.client, {"Authorization": f"Bearer {token_of_other}"}).ok("get", "/me/sites")
    assert first == second and len(first) == 2


async def test_the_instance_admin_lists_every_site(svc_app, site, admin_headers):
    other = await svc_app.create_site(admin_headers, prefix="other")
    listed = await Calls(svc_app.client, admin_headers).ok("get", "/me/sites")
    ids = [s["id"] for s in listed]
    assert site in ids and other in ids and ids == sorted(ids)
    assert all(s["roleId"] is None for s in listed)


async def test_an_api_key_is_refused_and_no_token_is_unauthenticated(svc_app, calls, site):
    key = (await calls.ok("post", "/api-keys", status=201, json={"name": "robot"}))["key"]
    resp = await svc_app.client.get(f"{API}/me/sites", headers={"Authorization": f"Bearer {key}", "X-Svc-Site": site})
    assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED"
    resp = await svc_app.client.get(f"{API}/me/sites")
    assert resp.status_code == 401 and resp.json()["errors"][0]["code"] == "UNAUTHENTICATED"

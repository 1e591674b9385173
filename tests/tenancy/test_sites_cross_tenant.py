"""``/sites`` and ``/sites/:id`` called by a site admin of A (issue 11, A7): the instance admin's
routes answer everyone else 403 ``PERMISSION_DENIED`` (docs/tenancy.md), whichever site the
request names, and site B is left as it was."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared

# Every test works on sites of its own and writes nothing else (the refused calls change nothing):
# they share the module's app, each with new sites of it (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


def _calls(site: str, site_b: str) -> list[tuple[str, str, dict | None]]:
    return [
        ("GET", "/api/v1/sites", None),
        ("POST", "/api/v1/sites", {"id": "taken-over", "name": "Mine"}),
        ("GET", f"/api/v1/sites/{site_b}", None),
        ("PATCH", f"/api/v1/sites/{site_b}", {"name": "Renamed by A"}),
        ("DELETE", f"/api/v1/sites/{site_b}", None),
        # Not even its own site: site records are the instance admin's.
        ("GET", f"/api/v1/sites/{site}", None),
        ("PATCH", f"/api/v1/sites/{site}", {"name": "Renamed"}),
        ("DELETE", f"/api/v1/sites/{site}", None),
    ]


@pytest.mark.parametrize("named_site", ["a", "b", None])
async def test_a_site_admin_cannot_reach_sites(client, admin_headers, site, site_b, make_member, named_site):
    admin_of_a = await make_member(site, "admin")
    headers = {"Authorization": admin_of_a.headers["Authorization"]}
    if named_site is not None:
        headers["X-Svc-Site"] = site if named_site == "a" else site_b
    for method, path, body in _calls(site, site_b):
        resp = await client.request(method, path, json=body, headers=headers)
        assert resp.status_code == 403, (method, path, resp.text)
        assert resp.json()["errors"][0]["code"] == "PERMISSION_DENIED", (method, path)
    # Site B, site A and the site list are as they were.
    b = await client.get(f"/api/v1/sites/{site_b}", headers=admin_headers)
    assert b.status_code == 200 and b.json()["data"]["name"] != "Renamed by A"
    assert (await client.get(f"/api/v1/sites/{site}", headers=admin_headers)).status_code == 200
    listed = {s["id"] for s in (await client.get("/api/v1/sites?limit=200", headers=admin_headers)).json()["data"]}
    assert {site, site_b} <= listed and "taken-over" not in listed


async def test_a_site_admin_of_b_cannot_reach_a_either(client, site, site_b, make_member):
    admin_of_b = await make_member(site_b, "admin")
    for method, path, body in _calls(site_b, site):
        resp = await client.request(method, path, json=body, headers=admin_of_b.headers)
        assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED", (method, path)

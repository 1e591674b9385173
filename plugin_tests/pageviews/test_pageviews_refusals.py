"""Pageviews refusals, one shared app and site: beacons of bodies and sites that cannot count,
methods the routes do not answer, stats without a site, the setting for admins only, and a
setting of one site that is not another's."""

from __future__ import annotations

import pytest
from pageview_beacons import API, beacon

from kernel.testing import Calls

BODIES = [
    (b"{not json", 400, "VALIDATION_FAILED"), (b"[]", 400, "VALIDATION_FAILED"), (b'"x"', 400, "VALIDATION_FAILED"),
    (b"", 400, "VALIDATION_FAILED"), (b'{"path": 3}', 400, "VALIDATION_FAILED"),
    (b'{"path": "no-slash"}', 400, "VALIDATION_FAILED"), (b'{"path": "/a", "extra": 1}', 400, "VALIDATION_FAILED"),
    (b'{"path": "/a", "referrer": 5}', 400, "VALIDATION_FAILED"),
    (b'{"path": "/a", "referrer": "' + b"r" * 5000 + b'"}', 413, "PAYLOAD_TOO_LARGE"),
    (b"[" * 3000 + b"]" * 3000, 413, "PAYLOAD_TOO_LARGE"),
]


@pytest.mark.parametrize(("raw", "status", "code"), BODIES, ids=[str(i) for i in range(len(BODIES))])
async def test_a_beacon_body_that_cannot_count_is_refused(shared_site, raw, status, code):
    resp = await beacon(shared_site.app.client, shared_site.site, "/a", raw=raw)
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (status, code), (raw[:40], resp.text)


@pytest.mark.parametrize("site_id", ["nosuchsite", "Bad%20Site", "x" * 65, "UPPER"])
async def test_a_beacon_for_no_site_is_404(shared_site, site_id):
    resp = await beacon(shared_site.app.client, site_id, "/a")
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (404, "SITE_NOT_FOUND"), resp.text


@pytest.mark.parametrize(("method", "path", "allow"), [
    ("GET", "/pageviews/{site}/hit", "POST"), ("PUT", "/pageviews/{site}/hit", "POST"),
    ("POST", "/pageviews/stats", "GET"), ("DELETE", "/pageviews/stats", "GET")])
async def test_other_methods_are_405(shared_site, method, path, allow):
    resp = await shared_site.calls.call(method, path.format(site=shared_site.site))
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (405, "METHOD_NOT_ALLOWED"), resp.text
    assert allow in resp.headers["allow"]


async def test_stats_need_a_known_site(shared_site):
    client, admin = shared_site.app.client, shared_site.admin_headers
    none = await client.get(f"{API}/pageviews/stats", headers=admin)
    assert (none.status_code, none.json()["errors"][0]["code"]) == (400, "VALIDATION_FAILED"), none.text
    unknown = await client.get(f"{API}/pageviews/stats", headers={**admin, "X-Svc-Site": "nosuchsite"})
    assert (unknown.status_code, unknown.json()["errors"][0]["code"]) == (404, "SITE_NOT_FOUND"), unknown.text


async def test_a_member_reads_stats_but_not_the_setting(shared_site):
    member: Calls = await shared_site.member()  # a subscriber
    rows = await member.ok("get", "/pageviews/stats", params={"from": "2020-01-01", "to": "2020-01-02"})
    assert rows == [{"date": "2020-01-01", "views": 0, "uniques": 0}, {"date": "2020-01-02", "views": 0, "uniques": 0}]
    await member.err("put", "/settings/pageviews", 403, "PERMISSION_DENIED", json={"value": {"strategy": "hll"}})
    await member.err("get", "/settings/pageviews", 403, "PERMISSION_DENIED")


async def test_a_sites_setting_is_not_anothers(shared_site):
    a, b = await shared_site.new_site("pa"), await shared_site.new_site("pb")
    salt = "a-salt-of-site-a-only"
    await a.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter", "hashSalt": salt}})
    assert (await a.ok("get", "/settings/pageviews"))["value"]["hashSalt"] == salt
    resp = await b.call("get", "/settings/pageviews")
    assert salt not in resp.text, resp.text

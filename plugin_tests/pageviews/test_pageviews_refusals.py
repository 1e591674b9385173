"""Pageviews refusals, one shared app and site: beacons of bodies and sites that cannot count,
methods the routes do not answer, stats without a site, the setting for admins only, and a
setting of one site that is not another's."""

from __future__ import annotations

import pytest
from pageview_beacons import API, BROWSER, GOOGLEBOT, OTHER_BROWSER, beacon, stats, today

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


async def test_a_stats_range_defaults_to_30_days_and_stops_at_366(shared_site):
    calls = shared_site.calls
    rows = await calls.ok("get", "/pageviews/stats")
    assert len(rows) == 30 and rows[-1]["date"] == today()
    assert len(await calls.ok("get", "/pageviews/stats", params={"from": "2024-01-01", "to": "2024-12-31"})) == 366
    await calls.err("get", "/pageviews/stats", 400, "VALIDATION_FAILED", params={"from": "2024-01-01", "to": "2025-01-01"})


@pytest.mark.parametrize(("value", "status"), [
    ({"flushIntervalS": 1}, 200), ({"flushIntervalS": 86_400}, 200), ({"flushIntervalS": 86_401}, 400),
    ({"hashSalt": "s" * 16}, 200), ({"hashSalt": "s" * 15}, 400), ({"hashSalt": "s" * 200}, 200),
    ({"hashSalt": "s" * 201}, 400), ({"strategy": "hll"}, 200), ({"strategy": "cdc"}, 200),
    ({"respectConsent": False, "botFilter": False}, 200), ({"respectConsent": "no"}, 400)])
async def test_the_settings_bounds(shared_site, value, status):
    calls = await shared_site.new_site("pv")
    resp = await calls.call("put", "/settings/pageviews", json={"value": value})
    assert resp.status_code == status, resp.text
    if status == 400:
        assert resp.json()["errors"][0]["code"] == "VALIDATION_FAILED"
    else:
        assert (await calls.ok("get", "/settings/pageviews"))["value"] == value


async def test_a_beacon_counts_for_the_site_its_path_names_not_its_header(shared_site):
    a, b = await shared_site.new_site("pa"), await shared_site.new_site("pb")
    for calls in (a, b):  # read at once: no flush to wait for
        await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter"}})
    site_a, site_b = a.headers["X-Svc-Site"], b.headers["X-Svc-Site"]
    client = shared_site.app.client
    resp = await beacon(client, site_b, "/p", headers={"X-Svc-Site": site_a})
    assert resp.status_code == 204 and resp.headers["cache-control"] == "no-store"
    assert await stats(client, b.headers, "/p") == {"views": 1, "uniques": 1}
    assert await stats(client, a.headers, "/p") == {"views": 0, "uniques": 0}


async def test_only_the_sites_own_origin_may_send_beacons(shared_site):
    calls = await shared_site.new_site("pv")
    await calls.ok("patch", "/site", json={"siteUrl": "https://www.example.org"})
    site = calls.headers["X-Svc-Site"]
    own = await beacon(shared_site.app.client, site, "/p", headers={"Origin": "https://www.example.org"})
    other = await beacon(shared_site.app.client, site, "/p", headers={"Origin": "https://evil.example"})
    assert own.headers["access-control-allow-origin"] == "https://www.example.org"
    assert (other.status_code, "access-control-allow-origin" in other.headers) == (204, False)


async def _hot_site(shared_site) -> Calls:
    calls = await shared_site.new_site("pv")
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter"}})
    return calls


async def test_a_beacon_with_a_bad_token_is_401_and_not_counted(shared_site):
    calls = await _hot_site(shared_site)
    client, site = shared_site.app.client, calls.headers["X-Svc-Site"]
    refused = await beacon(client, site, "/p", headers={"Authorization": "Bearer not-a-token"})
    assert (refused.status_code, refused.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), refused.text
    assert (await beacon(client, site, "/p")).status_code == 204
    assert await stats(client, calls.headers, "/p") == {"views": 1, "uniques": 1}


async def test_site_uniques_are_distinct_visitors_not_a_sum_over_paths(shared_site):
    calls = await _hot_site(shared_site)
    client, site = shared_site.app.client, calls.headers["X-Svc-Site"]
    for path, ua in (("/x", BROWSER), ("/y", BROWSER), ("/y", OTHER_BROWSER)):
        assert (await beacon(client, site, path, ua=ua)).status_code == 204
    assert await stats(client, calls.headers) == {"views": 3, "uniques": 2}
    assert await stats(client, calls.headers, "/x") == {"views": 1, "uniques": 1}
    assert await stats(client, calls.headers, "/y") == {"views": 2, "uniques": 2}


async def test_a_beacon_with_a_referrer_counts(shared_site):
    calls = await _hot_site(shared_site)
    client, site = shared_site.app.client, calls.headers["X-Svc-Site"]
    resp = await beacon(client, site, "/r", body={"path": "/r", "referrer": "https://search.example/?q=x"})
    assert resp.status_code == 204
    assert await stats(client, calls.headers, "/r") == {"views": 1, "uniques": 1}


async def test_hll_counts_views_and_small_uniques_exactly(shared_site):
    # With Redis: PFCOUNT, exact at this size (its sparse form); without: hot-counter's counters.
    calls = await shared_site.new_site("pv")
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hll"}})
    client, site = shared_site.app.client, calls.headers["X-Svc-Site"]
    for ua in (BROWSER, BROWSER, OTHER_BROWSER):
        assert (await beacon(client, site, "/h", ua=ua)).status_code == 204
    assert await stats(client, calls.headers, "/h") == {"views": 3, "uniques": 2}


async def test_bots_count_only_with_the_bot_filter_off(shared_site):
    calls = await _hot_site(shared_site)
    client, site = shared_site.app.client, calls.headers["X-Svc-Site"]
    assert (await beacon(client, site, "/bot", ua=GOOGLEBOT)).status_code == 204
    assert await stats(client, calls.headers, "/bot") == {"views": 0, "uniques": 0}
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter", "botFilter": False}})
    assert (await beacon(client, site, "/bot", ua=GOOGLEBOT)).status_code == 204
    assert await stats(client, calls.headers, "/bot") == {"views": 1, "uniques": 1}

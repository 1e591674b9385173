"""What docs/delivery.md ("Pageviews") promises and no other test shows, on one shared app and a
site per test with the ``hot-counter`` strategy (a beacon is counted before its 204, so the stats
read right after it are final): the query string and fragment dropped, the privacy signals and
empty user agents not counted, each bad path and stats parameter refused, one row per day."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from pageview_beacons import beacon, stats, today

BAD = 400


async def _hot_site(shared_site):
    calls = await shared_site.new_site("pv")
    await calls.ok("put", "/settings/pageviews", json={"value": {"strategy": "hot-counter"}})
    return calls, shared_site.app.client, calls.headers["X-Svc-Site"]


async def test_the_query_string_and_fragment_are_not_part_of_the_page(shared_site):
    calls, client, site = await _hot_site(shared_site)
    for path in ("/a?email=ann@example.com", "/a#top", "/a"):
        resp = await beacon(client, site, path)
        assert resp.status_code == 204 and resp.headers["cache-control"] == "no-store"
    assert await stats(client, calls.headers, "/a") == {"views": 3, "uniques": 1}
    assert await stats(client, calls.headers, "/a?email=ann@example.com") == {"views": 0, "uniques": 0}


@pytest.mark.parametrize("header", [{"DNT": "1"}, {"Sec-GPC": "1"}])
async def test_a_visitor_who_refuses_tracking_is_not_counted(shared_site, header):
    calls, client, site = await _hot_site(shared_site)
    assert (await beacon(client, site, "/p", headers=header)).status_code == 204
    assert (await beacon(client, site, "/p", headers={"DNT": "0"})).status_code == 204
    assert await stats(client, calls.headers, "/p") == {"views": 1, "uniques": 1}


@pytest.mark.parametrize(
    "ua", ["", "   ", "Mozilla/5.0 (X11; Linux x86_64) HeadlessChrome/120.0 Safari/537.36"]
)
async def test_an_empty_or_headless_user_agent_is_a_bot(shared_site, ua):
    calls, client, site = await _hot_site(shared_site)
    assert (await beacon(client, site, "/b", ua=ua)).status_code == 204
    assert await stats(client, calls.headers, "/b") == {"views": 0, "uniques": 0}


@pytest.mark.parametrize("path", ["/a\x01b", "/a\x7f", "/" + "p" * 512, "/\ud800"])
async def test_a_beacon_path_that_cannot_be_a_page_is_400(shared_site, path):
    raw = json.dumps({"path": path}).encode()
    resp = await beacon(shared_site.app.client, shared_site.site, path, raw=raw)
    error = resp.json()["errors"][0]
    assert (resp.status_code, error["code"], error["path"]) == (BAD, "VALIDATION_FAILED", ["path"]), resp.text


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"from": "2024-1-01"}, "from"),
        ({"to": "20240101xx"}, "to"),
        ({"to": "2024-W01-1"}, "to"),
        ({"from": "2024-02-30"}, "from"),
        ({"path": "no-slash"}, "path"),
        ({"path": "/" + "p" * 512}, "path"),
        ({"from": "2024-03-02", "to": "2024-03-01"}, "from"),
    ],
)
async def test_a_stats_parameter_that_cannot_be_right_is_400_naming_it(shared_site, params, name):
    await shared_site.calls.err(
        "get", "/pageviews/stats", BAD, "VALIDATION_FAILED", path_is=["query", name], params=params
    )


async def test_stats_have_one_row_per_day_of_the_range(shared_site):
    calls, client, site = await _hot_site(shared_site)
    assert (await beacon(client, site, "/d")).status_code == 204
    day = dt.date.fromisoformat(today())
    start = (day - dt.timedelta(days=2)).isoformat()
    resp = await client.get(
        "/api/v1/pageviews/stats", headers=calls.headers, params={"from": start, "path": "/d"}
    )
    assert resp.headers["cache-control"] == "no-store"
    assert resp.json()["data"] == [
        {"date": (day - dt.timedelta(days=2)).isoformat(), "views": 0, "uniques": 0},
        {"date": (day - dt.timedelta(days=1)).isoformat(), "views": 0, "uniques": 0},
        {"date": today(), "views": 1, "uniques": 1},
    ]


async def test_a_beacon_needs_no_site_header_nor_credential(shared_site):
    calls, client, site = await _hot_site(shared_site)
    resp = await client.post(
        f"/api/v1/pageviews/{site}/hit",
        json={"path": "/j"},
        headers={"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"},
    )
    assert resp.status_code == 204
    assert await stats(client, calls.headers, "/j") == {"views": 1, "uniques": 1}

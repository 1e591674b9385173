"""The beacon and the stats: privacy signals and bots not counted, uniques as salted daily
hashes (no IP stored), the flush interval applying at once, the flush at shutdown, site B
never counting for A, and bad input refused."""

from __future__ import annotations

from pageview_beacons import API, GOOGLEBOT, OTHER_BROWSER, beacon, stats, stats_when
from sqlalchemy import select

from kernel.app import shutdown_kernel
from plugins.pageviews import plugin as pageviews_plugin
from plugins.pageviews.tables import daily, salts, visitors


async def test_db_rollup_beacons_and_stats(svc_app, site, site_b, calls, calls_b):
    client = svc_app.client
    for path in ("/a", "/a", "/a?utm=x#top", "/b"):
        assert (await beacon(client, site, path)).status_code == 204
    assert (await beacon(client, site, "/b", ua=OTHER_BROWSER)).status_code == 204
    # Not counted: do-not-track, global privacy control, a crawler, no user agent.
    assert (await beacon(client, site, "/a", headers={"DNT": "1"})).status_code == 204
    assert (await beacon(client, site, "/a", headers={"Sec-GPC": "1"})).status_code == 204
    assert (await beacon(client, site, "/a", ua=GOOGLEBOT)).status_code == 204
    assert (await beacon(client, site, "/a", ua="")).status_code == 204
    # An authenticated hit without a consent store is counted anonymously (same visitor as its IP+UA).
    assert (await beacon(client, site, "/b", headers={"Authorization": calls.headers["Authorization"]})).status_code == 204
    # A hit for B never counts for A.
    assert (await beacon(client, site_b, "/a")).status_code == 204

    # Pending under the default interval (5 minutes); a shorter one applies at once.
    assert await stats(client, calls.headers) == {"views": 0, "uniques": 0}
    await calls.ok("put", "/settings/pageviews", json={"value": {"flushIntervalS": 1}})
    await calls_b.ok("put", "/settings/pageviews", json={"value": {"flushIntervalS": 1}})
    total = await stats_when(client, calls.headers, 6)
    assert total == {"views": 6, "uniques": 2}
    assert await stats(client, calls.headers, "/a") == {"views": 3, "uniques": 1}
    assert await stats(client, calls.headers, "/b") == {"views": 3, "uniques": 2}
    assert await stats_when(client, calls_b.headers, 1) == {"views": 1, "uniques": 1}
    assert await stats(client, calls_b.headers, "/b") == {"views": 0, "uniques": 0}

    # A range answers every day; nothing stored holds the IP or the user agent.
    body = (await client.get(f"{API}/pageviews/stats", headers=calls.headers,
                             params={"from": "2020-01-01", "to": "2020-01-03"})).json()
    assert body == {"data": [{"date": f"2020-01-0{d}", "views": 0, "uniques": 0} for d in (1, 2, 3)]}
    async with svc_app.kernel.db.connect() as conn:
        stored = [tuple(r) for t in (daily, visitors, salts)
                  for r in (await conn.execute(select(t).where(t.c.site_id.in_([site, site_b])))).all()]
    assert stored and not [r for r in stored if any("127.0.0.1" in str(v) or "Mozilla" in str(v) for v in r)]
    hashes = {r[3] for r in stored if len(r) == 4 and r[1] != "" and len(str(r[3])) == 32}
    assert len(hashes) >= 2



async def test_unflushed_hits_survive_a_restart(make_app, tmp_path):
    data_dir = tmp_path / "worker"
    first = await make_app(data_dir=data_dir)
    admin = {"Authorization": f"Bearer {await first.login()}"}
    site = await first.create_site(admin)
    headers = {**admin, "X-Svc-Site": site}
    for path in ("/c", "/c", "/d"):
        assert (await beacon(first.client, site, path)).status_code == 204
    assert pageviews_plugin.counter_of(first.kernel).rollup.pending.get(site)  # 5 minutes to the flush
    assert await stats(first.client, headers) == {"views": 0, "uniques": 0}
    await shutdown_kernel(first.kernel)  # a clean stop (SIGTERM) writes what is pending
    second = await make_app(data_dir=data_dir)
    assert await stats(second.client, headers) == {"views": 3, "uniques": 1}
    assert await stats(second.client, headers, "/c") == {"views": 2, "uniques": 1}


async def test_bad_input_and_access(svc_app, site, calls, anon_calls):
    client = svc_app.client
    cases = [
        (b"{not json", 400), (b"[]", 400), (b'"x"', 400), (b"", 400), (b'{"path": 3}', 400),
        (b'{"path": "no-slash"}', 400), (b'{"path": "/a", "extra": 1}', 400),
        (b'{"path": "/' + b"a" * 600 + b'"}', 400), (b'{"path": "/a\\u0000b"}', 400), (b'{"path": "/x\\ud800"}', 400),
        (b'{"path": "/a", "referrer": "\\udfff"}', 400),
        (b'{"path": "/a", "referrer": "' + b"r" * 3000 + b'"}', 400),
        (b'{"path": "/a", "referrer": "' + b"r" * 5000 + b'"}', 413),
        (b"[" * 3000 + b"]" * 3000, 413),
    ]
    for raw, status in cases:
        resp = await beacon(client, site, "/a", raw=raw)
        assert resp.status_code == status, (raw[:40], resp.status_code, resp.text)
        assert resp.json()["errors"][0]["code"] == ("PAYLOAD_TOO_LARGE" if status == 413 else "VALIDATION_FAILED")
    unknown = await beacon(client, "nosuchsite", "/a")
    assert unknown.status_code == 404 and unknown.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
    await anon_calls.err("get", "/pageviews/stats", 401, "UNAUTHENTICATED")
    for params in ({"from": "yesterday"}, {"to": "2026-13-01"}, {"from": "2026-02-01", "to": "2026-01-01"},
                   {"from": "2020-01-01", "to": "2026-01-01"}, {"path": "nope"}, {"path": "/" + "p" * 600}):
        await calls.err("get", "/pageviews/stats", 400, "VALIDATION_FAILED", params=params)
    for value in ({"strategy": "magic"}, {"flushIntervalS": 0}, {"flushIntervalS": True}, {"botFilter": "yes"},
                  {"hashSalt": "short"}, {"unknown": 1}, "db-rollup"):
        await calls.err("put", "/settings/pageviews", 400, "VALIDATION_FAILED", json={"value": value})


async def test_rate_limit_per_ip(make_app):
    app = await make_app(env={"SVC_RATE_LIMIT_PAGEVIEWS": "3"})
    answers = [await beacon(app.client, "default", "/x") for _ in range(4)]
    assert [a.status_code for a in answers] == [204, 204, 204, 429]
    assert answers[0].headers["x-ratelimit-limit"] == "3" and answers[2].headers["x-ratelimit-remaining"] == "0"
    assert answers[3].json()["errors"][0]["code"] == "RATE_LIMITED" and int(answers[3].headers["retry-after"]) >= 1
    # Counted under an HMAC of the address: no limiter key holds the IP.
    limiter = app.kernel.rate_limiter
    if hasattr(limiter, "_state"):  # the in-process limiter
        keys = list(limiter._state)
    else:  # Redis (behind its per-process fallback): this app's namespace
        redis_limiter = getattr(limiter, "primary", limiter)
        keys = await redis_limiter._client.keys(redis_limiter.namespace + "*")
    assert any("pageviews" in k for k in keys) and not any("127.0.0.1" in k for k in keys), keys


async def test_a_member_of_a_reads_no_stats_of_b(svc_app, site, site_b, make_member):
    member = await make_member(site)
    own = await svc_app.client.get(f"{API}/pageviews/stats", headers={**member.headers, "X-Svc-Site": site})
    assert own.status_code == 200
    other = await svc_app.client.get(f"{API}/pageviews/stats", headers={**member.headers, "X-Svc-Site": site_b})
    assert (other.status_code, other.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), other.text  # docs/errors.md: a token bound to another site

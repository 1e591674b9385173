"""A scheduled release moves the delivery fingerprint: when it publishes (and when a later one
unpublishes), the page's old ETag no longer matches and the page shows the change."""

from __future__ import annotations

import datetime as dt

from delivery_seed import seed_site

from kernel.db.meta import now_utc

API = "/api/v1"


async def test_a_scheduled_publish_and_unpublish_move_the_etag(svc_app, site, calls, run_due_jobs):
    client, anon = svc_app.client, {"X-Svc-Site": site}
    await seed_site(svc_app, calls, site)
    assert (await client.get(f"{API}/deliver/page/hidden", headers=anon)).status_code == 404
    home = await client.get(f"{API}/deliver/page/home", headers=anon)
    tag = home.headers["etag"]

    when = now_utc() + dt.timedelta(hours=1)
    entry = [{"collection": "pages", "itemId": "p-hidden", "targetStatus": "published"}]
    made = await calls.ok("post", "/releases", status=201,
                          json={"name": "Launch", "addItems": entry, "publishAt": when.isoformat()})
    # Scheduling writes no content: the fingerprint stays, a revalidation is still a 304.
    assert (await client.get(f"{API}/deliver/page/home", headers={**anon, "If-None-Match": tag})).status_code == 304

    runs = await run_due_jobs(svc_app, now=when, periodic=False)
    assert [r.ok for r in runs] == [True]
    assert (await calls.ok("get", f"/releases/{made['id']}"))["status"] == "published"
    moved = await client.get(f"{API}/deliver/page/home", headers={**anon, "If-None-Match": tag})
    assert moved.status_code == 200 and moved.headers["etag"] != tag
    shown = await client.get(f"{API}/deliver/page/hidden", headers=anon)
    assert shown.status_code == 200 and shown.json()["data"]["title"] == "Hidden"

    # A later release takes it down again (unpublish), and the fingerprint moves once more.
    tag = moved.headers["etag"]
    later = when + dt.timedelta(hours=1)
    down = [{"collection": "pages", "itemId": "p-hidden", "targetStatus": "draft"}]
    await calls.ok("post", "/releases", status=201, json={"name": "Take down", "addItems": down,
                                                          "publishAt": later.isoformat()})
    assert [r.ok for r in await run_due_jobs(svc_app, now=later, periodic=False)] == [True]
    again = await client.get(f"{API}/deliver/page/home", headers={**anon, "If-None-Match": tag})
    assert again.status_code == 200 and again.headers["etag"] != tag
    assert (await client.get(f"{API}/deliver/page/hidden", headers=anon)).status_code == 404

"""Long work in the studio (docs/studio.md, "Work in progress"; issue 43 point 9), headless
Chromium against one server and one browser for the module: an envelope migration the server
holds unfinished (turned on through the API, never started in the browser) is found on the
"Work in progress" screen, a change-feed replay started on its subscription's page is found there
again after the page is left, with a labelled progress bar that follows it live until the
subscription has caught up, and the migration's link leads to its page, which carries it to its
end. A flow's manual run, queued while no worker takes it, is listed running until the queue
runs it; a config import's apply is listed with its outcome. An editor (no admin rights) has no
such work and sees none. Controls by role and label; axe-core on every screen. ``browser``, ``visit`` and ``sign_in`` are the studio module's."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit, visiting  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")  # first pass only: conftest.py marks the browser tests
ENV = {
    "SVC_ENCRYPTION_KEY": "main:" + base64.b64encode(b"p" * 32).decode(),
    "SVC_REGULATED_BATCH": "1",
    "SVC_EVENTS_POLL_SECONDS": "0.2",
    "SVC_PLUGINS_DISABLED": "email",
}


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=ENV) as shared:
        admin = shared.calls
        await admin.collection(
            "notes", {"title": "string", "secret": {"type": "text", "options": {"sensitive": True}}}
        )
        puller = await admin.ok(
            "post",
            "/cdc/subscriptions",
            status=201,
            json={"name": "puller", "kind": "pull", "collections": ["notes"]},
        )
        await admin.create("notes", [{"title": f"Note {i}", "secret": f"s{i}"} for i in range(3)])
        tail = await admin.ok(
            "post",
            "/cdc/subscriptions",
            status=201,
            json={"name": "tail", "kind": "pull", "collections": ["notes"]},
        )
        # Envelope mode on, its migration not started: work the server holds unfinished.
        envelope = await admin.ok(
            "post", "/admin/encryption/envelope", json={"enabled": True, "password": ADMIN_PASSWORD}
        )
        assert envelope["migration"]["done"] is False
        flow = await admin.ok(
            "post",
            "/flows",
            status=201,
            json={
                "name": "Nightly",
                "status": "active",
                "trigger": "manual",
                "graph": {
                    "nodes": [{"id": "note", "operation": "log", "options": {"message": "ran"}}],
                    "edges": [],
                },
            },
        )
        role = await admin.ok("post", "/roles", status=201, json={"name": "Editors"})
        member = await new_member(shared.app, shared.site, role["id"])
        await admin.grant(
            [{"collection": "notes", "action": a} for a in ("read", "update")], {"userId": member.id}
        )
        shared.app.kernel.access.invalidate(shared.site)
        server = await LiveServer(shared.app.app).start()
        try:
            yield {
                "server": server,
                "site": shared.site,
                "admin": admin,
                "puller": puller["id"],
                "tail": tail["cursor"],
                "member": member,
                "app": shared.app,
                "flow": flow["id"],
            }
        finally:
            await server.stop()


async def test_long_work_is_found_again_and_followed_live(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Work in progress", exact=True).click()
    await expect(page.get_by_role("heading", name="Work in progress", level=1)).to_be_visible()
    work = page.get_by_role("list", name="Work in progress")
    migration = work.get_by_role("listitem").filter(has_text="Envelope migration")
    await expect(migration.get_by_role("progressbar", name="Progress of Keys and encryption")).to_be_visible()
    await expect(migration).to_contain_text("Running: 0 so far.")
    await visit.axe()

    # A replay started on its subscription's page, then the page left: the list finds it again.
    await page.get_by_role("link", name="Change feed", exact=True).click()
    await page.get_by_role("link", name="puller").click()
    await expect(page.get_by_role("heading", name="puller", level=1)).to_be_visible()
    await page.get_by_role("form", name="Replay").get_by_role("button", name="Replay").click()
    behind = (await admin.ok("get", f"/cdc/subscriptions/{studio['puller']}"))["lag"]["events"]
    assert behind >= 3
    await expect(page.get_by_text(f"Replaying: 0 of {behind} events delivered.")).to_be_visible()
    await page.get_by_role("link", name=re.compile(r"^Work in progress \(\d running\)$")).click()
    await expect(page.get_by_role("heading", name="Work in progress", level=1)).to_be_visible()
    replay = work.get_by_role("listitem").filter(has_text="Replay")
    bar = replay.get_by_role("progressbar", name="Progress of puller")
    await expect(replay).to_contain_text(f"Running: 0 of {behind}.")
    assert await bar.evaluate("(b, n) => b.max === n && b.value === 0", behind)
    await expect(replay.get_by_role("link", name="puller")).to_have_attribute(
        "href", f"#/s/{site}/feed/{studio['puller']}"
    )
    await visit.axe()
    await visit.shot("work-in-progress")

    # The consumer catches up (a pull's ack): the bar follows while the screen stays open.
    await admin.ok("post", f"/cdc/subscriptions/{studio['puller']}/ack", json={"cursor": studio["tail"]})
    await expect(replay).to_contain_text(f"Done: {behind} of {behind}.")
    assert await bar.evaluate("b => b.value === b.max")

    # The migration's link leads to its page, which carries it on to its end; the list then says so.
    await migration.get_by_role("link", name="Keys and encryption").click()
    await expect(page.get_by_role("heading", name="Privacy", level=1)).to_be_visible()
    await expect(page.get_by_text(re.compile(r"^Migration done \(\d+ items\)\.$"))).to_be_visible()
    assert (await admin.ok("get", "/admin/encryption/envelope"))["migration"]["done"] is True
    await page.get_by_role("link", name="Work in progress", exact=True).click()
    await expect(migration).to_contain_text("Done.")
    await expect(work.get_by_role("progressbar")).to_have_count(2)
    await visit.axe()


async def test_a_flow_run_and_a_config_import_are_listed(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, app = visit.page, studio["site"], studio["app"]
    # The server's unfinished migration (the first test finishes it, and this one may run without
    # it, on another worker) would stay listed as running: finished here through the API.
    while not (await studio["admin"].ok("get", "/admin/encryption/envelope"))["migration"]["done"]:
        await studio["admin"].ok("post", "/admin/encryption/envelope/migrate", json={"limit": 50})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Flows", exact=True).click()
    await page.get_by_role("link", name="Nightly", exact=True).click()
    runner = page.get_by_role("form", name="Run now")
    await runner.get_by_role("button", name="Run").click()
    await expect(runner.get_by_role("progressbar", name="Running…")).to_be_visible()
    await page.get_by_role("link", name=re.compile(r"^Work in progress \(\d running\)$")).click()
    run = (
        page.get_by_role("list", name="Work in progress").get_by_role("listitem").filter(has_text="Flow run")
    )
    await expect(run.get_by_role("progressbar", name="Progress of Nightly")).to_be_visible()
    await expect(run).to_contain_text("Running…")  # queued: no worker runs it in the test
    await visit.axe()
    runs = await studio["admin"].ok("get", f"/flows/{studio['flow']}/runs")
    await expect(run.get_by_role("link", name="Nightly")).to_have_attribute(
        "href", f"#/s/{site}/flows/{studio['flow']}/runs/{runs[0]['runId']}"
    )
    for _ in range(200):  # the queue's job runs here; the screen follows the run to its end
        await app.kernel.jobs.run_due()
        if await run.filter(has_text="Done.").count():
            break
        await page.wait_for_timeout(100)
    await expect(run).to_contain_text("Done.")
    await expect(page.get_by_role("link", name="Work in progress", exact=True)).to_be_visible()

    # A config import's apply (one transaction): listed with its outcome once it has answered.
    manifest = await studio["admin"].ok("get", "/config/export")
    manifest["collections"].append({"name": "tags", "label": "Tags"})
    await page.get_by_role("link", name="Schema", exact=True).click()
    await page.get_by_role("link", name="Config manifest").click()
    await page.get_by_label("Manifest to import").fill(json.dumps(manifest))
    await page.get_by_role("button", name="Preview changes").click()
    await page.get_by_role("button", name="Apply import").click()
    await expect(page.get_by_role("region", name="Import").get_by_role("status")).to_contain_text(
        "Import applied: 1 created"
    )
    await page.get_by_role("link", name="Work in progress", exact=True).click()
    applied = (
        page.get_by_role("list", name="Work in progress")
        .get_by_role("listitem")
        .filter(has_text="Config import")
    )
    await expect(applied).to_contain_text("Done.")
    await expect(applied.get_by_role("link", name="Config manifest")).to_have_attribute(
        "href", f"#/s/{site}/schema/config"
    )
    await visit.axe()


async def test_an_editor_has_no_work_to_find(studio, browser):
    from playwright.async_api import expect

    member = studio["member"]
    async with visiting(browser, studio["server"].base_url) as seen:
        await sign_in(seen, member.email, member.password, studio["site"])
        await seen.page.get_by_role("link", name="Work in progress", exact=True).click()
        await expect(seen.page.get_by_role("heading", name="Work in progress", level=1)).to_be_visible()
        await expect(seen.page.get_by_text("No work is running.")).to_be_visible()
        await seen.axe()

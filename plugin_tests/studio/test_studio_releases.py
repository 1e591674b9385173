"""Releases and the change feed in the studio (docs/studio.md), headless Chromium against one
server and one browser for the module: an admin creates a release, adds items from a list's
selection with their revisions pinned, schedules it in the site's time zone inside a maintenance
window, publishes it with each item's outcome shown, sees a blocked rollback name its blockers and
rolls another release back; creates a webhook subscription whose signing secret is shown once
(and signs the deliveries a real local receiver gets), reads the delivery log and the lag, pauses
and resumes, replays from a cursor with the catching up shown as progress that survives leaving
the page, and rotates the secret. A subscriber finds neither screen and the API refuses it; another
site's release and subscription are not reachable; an editor (a role without admin rights) has
releases and no change feed. Controls by role and label; axe-core on every
screen. ``browser``, ``visit`` and ``sign_in`` are the studio module's (``visit`` opens this
module's ``studio`` server)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
import re
import threading
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import (
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    Calls,
    HttpReceiver,
    ReceivedRequest,
    new_member,
    shared_site_with,
)
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")
ENV = {"SVC_ENCRYPTION_KEY": base64.b64encode(b"r" * 32).decode(), "SVC_EVENTS_POLL_SECONDS": "0.2",
       "SVC_CDC_READ_TIMEOUT": "20"}
HOLD_BOUND = 30.0  # s: the longest the receiver holds a delivery the test has not released


class Receiver:
    """The webhook's far end, on a real local HTTP server: answers 200 and keeps each delivery;
    while ``gate`` is cleared it holds each request until the test sets it (bounded)."""

    def __init__(self, http: HttpReceiver) -> None:
        self.got: list[ReceivedRequest] = []
        self.gate = threading.Event()
        self.gate.set()
        self.url = http.respond("/hook", self._answer)

    def _answer(self, request: ReceivedRequest) -> tuple[int, bytes, dict[str, str]]:
        self.gate.wait(HOLD_BOUND)
        self.got.append(request)
        return 200, b"{}", {}

    def events(self) -> list[str]:
        return [e["id"] for r in self.got for e in json.loads(r.body)["events"]]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=ENV) as shared:
        admin: Calls = shared.calls
        await admin.collection("posts", {"title": "string"})
        posts = await admin.create("posts", [{"title": t, "status": "draft"} for t in ("Alpha", "Beta", "Gamma")])
        for post in posts:  # an edit writes a revision (a create writes none) for the release to pin
            await admin.ok("patch", f"/items/posts/{post['id']}", json={"title": f"{post['title']} v2"})
        await admin.ok("put", "/settings/releases.timezone", json={"value": "America/New_York"})
        member = await new_member(shared.app, shared.site, "subscriber")
        await admin.grant([{"collection": "posts", "action": "read"}], {"userId": member.id})
        role = await admin.ok("post", "/roles", status=201, json={"name": "Editors"})
        editor = await new_member(shared.app, shared.site, role["id"])
        await admin.grant([{"collection": "posts", "action": a} for a in ("read", "update")], {"userId": editor.id})
        shared.app.kernel.access.invalidate(shared.site)
        other = await shared.new_site("other")
        await other.collection("posts", {"title": "string"})
        hidden = await other.create("posts", [{"title": "Other site's post", "status": "draft"}])
        other_release = await other.ok("post", "/releases", status=201, json={"name": "Other site release", "addItems": [
            {"collection": "posts", "itemId": str(hidden[0]["id"]), "targetStatus": "published"}]})
        other_sub = await other.ok("post", "/cdc/subscriptions", status=201, json={"name": "other-site-feed", "kind": "pull"})
        http = HttpReceiver()
        server = await LiveServer(shared.app.app).start()
        try:
            yield {"server": server, "site": shared.site, "admin": admin, "ids": [str(p["id"]) for p in posts],
                   "member": member, "as_member": Calls(shared.app.client, member.headers), "http": http,
                   "editor": editor, "as_editor": Calls(shared.app.client, editor.headers),
                   "other_release": other_release["id"], "other_sub": other_sub["id"]}
        finally:
            await server.stop()
            http.stop()
            http.check()


async def test_a_release_from_a_list_selection_to_its_rollback(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    alpha, beta, gamma = studio["ids"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Releases", exact=True).click()
    await expect(page.get_by_role("heading", name="Releases", level=1)).to_be_visible()
    await visit.axe()
    await page.get_by_label("Name").fill("Spring")
    await page.get_by_role("button", name="Create release").click()
    await expect(page.get_by_role("heading", name="Spring", level=1)).to_be_visible()
    await expect(page.get_by_text("This release has no items yet.")).to_be_visible()

    # Items from the list's selection, their current revisions pinned.
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="posts").click()
    for item in (alpha, beta):
        await page.get_by_role("checkbox", name=f"Select item {item}").check()
    await page.get_by_role("button", name="Add to release").click()
    picker = page.get_by_role("group", name="Add to release")
    await expect(picker.get_by_label("Release")).to_have_value(re.compile(".+"))
    await picker.get_by_label("Release").select_option(label="Spring")
    await picker.get_by_label("Target status").select_option("published")
    await expect(picker.get_by_label("Pin the current revisions")).to_be_checked()
    await visit.axe()
    await picker.get_by_role("button", name="Add 2 items").click()
    await expect(picker.get_by_role("status")).to_contain_text("2 items added to Spring.")
    await picker.get_by_role("link", name="Open Spring").click()
    table = page.get_by_role("table", name="Items of this release")
    await expect(table.get_by_role("row")).to_have_count(3)
    spring = [r for r in await admin.ok("get", "/releases") if r["name"] == "Spring"][0]
    for item in (alpha, beta):
        revision = (await admin.ok("get", f"/items/posts/{item}/revisions", params={"limit": 1}))[0]["id"]
        await expect(table.get_by_role("row").filter(has_text=f"posts / {item}")).to_contain_text(f"Revision {revision}")
    await visit.axe()

    # Scheduled in the site's zone (New York): Wednesday 07:00 there, due in Saturday's window.
    schedule = page.get_by_role("form", name="Schedule")
    await schedule.get_by_label("Publish at (America/New_York)").fill("2030-01-02T07:00")
    await schedule.get_by_role("button", name="Add a maintenance window").click()
    await schedule.get_by_label("Window 1: day").select_option(label="Saturday")
    await schedule.get_by_role("button", name="Save schedule").click()
    await expect(page.get_by_role("status").filter(has_text="The schedule was saved.")).to_be_visible()
    await expect(page.get_by_text("2030-01-05 01:00")).to_be_visible()
    stored = await admin.ok("get", f"/releases/{spring['id']}")
    assert (stored["status"], stored["publishAt"], stored["nextRunAt"]) == (
        "scheduled", "2030-01-02T12:00:00Z", "2030-01-05T06:00:00Z")
    assert stored["maintenanceWindow"] == {"windows": [{"dow": 6, "start": "01:00", "end": "03:00"}]}
    await visit.axe()
    await visit.shot("releases-schedule")
    await page.get_by_role("button", name="Clear the publish time").click()
    await expect(page.get_by_role("status").filter(has_text="no longer scheduled")).to_be_visible()
    assert (await admin.ok("get", f"/releases/{spring['id']}"))["status"] == "draft"

    # Publish, held in the browser on its way to the server: its progress shows, and shows again
    # when the page is left and opened again; then each item's outcome.
    sent = asyncio.Event()

    async def hold(route: Any) -> None:
        await asyncio.wait_for(sent.wait(), HOLD_BOUND)
        await route.continue_()

    publish = re.compile(r".*/api/v1/releases/[^/?]+/publish$")
    await page.route(publish, hold)
    try:
        await page.get_by_role("button", name="Publish now").click()
        await expect(page.get_by_role("progressbar", name="Publishing…")).to_be_visible()
        await page.get_by_role("link", name="Back to the releases").click()
        await page.get_by_role("link", name="Spring", exact=True).click()
        await expect(page.get_by_role("heading", name="Spring", level=1)).to_be_visible()
        await expect(page.get_by_role("progressbar", name="Publishing…")).to_be_visible()
        await visit.axe()
    finally:
        sent.set()
    await expect(page.get_by_role("status").filter(has_text="Publish finished: Published. 2 published")).to_be_visible()
    await page.unroute(publish, hold)
    table = page.get_by_role("table", name="Items of this release")
    for item in (alpha, beta):
        await expect(table.get_by_role("row").filter(has_text=f"posts / {item}")).to_contain_text("published")
        assert (await admin.get("posts", item))["status"] == "published"
    await visit.axe()
    await visit.shot("releases-published")

    # A rollback the API refuses names its blockers (the API offers no force).
    await admin.ok("delete", f"/items/posts/{beta}", status=204)
    await page.get_by_role("button", name="Roll back").click()
    await expect(page.get_by_role("alert")).to_contain_text("ROLLBACK_BLOCKED")
    await expect(page.get_by_role("list", name="Items that block it")).to_contain_text(f"posts / {beta}: ITEM_DELETED")
    await expect(page.get_by_text("The API has no way to force it")).to_be_visible()
    assert (await admin.get("posts", alpha))["status"] == "published"
    await visit.axe()
    await visit.shot("releases-rollback-blocked")

    # Another release rolls back: its item is a draft again.
    other = await admin.ok("post", "/releases", status=201, json={"name": "Summer", "addItems": [
        {"collection": "posts", "itemId": gamma, "targetStatus": "published"}]})
    await admin.ok("post", f"/releases/{other['id']}/publish")
    await page.get_by_role("link", name="Back to the releases").click()
    await expect(page.get_by_role("table", name="Releases, newest first").get_by_role("row")).to_have_count(3)
    await page.get_by_role("link", name="Summer").click()
    await page.get_by_role("button", name="Roll back").click()
    await expect(page.get_by_role("status").filter(has_text="Rollback finished: Rolled back. 1 rolled back")).to_be_visible()
    assert (await admin.get("posts", gamma))["status"] == "draft"
    await visit.axe()


def signed_by(request: ReceivedRequest, secret: str) -> bool:
    header = {k.lower(): v for k, v in request.headers.items()}["x-svc-signature"]
    parts = dict(p.split("=", 1) for p in header.split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + request.body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, parts["v1"])


async def test_a_webhook_subscription_its_log_lag_pause_and_replay(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    hook = Receiver(studio["http"])
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Change feed", exact=True).click()
    await expect(page.get_by_role("heading", name="Change feed", level=1)).to_be_visible()
    await visit.axe()
    form = page.get_by_role("form", name="Create subscription")
    await form.get_by_label("Name").fill("indexer")
    await form.get_by_label("Kind").select_option(label="Webhook")
    await form.get_by_label("URL").fill(hook.url)
    await form.get_by_label("Collections").fill("posts")
    await form.get_by_role("button", name="Create subscription").click()
    shown = page.get_by_role("region", name="Signing secret: shown this once")
    secret = await shown.get_by_label("Signing secret").input_value()
    assert re.fullmatch(r"whsec_[0-9a-f]{64}", secret)
    sub = [s for s in await admin.ok("get", "/cdc/subscriptions") if s["name"] == "indexer"][0]
    start = sub["cursor"]
    assert sub["hasSecret"] is True and secret not in json.dumps(sub)
    await visit.axe()
    await visit.shot("feed-secret")
    await page.get_by_role("link", name="Open indexer").click()
    await expect(page.get_by_role("heading", name="indexer", level=1)).to_be_visible()
    assert secret not in await page.content()

    # Deliveries arrive signed with the secret shown; the log and the lag follow on the page.
    await admin.create("posts", [{"title": f"New {i}"} for i in range(3)])
    log = page.get_by_role("table", name="Delivery attempts, newest first")
    await expect(log.get_by_role("cell", name="HTTP 200").first).to_be_visible()
    assert hook.got and all(signed_by(r, secret) for r in hook.got)
    await expect(page.get_by_text("Caught up")).to_be_visible()
    await visit.axe()

    await page.get_by_role("button", name="Pause").click()
    await expect(page.get_by_role("status").filter(has_text="The subscription is paused.")).to_be_visible()
    await expect(page.get_by_role("button", name="Resume")).to_be_focused()  # the redraw keeps the focus
    assert (await admin.ok("get", f"/cdc/subscriptions/{sub['id']}"))["status"] == "paused"
    delivered = len(hook.events())
    await admin.create("posts", [{"title": f"While paused {i}"} for i in range(2)])
    await expect(page.get_by_text(re.compile(r"^2 events behind"))).to_be_visible()
    assert len(hook.events()) == delivered
    await page.get_by_role("button", name="Resume").click()
    await expect(page.get_by_text("Caught up")).to_be_visible()
    assert len(hook.events()) == delivered + 2

    # Replay from the first cursor: the catching up is progress that survives leaving the page.
    hook.gate.clear()
    try:
        replay = page.get_by_role("form", name="Replay")
        await replay.get_by_label("Replay from cursor").fill(start)
        await replay.get_by_role("button", name="Replay").click()
        bar = page.get_by_role("progressbar", name="Replay progress")
        await expect(page.get_by_text("Replaying: 0 of 5 events delivered.")).to_be_visible()
        assert await bar.evaluate("b => b.max === 5 && b.value === 0")
        await visit.axe()
        await visit.shot("feed-replay")
        await page.get_by_role("link", name="Back to the change feed").click()
        await expect(page.get_by_role("table", name="Subscriptions").get_by_role("row").filter(has_text="indexer")).to_contain_text(
            "5 events behind")
        await page.get_by_role("link", name="indexer").click()
        await expect(page.get_by_text("Replaying: 0 of 5 events delivered.")).to_be_visible()
    finally:
        hook.gate.set()
    await expect(page.get_by_text("Replay done: 5 events delivered.")).to_be_visible()
    assert len(hook.events()) == delivered + 2 + 5

    # A new secret, shown once; the next deliveries are signed with it.
    await page.get_by_role("button", name="New signing secret").click()
    fresh = await page.get_by_role("region", name="Signing secret: shown this once").get_by_label("Signing secret").input_value()
    assert fresh != secret and re.fullmatch(r"whsec_[0-9a-f]{64}", fresh)
    before, rows = len(hook.got), await log.get_by_role("row").count()
    await admin.create("posts", [{"title": "After the rotation"}])
    await expect(log.get_by_role("row")).to_have_count(rows + 1)
    assert len(hook.got) > before and all(signed_by(r, fresh) for r in hook.got[before:])
    await visit.axe()

    # Deleting it (a 204 without a body) returns to the list, where it is gone.
    await page.get_by_role("button", name="Delete subscription").click()
    await expect(page.get_by_role("heading", name="Change feed", level=1)).to_be_visible()
    await expect(page.get_by_role("table", name="Subscriptions").get_by_text("indexer")).to_have_count(0)
    await admin.err("get", f"/cdc/subscriptions/{sub['id']}", 404, "RECORD_NOT_FOUND")


async def test_members_without_the_rights_and_another_site(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    as_member = studio["as_member"]
    for method, path, body in (("get", "/releases", None), ("post", "/releases", {"name": "x"}),
                               ("get", "/cdc/subscriptions", None),
                               ("post", "/cdc/subscriptions", {"name": "x", "kind": "pull"})):
        resp = await as_member.call(method, path, json=body)
        assert resp.status_code == 403 and resp.json()["errors"][0]["code"] == "PERMISSION_DENIED", resp.text
    # The site's release time zone is public: a member reads it (it is no secret).
    assert (await as_member.ok("get", "/settings/releases.timezone"))["value"] == "America/New_York"

    await sign_in(visit, member.email, member.password, site)
    nav = page.get_by_role("navigation", name="Collections")
    await expect(nav.get_by_role("link", name="posts")).to_be_visible()
    await expect(nav.get_by_role("link", name="Releases")).to_have_count(0)
    await expect(nav.get_by_role("link", name="Change feed")).to_have_count(0)
    for screen in ("releases", "feed"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/{screen}")
        await expect(page.get_by_role("alert")).to_have_text("Not found.")
        await visit.axe()
    await nav.get_by_role("link", name="posts").click()
    await expect(page.get_by_role("table")).to_be_visible()
    await expect(page.get_by_role("group", name="Selected items")).to_have_count(0)
    await expect(page.get_by_role("button", name="Add to release")).to_have_count(0)

    # An editor (a role, no admin rights) has releases but not the change feed, which is admins'.
    await studio["as_editor"].ok("get", "/releases")
    await studio["as_editor"].err("get", "/cdc/subscriptions", 403, "PERMISSION_DENIED")
    await page.get_by_role("button", name="Sign out").click()
    await sign_in(visit, studio["editor"].email, studio["editor"].password, site)
    await expect(nav.get_by_role("link", name="Releases")).to_be_visible()
    await expect(nav.get_by_role("link", name="Change feed")).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site}/feed")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")

    # The admin, in this site, finds nothing of the other site's release and subscription.
    await page.get_by_role("button", name="Sign out").click()
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Releases", exact=True).click()
    await expect(page.get_by_role("heading", name="Releases", level=1)).to_be_visible()
    await expect(page.get_by_text("Other site release")).to_have_count(0)
    for path in (f"releases/{studio['other_release']}", f"feed/{studio['other_sub']}"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/{path}")
        await expect(page.get_by_role("alert")).to_have_text("Not found.")
        await visit.axe()
    await page.goto(f"{visit.base}/studio/#/s/{site}/feed")
    await expect(page.get_by_role("heading", name="Change feed", level=1)).to_be_visible()
    await expect(page.get_by_text("other-site-feed")).to_have_count(0)

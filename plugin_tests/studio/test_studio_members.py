"""A member without admin rights in the studio (issue 41's leftovers), in headless Chromium
against one real server and one browser for the module:

- a member of the ``subscriber`` role gets live updates and the notifications bell: its list
  follows another session's writes, and neither the page, nor any answer, nor any realtime
  frame it receives names an item its read rule's conditions hide;
- a member of two sites switches from one to the other with the site switcher, without signing
  in again (``POST /auth/switch-site``), and afterwards neither the page nor any answer it
  receives holds anything of the first site's content.

Controls are found by role and label; axe-core runs in every page visited."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

HIDDEN_TITLE = "Unpublished plan 5521"


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """Site A: ``articles``, two published and one hidden by the member's read rule (published
    only, title and published). Site B: ``recipes``. The member: a subscriber of both."""
    a = shared_site.calls
    await a.collection("articles", {"title": "string", "published": "boolean", "notes": "string"})
    await a.create("articles", [{"id": "pub1", "title": "Open letter", "published": True, "notes": "n"},
                                {"id": "pub2", "title": "Second letter", "published": True, "notes": "n"},
                                {"id": "hid1", "title": HIDDEN_TITLE, "published": False, "notes": "n"}])
    b = await shared_site.new_site("msite")
    site_b = b.headers["X-Svc-Site"]
    await b.collection("recipes", {"name": "string"})
    await b.create("recipes", [{"id": "r1", "name": "Soup from B"}])
    member = await new_member(shared_site.app, [shared_site.site, site_b], "subscriber", login=False)
    await a.grant([{"collection": "articles", "action": "read", "fields": ["title", "published"],
                    "conditions": {"published": {"_eq": True}}}], {"userId": member.id})
    await b.grant([{"collection": "recipes", "action": "read", "fields": ["*"]}], {"userId": member.id})
    shared_site.app.kernel.access.invalidate(shared_site.site)
    shared_site.app.kernel.access.invalidate(site_b)
    server = await LiveServer(shared_site.app.app).start()
    # A yield fixture's teardown runs whatever the tests did.
    yield {"server": server, "a": shared_site.site, "b": site_b, "calls": a, "member": member,
           "app": shared_site.app}
    await server.stop()


def keep_frames(seen: Visit) -> list[str]:
    """Every realtime frame the page receives from now on."""
    frames: list[str] = []
    seen.page.on("websocket", lambda ws: ws.on("framereceived", lambda payload: frames.append(str(payload))))
    return frames


async def test_a_subscriber_gets_live_updates_and_the_bell_but_nothing_hidden(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    from plugins.realtime import api as realtime

    page, member, site = visit.page, studio["member"], studio["a"]
    frames = keep_frames(visit)
    await sign_in(visit, member.email, member.password, site)
    await page.get_by_role("link", name="articles").click()
    table = page.get_by_role("table", name="Items of articles")
    await expect(table.get_by_role("link", name="Open item pub1")).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
    bell = page.get_by_role("button", name=re.compile("^Notifications"))
    await expect(bell).to_have_accessible_name("Notifications")  # none unread
    await visit.axe()

    # Another session writes a hidden item, then a visible one: the list shows the visible one,
    # and nothing of the hidden one ever reached the page (the frames come in write order).
    await studio["calls"].create("articles", {"id": "hid2", "title": "Draft 7710", "published": False})
    await studio["calls"].create("articles", {"id": "pub3", "title": "Third letter", "published": True})
    await expect(table.get_by_role("link", name="Open item pub3")).to_be_visible()
    await studio["calls"].ok("patch", "/items/articles/hid1", json={"notes": "changed"})
    await studio["calls"].ok("patch", "/items/articles/pub2", json={"title": "Second letter, revised"})
    await expect(table).to_contain_text("Second letter, revised")
    assert any('"itemId":"pub3"' in f for f in frames), frames
    dom = await page.content()
    for hidden in ("hid1", "hid2", HIDDEN_TITLE, "Draft 7710"):
        assert not [f for f in frames if hidden in f], (hidden, frames)
        assert not [b for b in visit.bodies if hidden in b], hidden
        assert hidden not in dom, hidden
    # The changed field's name never travels in a frame, nor shows in the page.
    assert not [f for f in frames if "notes" in f] and 'name="notes"' not in dom

    # The bell: a notification arrives live and is listed; marking read is not offered (the site's state).
    await realtime.notify(studio["app"].kernel, site, kind="test.member", title="Hello members")
    await expect(bell).to_have_accessible_name("Notifications (1 unread)")
    await bell.click()
    panel = page.get_by_role("region", name="Notifications")
    await expect(panel).to_contain_text("Hello members")
    await expect(panel.get_by_role("button", name=re.compile("^Mark as read"))).to_have_count(0)
    await visit.axe()


async def test_a_member_switches_sites_without_signing_in_again(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, member = visit.page, studio["member"]
    await sign_in(visit, member.email, member.password, studio["a"])
    await page.get_by_role("link", name="articles").click()
    await expect(page.get_by_role("table", name="Items of articles")).to_contain_text("Open letter")
    await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
    signed_in = await studio["calls"].ok("get", f"/users/{member.id}/sessions")
    # Every answer of A's list read before counting: a body still being read (the recorder reads each
    # as its own task) once landed after the count, as if it had come after the switch (a CI run).
    await visit.drained()
    before = len(visit.bodies)
    await page.get_by_label("Site", exact=True).select_option(value=studio["b"])
    await expect(page.get_by_role("link", name="recipes")).to_be_visible()
    await expect(page.get_by_role("heading", name="Sign in")).to_have_count(0)
    await page.get_by_role("link", name="recipes").click()
    await expect(page.get_by_role("table", name="Items of recipes")).to_contain_text("Soup from B")
    await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
    await visit.axe()
    # Nothing of A's content in the page or in any answer since the switch (A's id stays an
    # option of the switcher: the member's own site, from GET /me/sites).
    dom = await page.content()
    after = visit.bodies[before:]
    assert len(after) >= 5, visit.responses[-10:]
    for word in ("articles", "Open letter", "Second letter", "pub1", "pub2"):
        assert word not in dom, word
        assert not [b for b in after if word in b], word
    # And back to A, still without a password.
    await page.get_by_label("Site", exact=True).select_option(value=studio["a"])
    await expect(page.get_by_role("link", name="articles")).to_be_visible()
    await expect(page.get_by_role("link", name="recipes")).to_have_count(0)
    sessions = await studio["calls"].ok("get", f"/users/{member.id}/sessions")
    assert {s["id"] for s in sessions} == {s["id"] for s in signed_in}  # the session moved twice: no new one

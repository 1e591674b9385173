"""History and workflow in the studio (docs/studio.md), in headless Chromium against one server:
an editor and a reviewer, each in a browser context of their own, walk stories through submit
for review, approve and reject, with the list's status badges following; the editor restores
an item from a revision (its changes shown field by field) and creates, edits, compares and
promotes a named version. Controls are found by role and label; axe-core checks every screen.

The browser, ``Visit`` and ``sign_in`` are the studio module's (``test_studio_browser.py``)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, check_console, open_visit, sign_in

from kernel.testing import Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def newsroom(shared_site) -> Any:
    """Site A's ``stories`` (editorial workflow with a separate reviewer, versioning), a Newsroom
    role that reads, creates and updates them, and two of its members: an editor who wrote
    s1 and s2 (s2 edited once since), and a reviewer."""
    admin = shared_site.calls
    await admin.collection(
        "stories",
        {"title": {"type": "string", "required": True}, "body": "text"},
        editorialWorkflow=True,
        requireSeparateReviewer=True,
        versioning=True,
    )
    role = await admin.ok("post", "/roles", status=201, json={"name": "Newsroom"})
    await admin.grant(
        [{"collection": "stories", "action": a} for a in ("read", "create", "update")], {"roleId": role["id"]}
    )
    app, site = shared_site.app, shared_site.site
    editor, reviewer = [await new_member(app, site, role["id"]) for _ in range(2)]
    reader = await new_member(app, site, "subscriber")  # the frontend realm: no workflow for it
    await admin.grant([{"collection": "stories", "action": "read"}], {"userId": reader.id})
    app.kernel.access.invalidate(site)
    as_editor = Calls(app.client, editor.headers)
    await as_editor.create(
        "stories",
        [
            {"id": "s1", "title": "First story", "body": "One"},
            {"id": "s2", "title": "Second story", "body": "Two"},
        ],
    )
    await as_editor.ok(
        "patch", "/items/stories/s2", json={"title": "Second story, edited", "body": "Two, longer"}
    )
    server = await LiveServer(app.app).start()
    try:
        yield {
            "server": server,
            "site": site,
            "editor": editor,
            "reviewer": reviewer,
            "reader": reader,
            "admin": admin,
            "as_editor": as_editor,
        }
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def contexts(browser, newsroom) -> Any:
    """``open()`` gives a new browser context (a person of its own) on the studio."""
    opened: list[Visit] = []

    async def open_() -> Visit:
        seen = await open_visit(browser, newsroom["server"].base_url, height=900)
        opened.append(seen)
        return seen

    try:
        yield open_
    finally:
        for seen in opened:
            await seen.close()
    for seen in opened:
        check_console(seen)


def row_of(visit: Visit, item_id: str) -> Any:
    table = visit.page.get_by_role("table", name="Items of stories")
    return table.get_by_role("row").filter(has=visit.page.get_by_role("link", name=f"Open item {item_id}"))


async def open_list(visit: Visit, site: str) -> None:
    from playwright.async_api import expect

    await visit.page.goto(f"{visit.base}/studio/#/s/{site}/c/stories")
    await expect(visit.page.get_by_role("columnheader", name="Status")).to_be_visible()


async def test_an_editor_and_a_reviewer_submit_approve_and_reject(newsroom, contexts):
    from playwright.async_api import expect

    site, editor, reviewer = newsroom["site"], newsroom["editor"], newsroom["reviewer"]
    ed, rv = await contexts(), await contexts()
    await sign_in(ed, editor.email, editor.password, site)
    await sign_in(rv, reviewer.email, reviewer.password, site)

    # The editor's list: every story is a draft; s1 goes to the reviewer.
    await open_list(ed, site)
    await expect(row_of(ed, "s1")).to_contain_text("Draft")
    await ed.axe()
    await row_of(ed, "s1").get_by_role("link", name="Open item s1").click()
    panel = ed.page.get_by_role("region", name="Review")
    await expect(panel).to_contain_text("Review state: Draft")
    await expect(panel.get_by_role("button", name="Approve")).to_have_count(0)
    await panel.get_by_label("Reviewer").select_option(label=reviewer.email)
    # The author is not offered as reviewer (the collection requires a separate one).
    await expect(panel.get_by_label("Reviewer").locator("option", has_text=editor.email)).to_have_count(0)
    await panel.get_by_role("button", name="Submit for review").click()
    await expect(panel.get_by_role("status")).to_have_text("Submitted for review.")
    await expect(panel).to_contain_text("Review state: In review")
    await expect(panel.get_by_role("button", name="Submit for review")).to_have_count(0)
    await expect(panel.get_by_role("button", name="Approve")).to_have_count(0)  # the author never decides
    await ed.axe()

    # The reviewer sees it in review, and approves it with the keyboard.
    await open_list(rv, site)
    await expect(row_of(rv, "s1")).to_contain_text("In review")
    await expect(row_of(rv, "s2")).to_contain_text("Draft")
    await rv.axe()
    await rv.page.goto(f"{rv.base}/studio/#/s/{site}/c/stories/i/s1")
    rv_panel = rv.page.get_by_role("region", name="Review")
    approve = rv_panel.get_by_role("button", name="Approve")
    await expect(rv_panel.get_by_role("button", name="Reject")).to_be_visible()
    await rv.shot("review")
    # Meanwhile the editor changes s1: it is a draft again, and the reviewer's open panel says so
    # at once (the item's realtime signal), without the buttons.
    await newsroom["as_editor"].ok("patch", "/items/stories/s1", json={"body": "One, changed"})
    await expect(rv_panel).to_contain_text("Review state: Draft")
    await expect(approve).to_have_count(0)
    # Submitted again elsewhere: the panel offers the decision again, with no reload (the
    # transition's own signal, action "review").
    await newsroom["as_editor"].ok(
        "post", "/editorial/stories/s1/submit-review", json={"reviewerId": reviewer.id}
    )
    await expect(rv_panel).to_contain_text("Review state: In review")
    await approve.focus()
    await rv.page.keyboard.press("Enter")
    await expect(rv_panel.get_by_role("status")).to_have_text("Approved.")
    await expect(rv_panel.get_by_role("heading", name="Review")).to_be_focused()  # the keyboard goes on
    await expect(rv_panel).to_contain_text("Review state: Approved")
    await expect(rv_panel.get_by_role("button", name="Reject")).to_have_count(0)
    await rv.axe()

    # s2: submitted, then rejected with a reason the editor reads.
    await ed.page.goto(f"{ed.base}/studio/#/s/{site}/c/stories/i/s2")
    panel = ed.page.get_by_role("region", name="Review")
    await panel.get_by_label("Reviewer").select_option(label=reviewer.email)
    await panel.get_by_role("button", name="Submit for review").click()
    await expect(panel).to_contain_text("Review state: In review")
    await rv.page.goto(f"{rv.base}/studio/#/s/{site}/c/stories/i/s2")
    rv_panel = rv.page.get_by_role("region", name="Review")
    await rv_panel.get_by_role("button", name="Reject").click()  # no reason yet: nothing is sent
    await expect(rv_panel.get_by_label("Reason for rejecting")).to_have_attribute("aria-invalid", "true")
    await expect(rv_panel).to_contain_text("Review state: In review")
    await rv_panel.get_by_label("Reason for rejecting").fill("Needs a source")
    await rv_panel.get_by_role("button", name="Reject").click()
    await expect(rv_panel).to_contain_text("Review state: Rejected")
    await rv.axe()
    # The editor, still on s2, reads the rejection and its reason as it happens.
    await expect(panel).to_contain_text("Rejected: Needs a source")

    # The editor's list follows: approved (and published, once it is) and rejected badges.
    await newsroom["admin"].ok("patch", "/items/stories/s1", json={"status": "published"})
    await open_list(ed, site)
    await expect(row_of(ed, "s1")).to_contain_text("Approved")
    await expect(row_of(ed, "s1")).to_contain_text("Published")
    await expect(row_of(ed, "s2")).to_contain_text("Rejected")
    await expect(row_of(ed, "s1")).not_to_contain_text("Draft")
    await ed.shot("list-status")
    await ed.page.goto(f"{ed.base}/studio/#/s/{site}/c/stories/i/s2")
    await expect(ed.page.get_by_role("region", name="Review")).to_contain_text("Rejected: Needs a source")
    await ed.axe()
    states = await newsroom["admin"].ok(
        "get", "/editorial/states", params={"collection": "stories", "ids": "s1,s2"}
    )
    assert states == [{"itemId": "s1", "state": "approved"}, {"itemId": "s2", "state": "rejected"}]
    # The editor's save of a rejected story sends it back to draft, and its panel says so at once.
    await newsroom["as_editor"].create("stories", {"id": "s3", "title": "Third story", "body": "Three"})
    await newsroom["as_editor"].ok("post", "/editorial/stories/s3/submit-review", json={"reviewerId": reviewer.id})
    await Calls(newsroom["admin"].client, reviewer.headers).ok("post", "/editorial/stories/s3/reject",
                                                               json={"reason": "Too short"})
    await ed.page.goto(f"{ed.base}/studio/#/s/{site}/c/stories/i/s3")
    panel = ed.page.get_by_role("region", name="Review")
    await expect(panel).to_contain_text("Rejected: Too short")
    await ed.page.get_by_label("body").fill("Three, longer")
    await ed.page.keyboard.press("Control+s")
    await expect(ed.page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    await expect(panel).to_contain_text("Review state: Draft")
    await expect(panel.get_by_role("button", name="Submit for review")).to_be_visible()
    await ed.axe()

    # A subscriber reading stories sees their status and no workflow (the API refuses it that).
    sub = await contexts()
    await sign_in(sub, newsroom["reader"].email, newsroom["reader"].password, site)
    await open_list(sub, site)
    await expect(row_of(sub, "s1")).to_contain_text("Published")
    await expect(row_of(sub, "s1")).not_to_contain_text("Approved")
    await sub.page.goto(f"{sub.base}/studio/#/s/{site}/c/stories/i/s1")
    await expect(sub.page.get_by_role("link", name="History and versions")).to_be_visible()
    await expect(sub.page.get_by_role("region", name="Review")).to_have_count(0)
    await sub.axe()


async def test_an_editor_restores_a_revision_and_promotes_a_version(newsroom, contexts):
    from playwright.async_api import expect

    site, editor, admin = newsroom["site"], newsroom["editor"], newsroom["admin"]
    ed = await contexts()
    await sign_in(ed, editor.email, editor.password, site)
    page = ed.page
    await page.goto(f"{ed.base}/studio/#/s/{site}/c/stories/i/s2")
    await expect(page.get_by_role("region", name="Review")).to_be_visible()
    await ed.axe()
    await page.get_by_role("link", name="History and versions").click()
    await expect(page.get_by_role("heading", name="History of stories: s2")).to_be_visible()
    revisions = page.get_by_role("region", name="Revisions")
    entries = revisions.get_by_role("article")
    await expect(entries).to_have_count(2)  # the edit (current), then the created state
    edit = entries.nth(0)
    await expect(edit.get_by_role("heading")).to_contain_text("Updated")
    await expect(edit.get_by_role("heading")).to_contain_text("current")
    changes = edit.get_by_role("table", name="Changes")
    title_row = changes.get_by_role("row").filter(has=page.get_by_role("rowheader", name="title"))
    await expect(title_row.get_by_role("cell").nth(0)).to_have_text("Second story")
    await expect(title_row.get_by_role("cell").nth(1)).to_have_text("Second story, edited")
    # The current revision is the item now: nothing to restore.
    await expect(edit.get_by_role("button", name=re.compile("^Restore"))).to_have_count(0)
    await ed.axe()

    await entries.nth(1).get_by_role("button", name="Restore the item as it was after this change").click()
    await expect(page.get_by_role("main").get_by_role("status").first).to_contain_text("Restored")
    await expect(page.get_by_role("main").get_by_role("status").first).to_be_focused()
    await expect(entries).to_have_count(3)
    await expect(entries.nth(0).get_by_role("heading")).to_contain_text("Restored")
    restored = await admin.get("stories", "s2")
    assert (restored["title"], restored["body"]) == ("Second story", "Two")

    # A version: created from the item, edited, compared, promoted.
    versions = page.get_by_role("region", name="Versions")
    await versions.get_by_label("Version key").fill("spring")
    await versions.get_by_label("Version name").fill("Spring edit")
    await versions.get_by_role("button", name="Create version").click()
    spring = versions.get_by_role("region", name="Spring edit")
    await expect(spring).to_contain_text("Key spring")
    await spring.get_by_role("button", name="Compare with the item").click()
    await expect(spring).to_contain_text("The version and the item have the same content.")
    await spring.get_by_role("button", name="Edit version").click()
    await spring.get_by_label("title").fill("Spring title")
    await spring.get_by_role("button", name="Save version").click()
    await expect(page.get_by_role("main").get_by_role("status").first).to_contain_text("Version Spring edit saved")
    assert (await admin.get("stories", "s2"))["title"] == "Second story"  # the item is untouched
    spring = versions.get_by_role("region", name="Spring edit")
    await spring.get_by_role("button", name="Compare with the item").click()
    compared = spring.get_by_role("table", name="Spring edit compared with the item")
    await expect(compared.get_by_role("row")).to_have_count(2)  # the header and title
    await expect(compared.get_by_role("row").nth(1)).to_contain_text("Second story")
    await expect(compared.get_by_role("row").nth(1)).to_contain_text("Spring title")
    await ed.axe()
    await ed.shot("history")

    await spring.get_by_role("button", name="Promote to the item").click()
    await expect(page.get_by_role("main").get_by_role("status").first).to_contain_text("Version Spring edit promoted")
    await expect(entries.nth(0).get_by_role("heading")).to_contain_text("Version promoted")
    assert (await admin.get("stories", "s2"))["title"] == "Spring title"
    await ed.axe()

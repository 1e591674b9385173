"""The copilot and agents in the studio (docs/studio.md "AI and agents"), headless Chromium against
one server, one browser and one real local model server (the ai tests' scripted OpenAI-compatible
server, over HTTP) for the module: an admin opens an item, asks the copilot in its side panel and
sees the answer stream in with the tool call it made, the model having been told the collection
and item on screen; a dangerous skill ends as a pending approval the panel links to, denied in
the inbox (nothing changed) and, asked again, approved there (the item changed). On the agents
screen the admin reviews a staged change's diff and vetoes it, drafts, compiles and activates a
constitution, and freezes every agent: the page says so at once and a goal started then ends
frozen; the lift shows at once too. Another site's approval never shows; a member without admin
rights has the copilot and the inbox but no agents screen. Controls by role and label; axe-core on
every screen."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, HttpReceiver, new_member, shared_site_with
from kernel.testing.live import LiveServer
from plugin_tests.ai.conftest import ScriptedModel, tool_call

pytestmark = pytest.mark.asyncio(loop_scope="package")


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    http = HttpReceiver()
    model = ScriptedModel(http)
    env = {"SVC_AI_BASE_URL": model.base_url, "SVC_AI_MODEL": "scripted"}
    try:
        async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=env) as shared:
            admin: Calls = shared.calls
            await admin.collection("posts", {"title": "string"})
            alpha, beta = [str(p["id"]) for p in await admin.create("posts", [{"title": "Alpha"}, {"title": "Beta"}])]
            # An agent role at `stage` and a goal whose write waits for review (the model plans it).
            await admin.ok("post", "/agent/roles", status=201, json={
                "name": "writer", "description": "Keeps posts tidy", "collections": ["posts"], "autonomy": "stage"})
            model.script = [{"tool_calls": [tool_call("update_item", {"collection": "posts", "id": beta,
                                                                      "data": {"title": "Beta, tidied"}})]},
                            {"content": "Staged."}]
            await admin.ok("post", "/agent/goals", status=201, json={
                "title": "Tidy titles", "description": "Tidy the titles", "role": "writer", "execution": "sync"})
            assert (await admin.ok("get", "/agent/staged"))[0]["status"] == "pending"
            # Another site's pending approval, which this site's inbox never shows.
            other = await shared.new_site("other")
            await other.collection("posts", {"title": "string"})
            hidden = await other.create("posts", {"title": "Other"})
            model.script = [{"tool_calls": [tool_call("delete_item", {"collection": "posts", "id": str(hidden["id"])})]}]
            assert (await other.ok("post", "/ai/chat", status=202, json={"message": "delete it"}))["status"] == "pending_approval"
            role = await admin.ok("post", "/roles", status=201, json={"name": "Editors"})
            member = await new_member(shared.app, shared.site, role["id"])
            await admin.grant([{"collection": "posts", "action": "read"}], {"userId": member.id})
            shared.app.kernel.access.invalidate(shared.site)
            server = await LiveServer(shared.app.app).start()
            try:
                yield {"server": server, "site": shared.site, "admin": admin, "alpha": alpha, "beta": beta,
                       "model": model, "member": member, "app": shared.app}
            finally:
                await server.stop()
    finally:
        http.stop()


async def test_the_copilot_beside_an_item_and_the_approval_inbox(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site, model, alpha = visit.page, studio["admin"], studio["site"], studio["model"], studio["alpha"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/c/posts/i/{alpha}")
    await expect(page.get_by_label("title", exact=True)).to_have_value("Alpha")
    await page.get_by_role("button", name="Copilot").click()
    panel = page.get_by_role("complementary", name="Copilot")
    await expect(panel.get_by_text(f"looking at posts item {alpha}")).to_be_visible()
    await visit.axe()

    # A safe skill: its call shown, the model's words streamed in; the model knew the item on screen.
    model.script = [{"content": "Let me look.", "tool_calls": [tool_call("read_item", {"collection": "posts", "id": alpha})]},
                    {"content": "This post is called Alpha."}]
    await panel.get_by_label("Ask the copilot").fill("What is this post called?")
    await panel.get_by_role("button", name="Send").click()
    await expect(panel.get_by_role("group", name="Tool call: read_item")).to_contain_text(f'"id": "{alpha}"')
    await expect(panel.get_by_text("This post is called Alpha.")).to_be_visible()
    told = [m["content"] for m in model.requests()[-2]["messages"] if m["role"] == "system"]
    assert any(f'"collection":"posts","item":"{alpha}"' in m for m in told), told
    await visit.axe()
    await visit.shot("copilot")

    # A dangerous skill: a pending approval, linked; denied in the inbox, nothing changed.
    model.script = [{"tool_calls": [tool_call("delete_item", {"collection": "posts", "id": alpha})]}]
    await panel.get_by_label("Ask the copilot").fill("Delete this post")
    await panel.get_by_role("button", name="Send").click()
    await expect(panel.get_by_role("alert")).to_contain_text("delete_item needs a person's approval")
    await panel.get_by_role("link", name="Open the approval").last.click()
    await expect(page.get_by_role("heading", name="Approvals", level=1)).to_be_visible()
    requests = page.get_by_role("table", name="Requests")
    await expect(requests.get_by_role("row")).to_have_count(2)
    await visit.axe()
    await visit.shot("copilot-approval")
    await requests.get_by_role("button", name=re.compile("^Deny: ")).click()
    await expect(page.get_by_role("status").filter(has_text="Denied:")).to_be_visible()
    await expect(requests.get_by_role("row").nth(1)).to_contain_text("Denied")
    assert (await admin.ok("get", f"/items/posts/{alpha}"))["title"] == "Alpha"

    # Asked again (an update this time), approved in the inbox: the action ran.
    model.script = [{"tool_calls": [tool_call("update_item", {"collection": "posts", "id": alpha, "data": {"title": "Alpha 2"}})]}]
    await panel.get_by_label("Ask the copilot").fill("Rename it to Alpha 2")
    await panel.get_by_role("button", name="Send").click()
    await expect(panel.get_by_role("alert").last).to_contain_text("update_item needs a person's approval")
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="Approvals").click()
    pending = page.get_by_role("table", name="Requests")
    await expect(pending.get_by_role("row")).to_have_count(2)  # pending only: the denied one is not listed
    await pending.get_by_role("button", name=re.compile("^Approve: ")).click()
    await expect(page.get_by_role("status").filter(has_text="Approved:")).to_be_visible()
    assert (await admin.ok("get", f"/items/posts/{alpha}"))["title"] == "Alpha 2"
    await page.get_by_label("Status").select_option(label="All")
    every = page.get_by_role("table", name="Requests")
    await expect(every.get_by_role("row")).to_have_count(3)  # this site's two; never the other site's
    await expect(every).not_to_contain_text("Other")

    # -- flows43: live: a request made by another client (the API) shows in the open inbox
    # without a reload.
    model.script = [{"tool_calls": [tool_call("delete_item", {"collection": "posts", "id": studio["beta"]})]}]
    made = await admin.ok("post", "/ai/chat", status=202, json={"message": "Delete Beta elsewhere"})
    assert made["status"] == "pending_approval"
    await expect(every.get_by_role("row")).to_have_count(4)
    await expect(every.get_by_role("button", name=re.compile("^Deny: "))).to_have_count(1)
    await admin.ok("post", f"/ai/approvals/{made['approvalId']}/decide", json={"decision": "rejected"})
    await visit.axe()
    # -- more43: a request decided by another approver (a second admin, another client) redraws the
    # open inbox: its decision notifies the requester and the other approvers.
    model.script = [{"tool_calls": [tool_call("delete_item", {"collection": "posts", "id": studio["beta"]})]}]
    again = await admin.ok("post", "/ai/chat", status=202, json={"message": "Delete Beta once more"})
    await expect(every.get_by_role("button", name=re.compile("^Deny: "))).to_have_count(1)
    second = await new_member(studio["app"], site, "admin")
    studio["app"].kernel.access.invalidate(site)
    await Calls(admin.client, second.headers).ok("post", f"/ai/approvals/{again['approvalId']}/decide",
                                                 json={"decision": "rejected"})
    await expect(every.get_by_role("button", name=re.compile("^Deny: "))).to_have_count(0)
    await expect(every.get_by_role("row").filter(has_text="Denied")).to_have_count(3)
    await visit.axe()


async def test_agents_review_constitution_and_the_kill_switch(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site, beta = visit.page, studio["admin"], studio["site"], studio["beta"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="Agents").click()
    await expect(page.get_by_role("heading", name="Agents", level=1)).to_be_visible()
    staged = page.get_by_role("table", name="Changes agents staged, waiting for review")
    row = staged.get_by_role("row").filter(has_text=f"update posts / {beta}")
    await expect(row).to_contain_text('"Beta"')
    await expect(row).to_contain_text('"Beta, tidied"')
    await expect(page.get_by_role("table", name="The site's agent goals")).to_contain_text("Tidy titles")
    await visit.axe()
    await visit.shot("agents")

    # Veto, with a reason: the change leaves the list and never applies.
    await row.get_by_label(re.compile("^Reason for vetoing")).fill("keep it")
    await row.get_by_role("button", name=re.compile("^Veto ")).click()
    await expect(page.get_by_text(f"Vetoed: update posts / {beta}")).to_be_visible()
    await expect(page.get_by_text("No staged changes wait for review.")).to_be_visible()
    assert (await admin.ok("get", "/agent/staged", params={"status": "all"}))[0]["status"] == "vetoed"
    assert (await admin.ok("get", f"/items/posts/{beta}"))["title"] == "Beta"

    # The constitution: a draft, compiled, activated.
    await page.get_by_label("Rules", exact=True).fill('[{"rule": "deny_collection", "collection": "posts"}]')
    await page.get_by_role("button", name="Save as draft").click()
    versions = page.get_by_role("table", name="Versions of the constitution")
    await versions.get_by_role("button", name="Compile version 1").click()
    await versions.get_by_role("button", name="Activate version 1").click()
    await expect(versions.get_by_role("row").nth(1)).to_contain_text("Active")
    assert (await admin.ok("get", "/agent/constitution"))[0]["status"] == "active"

    # The kill switch: the page says so at once, and a goal started now ends frozen.
    await page.get_by_label("Reason", exact=True).fill("checking")
    await page.get_by_role("button", name="Freeze all agents").click()
    await expect(page.get_by_role("note")).to_contain_text("All agent work on this site is stopped")
    await expect(page.get_by_role("status").filter(has_text="Every agent of this site is frozen.")).to_be_visible()
    goal = page.get_by_role("form", name="New goal")
    await goal.get_by_label("Title").fill("While frozen")
    await goal.get_by_label("Description").fill("read posts")
    await goal.get_by_label("Run").select_option("sync")
    await goal.get_by_role("button", name="Create goal").click()
    goals = page.get_by_role("table", name="The site's agent goals")
    await expect(goals.get_by_role("row").filter(has_text="While frozen")).to_contain_text("Frozen")
    await visit.axe()
    await page.get_by_role("heading", name="Kill switch").scroll_into_view_if_needed()
    await visit.shot("agents-frozen")
    await page.get_by_role("button", name="Lift the freeze of The whole site").click()
    await expect(page.get_by_role("note")).to_contain_text("Agents may work on this site.")
    assert await admin.ok("get", "/agent/kill-switch") == []


async def test_a_member_has_the_copilot_and_no_agents(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    await sign_in(visit, member.email, member.password, site)
    nav = page.get_by_role("navigation", name="Collections")
    await expect(nav.get_by_role("link", name="Approvals")).to_be_visible()
    await expect(nav.get_by_role("link", name="Agents")).to_have_count(0)
    await expect(page.get_by_role("button", name="Copilot")).to_be_visible()
    await page.goto(f"{visit.base}/studio/#/s/{site}/agents")
    await expect(page.get_by_role("alert")).to_contain_text("not found", ignore_case=True)
    await visit.axe()


async def test_agents_freeze_one_part_roles_intents_and_steps(studio, visit):  # noqa: F811 - the shared fixture
    """-- govern43: a goal's steps, role, intent and autonomy level; a freeze of a role and of a
    goal's run beside the whole site's; a role's autonomy lowered (raising it refused with the
    API's PROMOTION_REQUIRED); an intent paused and resumed."""
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    intent = await admin.ok("post", "/agent/intents", status=201, json={
        "key": "tidy-daily", "title": "Tidy daily", "role": "writer", "description": "read posts",
        "trigger": {"type": "schedule", "everySeconds": 86400}})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="Agents").click()
    goals = page.get_by_role("table", name="The site's agent goals")
    tidy = goals.get_by_role("row").filter(has_text="Tidy titles")
    await expect(tidy).to_contain_text("Stage (applies unless vetoed)")
    await tidy.get_by_text(re.compile(r"^\d+ steps of Tidy titles$")).click()
    await expect(tidy.get_by_role("listitem").filter(has_text="update_item")).to_contain_text("staged for review")
    intents = page.get_by_role("table", name="Standing goals (intents)")
    await expect(intents.get_by_role("row").filter(has_text="Tidy daily")).to_contain_text("Every 86400 s")
    await visit.axe()

    # A role frozen, beside the whole site's switch, then a goal's run.
    part = page.get_by_role("form", name="Freeze one part")
    await part.get_by_label("What to freeze").select_option(label="A role")
    await part.get_by_label("Which one").select_option(label="writer")
    await part.get_by_label("Reason for this freeze").fill("too eager")
    await part.get_by_role("button", name="Freeze this part").click()
    await expect(page.get_by_role("status").filter(has_text="Frozen: A role writer.")).to_be_visible()
    await expect(page.get_by_role("note")).to_contain_text("Agents may work on this site.")
    await part.get_by_label("What to freeze").select_option(label="A goal")
    await part.get_by_label("Which one").select_option(label="Tidy titles")
    await part.get_by_role("button", name="Freeze this part").click()
    await expect(page.get_by_role("status").filter(has_text="Frozen: A goal Tidy titles.")).to_be_visible()
    freezes = {(f["scope"], f["target"], f["reason"]) for f in await admin.ok("get", "/agent/kill-switch")}
    goal_id = next(g["id"] for g in await admin.ok("get", "/agent/goals") if g["title"] == "Tidy titles")
    assert freezes == {("role", "writer", "too eager"), ("run", goal_id, None)}
    await visit.axe()
    await visit.shot("agents-parts")
    await page.get_by_role("button", name="Lift the freeze of A role writer").click()
    await page.get_by_role("button", name="Lift the freeze of A goal Tidy titles").click()
    await expect(page.get_by_role("table", name="Active freezes")).to_have_count(0)
    assert await admin.ok("get", "/agent/kill-switch") == []

    # The role's autonomy: lowered here; raising it is the API's to refuse.
    roles = page.get_by_role("table", name="Agent roles")
    await roles.get_by_label("Autonomy of writer", exact=True).select_option(label="Suggest (applied by hand)")
    await roles.get_by_role("button", name="Save the autonomy of writer").click()
    await expect(page.get_by_role("status").filter(has_text="writer now works at: Suggest")).to_be_visible()
    assert [r["autonomy"] for r in await admin.ok("get", "/agent/roles") if r["name"] == "writer"] == ["suggest"]
    await roles.get_by_label("Autonomy of writer", exact=True).select_option(label="Act (applies at once)")
    await roles.get_by_role("button", name="Save the autonomy of writer").click()
    await expect(page.get_by_role("alert")).to_contain_text("PROMOTION_REQUIRED")

    # The intent: paused, then resumed.
    await intents.get_by_role("button", name="Pause Tidy daily").click()
    await expect(page.get_by_role("status").filter(has_text="Tidy daily is paused.")).to_be_visible()
    assert (await admin.ok("get", f"/agent/intents/{intent['id']}"))["status"] == "paused"
    await intents.get_by_role("button", name="Resume Tidy daily").click()
    await expect(page.get_by_role("status").filter(has_text="Tidy daily is active again.")).to_be_visible()
    assert (await admin.ok("get", f"/agent/intents/{intent['id']}"))["status"] == "active"
    await visit.axe()

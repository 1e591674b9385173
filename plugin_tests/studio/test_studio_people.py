"""The studio's people and access screens (docs/studio.md, "People and access") in headless
Chromium, one server and one browser for the module: a site admin invites a person (the mail
reaches a local SMTP server), ends a member's sessions, suspends and reactivates them and acts as
them; makes roles with a parent chain, a team and an API key (shown once, then usable, then
deleted); makes a policy, attaches it to a role and gives it rules with a field mask and a
condition from the filter builder; reads one member's effective access with the rule that allows
each action; browses the audit log with filters. A member without admin rights finds none of
these screens and the API refuses its forced calls; nothing of site A shows in site B, neither
for the instance admin after switching nor for an admin of B. Controls are found by role and
label; axe-core checks every screen. The browser, ``Visit`` and ``sign_in`` are
test_studio_browser's."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, sign_in, visiting

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member, running_mailbox, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def people(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    """Site A with ``notes`` and a member; site B with its own admin and member; an app that mails
    to the module's SMTP server, without the auth rate limit (many sign-ins from one address)."""
    with running_mailbox() as box:
        async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, rate_limit_auth=0,
                                    smtp_host="127.0.0.1", smtp_port=box.port) as shared:
            admin = shared.calls
            await admin.collection("notes", {"title": "string", "body": "text", "owner": "string"})
            b = await shared.new_site("pb")
            site_b = b.headers["X-Svc-Site"]
            b_admin = await new_member(shared.app, site_b, "admin", email="b-admin@example.com")
            await new_member(shared.app, site_b, "subscriber", email="b-member@example.com")
            member = await new_member(shared.app, shared.site, "subscriber", email="a-member@example.com")
            server = await LiveServer(shared.app.app).start()
            try:
                yield {"server": server, "site": shared.site, "b": site_b, "admin": admin, "app": shared.app,
                       "mailbox": box, "member": member, "b_admin": b_admin}
            finally:
                await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, people) -> Any:
    async with visiting(browser, people["server"].base_url, record=True, height=1000) as seen:
        yield seen


async def open_screen(visit: Visit, name: str) -> None:
    from playwright.async_api import expect

    await visit.page.get_by_role("link", name=name, exact=True).click()
    await expect(visit.page.get_by_role("heading", name=name, level=1)).to_be_visible()
    await visit.axe()


def status(page: Any, text: str) -> Any:
    return page.get_by_role("status").filter(has_text=text)


async def test_users_invited_sessions_ended_suspended_and_acted_as(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    person = await new_member(people["app"], site, "subscriber", email="p-sessions@example.com")
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Users")
    await page.get_by_label("Email", exact=True).fill("invitee@example.com")
    await page.get_by_label("Role", exact=True).select_option(label="Subscriber")
    await page.get_by_role("button", name="Send invitation").click()
    await expect(status(page, "Invitation sent to invitee@example.com.")).to_be_visible()
    mail = await people["mailbox"].wait_for(1, to="invitee@example.com")
    assert "token=" in mail[0].get_content()
    table = page.get_by_role("table", name="Members of this site")
    await expect(table.get_by_role("row").filter(has_text="invitee@example.com")).to_contain_text("Invited")
    await page.get_by_label("Search by email or name").fill("p-sessions")
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(table.get_by_role("row")).to_have_count(2)
    assert "search=p-sessions" in page.url
    await visit.axe()

    # One member's page: the sessions ended, a suspension and its end, then acting as them.
    await table.get_by_role("link", name="p-sessions@example.com").click()
    await expect(page.get_by_role("heading", name="p-sessions@example.com", level=1)).to_be_visible()
    sessions = page.get_by_role("table", name="Sessions of p-sessions@example.com")
    await expect(sessions.get_by_role("row")).to_have_count(2)
    await visit.axe()
    await visit.shot("people-user")
    await page.get_by_role("button", name="End all sessions").click()
    await expect(status(page, "Sessions ended: 1.")).to_be_visible()
    assert await admin.ok("get", f"/users/{person.id}/sessions") == []
    await page.get_by_role("button", name="Suspend").click()
    await expect(status(page, "Suspended: every session of this person ended.")).to_be_visible()
    assert (await admin.ok("get", f"/users/{person.id}"))["status"] == "suspended"
    await expect(page.get_by_role("button", name="Act as this person")).to_have_count(0)
    await page.get_by_role("button", name="Reactivate").click()
    await expect(status(page, "Reactivated.")).to_be_visible()
    assert (await admin.ok("get", f"/users/{person.id}"))["status"] == "active"

    await page.get_by_role("button", name="Act as this person").click()
    await expect(page.get_by_role("status").filter(has_text="Acting as p-sessions@example.com.")).to_be_visible()
    await expect(page.get_by_role("link", name="Users", exact=True)).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site}/people/users")
    await expect(page.get_by_role("alert")).to_have_text("Only site admins manage people and access.")
    await visit.axe()
    await page.get_by_role("button", name="Stop acting").click()
    await expect(page.get_by_role("link", name="Users", exact=True)).to_be_visible()
    await expect(page.get_by_text("Acting as")).to_have_count(0)
    audit = await admin.ok("get", "/audit", params={"action": "user.impersonate", "targetId": person.id})
    assert len(audit) == 1 and audit[0]["details"] == {"expiresIn": 900}
    # The role, changed on the member's page.
    # Straight on to the member's page: the shell drawn again after "Stop acting" is overtaken by
    # this route and draws nothing over it mid-choice (main.js, studio42).
    await page.goto(f"{visit.base}/studio/#/s/{site}/people/users/{person.id}")
    await expect(page.get_by_role("button", name="Save role")).to_be_visible()
    await page.get_by_label("Role", exact=True).select_option(label="Public")
    await page.get_by_role("button", name="Save role").click()
    await expect(status(page, "Role saved.")).to_be_visible()
    roles = {r["systemKey"]: r["id"] for r in await admin.ok("get", "/roles")}
    assert (await admin.ok("get", f"/users/{person.id}"))["roleId"] == roles["public"]


async def test_roles_with_a_parent_chain_a_team_and_an_api_key(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Roles")
    for name, parent in (("Base", None), ("Desk", "Base")):
        await page.get_by_label("Name", exact=True).fill(name)
        if parent:
            await page.get_by_label("Parent role").select_option(label=parent)
        await page.get_by_role("button", name="Create role").click()
        await expect(status(page, f"{name} created.")).to_be_visible()
    roles = {r["name"]: r for r in await admin.ok("get", "/roles")}
    assert roles["Desk"]["parentId"] == roles["Base"]["id"] and roles["Base"]["parentId"] is None
    table = page.get_by_role("table", name="Roles of this site")
    await expect(table.get_by_role("row").filter(has=page.get_by_role("rowheader", name="Desk"))).to_contain_text("Desk ← Base")
    await visit.axe()
    await visit.shot("people-roles")
    # A cycle is the API's to refuse, and its reason shows.
    await page.get_by_label("Parent of Base").select_option(label="Desk")
    await expect(page.get_by_role("status").filter(has_text="VALIDATION_FAILED")).to_be_visible()
    assert (await admin.ok("get", f"/roles/{roles['Base']['id']}"))["parentId"] is None

    other = await new_member(people["app"], site, "subscriber", email="p-team@example.com", login=False)
    await open_screen(visit, "Teams")
    await page.get_by_label("Name", exact=True).fill("Night")
    # -- studio42b: members are searched (a page at a time), then checked
    picker = page.get_by_role("group", name="Members", exact=True)
    await picker.get_by_label("Search members by email or name").fill("a-member")
    await expect(picker).to_contain_text("Members 1–1 of 1 found")
    await picker.get_by_role("list", name="Search results (Members)").get_by_label("a-member@example.com").click()  # -- studio42c: click (the box moves to the chosen list)
    await expect(picker.get_by_role("list", name="Chosen (Members)").get_by_label("a-member@example.com")).to_be_checked()
    await page.get_by_role("button", name="Create team").click()
    await expect(status(page, "Night created.")).to_be_visible()
    await expect(page.get_by_role("table", name="Teams of this site")).to_contain_text("a-member@example.com")
    teams = {team["name"]: team for team in await admin.ok("get", "/teams")}
    assert teams["Night"]["members"] == [people["member"].id]
    await page.get_by_text("Change the members of Night").click()
    members = page.get_by_role("group", name="Members of Night")
    await members.get_by_label("a-member@example.com").uncheck()
    await members.get_by_label("Search members by email or name").fill("p-team")
    await expect(members).to_contain_text("Members 1–1 of 1 found")
    await members.get_by_label("p-team@example.com").click()
    await visit.axe()
    await page.get_by_role("button", name="Save members of Night").click()
    await expect(status(page, "Members of Night saved.")).to_be_visible()
    team = await admin.ok("get", f"/teams/{teams['Night']['id']}")
    assert team["members"] == [other.id]

    await open_screen(visit, "API keys")
    await page.get_by_label("Name", exact=True).fill("build server")
    await page.get_by_label("Role", exact=True).select_option(label="Desk")
    await page.get_by_role("button", name="Create key").click()
    await expect(status(page, "Key build server created.")).to_be_visible()
    key = await page.get_by_label("The new key").input_value()
    assert key.startswith("svk_")
    as_key = Calls(people["app"].client, {"Authorization": f"Bearer {key}", "X-Svc-Site": site})
    assert (await as_key.ok("get", "/permissions/me"))["roleId"] == roles["Desk"]["id"]
    await visit.axe()
    await page.reload()
    await expect(page.get_by_role("heading", name="API keys", level=1)).to_be_visible()
    await expect(page.get_by_label("The new key")).to_have_count(0)
    await visit.shot("people-keys")  # -- studio42c
    assert key not in await page.content()
    await page.get_by_role("button", name="Delete build server").click()
    await expect(status(page, "Key build server deleted.")).to_be_visible()
    await as_key.err("get", "/permissions/me", 401)


async def test_a_policy_its_rules_and_a_members_effective_access(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    staff = await admin.ok("post", "/roles", 201, json={"name": "Staff"})
    desk = await admin.ok("post", "/roles", 201, json={"name": "Editors", "parentId": staff["id"]})
    editor = await new_member(people["app"], site, desk["id"], email="a-editor@example.com")
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Policies")
    await page.get_by_label("Name", exact=True).fill("Own notes")
    await page.get_by_role("button", name="Create policy").click()
    await expect(page.get_by_role("heading", name="Policy Own notes", level=1)).to_be_visible()
    # Attached to the parent role: the member's role inherits it.
    await page.get_by_label("Attach to").select_option(label="role Staff")
    await page.get_by_role("button", name="Attach", exact=True).click()
    await expect(status(page, "Attached to role Staff.")).to_be_visible()

    # A rule: read notes, title and body only, on the rows the member owns.
    await page.get_by_label("Collection", exact=True).select_option("notes")
    await page.get_by_label("Action", exact=True).select_option("read")
    await page.get_by_label("All fields").uncheck()
    await page.get_by_label("title", exact=True).check()
    await page.get_by_label("body", exact=True).check()
    await page.get_by_role("button", name="Add condition").click()
    await page.get_by_label("Field of condition 1").select_option("owner")
    await page.get_by_label("Operator of condition 1").select_option(label="equals")
    await page.get_by_label("Value of condition 1").fill("$CURRENT_USER")
    await page.get_by_role("button", name="Apply filter").click()
    await expect(status(page, 'Rows: {"_and":[{"owner":{"_eq":"$CURRENT_USER"}}]}')).to_be_visible()
    await visit.axe()
    await visit.shot("people-rule")
    await page.get_by_role("button", name="Add rule").click()
    await expect(status(page, "Rule read notes added.")).to_be_visible()
    # A second rule: update notes, every field and row.
    await page.get_by_label("Collection", exact=True).select_option("notes")
    await page.get_by_label("Action", exact=True).select_option("update")
    await page.get_by_role("button", name="Add rule").click()
    await expect(status(page, "Rule update notes added.")).to_be_visible()
    policy = next(p for p in await admin.ok("get", "/policies") if p["name"] == "Own notes")
    rules = sorted((r["action"], r["fields"], r["conditions"]) for r in
                   await admin.ok("get", f"/policies/{policy['id']}/permissions"))
    assert rules == [("read", ["title", "body"], {"_and": [{"owner": {"_eq": "$CURRENT_USER"}}]}),
                     ("update", ["*"], None)]
    assert [a["roleId"] for a in policy["attachments"]] == [staff["id"]]
    await expect(page.get_by_role("table", name="Rules of Own notes").get_by_role("row")).to_have_count(3)
    await visit.axe()

    await open_screen(visit, "Effective access")
    # -- studio42c: the member is searched with the member picker
    picker = page.get_by_role("group", name="Member", exact=True)
    await picker.get_by_label("Search members by email or name").fill("a-editor")
    await expect(picker).to_contain_text("Members 1–1 of 1 found")
    await picker.get_by_role("list", name="Search results (Member)").get_by_label("a-editor@example.com").click()
    await page.get_by_label("Collection", exact=True).select_option("notes")
    await page.get_by_role("button", name="Show access").click()
    table = page.get_by_role("table", name="Access of a-editor@example.com to notes")
    row = lambda action: table.get_by_role("row").filter(has=page.get_by_role("rowheader", name=action, exact=True))  # noqa: E731
    await expect(page.get_by_text("Role and its parents: Editors ← Staff")).to_be_visible()
    await expect(row("read")).to_contain_text("Allowed")
    await expect(row("read")).to_contain_text("title, body")
    await expect(row("read")).to_contain_text(f'{{"owner":{{"_eq":"{editor.id}"}}}}')
    await expect(row("read")).to_contain_text("policy Own notes, through role Staff")
    await expect(row("update")).to_contain_text("Every row")
    await expect(row("delete")).to_contain_text("Denied")
    await expect(row("delete")).to_contain_text("No rule grants it: denied by default.")
    assert f"user={editor.id}" in page.url and "collection=notes" in page.url
    as_editor = Calls(people["app"].client, editor.headers)
    for action in ("read", "update", "delete"):
        mine = await as_editor.ok("post", "/permissions/check", json={"collection": "notes", "action": action})
        assert mine["allowed"] is (action != "delete"), action
    await visit.axe()
    await visit.shot("people-access")


async def test_the_audit_log_with_filters(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    for name in ("Audit one", "Audit two"):
        await admin.ok("post", "/teams", 201, json={"name": name})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Audit log")
    await page.get_by_label("Action", exact=True).fill("team.create")
    await page.get_by_role("button", name="Filter", exact=True).click()
    total = (await admin.ok("get", "/audit", full=True, params={"action": "team.create"}))["meta"]["total"]
    assert total >= 2
    await expect(status(page, f"{total} records")).to_be_visible()
    assert "action=team.create" in page.url
    table = page.get_by_role("table", name="Audit records, newest first")
    await expect(table.get_by_role("row")).to_have_count(total + 1)
    await expect(table.get_by_role("row").nth(1)).to_contain_text('"name":"Audit two"')
    await expect(table.get_by_role("row").nth(1)).to_contain_text(ADMIN_EMAIL)
    await visit.axe()
    await visit.shot("people-audit")
    # A target type with a date range that holds nothing; then the filters cleared.
    await page.get_by_label("Target type").fill("policy")
    await page.get_by_label("Before (UTC)").fill("2000-01-01")
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(status(page, "0 records")).to_be_visible()
    await page.get_by_role("link", name="Clear filters").click()
    await expect(page.get_by_label("Action", exact=True)).to_have_value("")
    everything = (await admin.ok("get", "/audit", full=True))["meta"]["total"]
    await expect(status(page, re.compile(rf"^{everything} records$"))).to_be_visible()
    await visit.axe()


async def test_a_member_never_reaches_these_screens(people, visit):
    from playwright.async_api import expect

    page, site = visit.page, people["site"]
    member = await new_member(people["app"], site, "subscriber")
    await sign_in(visit, member.email, member.password, site)
    await expect(page.get_by_role("heading", name="People and access")).to_have_count(0)
    await expect(page.get_by_role("link", name="Users", exact=True)).to_have_count(0)
    for screen in ("users", f"users/{people['member'].id}", "roles", "policies", "teams", "keys", "access", "audit"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/people/{screen}")
        await expect(page.get_by_role("alert")).to_have_text("Only site admins manage people and access.")
        await expect(page.get_by_role("table")).to_have_count(0)
    await visit.axe()
    assert not [url for url in visit.responses if re.search(r"/api/v1/(users|roles|policies|teams|api-keys|audit)", url)]
    # Forced through the API, every call is refused.
    as_member = Calls(people["app"].client, member.headers)
    for method, path, body in (
        ("get", "/users", None), ("post", "/users/invite", {"email": "x@example.com"}),
        ("patch", f"/users/{people['member'].id}", {"status": "suspended"}),
        ("get", f"/users/{people['member'].id}/sessions", None),
        ("post", f"/users/{people['member'].id}/impersonate", None),
        ("post", "/roles", {"name": "Mine"}), ("post", "/policies", {"name": "Mine"}),
        ("post", "/teams", {"name": "Mine"}), ("post", "/api-keys", {"name": "Mine"}), ("get", "/audit", None),
        ("post", "/permissions/check", {"collection": "notes", "action": "read", "userId": people["member"].id,
                                        "explain": True}),
    ):
        refused = await as_member.call(method, path, json=body)
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED"), path


async def test_nothing_of_site_a_in_site_b(people, visit):
    from playwright.async_api import expect

    page, site, site_b = visit.page, people["site"], people["b"]
    await people["admin"].ok("post", "/roles", 201, json={"name": "Only in A"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Users")
    await expect(page.get_by_role("table", name="Members of this site")).to_contain_text("a-member@example.com")
    await page.get_by_label("Site", exact=True).select_option(site_b)
    await expect(page.get_by_role("navigation", name="Collections")).to_be_visible()
    await open_screen(visit, "Users")
    users_b = page.get_by_role("table", name="Members of this site")
    await expect(users_b).to_contain_text("b-member@example.com")
    await open_screen(visit, "Roles")
    await expect(page.get_by_role("table", name="Roles of this site")).to_contain_text("Subscriber")
    await expect(page.get_by_role("table", name="Roles of this site")).not_to_contain_text("Only in A")
    await open_screen(visit, "Audit log")
    await page.goto(f"{visit.base}/studio/#/s/{site_b}/people/users")
    await expect(users_b).not_to_contain_text("a-member@example.com")
    await expect(users_b).not_to_contain_text("a-editor@example.com")

    # An admin of B signs in to B: B's people only, and site A asks for a sign-in there.
    await page.get_by_role("button", name="Sign out").click()
    await visit.drained()  # every answer of the instance admin's visit read before counting
    assert "a-member@example.com" in "".join(visit.bodies)  # the instance admin's visit of A
    start = len(visit.bodies)
    b_admin = people["b_admin"]
    await sign_in(visit, b_admin.email, b_admin.password, site_b)
    await open_screen(visit, "Users")
    await expect(users_b).to_contain_text("b-member@example.com")
    await expect(users_b).not_to_contain_text("a-member@example.com")
    await page.goto(f"{visit.base}/studio/#/s/{site}/people/users")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_text("a-member@example.com")).to_have_count(0)
    b_only = "".join(visit.bodies[start:])
    assert "a-member@example.com" not in b_only and "a-editor@example.com" not in b_only
    as_b = Calls(people["app"].client, {**b_admin.headers, "X-Svc-Site": site})
    for path in ("/users", "/roles", "/audit"):
        refused = await as_b.call("get", path)
        assert refused.status_code == 401 and "a-member" not in refused.text, (path, refused.text)
        assert refused.json()["errors"][0]["code"] == "UNAUTHENTICATED"


# -- studio42: the members' list in pages (no cap at the first 200), and its search
async def test_the_members_list_pages_and_searches(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    for i in range(50):
        await new_member(people["app"], site, "subscriber", email=f"pg-{i:02d}@example.com", login=False)
    total = len(await admin.ok("get", "/users", params={"limit": 200}))
    assert 50 < total <= 100
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await open_screen(visit, "Users")
    table = page.get_by_role("table", name=re.compile("^Members"))
    pages = page.get_by_role("navigation", name="Pages of members")
    await expect(pages).to_contain_text(f"Page 1 of 2 ({total} members)")
    await expect(table.get_by_role("row")).to_have_count(51)  # the header and 50 members
    await visit.shot("people-users")  # -- studio42c
    await pages.get_by_role("link", name="Next page").click()
    await expect(pages).to_contain_text(f"Page 2 of 2 ({total} members)")
    await expect(table.get_by_role("row")).to_have_count(total - 50 + 1)
    await visit.axe()
    await page.get_by_label("Search by email or name").fill("pg-07")
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(table.get_by_role("row")).to_have_count(2)
    await expect(table).to_contain_text("pg-07@example.com")
    await expect(pages).to_have_count(0)

    # -- studio42b: a team's member picker shows a page of the members at a time, and searches.
    await open_screen(visit, "Teams")
    picker = page.get_by_role("group", name="Members", exact=True)
    found = picker.get_by_role("list", name="Search results (Members)")
    await expect(found.get_by_role("checkbox")).to_have_count(10)
    await expect(picker).to_contain_text(f"Members 1–10 of {total} found")
    await picker.get_by_role("button", name="More members").click()
    await expect(picker).to_contain_text(f"Members 11–20 of {total} found")
    await picker.get_by_role("button", name="Previous members").click()
    await expect(picker).to_contain_text(f"Members 1–10 of {total} found")
    await picker.get_by_label("Search members by email or name").fill("pg-4")
    await expect(picker).to_contain_text("Members 1–10 of 10 found")
    await expect(picker.get_by_role("button", name="More members")).to_be_hidden()
    chosen = picker.get_by_role("list", name="Chosen (Members)")
    for email in ("pg-42@example.com", "pg-47@example.com"):
        # A click, not check(): the box moves to the chosen list, so the clicked element is gone
        # before check() could read its state.
        await found.get_by_label(email).click()
        await expect(chosen.get_by_label(email)).to_be_checked()
    await expect(chosen.get_by_role("checkbox", checked=True)).to_have_count(2)
    await expect(found.get_by_role("checkbox")).to_have_count(8)
    await visit.axe()
    await page.get_by_label("Name", exact=True).fill("Many")
    await page.get_by_role("button", name="Create team").click()
    await expect(status(page, "Many created.")).to_be_visible()
    ids = {u["email"]: u["id"] for u in await admin.ok("get", "/users", params={"search": "pg-4"})}
    many = {team["name"]: team for team in await admin.ok("get", "/teams")}["Many"]
    assert many["members"] == [ids["pg-42@example.com"], ids["pg-47@example.com"]]


# -- studio42c: no screen lists every member: the teams' table names a few members of each team,
# and effective access, a policy's attachment to a member and the audit's actor filter search
# with the member picker (matches only, a page at a time)
async def test_member_pickers_search_instead_of_listing_everyone(people, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, people["admin"], people["site"]
    picked = [await new_member(people["app"], site, "subscriber", email=f"pk-{i:02d}@example.com", login=False)
              for i in range(25)]
    await admin.ok("post", "/teams", 201, json={"name": "Big", "members": [m.id for m in picked]})
    policy = await admin.ok("post", "/policies", 201, json={"name": "Picked"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    start = len(visit.responses)
    await open_screen(visit, "Teams")
    big = page.get_by_role("table", name="Teams of this site").get_by_role("row").filter(
        has=page.get_by_role("rowheader", name="Big", exact=True))
    await expect(big).to_contain_text("pk-00@example.com, pk-01@example.com, pk-02@example.com, pk-03@example.com, "
                                      "pk-04@example.com and 20 more")
    await expect(big).not_to_contain_text("pk-05@example.com")
    # Opening the editor reads the team's members' names, and the picker's first page.
    await page.get_by_text("Change the members of Big").click()
    chosen = page.get_by_role("group", name="Members of Big").get_by_role("list", name="Chosen (Members of Big)")
    await expect(chosen.get_by_role("checkbox")).to_have_count(25)
    await expect(chosen.get_by_label("pk-24@example.com")).to_be_checked()
    await visit.axe()
    await visit.shot("people-teams")

    await open_screen(visit, "Effective access")
    picker = page.get_by_role("group", name="Member", exact=True)
    results = picker.get_by_role("list", name="Search results (Member)")
    await expect(results.get_by_role("checkbox")).to_have_count(10)  # a page of a site with more members
    await picker.get_by_label("Search members by email or name").fill("pk-1")
    await expect(picker).to_contain_text("Members 1–10 of 10 found")
    labels = results.locator("label")
    await expect(labels).to_have_text([f"pk-1{i}@example.com" for i in range(10)])
    await results.get_by_label("pk-12@example.com").click()
    await results.get_by_label("pk-13@example.com").click()
    # One member at a time: the second pick replaces the first.
    await expect(picker.get_by_role("list", name="Chosen (Member)").get_by_role("checkbox")).to_have_count(1)
    await expect(picker.get_by_role("list", name="Chosen (Member)").get_by_label("pk-13@example.com")).to_be_checked()
    await page.get_by_label("Collection", exact=True).select_option("notes")
    await page.get_by_role("button", name="Show access").click()
    table = page.get_by_role("table", name="Access of pk-13@example.com to notes")
    await expect(table.get_by_role("row").filter(has=page.get_by_role("rowheader", name="delete", exact=True))).to_contain_text("Denied")
    assert f"user={picked[13].id}" in page.url
    await expect(page.get_by_role("group", name="Member", exact=True).get_by_role("list", name="Chosen (Member)")
                 .get_by_label("pk-13@example.com")).to_be_checked()
    await visit.axe()

    await page.goto(f"{visit.base}/studio/#/s/{site}/people/policies/{policy['id']}")
    member = page.get_by_role("group", name="Attach a member")
    await member.get_by_label("Search members by email or name").fill("pk-07")
    await expect(member).to_contain_text("Members 1–1 of 1 found")
    await member.get_by_role("list", name="Search results (Attach a member)").get_by_label("pk-07@example.com").click()
    await page.get_by_role("button", name="Attach the chosen member").click()
    await expect(status(page, "Attached to user pk-07@example.com.")).to_be_visible()
    await expect(page.get_by_role("list", name="Attached to")).to_contain_text("user pk-07@example.com")
    await page.get_by_role("group", name="Attach a member").scroll_into_view_if_needed()
    await visit.shot("people-attach")
    attached = await admin.ok("get", f"/policies/{policy['id']}")
    assert [a.get("userId") for a in attached["attachments"]] == [picked[7].id]
    await visit.axe()

    # The audit's actor filter offers the instance admin (a member of no site) and searches members.
    await open_screen(visit, "Audit log")
    who = page.get_by_role("group", name="Who", exact=True)
    await who.get_by_label("Search members by email or name").fill(ADMIN_EMAIL)
    await who.get_by_role("list", name="Search results (Who)").get_by_label(ADMIN_EMAIL).click()
    await page.get_by_role("button", name="Filter", exact=True).click()
    await expect(page).to_have_url(re.compile(r"actorId="))
    actor_id = re.search(r"actorId=([^&]+)", page.url).group(1)
    total = (await admin.ok("get", "/audit", full=True, params={"actorId": actor_id}))["meta"]["total"]
    assert total >= 2
    await expect(status(page, f"{total} records")).to_be_visible()
    await expect(who.get_by_role("list", name="Chosen (Who)").get_by_label(ADMIN_EMAIL)).to_be_checked()
    await visit.axe()
    everyone = [url for url in visit.responses[start:] if re.search(r"/api/v1/users\?", url) and "search=" not in url
                and "limit=10" not in url]
    assert not everyone, everyone

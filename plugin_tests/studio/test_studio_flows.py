"""Flows in the studio (docs/studio.md "Flows"), headless Chromium against one server and one
browser for the module: a site admin creates a manual flow, adds steps chosen from the
registered operations and fills their generated option forms, connects them; the API's
GRAPH_CYCLE is shown on the step it names (in the list and the drawing), an option the operation
refuses is marked at its field, an operation nobody registers is named on its step; the saved
graph is what the API holds; a manual run is started and followed to its end, and its page shows
the run's input and each step's input and output as stored (redacted); the run history lists it.
A subscriber finds no flows screen and the API refuses it; another site's flow is not reachable.
Controls by role and label; axe-core on every screen. ``browser``, ``visit`` and ``sign_in`` are
the studio module's (``visit`` opens this module's ``studio`` server)."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, MEMBER_PASSWORD, Calls, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")  # first pass only: conftest.py marks the browser tests
MASK = "**********"


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory) as shared:
        admin: Calls = shared.calls
        await admin.collection("posts", {"title": "string"})
        legacy = await admin.ok("post", "/flows", status=201, json={
            "name": "Legacy", "status": "draft", "trigger": "manual",
            "graph": {"nodes": [{"id": "old", "operation": "gone-op", "options": {}}],
                      "edges": [{"from": "old", "to": "ghost"}]}})
        member = await new_member(shared.app, shared.site, "subscriber")
        other = await shared.new_site("other")
        other_flow = await other.ok("post", "/flows", status=201, json={"name": "Other site's flow", "trigger": "manual"})
        server = await LiveServer(shared.app.app).start()
        try:
            yield {"server": server, "site": shared.site, "admin": admin, "app": shared.app, "legacy": legacy["id"],
                   "member": member, "as_member": Calls(shared.app.client, member.headers), "other_flow": other_flow["id"]}
        finally:
            await server.stop()


async def add_step(page: Any, step_id: str, operation: str) -> Any:
    from playwright.async_api import expect

    form = page.get_by_role("form", name="Add step")
    await form.get_by_label("Step id").fill(step_id)
    await form.get_by_label("Operation").select_option(operation)
    await form.get_by_role("button", name="Add step").click()
    step = page.get_by_role("region", name=f"Step {step_id} ({operation})")
    await expect(step).to_be_visible()
    return step


async def test_build_a_flow_see_its_errors_on_the_steps_and_run_it(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site, app = visit.page, studio["admin"], studio["site"], studio["app"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Flows", exact=True).click()
    await expect(page.get_by_role("heading", name="Flows", level=1)).to_be_visible()
    await expect(page.get_by_role("table", name="Flows of this site").get_by_role("link", name="Legacy", exact=True)).to_be_visible()
    await visit.axe()
    create = page.get_by_role("form", name="Create flow")
    await create.get_by_label("Name").fill("Greeter")
    await create.get_by_label("Trigger").select_option(label="Manual")
    await create.get_by_role("button", name="Create flow").click()
    await expect(page.get_by_role("heading", name="Greeter", level=1)).to_be_visible()
    await expect(page.get_by_text("No steps yet.")).to_be_visible()
    await visit.axe()

    # Steps from the registered operations, their option forms generated from the declared options.
    greet = await add_step(page, "greet", "log")
    await expect(page.get_by_role("heading", name="Step greet (log)")).to_be_focused()
    await greet.get_by_label("Message").fill("Hello {{ $trigger.name }}")
    shape = await add_step(page, "shape", "transform")
    await shape.get_by_label("Output").fill('{"who": "{{ $trigger.name }}", "apiToken": "{{ $trigger.name }}"}')
    check = await add_step(page, "check", "condition")
    await check.get_by_label("Filter").fill('{"$trigger": {"name": {"_regex": "A"}}}')
    request = await add_step(page, "call", "request")  # an enum option (method) is a select
    await expect(request.get_by_label("Method")).to_have_value("")
    await expect(request.get_by_label("Method").get_by_role("option", name="(not set: GET)")).to_have_count(1)
    await request.get_by_role("button", name="Remove step call").click()
    await expect(page.get_by_role("region", name="Step call (request)")).to_have_count(0)
    # Each new step was connected from the one before; one more connection makes a cycle.
    await expect(greet.get_by_role("list", name="Connections from greet")).to_contain_text("to shape")
    connect = page.get_by_role("form", name="Connect")
    await connect.get_by_label("From step").select_option("check")
    await connect.get_by_label("To step").select_option("shape")
    await connect.get_by_role("button", name="Connect").click()
    await expect(check.get_by_role("list", name="Connections from check")).to_contain_text("to shape")
    drawing = page.get_by_role("group", name=re.compile("Drawing of the flow: 3 steps, 3 connections"))
    await expect(drawing).to_be_visible()
    settings = page.get_by_role("region", name="Flow", exact=True)
    await settings.get_by_label("Status").select_option(label="Active")
    await page.get_by_role("button", name="Save flow").click()
    await expect(page.get_by_role("alert").filter(has_text="Not saved: step shape")).to_contain_text("GRAPH_CYCLE")
    await expect(shape).to_contain_text("GRAPH_CYCLE")
    await expect(page.get_by_role("heading", name="Step shape (transform)")).to_be_focused()
    await expect(greet).not_to_contain_text("GRAPH_CYCLE")
    await expect(drawing.get_by_text("⚠ shape")).to_be_visible()
    await expect(drawing.get_by_text("⚠ greet")).to_have_count(0)
    await visit.axe()
    await visit.shot("flows-graph-error")

    # The cycle removed: the condition's operator is refused at its field.
    await check.get_by_role("button", name="Remove the connection from check to shape").click()
    await expect(check.get_by_text("No connections from this step.")).to_be_visible()
    await page.get_by_role("button", name="Save flow").click()
    await expect(check.get_by_label("Filter")).to_have_attribute("aria-invalid", "true")
    await expect(check).to_contain_text("VALIDATION_FAILED")
    await check.get_by_label("Filter").fill('{"$trigger": {"name": {"_eq": "Ada"}}}')
    after = await add_step(page, "after", "log")  # connected from check: followed when the condition passes
    await after.get_by_label("Message").fill("{{ $trigger.name }} passed")
    await page.get_by_role("button", name="Save flow").click()
    await expect(page.get_by_role("status").filter(has_text="The flow was saved.")).to_be_visible()
    await expect(check.get_by_label("Filter")).not_to_have_attribute("aria-invalid", "true")
    stored = [f for f in await admin.ok("get", "/flows") if f["name"] == "Greeter"][0]
    assert stored["status"] == "active"
    assert stored["graph"] == {"nodes": [
        {"id": "greet", "operation": "log", "options": {"message": "Hello {{ $trigger.name }}"}},
        {"id": "shape", "operation": "transform", "options": {"json": {"who": "{{ $trigger.name }}",
                                                                      "apiToken": "{{ $trigger.name }}"}}},
        {"id": "check", "operation": "condition", "options": {"filter": {"$trigger": {"name": {"_eq": "Ada"}}}}},
        {"id": "after", "operation": "log", "options": {"message": "{{ $trigger.name }} passed"}}],
        "edges": [{"from": "greet", "to": "shape", "when": "true"}, {"from": "shape", "to": "check", "when": "true"},
                  {"from": "check", "to": "after", "when": "true"}]}
    await visit.axe()
    await page.get_by_role("group", name=re.compile("Drawing of the flow: 4 steps, 3 connections")).scroll_into_view_if_needed()
    await visit.shot("flows-editor")

    # A manual run, followed to its end (the queue's job runs here: no worker in the test).
    runner = page.get_by_role("form", name="Run now")
    await runner.get_by_label("Input").fill('{"name": "Ada", "password": "hunter2"}')
    await runner.get_by_role("button", name="Run").click()
    ended = runner.get_by_role("status").filter(has_text="The run ended: succeeded.")
    for _ in range(200):
        await app.kernel.jobs.run_due()
        if await ended.count():
            break
        await page.wait_for_timeout(100)
    await expect(ended).to_be_visible()
    await runner.get_by_role("link", name="Open the run").click()
    await expect(page.get_by_role("heading", name="Run of Greeter", level=1)).to_be_visible()
    await expect(page.get_by_role("region", name="The run's input")).to_contain_text(f'"password": "{MASK}"')
    steps = page.get_by_role("list", name="Steps", exact=True)
    await expect(steps.get_by_role("listitem")).to_have_count(4)
    greet_run = page.get_by_role("region", name="greet (log): succeeded")
    await expect(greet_run.get_by_role("region", name="Input of greet")).to_contain_text('"message": "Hello Ada"')
    await expect(greet_run.get_by_role("region", name="Output of greet")).to_contain_text('"message": "Hello Ada"')
    shape_run = page.get_by_role("region", name="shape (transform): succeeded")
    await expect(shape_run.get_by_role("region", name="Output of shape")).to_contain_text(f'"apiToken": "{MASK}"')
    await expect(shape_run.get_by_role("region", name="Input of shape")).to_contain_text(f'"apiToken": "{MASK}"')
    await expect(page.get_by_role("region", name="check (condition): succeeded")).to_contain_text('"passed": true')
    assert "hunter2" not in await page.content()
    await visit.axe()
    await shape_run.scroll_into_view_if_needed()
    await visit.shot("flows-run")
    await page.get_by_role("link", name="All runs").click()
    history = page.get_by_role("table", name="Runs, newest first")
    await expect(history.get_by_role("row")).to_have_count(2)
    await expect(history).to_contain_text("succeeded")
    await visit.axe()

    # A draft with a connection to a step that does not exist and an operation nobody registers:
    # each refusal is shown on the step it names, the missing one included.
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows/{studio['legacy']}")
    old = page.get_by_role("region", name="Step old (gone-op)")
    await expect(old).to_contain_text("No plugin registers the operation gone-op.")
    ghost = page.get_by_role("region", name="Missing step ghost")
    await page.get_by_role("region", name="Flow", exact=True).get_by_label("Status").select_option(label="Active")
    await page.get_by_role("button", name="Save flow").click()
    await expect(ghost).to_contain_text("GRAPH_DANGLING_EDGE")
    await expect(old).not_to_contain_text("GRAPH_")
    await visit.axe()
    await ghost.get_by_role("button", name="Remove step ghost").click()
    await page.get_by_role("button", name="Save flow").click()
    await expect(old).to_contain_text("GRAPH_UNKNOWN_OPERATION")
    assert (await admin.ok("get", f"/flows/{studio['legacy']}"))["status"] == "draft"


async def test_option_forms_follow_the_declared_types(studio, visit):  # noqa: F811 - the shared fixture
    # -- flows43: each option's control is the one its type asks for; the API's refusal of a
    # missing required option is shown at that field.
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    typed = await admin.ok("post", "/flows", status=201, json={"name": "Typed", "trigger": "manual"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows/{typed['id']}")
    make = await add_step(page, "make", "item-create")
    await expect(make.get_by_label("Collection")).to_have_attribute("aria-required", "true")
    await make.get_by_label("Collection").select_option("posts")  # a collection option lists the site's
    await make.get_by_label("Payload").fill('{"title": "{{ $trigger.title }}"}')
    tell = await add_step(page, "tell", "notify")
    severity = tell.get_by_label("Severity")
    await expect(severity.get_by_role("option")).to_have_text(["(not set: info)", "info", "warning", "error", "success"])
    mail = await add_step(page, "send", "mail")
    await mail.get_by_label("To").fill("a@example.com\nb@example.com")  # many: one per line, a list
    await mail.get_by_label("Subject").fill("Made")
    await mail.get_by_label("Body", exact=True).fill("{{ $trigger.title }}")
    await visit.axe()
    await page.get_by_role("region", name="Flow", exact=True).get_by_label("Status").select_option(label="Active")
    await page.get_by_role("button", name="Save flow").click()
    title = tell.get_by_label("Title")
    await expect(title).to_have_attribute("aria-invalid", "true")
    await expect(tell).to_contain_text("Step 'tell': 'title' is required")
    await expect(page.get_by_role("heading", name="Step tell (notify)")).to_be_focused()
    await title.fill("Made {{ $trigger.title }}")
    await severity.select_option(label="warning")
    await page.get_by_role("button", name="Save flow").click()
    await expect(page.get_by_role("status").filter(has_text="The flow was saved.")).to_be_visible()
    await expect(title).not_to_have_attribute("aria-invalid", "true")
    stored = await admin.ok("get", f"/flows/{typed['id']}")
    assert stored["status"] == "active"
    assert [n["options"] for n in stored["graph"]["nodes"]] == [
        {"collection": "posts", "payload": {"title": "{{ $trigger.title }}"}},
        {"title": "Made {{ $trigger.title }}", "severity": "warning"},
        {"to": ["a@example.com", "b@example.com"], "subject": "Made", "body": "{{ $trigger.title }}"}]
    await visit.axe()
    await visit.shot("flows-typed-options")


async def test_steps_moved_and_connected_by_dragging_or_buttons(studio, visit):  # noqa: F811 - the shared fixture
    # -- flows43: a step dragged in the drawing, or moved with its buttons, keeps its place in the
    # saved graph; a drag from a step's port onto another step connects them (the Connect form
    # does the same, test_build_a_flow...).
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    nodes = [{"id": i, "operation": "log", "options": {"message": i}} for i in ("a", "b", "c")]
    dragged = await admin.ok("post", "/flows", status=201, json={
        "name": "Dragged", "trigger": "manual", "graph": {"nodes": nodes, "edges": [{"from": "a", "to": "b"}]}})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows/{dragged['id']}")
    drawing = page.get_by_role("group", name=re.compile("Drawing of the flow: 3 steps, 1 connection\\."))  # plural-aware
    await expect(drawing).to_be_visible()
    # The keyboard's way: a step's buttons (a and c share the first layer at y 100; b is below).
    step_a = page.get_by_role("region", name="Step a (log)")
    await step_a.get_by_role("group", name="Position of a in the drawing").get_by_role("button", name="Move a right").click()
    await expect(page.get_by_role("status").filter(has_text="Step a moved")).to_be_visible()
    await expect(step_a.get_by_role("button", name="Move a up")).to_be_enabled()
    await step_a.get_by_role("button", name="Move a down").click()
    await visit.axe()
    # The pointer's way: b dragged 100 right and 60 down. (-- more43: each step in the drawing is
    # a group named for it, its box and its port buttons.)
    await drawing.scroll_into_view_if_needed()
    step_b = drawing.get_by_role("group", name="Step b (log) in the drawing")
    box = await step_b.get_by_role("button", name="Step b", exact=True).bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    await page.mouse.move(x, y)
    await page.mouse.down()
    for step in range(1, 6):
        await page.mouse.move(x + 20 * step, y + 12 * step)
    await page.mouse.up()
    await expect(page.get_by_role("status").filter(has_text="Step b moved")).to_be_visible()
    # A drag from a's port (the dot below its box) onto c connects a to c.
    drawing = page.get_by_role("group", name=re.compile("Drawing of the flow"))
    await drawing.scroll_into_view_if_needed()
    port = await drawing.get_by_role("button", name="Connect from a", exact=True).bounding_box()
    target = await drawing.get_by_role("button", name="Step c", exact=True).bounding_box()
    await page.mouse.move(port["x"] + port["width"] / 2, port["y"] + port["height"] / 2)
    await page.mouse.down()
    await page.mouse.move(port["x"] + 30, port["y"] + 30)
    await page.mouse.move(target["x"] + target["width"] / 2, target["y"] + target["height"] / 2)
    await page.mouse.up()
    await expect(page.get_by_role("list", name="Connections from a")).to_contain_text("to c")
    # -- more43: the keyboard reaches the drawing too: a port's Enter goes to the Connect form, from
    # that step; a box's Enter to the step in the list.
    drawing = page.get_by_role("group", name=re.compile("Drawing of the flow"))
    await drawing.get_by_role("button", name="Connect from b", exact=True).press("Enter")
    from_step = page.get_by_role("form", name="Connect").get_by_label("From step")
    await expect(from_step).to_be_focused()
    await expect(from_step).to_have_value("b")
    await drawing.get_by_role("button", name="Step c", exact=True).press("Enter")
    await expect(page.get_by_role("heading", name="Step c (log)")).to_be_focused()
    await expect(page.get_by_role("group", name=re.compile("Drawing of the flow: 3 steps, 2 connections"))).to_be_visible()
    await page.get_by_role("button", name="Save flow").click()
    await expect(page.get_by_role("status").filter(has_text="The flow was saved.")).to_be_visible()
    stored = await admin.ok("get", f"/flows/{dragged['id']}")
    at = {n["id"]: n.get("position") for n in stored["graph"]["nodes"]}
    assert at["a"] == {"x": 50, "y": 120} and at["c"] is None, at
    assert abs(at["b"]["x"] - 230) <= 2 and abs(at["b"]["y"] - 250) <= 2, at
    assert {(e["from"], e["to"]) for e in stored["graph"]["edges"]} == {("a", "b"), ("a", "c")}
    await page.reload()
    await expect(page.get_by_role("heading", name="Dragged", level=1)).to_be_visible()
    await visit.axe()
    await visit.shot("flows-dragged")


async def test_trigger_options_and_the_webhook_token_shown_once(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, admin, site = visit.page, studio["admin"], studio["site"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows")
    create = page.get_by_role("form", name="Create flow")
    await create.get_by_label("Name").fill("Watcher")
    await create.get_by_label("Trigger").select_option(label="Item event")
    await create.get_by_role("button", name="Create flow").click()
    settings = page.get_by_role("region", name="Flow", exact=True)
    await settings.get_by_label("Collections").select_option(["posts"])
    await settings.get_by_role("checkbox", name="Create").check()
    await settings.get_by_role("checkbox", name="Update").check()
    await settings.get_by_label("Runs as role").select_option(label="Subscriber")
    await visit.axe()
    await page.get_by_role("button", name="Save flow").click()
    await expect(page.get_by_role("status").filter(has_text="The flow was saved.")).to_be_visible()
    watcher = [f for f in await admin.ok("get", "/flows") if f["name"] == "Watcher"][0]
    assert (watcher["trigger"], watcher["triggerOptions"]) == (
        "event", {"collection": ["posts"], "action": ["create", "update"], "role": "subscriber"})

    # Made a webhook flow: the API issues a token, shown this once; a new one replaces it.
    await settings.get_by_label("Trigger").select_option(label="Webhook")
    await page.get_by_role("button", name="Save flow").click()
    shown = page.get_by_role("region", name="The webhook token, shown this once")
    first = await shown.get_by_label("Token").input_value()
    assert len(first) >= 24
    assert (await admin.ok("get", f"/flows/{watcher['id']}"))["hasToken"] is True
    await visit.axe()
    await settings.get_by_role("button", name="Issue a new token").click()
    await page.get_by_role("button", name="Save flow").click()
    await expect(shown.get_by_label("Token")).not_to_have_value(first)
    second = await shown.get_by_label("Token").input_value()
    assert re.fullmatch("[0-9a-f]{64}", second)
    await page.reload()
    await expect(page.get_by_role("heading", name="Watcher", level=1)).to_be_visible()
    await expect(page.get_by_text("A token is set (it is never shown again).")).to_be_visible()
    assert first not in await page.content() and second not in await page.content()


async def test_only_site_admins_and_only_this_site(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site = visit.page, studio["site"]
    # Another site's flow is not reachable from this site, even for its admin.
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows/{studio['other_flow']}")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await studio["admin"].err("get", f"/flows/{studio['other_flow']}", 404)
    await page.get_by_role("button", name="Sign out").click()
    # A subscriber has no flows screen, and the API refuses it.
    await sign_in(visit, studio["member"].email, MEMBER_PASSWORD, site)
    await expect(page.get_by_role("link", name="Flows", exact=True)).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site}/flows")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()
    await studio["as_member"].err("get", "/flows", 403, "PERMISSION_DENIED")
    await studio["as_member"].err("get", "/flows/operations", 403, "PERMISSION_DENIED")

"""Email in the studio (docs/studio.md#email), headless Chromium against one server and one browser
for the module, the server sending to a real local SMTP server (aiosmtpd): an admin sends a test
email, creates a layout and a template, sees the server's rendering of it in a sandboxed frame that
runs no script (inline styles applied, the variables typed beside it followed live, unsaved source
named as such), puts it in the layout, sends it to one address, and keeps the suppression list
(add, search, remove). A member who is no admin finds no email screen; another site's template is
not reachable; with the privacy and regulated plugins off, their screen is gone. Controls by role
and label; axe-core on every screen."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, new_member, running_mailbox, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")  # first pass only: conftest.py marks the browser tests


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    with running_mailbox() as mailbox:
        env = {
            "SVC_EMAIL_FROM": "News <news@example.com>",
            "SVC_EMAIL_BASE_URL": "https://api.example.com",
            "SVC_PLUGINS_DISABLED": "privacy,regulated",
        }
        async with shared_site_with(
            svc_shared_db,
            svc_template_db,
            tmp_path_factory,
            smtp_host="127.0.0.1",
            smtp_port=mailbox.port,
            env=env,
        ) as shared:
            member = await new_member(shared.app, shared.site, "subscriber")
            other = await shared.new_site("other")
            hidden = await other.ok(
                "post",
                "/email/templates",
                status=201,
                json={"key": "other-secret", "name": "Other site template", "subject": "x", "text": "x"},
            )
            server = await LiveServer(shared.app.app).start()
            try:
                yield {
                    "server": server,
                    "site": shared.site,
                    "admin": shared.calls,
                    "mailbox": mailbox,
                    "member": member,
                    "other_template": hidden["id"],
                }
            finally:
                await server.stop()


def srcdoc_frame(page: Any) -> Any:
    frames = [f for f in page.frames if f.url == "about:srcdoc"]
    assert len(frames) == 1, [f.url for f in page.frames]
    return frames[0]


async def test_templates_layouts_preview_test_sends_and_suppressions(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, mailbox = visit.page, studio["site"], studio["mailbox"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Email", exact=True).click()
    await expect(page.get_by_role("heading", name="Email", level=1)).to_be_visible()
    await expect(page.get_by_text("Through the server's SMTP settings")).to_be_visible()
    await expect(page.get_by_text("News <news@example.com>")).to_be_visible()
    await expect(page.get_by_role("link", name="Privacy")).to_have_count(0)  # privacy and regulated are off
    await visit.axe()

    # A test send reaches the SMTP server.
    test = page.get_by_role("form", name="Test send")
    await test.get_by_label("To").fill("ops@example.com")
    await test.get_by_role("button", name="Send a test email").click()
    await expect(test.get_by_role("status")).to_contain_text("Test email sent to ops@example.com")
    [message] = await mailbox.wait_for(1, to="ops@example.com")
    assert message["Subject"].startswith("Test email from")

    # A layout: one without a {{content}} slot is refused where it is edited.
    await page.get_by_text("New layout", exact=True).click()
    await page.get_by_role("form", name="New layout").get_by_label("Name").fill("Brand")
    await page.get_by_role("button", name="Create layout").click()
    await expect(page.get_by_role("heading", name="Brand", level=1)).to_be_visible()
    html = page.get_by_label("HTML")
    await html.fill("<div>no slot</div>")
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("alert")).to_contain_text("VALIDATION_FAILED")
    await html.fill('<div style="border: 3px solid rgb(0, 0, 200)">{{content}}<p>Brand footer</p></div>')
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    await expect(page.get_by_role("alert")).to_have_text("")
    await visit.axe()

    # A template, previewed by the server in a sandboxed frame without scripts.
    await page.get_by_role("link", name="Back to email").click()
    await page.get_by_text("New template", exact=True).click()
    form = page.get_by_role("form", name="New template")
    await form.get_by_label("Key").fill("order-shipped")
    await form.get_by_label("Name").fill("Order shipped")
    await form.get_by_label("Subject").fill("Your order {{ order.id }}")
    await page.get_by_role("button", name="Create template").click()
    await expect(page.get_by_role("heading", name="Order shipped", level=1)).to_be_visible()
    preview = page.get_by_title("Preview of the email")
    assert await preview.get_attribute("sandbox") == "allow-same-origin"  # no allow-scripts
    await expect(preview.content_frame.get_by_text("Ann")).to_be_visible()  # the new template's "{{ name }}"

    await page.get_by_label("HTML").fill(
        '<p style="color: rgb(200, 0, 0)">Hi {{ name }}, order <b>{{ order.id }}</b>'
        '</p><script>document.title = "ran"</script><img src=x onerror="alert(1)">'
    )
    # -- flows43: the preview follows the unsaved source as it is typed (debounced), layout too.
    frame = preview.content_frame
    await expect(frame.get_by_text("Hi Ann, order")).to_be_visible()
    await expect(
        page.get_by_text("Rendered by the server from your unsaved changes (save to keep them).")
    ).to_be_visible()
    await page.get_by_label("Layout").select_option(label="Brand")
    await expect(frame.get_by_text("Brand footer")).to_be_visible()
    html_source = page.get_by_label("HTML")
    await html_source.press("End")
    await html_source.press_sequentially("<p>{{ name ")  # an unclosed tag: the server's 400, said
    await expect(page.get_by_text(re.compile("The template cannot be used"))).to_be_visible()
    await expect(frame.get_by_text("Hi Ann, order")).to_be_visible()  # the last good rendering stays
    await html_source.press_sequentially("}}, again</p>")
    await expect(frame.get_by_text("Ann, again")).to_be_visible()
    stored = [t for t in await studio["admin"].ok("get", "/email/templates") if t["key"] == "order-shipped"]
    assert "again" not in (stored[0]["html"] or "") and stored[0]["layoutId"] is None  # nothing saved yet
    await page.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    variables = page.get_by_label("Variables (JSON)")
    await variables.fill('{"name": "Bob <b>", "order": {"id": 42}}')  # followed as typed, no save
    # Escaped: the value's "<b>" is text.
    await expect(frame.get_by_text("Hi Bob <b>, order 42")).to_be_visible()
    await expect(frame.get_by_text("Brand footer")).to_be_visible()
    await expect(page.get_by_text("Your order 42", exact=True)).to_be_visible()
    await expect(page.get_by_label("Plain text part")).to_contain_text("Hi Bob <b>, order 42")
    inner = srcdoc_frame(page)
    # The server's sanitising took script and handler; the layout's and the template's inline
    # styles are applied through the CSSOM (the studio's CSP refuses style attributes).
    assert await inner.evaluate("document.scripts.length") == 0
    assert await inner.evaluate("document.querySelectorAll('[onerror]').length") == 0
    assert await frame.get_by_text("Hi Bob").evaluate("e => getComputedStyle(e).color") == "rgb(200, 0, 0)"
    assert (
        await frame.get_by_text("Brand footer").evaluate(
            "e => getComputedStyle(e.parentElement).borderTopColor"
        )
        == "rgb(0, 0, 200)"
    )
    await variables.fill('{"name": ')
    await expect(page.get_by_text(re.compile("^The variables are not valid JSON"))).to_be_visible()
    await variables.fill('{"name": "Cy", "order": {"id": 7}}')
    await expect(frame.get_by_text("Hi Cy, order 7")).to_be_visible()
    await visit.axe()
    await visit.shot("email-template")

    # This template, sent to one address.
    send = page.get_by_role("form", name="Send this template")
    await send.get_by_label("To").fill("ann@example.com")
    await send.get_by_role("button", name="Send to this address").click()
    await expect(send.get_by_role("status")).to_contain_text("Sent to ann@example.com: 1 sent")
    [sent] = await mailbox.wait_for(1, to="ann@example.com")
    assert sent["Subject"] == "Your order 7"
    body = sent.get_body(("html",)).get_content()
    assert "Hi Cy" in body and "Brand footer" in body and "<script" not in body

    # The overview lists both; a layout in use is not deleted.
    await page.get_by_role("link", name="Back to email").click()
    await expect(
        page.get_by_role("table", name="Templates of this site").get_by_role(
            "row", name=re.compile("Order shipped")
        )
    ).to_contain_text("Brand")
    await page.get_by_role("link", name="Brand", exact=True).click()
    await page.get_by_role("button", name="Delete layout").click()
    await expect(page.get_by_role("alert")).to_contain_text("CONFLICT")
    await page.get_by_role("link", name="Back to email").click()
    await visit.shot("email")

    # The suppression list.
    await page.get_by_role("link", name="Suppression list").click()
    await expect(page.get_by_role("heading", name="Suppression list", level=1)).to_be_visible()
    await expect(page.get_by_text("No address is suppressed.")).to_be_visible()
    add = page.get_by_role("form", name="Suppress an address")
    for address in ("spam@example.com", "keep@example.com"):
        await add.get_by_label("Address").fill(address)
        await add.get_by_label("Reason").fill("asked by phone")
        await add.get_by_role("button", name="Suppress an address").click()
        await expect(page.get_by_role("status").filter(has_text=f"{address} is suppressed.")).to_be_visible()
    await add.get_by_label("Address").fill("SPAM@example.com")
    await add.get_by_role("button", name="Suppress an address").click()
    await expect(page.get_by_role("alert")).to_contain_text("CONFLICT")
    assert {s["email"] for s in await studio["admin"].ok("get", "/email/suppressions")} == {
        "spam@example.com",
        "keep@example.com",
    }
    await page.get_by_role("searchbox", name="Search addresses").fill("spam")
    await page.get_by_role("button", name="Search", exact=True).click()
    table = page.get_by_role("table")
    await expect(table.get_by_role("row")).to_have_count(2)  # the header and spam@
    await visit.axe()
    await visit.shot("email-suppressions")
    await page.get_by_role("button", name="Remove spam@example.com from the list").click()
    await expect(page.get_by_text("spam@example.com may receive marketing mail again.")).to_be_visible()
    await expect(page.get_by_text("No suppressed address matches.")).to_be_visible()
    assert [s["email"] for s in await studio["admin"].ok("get", "/email/suppressions")] == [
        "keep@example.com"
    ]


async def test_a_member_and_another_sites_template(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    await sign_in(visit, member.email, member.password, site)
    await expect(page.get_by_role("heading", level=1)).to_be_visible()
    await expect(page.get_by_role("link", name="Email", exact=True)).to_have_count(0)
    for screen in ("email", "email/suppressions", "privacy"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/{screen}")
        await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()

    await page.get_by_role("button", name="Sign out").click()
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/email/t/{studio['other_template']}")
    await expect(page.get_by_role("heading", name="This template does not exist (any more).")).to_be_visible()
    await page.goto(f"{visit.base}/studio/#/s/{site}/privacy")  # the plugins are off in this app
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()

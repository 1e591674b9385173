"""-- govern43: the site's own SMTP server in the studio's email screen (docs/studio.md#email),
headless Chromium against one server, the mail going to real local SMTP servers (aiosmtpd): the
server's and the site's own, which requires AUTH. A site admin saves the site's server with its
password, which is never shown again (only "set"), sees a wrong host refused by the API, sends a
test that reaches the site's server (not the server's), keeps the password on a save that leaves
it empty, and removes the site's server again. A marketing send scheduled for later is listed with
its progress, which the open screen follows as its jobs run (one recipient unsubscribed
meanwhile is skipped). Controls by role and label; axe-core on every
screen."""

from __future__ import annotations

import base64
import datetime as dt
import socket
from typing import Any

import pytest
import pytest_asyncio
from aiosmtpd.controller import Controller
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import new_member, run_due_jobs, running_mailbox, shared_site_with
from kernel.testing.live import LiveServer
from plugin_tests.email.test_email_site_smtp import PASSWORD, AuthMailbox

pytestmark = [
    pytest.mark.asyncio(loop_scope="package"),
    pytest.mark.svc_first_pass_only("drives the email API; plugin_tests/email covers it on both backends"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    site_box = AuthMailbox()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        site_box.port = sock.getsockname()[1]
    controller = Controller(site_box, hostname="127.0.0.1", port=site_box.port, authenticator=site_box.authenticate,
                            auth_require_tls=False, auth_required=True)
    controller.start()
    env = {"SVC_EMAIL_FROM": "News <news@example.com>", "SVC_PLUGINS_DISABLED": "privacy,regulated",
           "SVC_ENCRYPTION_KEY": base64.b64encode(b"m" * 32).decode(), "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"}
    try:
        with running_mailbox() as mailbox:
            async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, smtp_host="127.0.0.1",
                                        smtp_port=mailbox.port, env=env) as shared:
                site_admin = await new_member(shared.app, shared.site, "admin")
                server = await LiveServer(shared.app.app).start()
                try:
                    yield {"server": server, "site": shared.site, "admin": shared.calls, "mailbox": mailbox,
                           "site_box": site_box, "site_admin": site_admin, "app": shared.app}
                finally:
                    await server.stop()
    finally:
        controller.stop()


async def test_the_sites_own_smtp_server(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, box = visit.page, studio["site"], studio["site_box"]
    await sign_in(visit, studio["site_admin"].email, studio["site_admin"].password, site)
    await page.get_by_role("link", name="Email", exact=True).click()
    await expect(page.get_by_role("heading", name="Email", level=1)).to_be_visible()
    await expect(page.get_by_text("None: mail leaves through the server's settings.")).to_be_visible()
    form = page.get_by_role("form", name="This site's own SMTP server")
    await expect(form.get_by_label("Password")).to_have_accessible_description("No password is set.")
    await visit.axe()

    # A host the outbound check refuses (a metadata address): the API's refusal, nothing saved.
    await form.get_by_label("Host").fill("169.254.169.254")
    await form.get_by_role("button", name="Save").click()
    await expect(form.get_by_role("status")).to_contain_text("VALIDATION_FAILED")
    assert await studio["admin"].ok("get", "/email/smtp") is None

    await form.get_by_label("Host").fill("127.0.0.1")
    await form.get_by_label("Port").fill(str(box.port))
    await form.get_by_label("Security").select_option(label="None (plain text)")
    await form.get_by_label("Username").fill("site-user")
    await form.get_by_label("Password").fill(PASSWORD)
    await form.get_by_label("From").fill("Site <hello@site.example>")
    await form.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("status").filter(has_text="This site's SMTP server is saved")).to_be_visible()
    await expect(page.get_by_text(f"127.0.0.1, port {box.port}; password set.")).to_be_visible()
    await expect(page.get_by_text("Through this site's own SMTP server")).to_be_visible()
    # Write-only: the field is empty again, and the page holds the password nowhere.
    await expect(form.get_by_label("Password")).to_have_value("")
    await expect(form.get_by_label("Password")).to_have_accessible_description(
        "A password is set. Leave this empty to keep it (with the same host and username); type a new one to replace it.")
    assert PASSWORD not in await page.content()
    await visit.axe()
    await visit.shot("email-smtp")

    # The test send goes through the site's server, after its AUTH.
    test = page.get_by_role("form", name="Test send")
    await test.get_by_label("To").fill("ops@example.com")
    await test.get_by_role("button", name="Send a test email").click()
    await expect(test.get_by_role("status")).to_contain_text("Test email sent to ops@example.com")
    [message] = await box.wait_for(1, to="ops@example.com")
    assert message["From"] == "Site <hello@site.example>" and box.logins == [("site-user", True)]
    assert not studio["mailbox"].messages()

    # Saved again without a password: the stored one is kept (same host and user).
    await form.get_by_label("From").fill("Site news <news@site.example>")
    await form.get_by_role("button", name="Save").click()
    await expect(page.get_by_text(f"127.0.0.1, port {box.port}; password set.")).to_be_visible()
    assert (await studio["admin"].ok("get", "/email/smtp"))["hasPassword"] is True

    await form.get_by_role("button", name="Use the server's settings again").click()
    await expect(page.get_by_role("status").filter(has_text="This site's SMTP server is removed")).to_be_visible()
    await expect(page.get_by_text("Through the server's SMTP settings")).to_be_visible()
    assert await studio["admin"].ok("get", "/email/smtp") is None
    await visit.axe()


async def test_a_scheduled_marketing_send_and_its_progress(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, admin, mailbox = visit.page, studio["site"], studio["admin"], studio["mailbox"]
    await admin.ok("post", "/email/templates", status=201, json={
        "key": "news", "name": "News", "subject": "Spring news", "text": "Hi. Leave: {{ unsubscribeUrl }}"})
    await sign_in(visit, studio["site_admin"].email, studio["site_admin"].password, site)
    await page.get_by_role("link", name="Email", exact=True).click()
    form = page.get_by_role("form", name="New marketing send")
    await form.get_by_label("Template").select_option(label="News")
    await form.get_by_label("Recipients").fill("a@example.com\nb@example.com\nc@example.com")
    # Two hours from now, as the browser's datetime-local control writes it (its own time zone).
    later = await page.evaluate(
        "() => { const d = new Date(Date.now() + 7200e3); d.setMinutes(d.getMinutes() - d.getTimezoneOffset());"
        " return d.toISOString().slice(0, 16); }")
    await form.get_by_label("Send at").fill(later)
    await form.get_by_role("button", name="Send marketing email").click()
    await expect(form.get_by_role("status")).to_have_text(
        "Queued for 3 recipients; left out: 0 suppressed, 0 without consent.")
    sends = page.get_by_role("table", name="Queued and scheduled sends")
    row = sends.get_by_role("row").filter(has_text="Spring news")
    await expect(row).to_contain_text("Scheduled")
    await expect(row).to_contain_text("0 sent, 0 skipped, 0 failed, 3 waiting, of 3")
    await expect(row.get_by_role("progressbar", name="Progress of Spring news")).to_be_visible()
    await visit.axe()
    await visit.shot("email-marketing-scheduled")

    # One recipient unsubscribes; the jobs run at their time; the open screen follows them.
    await admin.ok("post", "/email/suppressions", status=201, json={"email": "c@example.com"})
    [batch] = await admin.ok("get", "/email/batches")
    at = dt.datetime.fromisoformat(batch["sendAt"].replace("Z", "+00:00"))
    await run_due_jobs(studio["app"], at + dt.timedelta(seconds=1), periodic=False)
    await expect(row).to_contain_text("2 sent, 1 skipped, 0 failed, 0 waiting, of 3")
    await expect(row).to_contain_text("Done")
    assert sorted(r for e in mailbox.envelopes for r in e.rcpt_tos) == ["a@example.com", "b@example.com"]
    await visit.axe()


async def test_a_scheduled_send_is_cancelled_with_its_button(studio, visit):  # noqa: F811 - the shared fixture
    # -- more43: a scheduled send's Cancel button, before it starts; once started the API's 409
    # BATCH_STARTED (tested in plugin_tests/email/test_email_batches.py) would show in the status.
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    at = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=3)).isoformat()
    made = await admin.ok("post", "/email/send", status=202, json={
        "to": ["x@example.com"], "inline": {"subject": "Cancel me", "text": "x"}, "category": "marketing", "sendAt": at})
    await sign_in(visit, studio["site_admin"].email, studio["site_admin"].password, site)
    await page.get_by_role("link", name="Email", exact=True).click()
    row = page.get_by_role("table", name="Queued and scheduled sends").get_by_role("row").filter(has_text="Cancel me")
    await expect(row).to_contain_text("Scheduled")
    await visit.axe()
    await row.get_by_role("button", name="Cancel the send of Cancel me").click()
    await expect(page.get_by_role("form", name="New marketing send").get_by_role("status")).to_have_text(
        "Cancel me: the send was cancelled.")
    await expect(row).to_contain_text("Cancelled")
    await expect(row.get_by_role("button", name="Cancel the send of Cancel me")).to_have_count(0)
    assert (await admin.ok("get", f"/email/batches/{made['batchId']}"))["status"] == "cancelled"
    await visit.axe()

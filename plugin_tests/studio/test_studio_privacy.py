"""Privacy and regulated content in the studio (docs/studio.md#privacy), headless Chromium against
one server and one browser for the module: an admin sees their consents, turns dual control on and
files an erasure request that only a second admin may confirm, who confirms it; it is executed and
the item is gone. Envelope mode is turned on with the password asked again and its migration runs
batch by batch to the end; the key is rotated and the data keys wrapped again with their progress;
a subject access export is downloaded; the field-access log shows its reads. Another site's request
is not listed; a member finds no privacy screen; with the email plugin off its screen is gone.
Controls by role and label; axe-core on every screen."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")  # first pass only: conftest.py marks the browser tests
ENV = {
    "SVC_ENCRYPTION_KEY": "main:" + base64.b64encode(b"m" * 32).decode(),
    "SVC_ENCRYPTION_KEYS": "next:" + base64.b64encode(b"n" * 32).decode(),
    "SVC_REGULATED_BATCH": "1",
    "SVC_PLUGINS_DISABLED": "email",
}
PATIENTS = [
    {"name": "Ann", "email": "ann@example.com", "ssn": "111-11-1111"},
    {"name": "Bob", "email": "bob@example.com", "ssn": "222-22-2222"},
    {"name": "Cy", "email": "cy@example.com", "ssn": "333-33-3333"},
]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=ENV) as shared:
        admin = shared.calls
        await admin.collection(
            "patients",
            {"name": "string", "email": "string", "ssn": {"type": "text", "options": {"sensitive": True}}},
        )
        patients = await admin.create("patients", PATIENTS)
        second = await new_member(shared.app, shared.site, "admin")
        member = await new_member(shared.app, shared.site, "subscriber")
        other = await shared.new_site("other")
        await other.collection("patients", {"email": "string"})
        await other.create("patients", [{"email": "zed@example.com"}])
        await other.ok(
            "post",
            "/admin/erasure",
            status=201,
            json={
                "collection": "patients",
                "filter": {"email": {"_eq": "zed@example.com"}},
                "reason": "Other site's ticket",
            },
        )
        server = await LiveServer(shared.app.app).start()
        try:
            yield {
                "server": server,
                "site": shared.site,
                "admin": admin,
                "patients": patients,
                "second": second,
                "member": member,
            }
        finally:
            await server.stop()


async def test_erasure_under_dual_control_by_a_second_admin(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    ann = studio["patients"][0]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    # The email plugin is off in this app.
    await expect(page.get_by_role("link", name="Email", exact=True)).to_have_count(0)
    await page.get_by_role("link", name="Privacy", exact=True).click()
    await expect(page.get_by_role("heading", name="Privacy", level=1)).to_be_visible()
    consents = page.get_by_role("table", name="Your consent decisions")
    await expect(consents.get_by_role("row", name=re.compile("^Marketing No"))).to_be_visible()
    await expect(page.get_by_text("No erasure requests.")).to_be_visible()  # the other site's is not here
    await visit.axe()

    await page.get_by_label("Dual control: a second admin confirms each erasure").check()
    await expect(page.get_by_role("status").filter(has_text="Dual control is on.")).to_be_visible()
    assert (await admin.ok("get", "/settings/erasureDualControl"))["value"] is True
    form = page.get_by_role("form", name="File an erasure request")
    await form.get_by_label("Collection").select_option("patients")
    await form.get_by_label("Filter (JSON)").fill('{"email": {"_eq": "ann@example.com"}}')
    await form.get_by_label("Reason").fill("Art. 17 request #12")
    await form.get_by_role("button", name="File request").click()
    await expect(page.get_by_text("Filed: 1 items matched; a second admin must confirm it.")).to_be_visible()
    row = page.get_by_role("table", name="Erasure requests, newest first").get_by_role(
        "row", name=re.compile("Art. 17")
    )
    await expect(row).to_contain_text("Awaiting a second admin (dual control)")
    await expect(row).to_contain_text("Another admin must confirm it")
    await expect(row.get_by_role("button")).to_have_count(0)  # the requester cannot confirm
    assert "ann@example.com" not in json.dumps(await admin.ok("get", "/admin/erasure"))
    await visit.axe()
    await visit.shot("privacy-erasure")

    # The second admin confirms, then erases.
    await page.get_by_role("button", name="Sign out").click()
    await sign_in(visit, studio["second"].email, studio["second"].password, site)
    await page.get_by_role("link", name="Privacy", exact=True).click()
    row = page.get_by_role("table", name="Erasure requests, newest first").get_by_role(
        "row", name=re.compile("Art. 17")
    )
    await row.get_by_role("button", name="Confirm as second admin").click()
    await expect(page.get_by_text("Confirmed: the request may be executed.")).to_be_visible()
    await expect(row).to_contain_text("Confirmed")
    await row.get_by_role("button", name="Erase now").click()
    await expect(page.get_by_text(re.compile(r"^Erased: \d+ records\.$"))).to_be_visible()
    await expect(row).to_contain_text("Executed")
    await admin.err("get", f"/items/patients/{ann['id']}", 404)
    assert len(await admin.ok("get", "/items/patients")) == 2


async def test_envelope_migration_key_rotation_export_and_the_access_log(studio, visit, tmp_path):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Privacy", exact=True).click()
    tabs = page.get_by_role("navigation", name="Privacy screens")
    await tabs.get_by_role("link", name="Keys and encryption").click()
    keys = page.get_by_role("table", name="Encryption keys (material never shown)")
    await expect(keys.get_by_role("row", name=re.compile("^main Active"))).to_be_visible()
    await expect(keys.get_by_role("row", name=re.compile("^next Loaded, not used here"))).to_be_visible()
    await visit.axe()

    # Envelope mode on: the password again, then the migration batch by batch to its end.
    change = page.get_by_role("form", name="Change envelope mode")
    await change.get_by_label("Your password").fill("wrong password")
    await change.get_by_role("button", name="Turn envelope mode on").click()
    await expect(page.get_by_role("alert")).to_contain_text("INVALID_CREDENTIALS")
    await change.get_by_label("Your password").fill(ADMIN_PASSWORD)
    await change.get_by_role("button", name="Turn envelope mode on").click()
    await expect(page.get_by_text("Envelope mode is on; stored values are being encrypted.")).to_be_visible()
    await expect(page.get_by_text(re.compile(r"Migration done \([1-9]\d* items\)\."))).to_be_visible()
    state = await admin.ok("get", "/admin/encryption/envelope")
    assert state["enabled"] is True and state["done"] is True
    await expect(change.get_by_role("button", name="Turn envelope mode off")).to_be_visible()
    await visit.drained()
    migrations = [url for url in visit.responses if "/envelope/migrate" in url]
    assert len(migrations) >= len(PATIENTS)  # one item per batch here

    # Rotation to the loaded key "next"; the older data keys are wrapped again with progress.
    await page.get_by_label("New active key").select_option("next")
    await page.get_by_role("button", name="Rotate", exact=True).click()
    await expect(
        page.get_by_text(re.compile(r"^Now active: next \(was main\); [1-9]\d* data keys"))
    ).to_be_visible()
    await expect(page.get_by_text(re.compile(r"Done: [1-9]\d* data keys wrapped again"))).to_be_visible()
    await expect(page.get_by_role("progressbar", name="Rewrap progress")).to_be_visible()
    await expect(keys.get_by_role("row", name=re.compile("^next Active"))).to_be_visible()
    await expect(keys.get_by_role("row", name=re.compile("^main Retired"))).to_be_visible()
    envelope = page.get_by_role("region", name="Envelope mode")
    # The active key is now "next".
    await expect(envelope.get_by_role("definition")).to_have_text(["On", "next", "Idle"])
    rewrap = await admin.ok("post", "/admin/encryption/keys/rewrap", json={})
    assert rewrap["done"] is True and rewrap["remaining"] == 0
    await visit.axe()
    await visit.shot("privacy-keys")

    # A subject access export by a sensitive value, downloaded.
    await tabs.get_by_role("link", name="Subject access export").click()
    export = page.get_by_role("form", name="Subject access export")
    await export.get_by_label("Collection").select_option("patients")
    await export.get_by_label("Filter (JSON)").fill('{"ssn": {"_eq": "222-22-2222"}}')
    await export.get_by_role("button", name="Export").click()
    await expect(page.get_by_text("1 records exported.")).to_be_visible()
    bob = studio["patients"][1]
    await expect(page.get_by_role("list", name="Exported items").get_by_role("link")).to_have_text(
        f"patients / {bob['id']}"
    )
    async with page.expect_download() as info:
        await page.get_by_role("link", name="Download the export (JSON)").click()
    saved = tmp_path / "export.json"
    await (await info.value).save_as(saved)
    got = json.loads(Path(saved).read_text(encoding="utf-8"))
    assert got["recordCount"] == 1 and got["records"][0]["ssn"] == "222-22-2222"
    await visit.axe()

    # The field-access log names the export's reads, never the values.
    await tabs.get_by_role("link", name="Field-access log").click()
    log = page.get_by_role("table", name=re.compile(r"^Field reads \(\d+\)$"))
    await expect(log.get_by_role("row", name=re.compile("Subject access export")).first).to_contain_text(
        "ssn"
    )
    await expect(log).not_to_contain_text("222-22-2222")
    filters = page.get_by_role("search", name="Filter the log")
    await filters.get_by_label("Item id").fill(str(bob["id"]))
    await filters.get_by_role("button", name="Filter").click()
    await expect(page).to_have_url(re.compile(f"itemId={bob['id']}"))
    rows = log.get_by_role("row")
    await expect(rows.nth(1)).to_contain_text(f"patients / {bob['id']}")
    # Waits out the unfiltered table, which the filtered one replaces.
    await expect(rows.filter(has_text="patients /").filter(has_not_text=str(bob["id"]))).to_have_count(0)
    await visit.axe()
    await visit.shot("privacy-log")

    # A migration left unfinished (turned off through the API: decrypting) is carried on by the
    # page when it is opened again: the server keeps where it is.
    state = await admin.ok(
        "post", "/admin/encryption/envelope", json={"enabled": False, "password": ADMIN_PASSWORD}
    )
    assert state["migration"]["state"] == "decrypting" and state["done"] is False
    await tabs.get_by_role("link", name="Keys and encryption").click()
    await expect(page.get_by_text(re.compile(r"Migration done \([1-9]\d* items\)\."))).to_be_visible()
    state = await admin.ok("get", "/admin/encryption/envelope")
    assert state["enabled"] is False and state["done"] is True
    assert (await admin.get("patients", bob["id"]))["ssn"] == "222-22-2222"


async def test_a_member_finds_no_privacy_screen(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    await sign_in(visit, member.email, member.password, site)
    await expect(page.get_by_role("heading", level=1)).to_be_visible()
    await expect(page.get_by_role("link", name="Privacy", exact=True)).to_have_count(0)
    for screen in ("privacy", "privacy/keys", "privacy/log", "email"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/{screen}")
        await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()

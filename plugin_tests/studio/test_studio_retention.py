"""-- govern43: retention and restriction of processing in the studio (docs/studio.md, "Privacy"),
headless Chromium against one server: a site admin reads each retention target's horizon, shortens
one (the site's setting `retention`), prunes now after a confirmation and sees the counts per
kind of record (the run audited); a member restricts the processing of their own data
with a reason and lifts it again on their own page. Controls by role and label; axe-core on every
screen."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = [
    pytest.mark.asyncio(loop_scope="package"),
    pytest.mark.svc_first_pass_only("drives the privacy API; plugin_tests/privacy covers it on both backends"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory) as shared:
        member = await new_member(shared.app, shared.site, "subscriber")
        server = await LiveServer(shared.app.app).start()
        try:
            yield {"server": server, "site": shared.site, "admin": shared.calls, "member": member, "app": shared.app}
        finally:
            await server.stop()


async def test_retention_horizons_and_a_prune_now(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, admin = visit.page, studio["site"], studio["admin"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Privacy", exact=True).click()
    await page.get_by_role("navigation", name="Privacy screens").get_by_role("link", name="Retention").click()
    table = page.get_by_role("table", name=f"Retention horizons in {site}")
    revisions = table.get_by_role("row", name=re.compile("^revisions "))
    await expect(page.get_by_label("Days revisions are kept")).to_have_value("365")
    await expect(revisions).to_contain_text("the default")
    await visit.axe()

    await page.get_by_label("Days revisions are kept").fill("180")
    await page.get_by_role("button", name="Save the horizons").click()
    await expect(page.get_by_role("status").filter(has_text="The horizons are saved.")).to_be_visible()
    await expect(revisions).to_contain_text("this site")
    assert (await admin.ok("get", "/settings/retention"))["value"] == {"revisions": 180}
    assert [r["days"] for r in await admin.ok("get", "/retention") if r["target"] == "revisions"] == [180]
    await visit.axe()
    await visit.shot("privacy-retention")

    await page.get_by_role("button", name="Prune now").click()
    dialog = page.get_by_role("dialog", name=f"Prune the records of {site} past their horizons?")
    await visit.axe()
    await dialog.get_by_role("button", name="Prune now").click()
    await expect(page.get_by_text(re.compile(r"^Pruned \d+ records"))).to_be_visible()
    deleted = page.get_by_role("table", name="Deleted, by kind of record")
    await expect(deleted.get_by_role("row", name=re.compile("^revisions \\d+$"))).to_be_visible()
    audit = await admin.ok("get", "/audit", params={"limit": 5})
    assert any(a["action"] == "retention_run" for a in audit)
    await visit.axe()


async def test_a_member_restricts_processing_of_their_data(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, member = visit.page, studio["site"], studio["member"]
    mine = Calls(studio["app"].client, member.headers)
    await sign_in(visit, member.email, member.password, site)
    await page.get_by_role("link", name="Your account").click()
    form = page.get_by_role("form", name="Restriction of processing")
    await expect(page.get_by_text("Processing of your data is not restricted.")).to_be_visible()
    await visit.axe()
    await form.get_by_label("Restrict the processing of my data").check()
    await form.get_by_label("Reason (optional, shown only to you)").fill("I contest the accuracy")
    await form.get_by_role("button", name="Save the restriction").click()
    await expect(form.get_by_role("status")).to_have_text("Processing of your data is now restricted.")
    await expect(page.get_by_text("Processing of your data is restricted.", exact=True)).to_be_visible()
    assert await mine.ok("get", "/me/restriction") == {"restricted": True, "reason": "I contest the accuracy"}
    await visit.axe()
    await visit.shot("me-restriction")

    await form.get_by_label("Restrict the processing of my data").uncheck()
    await form.get_by_role("button", name="Save the restriction").click()
    await expect(form.get_by_role("status")).to_have_text("The restriction is lifted.")
    assert await mine.ok("get", "/me/restriction") == {"restricted": False}

"""-- govern43: everyone's long work in the studio's "Work in progress" screen (docs/studio.md,
"Work in progress"), read from GET /work: a release another admin published (its outcome and who
started it, a link to the release), and an envelope migration drained batch by batch from
elsewhere (through the API, as another browser would) that the open screen follows live to its
end. A member without admin rights has no such section. Controls by role and label; axe-core on
every screen."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, MEMBER_PASSWORD, Calls, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = [
    pytest.mark.asyncio(loop_scope="package"),
    pytest.mark.svc_first_pass_only("drives the releases and regulated APIs; their own tests cover both backends"),
]
ENV = {"SVC_ENCRYPTION_KEY": "main:" + base64.b64encode(b"w" * 32).decode(), "SVC_REGULATED_BATCH": "1"}


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=ENV) as shared:
        admin = shared.calls
        await admin.collection("notes", {"title": "string", "secret": {"type": "text", "options": {"sensitive": True}}})
        await admin.create("notes", [{"title": f"Note {i}", "secret": f"s{i}", "status": "draft"} for i in range(3)])
        notes = [n["id"] for n in await admin.ok("get", "/items/notes")]
        site_admin = await new_member(shared.app, shared.site, "admin")
        other = Calls(shared.app.client, site_admin.headers)
        release = await other.ok("post", "/releases", status=201, json={
            "name": "Autumn", "atomicityMode": "best_effort",
            "addItems": [{"collection": "notes", "itemId": str(i), "targetStatus": "published"} for i in notes]})
        await other.ok("post", f"/releases/{release['id']}/publish")
        member = await new_member(shared.app, shared.site, "subscriber")
        server = await LiveServer(shared.app.app).start()
        try:
            yield {"server": server, "site": shared.site, "other": other, "site_admin": site_admin,
                   "release": release["id"], "member": member}
        finally:
            await server.stop()


async def test_everyones_work_is_listed_and_followed_live(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, site, other = visit.page, studio["site"], studio["other"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Work in progress", exact=True).click()
    everyone = page.get_by_role("list", name="Everyone's work in this site")
    published = everyone.get_by_role("listitem").filter(has_text="Publishing")
    await expect(published).to_contain_text("Done: 3 of 3.")
    await expect(published).to_contain_text(f"Started by {studio['site_admin'].email}")
    await expect(published.get_by_role("link", name="Autumn")).to_have_attribute(
        "href", f"#/s/{site}/releases/{studio['release']}")
    await visit.axe()

    # Another admin, elsewhere, turns envelope mode on and drains the migration batch by batch:
    # the open screen follows each batch.
    await other.ok("post", "/admin/encryption/envelope",
                   json={"enabled": True, "password": MEMBER_PASSWORD})
    migration = everyone.get_by_role("listitem").filter(has_text="Envelope migration")
    await other.ok("post", "/admin/encryption/envelope/migrate", json={"limit": 1})
    await expect(migration).to_contain_text("Running: 1 so far.")
    await expect(migration.get_by_role("progressbar", name="Progress of Keys and encryption")).to_be_visible()
    await other.ok("post", "/admin/encryption/envelope/migrate", json={"limit": 1})
    await expect(migration).to_contain_text("Running: 2 so far.")
    await visit.axe()
    await visit.shot("work-everyone")
    while not (await other.ok("post", "/admin/encryption/envelope/migrate", json={"limit": 1}))["done"]:
        pass
    await expect(migration).to_contain_text("Done.")
    await visit.axe()


async def test_a_member_has_no_such_section(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, member = visit.page, studio["member"]
    await sign_in(visit, member.email, member.password, studio["site"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['site']}/work")
    await expect(page.get_by_role("heading", name="Work in progress", level=1)).to_be_visible()
    await expect(page.get_by_role("heading", name="Everyone's work in this site")).to_have_count(0)
    await visit.axe()

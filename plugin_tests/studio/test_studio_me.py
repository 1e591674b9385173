"""The user's own page in headless Chromium (docs/studio.md, "Your account"), against one real
server: a member without admin rights edits their name, changes the password (the API's error at
its field, and the session going on as the API says), ends sessions, creates, sees once and
revokes a personal API key, picks a language that switches the studio at once and saves the
appearance, save shortcut and save action (the editor follows them), gives and withdraws a
consent, and downloads the export of their own data. Controls are found by role and label;
axe-core checks every screen. The browser, ``Visit`` and ``sign_in`` are test_studio_browser's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, check_console, open_visit, sign_in

from kernel.testing import Calls, Member, new_member, shared_site_with
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")
API = "/api/v1"


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(svc_shared_db, svc_template_db, tmp_path_factory) -> Any:
    """Site A with ``notes`` (read and update for each person made by ``person()``), on an app
    without the auth rate limit: each case signs in and out several times from one address."""
    async with shared_site_with(
        svc_shared_db, svc_template_db, tmp_path_factory, rate_limit_auth=0
    ) as shared:
        async for value in _studio(shared):
            yield value


async def _studio(shared_site: Any) -> Any:
    admin = shared_site.calls
    await admin.collection("notes", {"body": "text"})
    await admin.create("notes", [{"id": "n1", "body": "First note"}])
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {"server": server, "site": shared_site.site, "admin": admin, "app": shared_site.app}
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def person(studio) -> Any:
    """A new member (subscriber, no admin rights) who may read and update notes."""
    app, site = studio["app"], studio["site"]
    member = await new_member(app, site, "subscriber")
    await studio["admin"].grant(
        [{"collection": "notes", "action": a} for a in ("read", "update")], {"userId": member.id}
    )
    app.kernel.access.invalidate(site)
    return member


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, studio) -> Any:
    seen = await open_visit(browser, studio["server"].base_url, height=900, accept_downloads=True)
    try:
        yield seen
    finally:
        await seen.close()
    check_console(seen)


async def open_account(visit: Visit, member: Member, site: str) -> Any:
    from playwright.async_api import expect

    await sign_in(visit, member.email, member.password, site)
    page = visit.page
    await page.get_by_role("link", name="Your account").click()
    await expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    await expect(page.get_by_role("table", name="Where you are signed in")).to_be_visible()
    return page


def as_member(studio: dict[str, Any], member: Member, token: str | None = None) -> Calls:
    headers = {**member.headers, **({"Authorization": f"Bearer {token}"} if token else {})}
    return Calls(studio["app"].client, headers)


async def test_a_member_edits_the_profile_and_reaches_no_admin_screen(studio, visit, person):
    from playwright.async_api import expect

    page = await open_account(visit, person, studio["site"])
    await visit.axe()
    await visit.shot("me")
    email = page.get_by_label("Email address")
    await expect(email).to_have_value(person.email)
    await expect(email).not_to_be_editable()
    await page.get_by_label("First name").fill("Grace")
    await page.get_by_label("Last name").fill("Hopper")
    await page.get_by_role("button", name="Save profile").click()
    await expect(page.get_by_role("status").filter(has_text="Profile saved.")).to_be_visible()
    me = await as_member(studio, person).ok("get", "/auth/me")
    assert (me["firstName"], me["lastName"], me["email"]) == ("Grace", "Hopper", person.email)
    # No admin screen is offered, and the API refuses the admin's calls if forced.
    await expect(page.get_by_role("link", name=re.compile("^(Users|Roles|Settings|Schema)$"))).to_have_count(
        0
    )
    forced = await studio["app"].client.get(f"{API}/api-keys", headers=person.headers)
    assert forced.status_code == 403 and forced.json()["errors"][0]["code"] == "PERMISSION_DENIED"


async def test_a_password_change_shows_the_apis_error_and_keeps_this_session(studio, visit, person):
    from playwright.async_api import expect

    elsewhere = await studio["app"].login(person.email, person.password, site=studio["site"])
    page = await open_account(visit, person, studio["site"])
    current, new = page.get_by_label("Current password"), page.get_by_label("New password")
    await current.fill("not-the-password")
    await new.fill("a-new-password-9")
    await page.get_by_role("button", name="Change password").click()
    await expect(current).to_have_attribute("aria-invalid", "true")
    await expect(current).to_have_accessible_description(re.compile("current password is wrong"))
    await current.fill(person.password)
    await new.fill("short")
    await page.get_by_role("button", name="Change password").click()
    await expect(new).to_have_attribute("aria-invalid", "true")
    await expect(new).to_have_accessible_description(re.compile("newPassword.*at least 8"))
    await expect(current).not_to_have_attribute("aria-invalid", "true")
    await visit.axe()
    await new.fill("a-new-password-9")
    await page.get_by_role("button", name="Change password").click()
    await expect(page.get_by_role("status").filter(has_text="Password changed.")).to_be_visible()
    # The other session ended; this one goes on, a reload too (the new svc_refresh cookie).
    ended = await studio["app"].client.get(f"{API}/auth/me", headers={"Authorization": f"Bearer {elsewhere}"})
    assert ended.status_code == 401
    await expect(page.get_by_role("table", name="Where you are signed in").get_by_role("row")).to_have_count(
        2
    )
    await page.reload()
    await expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    assert await studio["app"].login(person.email, "a-new-password-9", site=studio["site"])


async def test_a_member_ends_one_session_then_all_others(studio, visit, person):
    from playwright.async_api import expect

    client = studio["app"].client
    refresh = []  # the refresh tokens of two more sessions
    for _ in range(2):
        resp = await client.post(
            f"{API}/auth/login",
            json={"email": person.email, "password": person.password},
            headers={"X-Svc-Site": studio["site"]},
        )
        refresh.append(resp.json()["data"]["refreshToken"])
    page = await open_account(visit, person, studio["site"])
    rows = page.get_by_role("table", name="Where you are signed in").get_by_role("row")
    await expect(rows).to_have_count(5)  # a header, the fixture's login, two more, this one
    await expect(rows.filter(has_text="This session")).to_have_count(1)
    await visit.axe()
    await page.get_by_role("button", name=re.compile("^End the session started")).first.click()
    await expect(page.get_by_role("status").filter(has_text="Session ended.")).to_be_visible()
    await expect(rows).to_have_count(4)
    await page.get_by_role("button", name="End all other sessions").click()
    await expect(
        page.get_by_role("status").filter(has_text="All your other sessions have ended.")
    ).to_be_visible()
    await expect(rows).to_have_count(2)
    await expect(rows.nth(1)).to_contain_text("This session")
    await expect(page.get_by_role("button", name="End all other sessions")).to_be_disabled()
    # The other sessions' refresh tokens are revoked (their access tokens live out their minutes).
    for token in refresh:
        assert (await client.post(f"{API}/auth/refresh", json={"refreshToken": token})).status_code == 401


async def test_a_member_creates_sees_once_and_revokes_an_api_key(studio, visit, person):
    from playwright.async_api import expect

    page = await open_account(visit, person, studio["site"])
    await expect(page.get_by_text("You have no API keys in this site.")).to_be_visible()
    await page.get_by_label("Key name").fill("laptop script")
    await page.get_by_role("button", name="Create key").click()
    secret = page.get_by_label("Your new key")
    await expect(secret).to_have_value(re.compile(r"^svk_[A-Za-z0-9_-]{40,}$"))
    key = await secret.input_value()
    table = page.get_by_role("table", name="Your API keys")
    await expect(table.get_by_role("row").filter(has_text="laptop script")).to_contain_text(
        f"svk_{key[4:12]}"
    )
    await visit.axe()
    with_key = {"Authorization": f"Bearer {key}", "X-Svc-Site": studio["site"]}
    # The key acts with the member's role (not the policies attached to the member themself).
    acting = await studio["app"].client.get(f"{API}/permissions/me", headers=with_key)
    assert acting.status_code == 200, acting.text
    # Shown once: after a reload only its prefix is left.
    await page.reload()
    await expect(table.get_by_role("row").filter(has_text="laptop script")).to_be_visible()
    await expect(page.get_by_label("Your new key")).to_have_count(0)
    assert key not in await page.content()
    await page.get_by_role("button", name="Revoke laptop script").click()
    await expect(page.get_by_role("status").filter(has_text="Key laptop script revoked.")).to_be_visible()
    await expect(page.get_by_text("You have no API keys in this site.")).to_be_visible()
    assert (await studio["app"].client.get(f"{API}/permissions/me", headers=with_key)).status_code == 401


async def test_preferences_switch_the_language_at_once_and_the_editor_follows(studio, visit, person):
    from playwright.async_api import expect

    page = await open_account(visit, person, studio["site"])
    await page.get_by_label("Language").select_option(label="Deutsch")
    await expect(page.get_by_role("heading", name="Ihr Konto", level=1)).to_be_visible()
    await expect(page.get_by_role("link", name="Ihr Konto")).to_be_visible()
    await expect(page.get_by_role("button", name="Abmelden")).to_be_visible()
    assert await page.evaluate("document.documentElement.lang") == "de"
    await visit.axe()
    await page.get_by_label("Darstellung").select_option(label="Dunkel")
    await page.get_by_label("Tastenkürzel zum Speichern").select_option(label="Strg+Enter (Cmd+Enter)")
    await page.get_by_label("Nach dem Speichern").select_option(label="Zurück zur Liste")
    await page.get_by_role("button", name="Einstellungen speichern").click()
    await expect(page.get_by_role("status").filter(has_text="Einstellungen gespeichert.")).to_be_visible()
    await expect(page.locator("html")).to_have_attribute("data-appearance", "dark")
    await visit.axe()
    await visit.shot("me-de-dark")
    stored = await as_member(studio, person).ok("get", "/me/preferences")
    assert {k: stored[k] for k in ("language", "appearance", "keybindings", "saveAction")} == {
        "language": "de",
        "appearance": "dark",
        "keybindings": {"save": "mod+enter"},
        "saveAction": "return",
    }
    await page.get_by_label("Sprache").select_option(label="English")
    await expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    # The editor saves with Ctrl+Enter now, then returns to the list.
    await page.goto(f"{visit.base}/studio/#/s/{studio['site']}/c/notes/i/n1")
    await expect(page.get_by_text("Ctrl+Enter or Cmd+Enter saves.")).to_be_visible()
    await expect(page.locator("html")).to_have_attribute("data-appearance", "dark")
    await page.get_by_label("body").fill("Saved with Ctrl+Enter")
    await page.get_by_label("body").press("Control+Enter")
    await expect(page.get_by_role("table", name="Items of notes")).to_be_visible()
    assert (await studio["admin"].get("notes", "n1"))["body"] == "Saved with Ctrl+Enter"


async def test_a_member_gives_and_withdraws_a_consent(studio, visit, person):
    from playwright.async_api import expect

    page = await open_account(visit, person, studio["site"])
    analytics = page.get_by_role("checkbox", name="Analytics")
    await expect(analytics).not_to_be_checked()
    await analytics.check()
    await expect(page.get_by_role("status").filter(has_text="Consent given: Analytics")).to_be_visible()
    await visit.axe()
    consents = {c["consentType"]: c for c in await as_member(studio, person).ok("get", "/me/consents")}
    assert consents["analytics"]["granted"] is True and consents["analytics"]["source"] == "studio"
    assert consents["marketing"]["granted"] is False
    await page.reload()
    await expect(page.get_by_role("checkbox", name="Analytics")).to_be_checked()
    await page.get_by_role("checkbox", name="Analytics").uncheck()
    await expect(page.get_by_role("status").filter(has_text="Consent withdrawn: Analytics")).to_be_visible()
    consents = {c["consentType"]: c for c in await as_member(studio, person).ok("get", "/me/consents")}
    assert consents["analytics"]["granted"] is False and consents["analytics"]["withdrawnAt"]


async def test_a_member_downloads_the_export_of_their_own_data(studio, visit, person):
    from playwright.async_api import expect

    page = await open_account(visit, person, studio["site"])
    async with page.expect_download() as info:
        await page.get_by_role("button", name="Download my data").click()
    download = await info.value
    assert download.suggested_filename == f"data-export-{studio['site']}.json"
    document = json.loads((await download.path()).read_text(encoding="utf-8"))["data"]
    assert document["profile"]["email"] == person.email and document["profile"]["id"] == person.id
    await expect(page.get_by_role("status").filter(has_text="Your data was downloaded.")).to_be_visible()
    await visit.axe()

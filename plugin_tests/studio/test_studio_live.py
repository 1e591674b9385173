"""The studio's theming, live updates, notifications, session expiry and language (docs/studio.md),
in headless Chromium against one real server for the module:

- the site's ``defaultAppearance`` (dark, and auto following ``prefers-color-scheme``),
  ``branding``, ``themeOverrides`` and ``customCss`` apply without any CSP report;
- a list updates when a second browser context writes; an open editor says when someone else
  changed its item, a save over that change answers 412 and the editor offers a choice;
- the notifications bell counts, shows a notification frame as it arrives, lists
  ``/notifications`` and marks one read;
- a session that ends while an edit is unsaved returns to the login page, and the edit is back
  after signing in;
- the UI language follows the user's ``language`` preference (the German catalogue).

Controls are found by role and label; axe-core runs in every page visited. The page fixtures
(one browser for the module, a context per test, axe and the console check) are those of
``test_studio_browser.py``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, open_visit, sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

APP = Path(__file__).resolve().parents[2] / "plugins" / "studio" / "app"
NOTES = [{"id": f"n{i}", "title": f"Note {i}", "body": f"Body {i}"} for i in range(1, 6)]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """The shared app served by uvicorn; a site with ``notes``, and an author (a studio role)
    who may read and update them."""
    a = shared_site.calls
    await a.collection("notes", {"title": {"type": "string", "required": True}, "body": "text"})
    await a.create("notes", NOTES)
    role = await a.ok("post", "/roles", status=201, json={"name": "Author"})
    await a.grant(
        [{"collection": "notes", "action": "read"}, {"collection": "notes", "action": "update"}],
        {"roleId": role["id"]},
    )
    shared_site.app.kernel.access.invalidate(shared_site.site)
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {
            "server": server,
            "a": shared_site.site,
            "calls": a,
            "app": shared_site.app,
            "role": role["id"],
        }
    finally:
        await server.stop()


async def second_context(browser: Any, studio: dict[str, Any]) -> Visit:
    return await open_visit(browser, studio["server"].base_url)


async def css(page: Any, expression: str) -> str:
    return (await page.evaluate(expression)).strip()


LOOK = (
    "[document.documentElement.dataset.appearance, getComputedStyle(document.documentElement)"
    ".getPropertyValue('--brand').trim(), getComputedStyle(document.body).backgroundColor]"
)


async def look(page: Any) -> tuple[str, str, str]:
    """Once the list shows: the appearance in force, the accent colour and the page's background."""
    from playwright.async_api import expect

    await expect(page.get_by_role("heading", name="notes", exact=True)).to_be_visible()
    return tuple(await page.evaluate(LOOK))


async def test_the_sites_look_applies_without_breaking_the_csp(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    calls, page = studio["calls"], visit.page
    # A token value that tries to leave its declaration is refused by the API.
    await calls.err(
        "patch",
        "/site",
        400,
        "VALIDATION_FAILED",
        json={"themeOverrides": {"light": {"primary": "0 0% 0%; } body { display: none"}}},
    )
    await calls.err(
        "patch", "/site", 400, "VALIDATION_FAILED", json={"themeOverrides": {"light": {"x": "0 0% 0%"}}}
    )
    await calls.ok(
        "patch",
        "/site",
        json={
            "defaultAppearance": "dark",
            "branding": {"brandColor": "#aa3300"},
            "themeOverrides": {
                "dark": {"primary": "210 80% 40%", "background": "220 30% 10%"},
                "light": {"primary": "150 60% 25%"},
            },
            "customCss": "main h1 { letter-spacing: 3px; }",
        },
    )
    try:
        await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
        await page.get_by_role("link", name="notes").click()
        assert await look(page) == ("dark", "hsl(210 80% 40%)", "rgb(18, 23, 33)")
        assert await css(page, "getComputedStyle(document.querySelector('main h1')).letterSpacing") == "3px"
        # customCss is a constructed style sheet: no <style> element, no style attribute text.
        assert await page.evaluate("document.querySelectorAll('style').length") == 0
        assert await page.evaluate("document.adoptedStyleSheets.length") == 1
        await visit.axe()
        await visit.shot("theme-dark")

        # auto: the system's scheme decides, and a change of it applies at once.
        await calls.ok("patch", "/site", json={"defaultAppearance": "auto"})
        await page.emulate_media(color_scheme="light")
        await page.reload()
        assert await look(page) == ("auto", "hsl(150 60% 25%)", "rgb(255, 255, 255)")
        await visit.axe()
        await page.emulate_media(color_scheme="dark")
        # Playwright's expect polls in its own world: a wait_for_function predicate is compiled in
        # the page, where the CSP (no 'unsafe-eval') refuses it once it has to poll.
        await expect(page.locator("html")).to_have_css("--brand", re.compile(r"^\s*hsl\(210 80% 40%\)\s*$"))
        # The brand colour applies where no override names the primary token.
        await calls.ok("patch", "/site", json={"themeOverrides": {"dark": {"background": "220 30% 10%"}}})
        await page.reload()
        assert await look(page) == ("auto", "#aa3300", "rgb(18, 23, 33)")
    finally:
        await calls.ok(
            "patch",
            "/site",
            json={"defaultAppearance": "auto", "branding": "", "themeOverrides": "", "customCss": ""},
        )


async def test_a_list_and_an_editor_follow_another_session(studio, visit, browser):  # noqa: F811
    from playwright.async_api import expect

    calls, page = studio["calls"], visit.page
    other = await second_context(browser, studio)
    try:
        await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
        await page.get_by_role("link", name="notes").click()
        table = page.get_by_role("table", name="Items of notes")
        await expect(table).to_contain_text("Note 1")
        await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()

        # The other session edits n1: the first one's list shows it without a reload.
        await sign_in(other, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
        await other.page.goto(f"{other.base}/studio/#/s/{studio['a']}/c/notes/i/n1")
        await expect(other.page.get_by_label("title")).to_have_value("Note 1")
        await other.page.get_by_label("title").fill("Changed by the other session")
        await other.page.keyboard.press("Control+s")
        await expect(other.page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
        await expect(table).to_contain_text("Changed by the other session")
        await visit.axe()

        # Both edit n1: the first is told, and its save over the change is refused (412).
        await table.get_by_role("link", name="Open item n1").click()
        await expect(page.get_by_label("title")).to_have_value("Changed by the other session")
        await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
        await other.page.get_by_label("title").fill("Second change elsewhere")
        await other.page.keyboard.press("Control+s")
        await expect(other.page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
        await expect(
            page.get_by_role("alert").filter(has_text="Someone else changed this item")
        ).to_be_visible()
        await page.get_by_label("body").fill("Body from the first session")
        await page.keyboard.press("Control+s")
        conflict = page.get_by_role("alert").filter(has_text="Not saved: someone else changed this item")
        await expect(conflict).to_be_visible()
        stored = await calls.get("notes", "n1")
        assert (stored["title"], stored["body"]) == ("Second change elsewhere", "Body 1")
        await visit.axe()
        await visit.shot("conflict")
        # Saving ours over theirs sends only what this editor changed.
        await conflict.get_by_role("button", name="Save mine over theirs").click()
        await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
        stored = await calls.get("notes", "n1")
        assert (stored["title"], stored["body"]) == ("Second change elsewhere", "Body from the first session")
        # The other editor is told in turn, and loads the new version on request.
        await expect(
            other.page.get_by_role("alert").filter(has_text="Someone else changed this item")
        ).to_be_visible()
        await other.page.get_by_role("button", name="Load their version").click()
        await expect(other.page.get_by_label("body")).to_have_value("Body from the first session")
        await other.axe()
        # The first editor's own save did not tell itself that someone else changed the item.
        await expect(
            page.get_by_role("alert").filter(has_text="Someone else changed this item")
        ).to_have_count(0)
    finally:
        await other.close()


# -- studio42: a live redraw keeps the user's unsaved input
async def test_a_live_redraw_keeps_what_the_user_is_typing(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    calls, page = studio["calls"], visit.page
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    await page.get_by_role("link", name="notes").click()
    table = page.get_by_role("table", name="Items of notes")
    await expect(table).to_contain_text("Note 2")
    await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
    # Mid-typing, another session adds an item: the list is not drawn again under the user.
    search = page.get_by_role("searchbox", name="Search")
    await search.fill("half a quer")
    await calls.create("notes", [{"id": "held-1", "title": "Added while typing"}])
    notice = page.get_by_role("status").filter(has_text="This changed elsewhere")
    await expect(notice).to_be_visible()
    await expect(search).to_have_value("half a quer")
    await expect(search).to_be_focused()
    await expect(table).not_to_contain_text("Added while typing")
    await visit.axe()
    # On request the list is read again (the typed text goes with the old list).
    await notice.get_by_role("button", name="Show the changes (drops your input)").click()
    await expect(table).to_contain_text("Added while typing")
    await expect(notice).to_have_count(0)
    # With nothing typed, the next change simply shows.
    await calls.create("notes", [{"id": "held-2", "title": "Added with nothing typed"}])
    await expect(table).to_contain_text("Added with nothing typed")
    await expect(notice).to_have_count(0)


async def test_the_notifications_bell(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    from plugins.realtime import api as realtime

    page, kernel, site = visit.page, studio["app"].kernel, studio["a"]
    await realtime.notify(kernel, site, kind="test.first", title="First notice", body="Stored before")
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    bell = page.get_by_role("button", name=re.compile("^Notifications"))
    await expect(bell).to_have_accessible_name("Notifications (1 unread)")
    await expect(page.get_by_role("status").filter(has_text="Live updates on")).to_be_visible()
    await realtime.notify(kernel, site, kind="test.second", title="Second notice", severity="warning")
    await expect(bell).to_have_accessible_name("Notifications (2 unread)")
    await expect(
        page.get_by_role("status").filter(has_text="New notification: Second notice")
    ).to_be_attached()
    await bell.focus()
    await page.keyboard.press("Enter")
    panel = page.get_by_role("region", name="Notifications")
    await expect(panel).to_contain_text("Second notice")
    await expect(panel).to_contain_text("First notice")
    await visit.axe()
    await visit.shot("notifications")
    await panel.get_by_role("button", name="Mark as read: First notice").click()
    await expect(bell).to_have_accessible_name("Notifications (1 unread)")
    await expect(panel).not_to_contain_text("First notice")
    unread = await studio["calls"].ok("get", "/notifications", params={"handled": "false"}, full=True)
    assert [n["title"] for n in unread["data"]] == ["Second notice"]
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    await expect(bell).to_be_focused()
    await expect(bell).to_have_attribute("aria-expanded", "false")


async def test_an_unsaved_edit_survives_the_end_of_the_session(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    page = visit.page
    member = await new_member(studio["app"], studio["a"], studio["role"])
    await sign_in(visit, member.email, member.password, studio["a"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/notes/i/n2")
    await expect(page.get_by_label("title")).to_have_value("Note 2")
    await page.get_by_label("title").fill("Work in progress")
    # The session ends elsewhere (a password change ends every session).
    elsewhere = Calls(studio["app"].client, member.headers)
    await elsewhere.ok(
        "post",
        "/me/change-password",
        json={"currentPassword": member.password, "newPassword": "another-password-3"},
    )
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("Your session ended")
    await page.get_by_label("Password").fill("another-password-3")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_label("title")).to_have_value("Work in progress")
    await expect(page.get_by_role("alert").filter(has_text="unsaved changes were kept")).to_be_visible()
    await visit.axe()
    assert (await studio["calls"].get("notes", "n2"))["title"] == "Note 2"
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    assert (await studio["calls"].get("notes", "n2"))["title"] == "Work in progress"
    # Kept once: opening the item again shows what is stored, with no notice.
    await page.reload()
    await expect(page.get_by_label("title")).to_have_value("Work in progress")
    await expect(page.get_by_role("alert").filter(has_text="unsaved changes")).to_have_count(0)


async def test_the_language_follows_the_preference(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    page = visit.page
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    await expect(page.get_by_role("button", name="Sign out")).to_be_visible()
    admin = studio["calls"]
    await admin.ok("patch", "/me/preferences", json={"language": "de"})
    try:
        await page.reload()
        await expect(page.get_by_role("button", name="Abmelden")).to_be_visible()
        await expect(page.get_by_role("navigation", name="Sammlungen")).to_be_visible()
        assert await page.evaluate("document.documentElement.lang") == "de"
        await page.get_by_role("link", name="notes").click()
        await expect(page.get_by_role("table", name="Einträge von notes")).to_be_visible()
        await expect(page.get_by_role("link", name="Eintrag anlegen")).to_be_visible()
        await expect(page.get_by_role("status").filter(has_text="Live-Aktualisierung an")).to_be_visible()
        await visit.axe()
        # The login page after signing out speaks the last language too.
        await page.get_by_role("button", name="Abmelden").click()
        await expect(page.get_by_role("heading", name="Anmelden")).to_be_visible()
        await visit.axe()
    finally:
        await admin.ok("patch", "/me/preferences", json={"language": "en"})


def _keys(text: str) -> list[str]:
    return re.findall(r'^\s*"([a-zA-Z]+\.[\w.]+)":', text, re.M)


async def test_the_german_catalogue_has_every_english_string():
    source = (APP / "i18n.js").read_text(encoding="utf-8")
    english = _keys(source[source.index("en: {") : source.index("\n  },")])
    german = _keys((APP / "i18n_de.js").read_text(encoding="utf-8"))
    assert len(english) >= 60
    assert sorted(english) == sorted(german)

"""The studio in headless Chromium (docs/studio.md), against one real server for the module:
an editor signs in, opens a collection, sorts, pages, searches, creates an item, sees the API's
validation error at its field, edits and saves with Ctrl+S; the session survives a reload (the
svc_refresh cookie) and ends with sign out; switching sites shows nothing of the other site; a
member with a field mask never has the hidden field in the DOM, nor its value in any response; a
session ended elsewhere (a password change) returns to the login page, and signing in again
returns to the same screen.
Controls are found by role and label only. axe-core (vendored for the tests, never served) runs
in every page visited: no serious or critical violation. Screenshots for docs/studio.md are
saved when ``SVC_STUDIO_SCREENSHOTS=1``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

VENDOR = Path(__file__).resolve().parent / "vendor"
AXE = VENDOR / "axe-core-4.10.2.min.js"
SHOTS = Path(__file__).resolve().parents[2] / "docs" / "studio"
SECRET_VALUE = "hidden-cipher-7781"
ARTICLES = [{"id": f"a{i:02d}", "title": f"Article {i:02d}", "views": 100 - i, "body": f"Text {i}",
             "secret": SECRET_VALUE} for i in range(1, 31)]
ARTICLES[6]["title"] = "Special winter recipe"
WAIT = 15_000  # ms: the bound of every wait for something the page must show


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """The shared app served by uvicorn; site A (articles) and site B (recipes), and a member of
    A who may read articles' title, views and body and update views only."""
    a = shared_site.calls
    await a.collection("articles", {
        "title": {"type": "string", "required": True},
        "body": "text",
        "views": {"type": "integer", "options": {"min": 0}},
        "published": "boolean",
        "category": {"type": "string", "options": {"choices": [{"value": "news", "text": "News"},
                                                               {"value": "food", "text": "Food"}]}},
        "day": "date",
        "extra": "json",
        "secret": "string",
    }, meta={"display_template": "{{ title }} ({{ views }} views)", "icon": "article"})
    await a.create("articles", ARTICLES)
    b = await shared_site.new_site("bsite")
    await b.collection("recipes", {"name": "string"})
    await b.create("recipes", [{"id": "r1", "name": "Pancakes from B"}])
    site_b = b.headers["X-Svc-Site"]
    member = await new_member(shared_site.app, shared_site.site, "subscriber")
    await a.grant([{"collection": "articles", "action": "read", "fields": ["title", "views", "body"]},
                   {"collection": "articles", "action": "update", "fields": ["views"]}], {"userId": member.id})
    shared_site.app.kernel.access.invalidate(shared_site.site)
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {"server": server, "a": shared_site.site, "b": site_b, "calls": a, "member": member,
               "app": shared_site.app}
    finally:
        await server.stop()


class Visit:
    """One browser context on the studio: every response's body and every console message are
    recorded; ``axe()`` checks the page as it is now; ``close()`` ends it."""

    def __init__(self, context: Any, page: Any, base: str, kept: list[Any]) -> None:
        self.context, self.page, self.base = context, page, base
        self.kept = kept  # where close() leaves the emptied context's new tab for a later visit
        self.responses: list[str] = []
        self.bodies: list[str] = []
        self.unread: list[str] = []
        self.console: list[str] = []
        self.checked = 0

    async def record(self, response: Any) -> None:
        """Keep the body of every API answer, read as it arrives (a later read may find it gone)."""
        if "/api/v1/" not in response.url:
            return
        self.responses.append(response.url)
        try:
            self.bodies.append((await response.body()).decode("utf-8", "replace"))
        except Exception as exc:  # noqa: BLE001 - any failure is reported by the test that reads them
            self.unread.append(f"{response.url}: {exc}")

    async def drained(self) -> None:
        """Wait until every API answer seen so far has had its body read (``record`` runs as its own
        task: a re-fetch that answered just now may still be reading)."""
        while len(self.bodies) + len(self.unread) < len(self.responses):
            await asyncio.sleep(0.05)

    async def axe(self) -> None:
        if not await self.page.evaluate("typeof window.axe !== 'undefined'"):
            # Evaluated through the DevTools protocol, which the page's CSP does not govern; the
            # studio itself never serves axe-core.
            await self.page.evaluate(AXE.read_text(encoding="utf-8") + "\n;0")
        result = await self.page.evaluate(
            "axe.run(document, {resultTypes: ['violations']}).then(r => r.violations"
            ".filter(v => v.impact === 'serious' || v.impact === 'critical')"
            ".map(v => v.id + ': ' + v.nodes.map(n => n.target.join(' ')).join(', ')))")
        assert result == [], f"axe-core on {self.page.url}: {result}"
        self.checked += 1

    async def close(self) -> None:
        """Ends the visit. Its context is emptied (cookies, permissions, the storage of the studio's
        origin, the HTTP cache) and kept, with a new tab opened from the last one, for a later visit
        with the same options: Chromium spends ~1.1 s of CPU on a new context's first tab and the
        studio's first load in it, ~0.5 s on a tab opened by a page (a tab it has already made a
        renderer for) and that load (docs/testing.md, "What the run costs"). The new tab is opened
        with ``noopener``: it shares no session storage and no opener with the last one. A context
        that cannot be emptied, or holds a tab the test opened, is closed instead."""
        from playwright.async_api import Error

        page, context = self.page, self.context
        try:
            await page.goto("about:blank")  # the app ends: its sockets, timers and drafts with it
            session = await context.new_cdp_session(page)
            await session.send("Storage.clearDataForOrigin", {"origin": self.base, "storageTypes": "all"})
            await session.send("Network.clearBrowserCache")
            await session.detach()
            await context.clear_cookies()
            await context.clear_permissions()
            async with context.expect_page() as opened:
                await page.evaluate("window.open('about:blank', '_blank', 'noopener')")
            tab = await opened.value
            await page.close()
        except Error:
            await context.close()
            return
        if context.pages == [tab]:
            self.kept.append(tab)
        else:
            await context.close()

    async def shot(self, name: str) -> None:
        if os.environ.get("SVC_STUDIO_SCREENSHOTS") == "1":
            SHOTS.mkdir(parents=True, exist_ok=True)
            await self.page.screenshot(path=str(SHOTS / f"{name}.png"))


async def open_visit(browser: Any, base_url: str, *, height: int = 800, **options: Any) -> Visit:
    """A browser context of its own (a person with no cookie, storage or cache of another visit) on
    the studio at ``base_url``, its console kept for ``check_console``; ``options`` go to
    ``new_context`` (``accept_downloads``...). A context a closed visit left with the same options
    is taken again (``Visit.close``); the browser fixture keeps them (``kept_tabs``)."""
    kept = browser.kept_tabs.setdefault(tuple(sorted(options.items())), [])
    viewport = {"width": 1200, "height": height}
    if kept:
        page = kept.pop()
        await page.set_viewport_size(viewport)
    else:
        context = await browser.new_context(viewport=viewport, **options)
        page = await context.new_page()
    page.set_default_timeout(WAIT)
    seen = Visit(page.context, page, base_url, kept)
    page.on("console", lambda m: seen.console.append(f"{m.type}: {m.text}"))
    return seen


def held_until(event: asyncio.Event) -> Callable[[Any], Awaitable[None]]:
    """A route handler (``page.route(url, held_until(event))``) that lets each request it takes go
    on once ``event`` is set: a test holds an answer back to draw the screen while it is on its way."""

    async def held(route: Any) -> None:
        await event.wait()
        await route.continue_()

    return held


def check_console(seen: Visit) -> None:
    """"Failed to load resource" is the browser's line for any answer >= 400 (the refresh without a
    cookie answers 401 by design); anything else logged as an error, and any CSP report, fails."""
    assert not [m for m in seen.console if "Content Security Policy" in m
                or (m.startswith("error") and "Failed to load resource" not in m)], seen.console


# -- schema, people: a visit's whole life, for a module's `visit` fixture
@contextlib.asynccontextmanager
async def visiting(browser: Any, base_url: str, *, record: bool = False, **options: Any) -> AsyncIterator[Visit]:
    """``open_visit``; with ``record`` every API answer is kept (``Visit.record``); at the end the
    visit is closed (``Visit.close``) and its console checked (``check_console``)."""
    seen = await open_visit(browser, base_url, **options)
    if record:
        seen.page.on("response", seen.record)
    try:
        yield seen
    finally:
        await seen.close()
    check_console(seen)
# -- end schema, people


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, studio) -> Any:
    async with visiting(browser, studio["server"].base_url, record=True) as seen:
        yield seen


async def sign_in(visit: Visit, email: str, password: str, site: str = "", *, check: bool = False) -> None:
    """Through the sign-in screen. ``check``: axe-core checks that screen first; the tests about
    signing in ask for it, the others do not pay for the same verdict again (the screen is the same
    form each time: ~0.15 s of Chromium's CPU a check, some 90 sign-ins in the folder)."""
    from playwright.async_api import expect

    page = visit.page
    await page.goto(f"{visit.base}/studio/")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    if check:
        await visit.axe()
    await page.get_by_label("Email").fill(email)
    await page.get_by_label("Password").fill(password)
    if site:
        await page.get_by_label(re.compile("^Site")).fill(site)
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("navigation", name="Collections")).to_be_visible()


async def test_the_page_and_its_assets(studio):
    client = studio["server"].client
    resp = await client.get("/studio/")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    csp = resp.headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "unsafe-inline" not in csp
    host = studio["server"].base_url.removeprefix("http://")
    assert f"connect-src 'self' ws://{host} wss://{host};" in csp and "unsafe-eval" not in csp
    odd = await client.get("/studio/", headers={"Host": "evil.example; script-src *"})
    assert "connect-src 'self';" in odd.headers["content-security-policy"]
    assert "script-src *" not in odd.headers["content-security-policy"]
    assert resp.headers["cache-control"] == "no-cache"
    scripts = re.findall(r"<script[^>]*>", resp.text)
    assert scripts and all(re.search(r'src="/studio/assets/main\.[0-9a-f]{12}\.js"', s) for s in scripts), scripts
    assert "<style" not in resp.text and "style=" not in resp.text
    assets = re.findall(r'(?:src|href)="/studio/(assets/[^"]+)"', resp.text)
    assert len(assets) == 3  # the charts' style sheet (-- dashboards), the studio's, main.js
    for asset in assets:
        got = await client.get(f"/studio/{asset}")
        assert got.status_code == 200 and got.headers["cache-control"] == "public, max-age=31536000, immutable"
    main = (await client.get(f"/studio/{next(a for a in assets if a.endswith('.js'))}")).text
    imported = re.findall(r'from "\./([^"]+)"', main)
    assert imported and all(re.fullmatch(r"[a-z0-9_-]+\.[0-9a-f]{12}\.js", name) for name in imported), imported
    missing = await client.get("/studio/assets/main.000000000000.js")
    assert missing.status_code == 404 and missing.json()["errors"][0]["code"] == "NOT_FOUND"
    bare = await client.get("/studio")
    assert bare.status_code == 200 and bare.content == resp.content


async def test_an_editor_finds_creates_and_edits_content(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"], check=True)
    await page.get_by_role("link", name="articles").click()
    table = page.get_by_role("table", name="Items of articles")
    await expect(table).to_be_visible()
    await expect(table.get_by_role("row")).to_have_count(26)  # a header and 25 items
    await expect(page.get_by_role("status").filter(has_text="Page 1 of 2 (30 items)")).to_be_visible()
    # The display template shows each item.
    await expect(table.get_by_role("link", name="Article 01 (99 views)")).to_be_visible()
    await visit.axe()
    await visit.shot("list")

    await page.get_by_role("button", name="Next page").click()
    await expect(page.get_by_role("status").filter(has_text="Page 2 of 2")).to_be_visible()
    await expect(table.get_by_role("row")).to_have_count(6)
    assert "page=2" in page.url

    await page.get_by_role("button", name="views", exact=True).click()
    await expect(page.get_by_role("columnheader", name="views")).to_have_attribute("aria-sort", "ascending")
    assert "sort=views" in page.url and "page=2" not in page.url
    await expect(table.get_by_role("row").nth(1)).to_contain_text("Article 30 (70 views)")

    await page.get_by_role("searchbox", name="Search").fill("winter")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(table.get_by_role("row")).to_have_count(2)
    await expect(table.get_by_role("link", name="Special winter recipe (93 views)")).to_be_visible()
    await visit.axe()

    # A new item: the API refuses views below its min, and the error shows at that field.
    await page.get_by_role("link", name="Create item").click()
    await expect(page.get_by_role("heading", name="New item in articles")).to_be_visible()
    await page.get_by_label("title").fill("Written in the studio")
    await page.get_by_label("views").fill("-5")
    await page.get_by_label("category").select_option(label="Food")
    await page.get_by_label("published").check()
    await page.get_by_role("button", name="Save", exact=True).click()
    views = page.get_by_label("views")
    await expect(views).to_have_attribute("aria-invalid", "true")
    await expect(views).to_have_accessible_description(re.compile("views", re.I))
    await expect(page.get_by_label("title")).not_to_have_attribute("aria-invalid", "true")
    await visit.axe()
    await views.fill("5")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("heading", name=re.compile(r"^articles: "))).to_be_visible()
    created_id = page.url.rsplit("/", 1)[1]
    created = await studio["calls"].get("articles", created_id)
    assert (created["title"], created["views"], created["category"], created["published"]) == \
        ("Written in the studio", 5, "food", True)

    # Edit and save with Ctrl+S: only the changed field is sent, and it is stored.
    await page.get_by_label("body").fill("Changed by Ctrl+S")
    await page.get_by_label("body").press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    assert (await studio["calls"].get("articles", created_id))["body"] == "Changed by Ctrl+S"
    await visit.axe()
    await visit.shot("editor")

    # The session survives a reload (the svc_refresh cookie), and sign out ends it.
    await page.reload()
    await expect(page.get_by_label("body")).to_have_value("Changed by Ctrl+S")
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await page.reload()
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    assert visit.checked >= 5


async def test_switching_sites_shows_nothing_of_the_other_site(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"], check=True)
    await page.get_by_role("link", name="articles").click()
    await expect(page.get_by_role("table", name="Items of articles")).to_be_visible()
    await page.get_by_label("Site", exact=True).select_option(value=studio["b"])
    await expect(page.get_by_role("link", name="recipes")).to_be_visible()
    await page.get_by_role("link", name="recipes").click()
    await expect(page.get_by_role("table", name="Items of recipes")).to_contain_text("Pancakes from B")
    # Nothing of A's content in the DOM (A is still an option of the switcher: the admin's site).
    dom = await page.content()
    assert "articles" not in dom and "Article 0" not in dom and "winter" not in dom
    await expect(page.get_by_role("link", name="articles")).to_have_count(0)
    await visit.axe()
    # An item of A asked for under B's address (and a missing one of B) answers "Not found.", with
    # no editor drawn, and nothing of A reaches the page.
    for item in ("a02", "nope"):
        await page.goto(f"{visit.base}/studio/#/s/{studio['b']}/c/recipes/i/{item}")
        await expect(page.get_by_role("alert")).to_have_text("Not found.")
        await expect(page.get_by_role("button", name="Save")).to_have_count(0)
        assert "Article 0" not in await page.content()
    await page.goto(f"{visit.base}/studio/#/s/{studio['b']}/c/recipes/i/a02/history")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await visit.axe()


async def test_a_screen_left_before_it_drew_does_not_draw_over_the_next(studio, visit):
    """The list's items are held back while the user opens another screen; when they arrive, the
    list (a route the user left) draws nothing: the screen the user went to stays."""
    from playwright.async_api import expect

    page = visit.page
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    held, release = [], asyncio.Event()

    async def hold(route: Any) -> None:
        held.append(route.request.url)
        await release.wait()
        await route.continue_()

    await page.route("**/api/v1/items/articles?*", hold)
    async with page.expect_request("**/api/v1/items/articles?*"):
        await page.get_by_role("link", name="articles").click()
    await page.get_by_role("link", name="Your account").click()
    await expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    async with page.expect_response("**/api/v1/items/articles?*"):
        release.set()
    await page.unroute("**/api/v1/items/articles?*")
    assert held, "the list's items were never asked for"
    # The list ran to its end (its last step names the tab, in the same task as its draw) and
    # drew nothing: the account screen is still the one shown.
    await expect(page).to_have_title(re.compile(r"^articles · "))
    await expect(page.get_by_role("heading", name="Your account", level=1)).to_be_visible()
    await expect(page.get_by_role("table", name="Items of articles")).to_have_count(0)
    await visit.axe()


async def test_a_member_never_sees_a_field_it_may_not_read(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    member = studio["member"]
    await sign_in(visit, member.email, member.password, studio["a"])
    await page.get_by_role("link", name="articles").click()
    table = page.get_by_role("table", name="Items of articles")
    await expect(table.get_by_role("columnheader", name="views")).to_be_visible()
    await expect(table.get_by_role("columnheader", name="secret")).to_have_count(0)
    await expect(page.get_by_role("link", name="Create item")).to_have_count(0)
    await visit.axe()
    await table.get_by_role("link", name="Article 01 (99 views)").click()
    await expect(page.get_by_role("heading", name="articles: a01")).to_be_visible()
    await expect(page.get_by_label("views")).to_be_editable()
    await expect(page.get_by_label(re.compile("^title"))).not_to_be_editable()
    await expect(page.get_by_label(re.compile("^secret"))).to_have_count(0)
    await visit.axe()
    await page.get_by_label("views").fill("12")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    html = await page.content()
    assert SECRET_VALUE not in html and 'name="secret"' not in html
    await visit.drained()
    assert not visit.unread, visit.unread
    assert len(visit.bodies) == len(visit.responses) and len(visit.bodies) >= 8, visit.responses
    assert any("/items/articles" in url for url in visit.responses)
    assert not [b for b in visit.bodies if SECRET_VALUE in b]
    assert (await studio["calls"].get("articles", "a01"))["views"] == 12

    # Its token is bound to site A: opening site B asks it to sign in there.
    await page.goto(f"{visit.base}/studio/#/s/{studio['b']}")
    await expect(page.get_by_role("alert")).to_contain_text(f"Sign in again to open the site {studio['b']}")


async def test_a_session_ended_elsewhere_returns_to_the_same_screen(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    member = await new_member(studio["app"], studio["a"], "subscriber")
    await studio["calls"].grant([{"collection": "articles", "action": "read", "fields": ["title", "views"]},
                                 {"collection": "articles", "action": "update", "fields": ["views"]}],
                                {"userId": member.id})
    studio["app"].kernel.access.invalidate(studio["a"])
    await sign_in(visit, member.email, member.password, studio["a"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/articles/i/a02")
    await expect(page.get_by_role("heading", name="articles: a02")).to_be_visible()
    # The password changes in another session: every other session and access token ends.
    elsewhere = Calls(studio["app"].client, member.headers)
    await elsewhere.ok("post", "/me/change-password", json={"currentPassword": member.password,
                                                             "newPassword": "another-password-2"})
    await page.get_by_label("views").fill("7")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    await expect(page.get_by_role("alert")).to_contain_text("Your session ended")
    await visit.axe()
    await page.get_by_label("Password").fill("another-password-2")
    await page.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="articles: a02")).to_be_visible()
    assert page.url.endswith(f"#/s/{studio['a']}/c/articles/i/a02")

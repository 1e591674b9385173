"""The studio's list view in headless Chromium (docs/studio.md, "List view"), against one real
server for the module, with a collection of 300 books: an editor pages through them (page sizes,
first and last page), chooses columns, sorts on a chosen column, builds a filter with a nested
any-group (the URL then holds the query language's filter, and the API agrees on the count),
searches (alone: `GET /search`; with a filter: GraphQL's list), sets the status of selected items
and deletes others, saves a bookmark for everyone and a default view of its own, which opens
when the list's URL names no view. A member (role Writers) sees only the presets of its scopes
(its own, its role's, the global ones; not another user's nor another role's), may save for
itself only, and a bulk delete of items its delete rule does not reach is refused with the
API's own message while the items it may delete go.
Controls are found by role and label only; axe-core runs in every page visited."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import pytest_asyncio

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer
from plugin_tests.studio import test_studio_browser as shared

pytestmark = pytest.mark.asyncio(loop_scope="package")

# The studio's browser fixtures (one Chromium for the module, a recorded context per test).
visit = shared.visit
sign_in = shared.sign_in

GENRES = ["novel", "poetry", "essay"]
WAIT_S = shared.WAIT / 1000  # s: the bound of a wait for the page's own requests


def book(i: int) -> dict[str, Any]:
    title = f"Winter book {i:03d}" if i % 50 == 0 else f"Book {i:03d}"
    return {
        "id": f"b{i:03d}",
        "title": title,
        "author": ["Ann", "Bob", "Cy"][i % 3],
        "pages": i,
        "genre": GENRES[i % 3],
        "isbn": f"{(7 * i) % 300:04d}",
    }


BOOKS = [book(i) for i in range(1, 301)]


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """The shared app served by uvicorn; site A with 300 books (status field `status`), a role
    Writers and a member of it who may read the books and delete poetry only."""
    a = shared_site.calls
    await a.collection(
        "books",
        {
            "title": {"type": "string", "required": True},
            "author": "string",
            "pages": "integer",
            "genre": {
                "type": "string",
                "options": {"choices": [{"value": g, "text": g.title()} for g in GENRES]},
            },
            "isbn": "string",
        },
        status_field="status",
        meta={"display_template": "{{ title }} by {{ author }}"},
    )
    await a.create("books", BOOKS)
    writers = await a.ok("post", "/roles", status=201, json={"name": "Writers"})
    editors = await a.ok("post", "/roles", status=201, json={"name": "Editors"})
    member = await new_member(shared_site.app, shared_site.site, writers["id"])
    other = await new_member(shared_site.app, shared_site.site, writers["id"])
    await a.grant(
        [
            {"collection": "books", "action": "read", "fields": ["*"]},
            {"collection": "books", "action": "delete", "conditions": {"genre": {"_eq": "poetry"}}},
        ],
        {"userId": member.id},
    )
    shared_site.app.kernel.access.invalidate(shared_site.site)
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {
            "server": server,
            "a": shared_site.site,
            "calls": a,
            "member": member,
            "other": other,
            "writers": writers,
            "editors": editors,
            "app": shared_site.app,
        }
    finally:
        await server.stop()


def view_of(url: str) -> dict[str, str]:
    """The list's view in a studio URL's hash query."""
    query = urlsplit(url).fragment.partition("?")[2]
    return {k: v[0] for k, v in parse_qs(query).items()}


async def test_an_editor_finds_content_in_a_long_list(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls = studio["calls"]
    status = page.get_by_role("navigation", name="Pages").get_by_role("status")
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    await page.get_by_role("link", name="books").click()
    table = page.get_by_role("table", name="Items of books")
    await expect(status).to_have_text("Page 1 of 12 (300 items)")
    await expect(table.get_by_role("row")).to_have_count(26)
    await expect(table.get_by_role("link", name="Book 001 by Bob")).to_be_visible()
    await visit.axe()

    # Pages: 100 a page, then the last page.
    await page.get_by_label("Items per page").select_option("100")
    await expect(status).to_have_text("Page 1 of 3 (300 items)")
    await page.get_by_role("button", name="Last page").click()
    await expect(status).to_have_text("Page 3 of 3 (300 items)")
    await expect(table.get_by_role("row")).to_have_count(101)
    await expect(table.get_by_role("link", name="Winter book 300 by Ann")).to_be_visible()
    await page.get_by_role("button", name="First page").click()
    await expect(status).to_have_text("Page 1 of 3 (300 items)")

    # Columns: author and genre left out; then sorted by isbn, descending.
    await page.get_by_text("Columns (").click()
    await page.get_by_role("checkbox", name="isbn").check()
    await page.get_by_role("checkbox", name="author").uncheck()
    await page.get_by_role("checkbox", name="genre").uncheck()
    await page.get_by_role("button", name="Apply columns").click()
    await expect(table.get_by_role("columnheader", name="isbn")).to_be_visible()
    await expect(table.get_by_role("columnheader", name="author")).to_have_count(0)
    assert view_of(page.url)["fields"] == "title,pages,isbn"
    await table.get_by_role("button", name="isbn").click()
    await expect(table.get_by_role("columnheader", name="isbn")).to_have_attribute("aria-sort", "ascending")
    await table.get_by_role("button", name="isbn").click()
    await expect(table.get_by_role("columnheader", name="isbn")).to_have_attribute("aria-sort", "descending")
    await expect(table.get_by_role("button", name="isbn")).to_be_focused()
    top = max(BOOKS, key=lambda b: b["isbn"])
    await expect(table.get_by_role("row").nth(1)).to_contain_text(top["isbn"])
    await expect(table.get_by_role("row").nth(1)).to_contain_text(top["title"])
    await visit.axe()

    # The filter builder: poetry, and (pages at most 10 or at least 290), with the keyboard.
    await page.get_by_text("Filter", exact=True).click()
    await page.get_by_role("button", name="Add condition", exact=True).press("Enter")
    await expect(page.get_by_label("Field of condition 1")).to_be_focused()
    await page.get_by_label("Field of condition 1").select_option("genre")
    await page.get_by_label("Operator of condition 1").select_option(label="equals")
    await page.get_by_label("Value of condition 1").select_option("poetry")
    await page.get_by_role("button", name="Add group").click()
    await page.get_by_label("Match of group 1").select_option(label="any")
    await page.get_by_label("Field of condition 2").select_option("pages")
    await page.get_by_label("Operator of condition 2").select_option(label="is at most")
    await page.get_by_label("Value of condition 2").fill("10")
    await page.get_by_role("button", name="Add condition to group 1").click()
    await page.get_by_label("Field of condition 3").select_option("pages")
    await page.get_by_label("Operator of condition 3").select_option(label="is at least")
    await page.get_by_label("Value of condition 3").fill("290")
    await visit.axe()
    await page.get_by_role("button", name="Apply filter").press("Enter")
    await expect(status).to_have_text("Page 1 of 1 (7 items)")
    await expect(page.get_by_role("button", name="Apply filter")).to_be_focused()  # its place kept
    written = json.loads(view_of(page.url)["filter"])
    assert written == {
        "_and": [{"genre": {"_eq": "poetry"}}, {"_or": [{"pages": {"_lte": 10}}, {"pages": {"_gte": 290}}]}]
    }
    assert (await calls.list("books", filter=json.dumps(written)))["meta"]["total"] == 7
    # The redrawn builder shows the filter it wrote.
    await expect(page.get_by_label("Value of condition 3")).to_have_value("290")
    await expect(page.get_by_label("Match of group 1")).to_have_value("_or")
    await page.get_by_role("button", name="Clear filter").click()
    await expect(status).to_have_text("Page 1 of 3 (300 items)")

    # Full-text search alone (GET /search), then with a filter (GraphQL's search + filter).
    await page.get_by_role("searchbox", name="Search").fill("winter")
    await page.get_by_role("button", name="Search", exact=True).click()
    await expect(table.get_by_role("row")).to_have_count(7)
    await page.get_by_text("Filter", exact=True).click()
    await page.get_by_role("button", name="Add condition", exact=True).click()
    await page.get_by_label("Field of condition 1").select_option("genre")
    await page.get_by_label("Value of condition 1").select_option("poetry")
    await page.get_by_role("button", name="Apply filter").click()
    await expect(status).to_have_text("Page 1")
    await expect(table.get_by_role("row")).to_have_count(3)  # 100 and 250
    await expect(table.get_by_role("link", name="Winter book 250 by Bob")).to_be_visible()
    await expect(table.get_by_role("link", name="Winter book 100 by Bob")).to_be_visible()
    await visit.axe()

    # Bulk: the status of three items, then two deleted (after a confirmation).
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/books?fields=title,status&sort=pages")
    await expect(status).to_have_text("Page 1 of 12 (300 items)")
    for item_id in ("b001", "b002", "b003"):
        await table.get_by_role("checkbox", name=f"Select item {item_id}").check()
    bulk = page.get_by_role("group", name="Selected items")
    await expect(bulk.get_by_role("status")).to_have_text("3 selected")
    await bulk.get_by_label("Set status to").select_option("published")
    await bulk.get_by_role("button", name="Set status").click()
    await expect(page.get_by_role("status").filter(has_text="3 items changed.")).to_be_visible()
    assert [(await calls.get("books", i))["status"] for i in ("b001", "b002", "b003", "b004")] == [
        "published",
        "published",
        "published",
        "draft",
    ]
    await table.get_by_role("checkbox", name="Select item b001").check()
    await table.get_by_role("checkbox", name="Select item b002").check()
    await bulk.get_by_role("button", name="Delete selected").click()
    confirm = bulk.get_by_role("button", name="Yes, delete 2 items")
    await expect(confirm).to_be_focused()
    await visit.axe()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("status").filter(has_text="2 items deleted.")).to_be_visible()
    await calls.err("get", "/items/books/b001", 404)
    await calls.err("get", "/items/books/b002", 404)
    await expect(status).to_have_text("Page 1 of 12 (298 items)")
    await expect(table.get_by_role("row").nth(1)).to_contain_text("b003")

    # Presets: a bookmark for everyone, and a default view of its own.
    await page.goto(
        f"{visit.base}/studio/#/s/{studio['a']}/c/books?fields=title,pages&sort=-pages"
        "&filter=" + json.dumps({"genre": {"_eq": "essay"}})
    )
    await expect(status).to_have_text("Page 1 of 4 (99 items)")
    views = page.get_by_role("region", name="Presets and bookmarks")
    await views.get_by_label("Bookmark name").fill("Long essays")
    await views.get_by_label("Save for").select_option(label="Everyone")
    # A book written elsewhere while the save's redraw is on its way (its read of the presets held
    # here): the live re-fetch the write causes runs first and must leave the save's message alone.
    # Held: the first read after the save was answered (the save's redraw, not a live re-fetch that
    # a late event of the bulk step above may still start).
    posted, held, release = asyncio.Event(), asyncio.Event(), asyncio.Event()

    async def hold(route: Any) -> None:
        if route.request.method == "POST":
            await route.fulfill(response=await route.fetch())
            posted.set()
            return
        if posted.is_set() and not held.is_set():
            held.set()
            await release.wait()
        await route.continue_()

    presets_read = re.compile(r".*/api/v1/presets(\?.*)?$")
    await page.route(presets_read, hold)
    await views.get_by_role("button", name="Save as bookmark").click()
    await asyncio.wait_for(held.wait(), WAIT_S)
    async with page.expect_request(
        lambda r: r.method == "GET" and "/api/v1/items/books?" in r.url, timeout=WAIT_S * 1000
    ):
        await calls.ok("patch", "/items/books/b005", json={"isbn": "9999"})  # an essay
    release.set()
    await expect(page.get_by_role("status").filter(has_text="Bookmark Long essays saved.")).to_be_visible()
    await page.unroute(presets_read, hold)
    await expect(views.get_by_role("listitem").filter(has_text="Long essays")).to_contain_text("(everyone)")
    saved = [
        p
        for p in await calls.ok("get", "/presets", params={"collection": "books"})
        if p["bookmark"] == "Long essays"
    ]
    assert len(saved) == 1 and saved[0]["sourceScope"] == "global"
    assert saved[0]["filter"] == {"genre": {"_eq": "essay"}}
    assert saved[0]["layoutQuery"]["tabular"] == {
        "fields": ["title", "pages"],
        "sort": ["-pages"],
        "limit": 25,
    }
    await views.get_by_label("Bookmark name").fill("Essays for writers")
    await views.get_by_label("Save for").select_option(label="Role Writers")
    await views.get_by_role("button", name="Save as bookmark").click()
    await expect(views.get_by_role("listitem").filter(has_text="Essays for writers")).to_contain_text(
        "(role Writers)"
    )
    await views.get_by_role("button", name="Save as default view").click()
    await expect(page.get_by_role("status").filter(has_text="Default view saved.")).to_be_visible()
    # The bare list (the navigator's link) opens the default view.
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="books").click()
    await expect(page.get_by_text("The default view (yours).")).to_be_visible()
    await expect(status).to_have_text("Page 1 of 4 (99 items)")
    await expect(table.get_by_role("columnheader", name="pages")).to_have_attribute("aria-sort", "descending")
    await expect(table.get_by_role("row").nth(1)).to_contain_text("299")
    await visit.axe()
    await visit.shot("list-filter")
    # A bookmark opens its view; deleting it removes it.
    await page.get_by_role("link", name="Long essays").click()
    assert json.loads(view_of(page.url)["filter"]) == {"genre": {"_eq": "essay"}}
    writers = [
        p for p in await calls.ok("get", "/presets/bookmarks", params={"collection": "books"}) if p["roleId"]
    ]
    assert [(p["bookmark"], p["roleId"]) for p in writers] == [
        ("Essays for writers", studio["writers"]["id"])
    ]
    for name in ("Long essays", "Essays for writers"):
        await views.get_by_role("button", name=f"Delete bookmark {name}").click()
        await expect(page.get_by_role("status").filter(has_text=f"Bookmark {name} deleted.")).to_be_visible()
        await expect(views.get_by_role("link", name=name)).to_have_count(0)
    assert not [p for p in await calls.ok("get", "/presets", params={"collection": "books"}) if p["bookmark"]]


async def test_a_member_sees_its_scopes_presets_and_a_refused_bulk_delete(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, member, other = studio["calls"], studio["member"], studio["other"]
    view = {
        "layout": "tabular",
        "layoutQuery": {"tabular": {"fields": ["title", "genre"], "sort": ["pages"]}},
    }
    for body in (
        {"bookmark": "For everyone"},
        {"bookmark": "For writers", "roleId": studio["writers"]["id"]},
        {"bookmark": "For editors", "roleId": studio["editors"]["id"]},
        {"bookmark": "Another user's", "userId": other.id},
    ):
        await calls.ok("post", "/presets", status=201, json={"collection": "books", **view, **body})
    mine = Calls(studio["app"].client, member.headers)
    await mine.ok(
        "post",
        "/presets",
        status=201,
        json={"collection": "books", "bookmark": "Mine", **view, "userId": member.id},
    )

    await sign_in(visit, member.email, member.password, studio["a"])
    await page.get_by_role("link", name="books").click()
    table = page.get_by_role("table", name="Items of books")
    await expect(table.get_by_role("link", name="Book 004 by Bob")).to_be_visible()
    views = page.get_by_role("region", name="Presets and bookmarks")
    listed = views.get_by_role("listitem")
    await expect(listed).to_have_count(3)
    await expect(listed.nth(0)).to_contain_text("Mine (mine)")
    await expect(listed.nth(1)).to_contain_text("For writers (my role)")
    await expect(listed.nth(2)).to_contain_text("For everyone (everyone)")
    # Only its own preset has a delete button; it saves for itself only.
    await expect(views.get_by_role("button", name=re.compile("^Delete bookmark"))).to_have_count(1)
    await expect(views.get_by_role("button", name="Delete bookmark Mine")).to_be_visible()
    assert await views.get_by_label("Save for").locator("option").all_inner_texts() == ["Only me"]
    html = await page.content()
    assert "For editors" not in html and "Another user's" not in html
    await visit.axe()

    # A bulk delete: poetry it may delete; the novel and the essay the API refuses, with its message.
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/books?fields=title,genre&sort=pages")
    await expect(table.get_by_role("columnheader", name="author")).to_have_count(0)  # the new view is drawn
    await expect(table.get_by_role("checkbox", name="Select item b004")).to_be_visible()
    for item_id in ("b004", "b005", "b006", "b007"):  # poetry, essay, novel, poetry
        await table.get_by_role("checkbox", name=f"Select item {item_id}").check()
    bulk = page.get_by_role("group", name="Selected items")
    await expect(bulk.get_by_role("button", name="Set status")).to_have_count(0)  # no update rule
    await bulk.get_by_role("button", name="Delete selected").click()
    await bulk.get_by_role("button", name="Yes, delete 4 items").click()
    # A row outside the delete rule is 404, as if it did not exist (docs/access.md, "Which rows").
    message = (await mine.err("delete", "/items/books/b005", 404, "RECORD_NOT_FOUND"))["message"]
    alert = page.get_by_role("alert").filter(has_text="2 of 4 items were not deleted")
    await expect(alert).to_contain_text("(b005, b006)")
    await expect(alert).to_contain_text(message)
    await visit.axe()
    await calls.err("get", "/items/books/b004", 404)
    await calls.err("get", "/items/books/b007", 404)
    assert (await calls.get("books", "b005"))["genre"] == "essay"
    assert (await calls.get("books", "b006"))["genre"] == "novel"

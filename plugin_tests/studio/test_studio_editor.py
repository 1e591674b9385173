"""The studio's item editor in headless Chromium (docs/studio.md, "Editing content"): an editor
walks through an interface of every family, using the keyboard for at least one of each (text,
markdown with its preview, numbers, boolean, dates, choices, tags, JSON, geometry, m2o, m2m and
o2m lists, files by drag and drop and by the file input, translations side by side); the API's
validation errors show at the field their path names, a nested one inside the translations
table; the save follows the `saveAction` preference, then the site's `defaultSaveAction`;
leaving with unsaved changes asks first; a singleton opens straight in its editor.
One server and one browser for the module (the fixtures of test_studio_browser.py), controls
found by role and label only, axe-core in every page."""

from __future__ import annotations

import asyncio
import base64
import io
import re
from typing import Any

import pytest
import pytest_asyncio

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, new_member
from kernel.testing.live import LiveServer
from plugin_tests.studio import test_studio_browser as shared
from plugin_tests.studio.test_studio_browser import Visit, held_until, sign_in

pytestmark = pytest.mark.asyncio(loop_scope="package")
# The module's browser and each test's page, as test_studio_browser.py makes them.
visit = shared.visit


def png_bytes() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 60)).save(out, format="PNG")
    return out.getvalue()


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """Posts with a field of every family; authors (m2o), topics (m2m), chapters (o2m through the
    chapters' m2o `post`, sorted by `position`); a singleton `homepage`."""
    a = shared_site.calls
    await a.collection("authors", {"name": "string"})
    await a.create("authors", [{"id": "ada", "name": "Ada Lovelace"}, {"id": "alan", "name": "Alan Turing"}])
    await a.collection("topics", {"label": "string"})
    await a.create("topics", [{"id": "art", "label": "Art"}, {"id": "sci", "label": "Science"}])
    await a.collection(
        "posts",
        {
            "title": {"type": "string", "required": True, "options": {"maxLength": 80}},
            "summary": {"type": "text", "interface": "input-multiline"},
            "body": {"type": "text", "interface": "input-rich-text-md"},
            "rating": {"type": "integer", "options": {"min": 1, "max": 5}},
            "price": {"type": "decimal"},
            "featured": {"type": "boolean", "interface": "toggle"},
            "published_on": "date",
            "kind": {
                "type": "string",
                "options": {
                    "choices": [{"value": "news", "text": "News"}, {"value": "essay", "text": "Essay"}]
                },
            },
            "mood": {"type": "string", "interface": "select-radio", "options": {"choices": ["calm", "bold"]}},
            "labels": "csv",
            "settings": "json",
            "place": "geometry",
            "author": "string",
            "topics": {"type": "json", "options": {"sort": True}},
            "cover": {"type": "string", "interface": "file-image"},
            "gallery": "files",
            "translations": "json",
        },
    )
    await a.collection(
        "chapters", {"name": "string", "post": "string", "position": "integer"}, sort_field="position"
    )
    await a.create("chapters", [{"id": "c1", "name": "Chapter One"}, {"id": "c2", "name": "Chapter Two"}])
    await a.relation(type="m2o", collection="posts", field="author", relatedCollection="authors")
    await a.relation(type="m2m", collection="posts", field="topics", relatedCollection="topics")
    await a.relation(
        type="m2o", collection="chapters", field="post", relatedCollection="posts", relatedField="chapters"
    )
    await a.collection("homepage", {"headline": "string"}, singleton=True)
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {"server": server, "a": shared_site.site, "calls": a, "app": shared_site.app}
    finally:
        await server.stop()


async def test_an_editor_uses_every_interface(studio, visit: Visit):
    from playwright.async_api import expect

    page, calls = visit.page, studio["calls"]
    await calls.ok("patch", "/me/preferences", json={"saveAction": "stay"})
    await calls.ok("patch", "/site", json={"defaultSaveAction": "return"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/posts/new")
    await expect(page.get_by_role("heading", name="New item in posts")).to_be_visible()
    # The preference (stay) wins over the site's default (return).
    await expect(page.get_by_role("button", name="Save", exact=True)).to_have_accessible_description(
        "then stay here"
    )

    # Text family: typed.
    await page.get_by_label("title", exact=True).press_sequentially("Keyboard post")
    await expect(page.get_by_label("title", exact=True)).to_have_attribute("maxlength", "80")
    await page.get_by_label("summary", exact=True).fill("Short.")
    body = page.get_by_label("body", exact=True)
    await body.fill(
        "# Big news\n\nSome **bold** text <script>window.pwned=1</script> and [a link](javascript:alert(1)).\n\n"
        "- one <img src=x onerror=window.pwned=2>\n- [docs](https://example.com/docs)"
    )
    await body.press("Tab")
    await page.keyboard.press("Enter")  # the focused "Preview body" button
    preview = page.get_by_role("region", name="Preview of body")
    await expect(preview.get_by_role("heading", name="Big news")).to_be_visible()
    await expect(preview.locator("strong")).to_have_text("bold")
    await expect(preview).to_contain_text("<script>window.pwned=1</script>")
    await expect(preview.get_by_role("link")).to_have_count(1)
    await expect(preview.get_by_role("link", name="docs")).to_have_attribute(
        "href", "https://example.com/docs"
    )
    await expect(preview.get_by_role("listitem")).to_have_count(2)
    await expect(preview.locator("img")).to_have_count(0)
    assert await page.evaluate("window.pwned === undefined")

    # Numbers: typed; the API's min/max error comes back at the field.
    rating = page.get_by_label("rating", exact=True)
    await expect(rating).to_have_attribute("max", "5")
    await rating.press_sequentially("9")
    await page.get_by_label("price", exact=True).fill("12.50")
    # Boolean: Space on the switch.
    await page.get_by_role("switch", name="featured").focus()
    await page.keyboard.press("Space")
    await expect(page.get_by_role("switch", name="featured")).to_be_checked()
    # Dates: ArrowUp on the focused month segment.
    day = page.get_by_label("published_on", exact=True)
    await day.fill("2026-03-04")
    await day.focus()
    await page.keyboard.press("ArrowUp")
    await expect(day).to_have_value("2026-04-04")
    # Choices: a dropdown, and radio buttons moved with the arrow keys.
    await page.get_by_label("kind", exact=True).select_option(label="Essay")
    radios = page.get_by_role("radiogroup", name="mood")
    await radios.get_by_role("radio", name="calm").check()
    await page.keyboard.press("ArrowRight")
    await expect(radios.get_by_role("radio", name="bold")).to_be_checked()
    # Tags: Enter adds, the remove button takes one away.
    tags = page.get_by_label("labels", exact=True)
    for tag in ("alpha", "beta", "gamma"):
        await tags.press_sequentially(tag)
        await tags.press("Enter")
    await page.get_by_role("button", name="Remove tag beta").focus()
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("list", name="Tags of labels").get_by_role("listitem")).to_have_count(2)
    # JSON: checked before the save.
    settings = page.get_by_label("settings", exact=True)
    await settings.fill("{bad json")
    # Geometry: a point, the latitude typed.
    place = page.get_by_role("group", name="place")
    await place.get_by_label("Longitude").fill("13.4")
    await place.get_by_label("Latitude").press_sequentially("52.5")
    # m2o: search as one types, ArrowDown and Enter pick. The search for "lov" is held back while
    # ArrowDown highlights Ada in the list shown on focus: its answer, Ada among it, keeps her
    # highlighted (it once reset the highlight, and Enter then picked nothing: a CI failure).
    author = page.get_by_role("combobox", name="author")
    answered = asyncio.Event()
    await page.route(lambda url: "/items/authors" in url and "lov" in url, held_until(answered))
    await author.focus()
    options = page.get_by_role("listbox", name="Matching items").get_by_role("option")
    await expect(options).to_have_text(["Ada Lovelace", "Alan Turing"])
    await author.press_sequentially("lov")
    await author.press("ArrowDown")
    await expect(author).to_have_attribute("aria-activedescendant", re.compile("-0$"))
    answered.set()
    await expect(options).to_have_text(["Ada Lovelace"])
    await author.press("Enter")
    await expect(page.get_by_text("Chosen: Ada Lovelace")).to_be_visible()
    # m2m: add two, then move the second up with the keyboard.
    add_topic = page.get_by_role("combobox", name="Add to topics")
    for typed, name in (("Art", "Art"), ("Sci", "Science")):
        await add_topic.press_sequentially(typed)
        await expect(options).to_have_text([name])  # the list of what was typed, not the one shown on focus
        await add_topic.press("ArrowDown")
        await add_topic.press("Enter")
    await page.get_by_role("button", name="Move Science up").focus()
    await page.keyboard.press("Enter")
    topics = page.get_by_role("list", name="Items linked in topics").get_by_role("listitem")
    await expect(topics.first).to_contain_text("Science")
    # o2m: the chapters that will point at this post.
    add_chapter = page.get_by_role("combobox", name="Add to chapters")
    for name in ("Chapter Two", "Chapter One"):
        await add_chapter.press_sequentially(name)
        # Only the last keystroke's answer: an earlier one ("Chapter ") lists both, first One.
        await expect(page.get_by_role("listbox", name="Matching items").get_by_role("option")).to_have_text([name])
        await add_chapter.press("ArrowDown")
        await add_chapter.press("Enter")
    # Files: an image dropped on the cover, one chosen through the gallery's input (Enter opens it).
    image = base64.b64encode(png_bytes()).decode()
    drop = await page.evaluate_handle(
        """(b64) => {
        const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
        const dt = new DataTransfer();
        dt.items.add(new File([bytes], "cover.png", { type: "image/png" }));
        return dt; }""",
        image,
    )
    await page.get_by_label("cover", exact=True).dispatch_event("drop", {"dataTransfer": drop})
    thumb = page.get_by_role("img", name=re.compile("^Thumbnail of cover-"))
    await expect(thumb).to_be_visible()
    assert (await thumb.get_attribute("src")).startswith("data:image/png;base64,")
    async with page.expect_file_chooser() as chooser:
        await page.get_by_label("gallery", exact=True).focus()
        await page.keyboard.press("Enter")
    await (await chooser.value).set_files(
        [{"name": "shot.png", "mimeType": "image/png", "buffer": png_bytes()}]
    )
    await expect(page.get_by_role("img", name=re.compile("^Thumbnail of shot-"))).to_be_visible()
    # Translations side by side: a language added with the keyboard, a title too long for its field.
    await page.get_by_label("Language code").press_sequentially("de")
    await page.get_by_label("Language code").press("Enter")
    german = page.get_by_label("title in de")
    await expect(german).to_be_focused()
    await german.fill("Hallo " * 20)
    await visit.axe()

    # Saving: the JSON is refused in the browser, nothing is sent.
    await page.keyboard.press("Control+s")
    await expect(settings).to_have_attribute("aria-invalid", "true")
    await expect(settings).to_have_accessible_description(re.compile("not valid JSON"))
    await settings.fill('{"layout": "wide"}')
    # The API's errors: rating above its max at the rating field...
    await page.keyboard.press("Control+s")
    await expect(rating).to_have_attribute("aria-invalid", "true")
    await expect(rating).to_be_focused()
    await rating.fill("4")
    # ...and the translation at ["translations", "de", "title"], in its cell.
    await page.keyboard.press("Control+s")
    await expect(german).to_have_attribute("aria-invalid", "true")
    await expect(german).to_have_accessible_description(re.compile("title", re.I))
    await expect(rating).not_to_have_attribute("aria-invalid", "true")
    await visit.axe()
    await page.set_viewport_size({"width": 1200, "height": 1500})
    await page.get_by_role("heading", name="New item in posts").scroll_into_view_if_needed()
    await visit.shot("editor-interfaces")
    await page.set_viewport_size({"width": 1200, "height": 800})
    await german.fill("Tastatur-Beitrag")
    await page.keyboard.press("Control+s")
    await expect(
        page.get_by_role("heading", name=re.compile(r"^posts: "))
    ).to_be_visible()  # stay: the new item
    post_id = page.url.rsplit("/", 1)[1]
    post = await calls.get("posts", post_id)
    assert {
        k: post[k]
        for k in (
            "title",
            "summary",
            "rating",
            "price",
            "featured",
            "published_on",
            "kind",
            "mood",
            "labels",
            "settings",
            "place",
            "author",
            "topics",
        )
    } == {
        "title": "Keyboard post",
        "summary": "Short.",
        "rating": 4,
        "price": "12.50",
        "featured": True,
        "published_on": "2026-04-04",
        "kind": "essay",
        "mood": "bold",
        "labels": ["alpha", "gamma"],
        "settings": {"layout": "wide"},
        "place": {"type": "Point", "coordinates": [13.4, 52.5]},
        "author": "ada",
        "topics": ["sci", "art"],
    }
    assert post["body"].startswith("# Big news")
    assert post["translations"] == {"de": {"title": "Tastatur-Beitrag"}}
    cover = await calls.ok("get", f"/files/{post['cover']}")
    assert cover["type"] == "image/png" and cover["key"].startswith("cover-")
    assert len(post["gallery"]) == 1 and post["gallery"][0] != post["cover"]
    listed = (await calls.list("chapters", fields="id,post,position"))["data"]
    assert all("post" in c and "position" in c for c in listed), listed
    chapters = {c["id"]: (c["post"], c["position"]) for c in listed}
    assert chapters == {"c2": (post_id, 1), "c1": (post_id, 2)}

    # Reopened, the editor shows what was stored: the chapters in their order, the thumbnails.
    await page.reload()
    chapter_rows = page.get_by_role("list", name="Items linked in chapters").get_by_role("listitem")
    await expect(chapter_rows).to_have_count(2)
    await expect(chapter_rows.first).to_contain_text("Chapter Two")
    await expect(page.get_by_role("img", name=re.compile("^Thumbnail of cover-"))).to_be_visible()
    await expect(page.get_by_label("title in de")).to_have_value("Tastatur-Beitrag")
    await page.get_by_role("button", name="Move Chapter One up").click()
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    chapters = {c["id"]: c["position"] for c in (await calls.list("chapters"))["data"]}
    assert chapters == {"c1": 1, "c2": 2}

    # Leaving with unsaved changes asks first: Escape stays, "Leave without saving" leaves.
    await page.get_by_label("title", exact=True).fill("Not kept")
    await page.get_by_role("link", name="Back to the list").click()
    dialog = page.get_by_role("dialog", name="Unsaved changes")
    await expect(dialog).to_be_visible()
    await visit.axe()
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    await expect(page.get_by_label("title", exact=True)).to_have_value("Not kept")
    assert page.url.endswith(f"/c/posts/i/{post_id}")
    # Closing the tab (or reloading) asks too: the browser's own beforeunload question.
    async with page.expect_event("dialog") as asked:
        await page.close(run_before_unload=True)
    question = await asked.value
    assert question.type == "beforeunload"
    await question.dismiss()
    await expect(page.get_by_label("title", exact=True)).to_have_value("Not kept")
    await page.get_by_role("link", name="Back to the list").click()
    await dialog.get_by_role("button", name="Leave without saving").click()
    await expect(page.get_by_role("table", name="Items of posts")).to_be_visible()
    assert (await calls.get("posts", post_id))["title"] == "Keyboard post"


async def test_save_actions_and_a_singleton(studio, visit: Visit):
    from playwright.async_api import expect

    page, calls = visit.page, studio["calls"]
    # No preference: the site's default (return) applies; "Save and create new" is offered too.
    await calls.ok("patch", "/me/preferences", json={"saveAction": None})
    await calls.ok("patch", "/site", json={"defaultSaveAction": "return"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, studio["a"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/authors/new")
    await page.get_by_label("name", exact=True).fill("Grace Hopper")
    await page.get_by_role("button", name="Save and create new").click()
    await expect(page.get_by_label("name", exact=True)).to_have_value("")
    await expect(page.get_by_role("heading", name="New item in authors")).to_be_visible()
    await page.get_by_label("name", exact=True).fill("Barbara Liskov")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("table", name="Items of authors")).to_be_visible()
    names = sorted(a["name"] for a in (await calls.list("authors"))["data"])
    assert names == ["Ada Lovelace", "Alan Turing", "Barbara Liskov", "Grace Hopper"]

    # A singleton opens straight in its editor, and saves in place.
    await page.get_by_role("navigation", name="Collections").get_by_role("link", name="homepage").click()
    await expect(page.get_by_role("heading", name="homepage")).to_be_visible()
    await expect(page.get_by_role("table")).to_have_count(0)
    await page.get_by_label("headline", exact=True).fill("Welcome")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    assert (await calls.ok("get", "/items/homepage"))["headline"] == "Welcome"
    await page.reload()
    await expect(page.get_by_label("headline", exact=True)).to_have_value("Welcome")
    await visit.axe()


async def test_a_member_sees_read_only_interfaces_and_no_hidden_field(studio, visit: Visit):
    from playwright.async_api import expect

    page, calls = visit.page, studio["calls"]
    await calls.create(
        "posts",
        {
            "id": "p-member",
            "title": "Shared",
            "price": "99.90",
            "author": "alan",
            "labels": ["x"],
            "kind": "news",
            "place": {"type": "Point", "coordinates": [1, 2]},
        },
    )
    member = await new_member(studio["app"], studio["a"], "subscriber")
    readable = ["title", "author", "labels", "kind", "place", "featured"]
    await calls.grant(
        [
            {"collection": "posts", "action": "read", "fields": readable},
            {"collection": "posts", "action": "update", "fields": ["title"]},
            {"collection": "authors", "action": "read", "fields": ["*"]},
        ],
        {"userId": member.id},
    )
    studio["app"].kernel.access.invalidate(studio["a"])
    await sign_in(visit, member.email, member.password, studio["a"])
    await page.goto(f"{visit.base}/studio/#/s/{studio['a']}/c/posts/i/p-member")
    await expect(page.get_by_role("heading", name="posts: p-member")).to_be_visible()
    await expect(page.get_by_label("title", exact=True)).to_be_editable()
    await expect(page.get_by_role("combobox", name=re.compile("^author"))).not_to_be_editable()
    await expect(page.get_by_role("combobox", name=re.compile("^author"))).to_have_value("Alan Turing")
    await expect(page.get_by_label(re.compile("^labels"))).not_to_be_editable()
    await expect(page.get_by_role("button", name=re.compile("^Remove tag"))).to_have_count(0)
    await expect(page.get_by_label(re.compile("^kind"))).to_be_disabled()
    await expect(page.get_by_role("switch", name=re.compile("^featured"))).to_be_disabled()
    await expect(page.get_by_label("Longitude")).not_to_be_editable()
    for hidden in ("price", "chapters", "topics", "translations", "cover"):
        await expect(page.get_by_text(hidden, exact=True)).to_have_count(0)
    assert "99.90" not in await page.content()
    await visit.axe()
    await page.get_by_label("title", exact=True).fill("Shared, retitled")
    await page.keyboard.press("Control+s")
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    stored = await calls.get("posts", "p-member")
    assert (stored["title"], stored["author"], stored["labels"]) == ("Shared, retitled", "alan", ["x"])

"""The studio's schema screens (docs/studio.md, docs/schema.md) in headless Chromium, one server and
one browser: a site admin creates a collection, sets its meta (display name, icon, display
template, folder, status and sort fields, singleton, editorial workflow, personal data), deletes
and restores it; adds a field of every type with its options, validation, interface and display;
creates m2o, o2m and m2m relations with their onDelete; sees the API's risk and the items a
destructive change meets before it applies it (a field dropped, a type changed, a relation made
to cascade, a collection deleted), and can cancel; exports the config manifest and imports one
after its diff. A member without admin rights finds no schema screen and the API refuses its
calls; another site's schema shows nothing of this one. Controls are found by role and label;
axe-core checks every screen, the risk dialog included.

The browser, ``open_visit`` and ``sign_in`` are the studio module's (``test_studio_browser.py``)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import Visit, sign_in, visiting

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

# Every field type, with what the form sets for it: (interface, display, {option label: value}),
# and the options the API must then hold.
TYPES: dict[str, tuple[str, str, dict[str, str], dict[str, Any]]] = {
    "string": ("input", "raw", {"Maximum length": "80", "Pattern (regular expression)": "^[A-Z]",
                                "Choices": "Alpha = First\nBravo"},
               {"maxLength": 80, "pattern": "^[A-Z]", "choices": [{"value": "Alpha", "text": "First"}, "Bravo"]}),
    "text": ("input-multiline", "raw", {"Minimum length": "2"}, {"minLength": 2}),
    "integer": ("input", "formatted-value", {"Minimum": "0", "Maximum": "10", "Default value (JSON)": "3"},
                {"min": 0, "max": 10, "default": 3}),
    "bigInteger": ("input", "formatted-value", {"Maximum": "900"}, {"max": 900}),
    "float": ("input", "formatted-value", {"Minimum": "-1.5"}, {"min": -1.5}),
    "decimal": ("input", "formatted-value", {"Precision (digits)": "8", "Scale (digits after the point)": "2"},
                {"precision": 8, "scale": 2}),
    "boolean": ("toggle", "boolean", {"Default value (JSON)": "true"}, {"default": True}),
    "dateTime": ("datetime", "datetime", {}, {}),
    "date": ("datetime", "datetime", {}, {}),
    "time": ("datetime", "datetime", {}, {}),
    "timestamp": ("datetime", "datetime", {}, {}),
    "uuid": ("input", "raw", {"Unique": "check"}, {"unique": True}),
    "hash": ("input", "raw", {"Hash algorithm": "sha256"}, {"algorithm": "sha256"}),
    "slug": ("input", "raw", {"Maximum length": "40"}, {"maxLength": 40}),
    "code": ("input-multiline", "raw", {}, {}),
    "color": ("input", "color", {"Choices": "#ff0000\n#00ff00"}, {"choices": ["#ff0000", "#00ff00"]}),
    "json": ("input", "raw", {}, {}),
    "csv": ("tags", "labels", {}, {}),
    "geometry": ("map", "raw", {"Geometry type": "Point"}, {"geometryType": "Point"}),
    "files": ("file", "file", {}, {}),
}


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """The shared app served by uvicorn; a member of its site without admin rights (its content
rights are granted by the test that uses it)."""
    member = await new_member(shared_site.app, shared_site.site, "subscriber")
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {"server": server, "shared": shared_site, "member": member,
               "as_member": Calls(shared_site.app.client, member.headers)}
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, studio) -> Any:
    async with visiting(browser, studio["server"].base_url, height=1000, accept_downloads=True) as seen:
        yield seen


async def new_site(studio: Any, prefix: str) -> tuple[Calls, str]:
    """A fresh site of the shared app (a test's schema is its own): the instance admin's calls."""
    calls = await studio["shared"].new_site(prefix)
    return calls, calls.headers["X-Svc-Site"]


async def risk_dialog(visit: Visit, title: str) -> Any:
    from playwright.async_api import expect

    dialog = visit.page.get_by_role("dialog", name=title)
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_text("Risk: high")).to_be_visible()
    await visit.axe()
    return dialog


async def test_collections_create_meta_delete_and_restore(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, site = await new_site(studio, "sch")
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site}")
    await page.get_by_role("link", name="Schema", exact=True).click()
    await expect(page.get_by_role("heading", name="Schema", level=1)).to_be_visible()
    await visit.axe()
    await page.get_by_label("Name", exact=True).fill("books")
    await page.get_by_label("Display name").fill("Books")
    await page.get_by_label("Icon").fill("menu_book")
    await page.get_by_role("button", name="Create collection").click()
    await expect(page.get_by_role("heading", name="Collection books", level=1)).to_be_visible()
    await expect(page.get_by_role("status").filter(has_text="Collection books created.")).to_be_visible()
    # The navigator was read again: the new collection is there.
    await expect(page.get_by_role("navigation", name="Collections").get_by_role("link", name="Books")).to_be_visible()
    created = await calls.ok("get", "/collections/books")
    assert (created["displayName"], created["icon"], created["singleton"]) == ("Books", "menu_book", False)
    await calls.field("books", "title", "string")
    await calls.field("books", "position", "integer")
    await page.reload()
    await expect(page.get_by_role("heading", name="Collection books", level=1)).to_be_visible()

    # The meta fields: renamed display, icon, template, folder, status and sort fields, flags.
    await page.get_by_label("Display name").fill("Library books")
    await page.get_by_label("Icon").fill("book-open")
    await page.get_by_label("Note").fill("Every book we hold")
    await page.get_by_label("Display template").fill("{{ title }}")
    await page.get_by_label("Folder in the navigator").fill("Library")
    await page.get_by_label("Status field").select_option("status")
    await page.get_by_label("Sort field").select_option("position")
    await page.get_by_label("Editorial workflow (review before publishing)").check()
    await page.get_by_label("The reviewer must not be the author").check()
    await page.get_by_label("Holds personal data").check()
    await page.get_by_label("Versioning").check()
    await visit.axe()
    await page.get_by_role("button", name="Save settings").click()
    await expect(page.get_by_role("status").filter(has_text="Settings saved.")).to_be_visible()
    saved = await calls.ok("get", "/collections/books")
    assert {k: saved[k] for k in ("displayName", "icon", "note", "status_field", "sort_field", "editorialWorkflow",
                                  "requireSeparateReviewer", "personalData", "versioning", "singleton")} == {
        "displayName": "Library books", "icon": "book-open", "note": "Every book we hold", "status_field": "status",
        "sort_field": "position", "editorialWorkflow": True, "requireSeparateReviewer": True,
        "personalData": True, "versioning": True, "singleton": False}
    assert (saved["meta"]["display_template"], saved["meta"]["group"]) == ("{{ title }}", "Library")
    nav = page.get_by_role("navigation", name="Collections")
    await expect(nav.get_by_role("group").get_by_text("Library", exact=True)).to_be_visible()
    link = nav.get_by_role("link", name="Library books", exact=True)
    await expect(link).to_be_visible()
    # -- studio42: its icon (a shipped one, icons.js) is decorative; the name stays the label.
    shapes = "a => [...a.querySelectorAll('svg')].map((s) => [s.getAttribute('aria-hidden'), s.childElementCount])"
    assert await link.evaluate(shapes) == [["true", 2]]
    assert await nav.get_by_role("link", name="Books", exact=True).count() == 0
    await visit.shot("schema-collection")

    # A singleton, made from the list's form.
    await page.get_by_role("link", name="Back to the schema").click()
    await page.get_by_label("Name", exact=True).fill("homepage")
    await page.get_by_label("Singleton").check()
    await page.get_by_role("button", name="Create collection").click()
    await expect(page.get_by_role("heading", name="Collection homepage", level=1)).to_be_visible()
    assert (await calls.ok("get", "/collections/homepage"))["singleton"] is True

    # Deleting a collection with items: the API's dry run and the items counted, first.
    await calls.create("books", [{"title": "Dune"}, {"title": "Emma"}, {"title": "Ulysses"}])
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/books")
    await page.get_by_role("button", name="Delete collection books").click()
    dialog = await risk_dialog(visit, "Delete the collection books?")
    await expect(dialog.get_by_role("list", name="Changes", exact=True)).to_contain_text("Delete collection books")
    await expect(dialog.get_by_role("list", name="Destructive changes")).to_contain_text("Delete: books (holds data)")
    await expect(dialog.get_by_role("status")).to_have_text("3 items are in books.")
    await visit.shot("schema-risk")
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    assert (await calls.ok("get", "/collections/books"))["deletedAt"] is None
    await page.get_by_role("button", name="Delete collection books").click()
    dialog = await risk_dialog(visit, "Delete the collection books?")
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(page.get_by_role("status").filter(has_text="Collection books deleted.")).to_be_visible()
    await calls.err("get", "/collections/books", 404)
    await expect(page.get_by_role("navigation", name="Collections").get_by_role("link", name="Library books")).to_have_count(0)
    await visit.axe()
    await page.get_by_role("button", name="Restore books").click()
    await expect(page.get_by_role("status").filter(has_text="Collection books restored.")).to_be_visible()
    restored = await calls.ok("get", "/collections/books")
    assert restored["displayName"] == "Library books" and restored["deletedAt"] is None
    assert len(await calls.ok("get", "/items/books")) == 3
    await expect(page.get_by_role("link", name="Schema of books")).to_be_visible()
    await expect(page.get_by_role("button", name="Restore books")).to_have_count(0)


async def test_fields_of_every_type_and_destructive_field_changes(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, site = await new_site(studio, "fld")
    await calls.collection("specimens", {})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/specimens")
    for type_name, (interface, display, options, _) in TYPES.items():
        await page.get_by_role("link", name="Add field").click()
        await expect(page.get_by_role("heading", name="New field of specimens", level=1)).to_be_visible()
        await page.get_by_label("Field name").fill(f"f_{type_name}")
        await page.get_by_label("Type", exact=True).select_option(type_name)
        await page.get_by_label("Interface").fill(interface)
        await page.get_by_label("Display", exact=True).fill(display)
        for label, value in options.items():
            control = page.get_by_label(label, exact=True)
            if value == "check":
                await control.check()
            elif await control.evaluate("e => e.tagName") == "SELECT":
                await control.select_option(value)
            else:
                await control.fill(value)
        if type_name == "string":
            await page.get_by_label("Required").check()
            await page.get_by_label("Other options (JSON)").fill('{"placeholder": "A title"}')
            # Options of other types are not offered for this one.
            await expect(page.get_by_label("Minimum", exact=True)).to_be_hidden()
            await expect(page.get_by_label("Hash algorithm")).to_be_hidden()
            await visit.axe()
            await visit.shot("schema-field")
        await page.get_by_role("button", name="Create field").click()
        await expect(page.get_by_role("status").filter(has_text=f"Field f_{type_name} created.")).to_be_visible()
    stored = {f["field"]: f for f in await calls.ok("get", "/fields/specimens")}
    for type_name, (interface, display, _, options) in TYPES.items():
        got = stored[f"f_{type_name}"]
        expected = {**options, "placeholder": "A title"} if type_name == "string" else options
        assert (got["type"], got["interface"], got["display"], got["options"]) == (type_name, interface, display,
                                                                                   expected), got
    assert stored["f_string"]["required"] is True and stored["f_text"]["required"] is False
    table = page.get_by_role("table", name="Fields of specimens")
    await expect(table.get_by_role("row")).to_have_count(len(TYPES) + 1)
    await visit.axe()

    # The API's refusal shows with its path; nothing is stored.
    await page.get_by_role("link", name="Add field").click()
    await page.get_by_label("Field name").fill("risky")
    await page.get_by_label("Pattern (regular expression)").fill("(a+)+")
    await page.get_by_role("button", name="Create field").click()
    await expect(page.get_by_role("main").get_by_role("status")).to_contain_text(re.compile(r"VALIDATION_FAILED.*\[options / pattern\]"))
    await calls.err("get", "/fields/specimens/risky", 404)

    # An edit: the interface and required change.
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/specimens")
    await page.get_by_role("link", name="Edit field f_text").click()
    await expect(page.get_by_label("Field name")).to_have_attribute("readonly", "")
    await page.get_by_label("Interface").fill("input-rich-text-md")
    await page.get_by_label("Required").check()
    await page.get_by_role("button", name="Save field").click()
    await expect(page.get_by_role("status").filter(has_text="Field f_text saved.")).to_be_visible()
    text = await calls.ok("get", "/fields/specimens/f_text")
    assert (text["interface"], text["required"], text["options"]) == ("input-rich-text-md", True, {"minLength": 2})

    # A type change meeting stored values: the dry run and the values it meets, then applied.
    await calls.create("specimens", [{"f_string": "Alpha", "f_text": "one", "f_code": "42"},
                                     {"f_string": "Bravo", "f_text": "two"}])
    await page.get_by_role("link", name="Edit field f_code").click()
    await page.get_by_label("Type", exact=True).select_option("integer")
    await page.get_by_role("button", name="Save field").click()
    dialog = await risk_dialog(visit, "Change the type of specimens.f_code from code to integer?")
    await expect(dialog.get_by_role("list", name="Destructive changes")).to_contain_text("Type change: specimens.f_code")
    await expect(dialog.get_by_role("status")).to_have_text("1 items of specimens hold a value in f_code.")
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(page.get_by_role("status").filter(has_text="Field f_code saved.")).to_be_visible()
    assert (await calls.ok("get", "/fields/specimens/f_code"))["type"] == "integer"
    values = sorted((i.get("f_code") for i in await calls.ok("get", "/items/specimens")), key=str)
    assert values == [42, None]

    # Dropping a field that holds data: cancelled once, then applied.
    await page.get_by_role("button", name="Delete field f_text").click()
    dialog = await risk_dialog(visit, "Delete the field specimens.f_text?")
    await expect(dialog.get_by_role("list", name="Destructive changes")).to_contain_text("Delete: specimens.f_text (holds data)")
    await expect(dialog.get_by_role("status")).to_have_text("2 items of specimens hold a value in f_text.")
    await page.keyboard.press("Escape")
    await expect(dialog).to_have_count(0)
    await calls.ok("get", "/fields/specimens/f_text")
    await page.get_by_role("button", name="Delete field f_text").click()
    dialog = await risk_dialog(visit, "Delete the field specimens.f_text?")
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(page.get_by_role("status").filter(has_text="Field f_text deleted.")).to_be_visible()
    await calls.err("get", "/fields/specimens/f_text", 404)
    assert all("f_text" not in i for i in await calls.ok("get", "/items/specimens"))


# -- studio42: the interface's and the display's options, from what each declares
async def test_interface_and_display_options_from_their_declarations(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, site = await new_site(studio, "opt")
    await calls.collection("gauges", {"label": "string", "note": "text", "price": "float", "kind": "string", "ok": "boolean"})
    await calls.create("gauges", [{"label": "G1", "note": "n", "price": 12345.5, "ok": True}])
    # -- studio42b: a boolean display's labels and icons, set through the API
    await calls.ok("patch", "/fields/gauges/ok", json={"display": "boolean", "options": {
        "displayOptions": {"labelOn": "Works", "labelOff": "Broken", "icons": True}}})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/gauges")
    await page.get_by_role("link", name="Edit field note").click()
    interface_options = page.get_by_role("group", name=re.compile("^Options of the interface"))
    await expect(interface_options).to_contain_text("No options of its own.")
    await page.get_by_label("Interface").fill("input-multiline")
    await expect(interface_options).to_have_accessible_name("Options of the interface input-multiline")
    await interface_options.get_by_label("Placeholder").fill("What was seen")
    await interface_options.get_by_label("Rows").fill("3")
    await visit.axe()
    await page.get_by_role("button", name="Save field").click()
    await expect(page.get_by_role("status").filter(has_text="Field note saved.")).to_be_visible()
    note = await calls.ok("get", "/fields/gauges/note")
    assert (note["interface"], note["options"]["interfaceOptions"]) == (
        "input-multiline", {"placeholder": "What was seen", "rows": 3})

    await page.get_by_role("link", name="Edit field price").click()
    await page.get_by_label("Display", exact=True).fill("formatted-value")
    display_options = page.get_by_role("group", name="Options of the display formatted-value")
    await display_options.get_by_label("Prefix").fill("EUR ")
    await display_options.get_by_label("Suffix").fill(" net")
    await display_options.get_by_label("Thousands separator").check()  # -- studio42b
    await display_options.get_by_label("Decimal places").fill("2")
    await page.get_by_role("button", name="Save field").click()
    await expect(page.get_by_role("status").filter(has_text="Field price saved.")).to_be_visible()
    price = await calls.ok("get", "/fields/gauges/price")
    assert price["options"]["displayOptions"] == {"prefix": "EUR ", "suffix": " net", "thousands": True, "decimals": 2}
    # Stored options come back into their generated form.
    await page.get_by_role("link", name="Edit field price").click()
    await expect(page.get_by_role("group", name="Options of the display formatted-value").get_by_label("Prefix")).to_have_value("EUR ")

    # -- studio42b: each interface declares the options of its family, shown for the field's type
    # (a number's step is not offered for a string): a line trimmed, counted, in a monospace font;
    # a dropdown's own choices with another value allowed.
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/gauges")
    await page.get_by_role("link", name="Edit field label").click()
    await page.get_by_label("Interface").fill("input")
    own = page.get_by_role("group", name="Options of the interface input")
    await expect(own.get_by_label("Step")).to_have_count(0)
    await own.get_by_label("Trim spaces at the ends").check()
    await own.get_by_label("Show the length typed").check()
    await own.get_by_label("Monospace font").check()
    await page.get_by_role("button", name="Save field").click()
    await expect(page.get_by_role("status").filter(has_text="Field label saved.")).to_be_visible()
    await page.get_by_role("link", name="Edit field kind").click()
    await page.get_by_label("Interface").fill("select-dropdown")
    own = page.get_by_role("group", name="Options of the interface select-dropdown")
    await own.get_by_label("Choices offered").fill("a = Alpha\nb = Beta")
    await own.get_by_label("Allow another value").check()
    await visit.axe()
    await page.get_by_role("button", name="Save field").click()
    await expect(page.get_by_role("status").filter(has_text="Field kind saved.")).to_be_visible()
    kind = await calls.ok("get", "/fields/gauges/kind")
    assert kind["options"]["interfaceOptions"] == {"choices": [{"value": "a", "text": "Alpha"}, {"value": "b", "text": "Beta"}],
                                                   "allowOther": True}

    # The list shows the price through its display, the editor the note with its options.
    await page.goto(f"{visit.base}/studio/#/s/{site}/c/gauges")
    table = page.get_by_role("table", name=re.compile("^Items of"))
    await expect(table.get_by_role("cell", name="EUR 12,345.50 net")).to_be_visible()
    await expect(table.get_by_role("cell", name="\u2713 Works")).to_be_visible()
    await page.get_by_role("link", name=re.compile("^Open item")).first.click()
    await expect(page.get_by_label("note")).to_have_attribute("placeholder", "What was seen")
    await expect(page.get_by_label("note")).to_have_attribute("rows", "3")
    # -- studio42b: the line counts what is typed and is saved trimmed; the dropdown takes another value.
    label = page.get_by_label("label", exact=True)
    await expect(label).to_have_class(re.compile(r"\bcode\b"))
    await label.fill("  Gauge one  ")
    await expect(label).to_have_accessible_description(re.compile("13 of 255 characters"))
    kind = page.get_by_label("kind", exact=True)
    await expect(kind.get_by_role("option")).to_have_text(["(none)", "Alpha", "Beta", "Other…"])
    await kind.select_option(label="Other…")
    await page.get_by_label("Other value of kind").fill("gamma")
    await visit.axe()
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    saved = (await calls.ok("get", "/items/gauges"))[0]
    assert (saved["label"], saved["kind"]) == ("Gauge one", "gamma")


async def test_relations_with_their_on_delete(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, site = await new_site(studio, "rel")
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"title": "string", "author": "uuid", "editor": "uuid", "reviewers": "json"})
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema")
    await page.get_by_role("link", name="Relations").click()
    await expect(page.get_by_role("heading", name="Relations", level=1)).to_be_visible()
    await expect(page.get_by_text("No relations yet.")).to_be_visible()
    await visit.axe()

    async def create(kind: str, collection: str, field: str, related: str, related_field: str, on_delete: str) -> None:
        await page.get_by_label("Type", exact=True).select_option(kind)
        await page.get_by_label("Collection", exact=True).select_option(collection)
        await page.get_by_label("Field", exact=True).fill(field)
        await page.get_by_label("Related collection").select_option(related)
        await page.get_by_label("Related field", exact=True).fill(related_field)
        await page.get_by_label("On delete", exact=True).select_option(on_delete)
        await page.get_by_role("button", name="Create relation").click()

    await create("m2o", "posts", "author", "authors", "posts", "set null")
    await expect(page.get_by_role("status").filter(has_text="Relation posts.author created.")).to_be_visible()
    await create("o2m", "authors", "edited", "posts", "editor", "restrict")
    await expect(page.get_by_role("status").filter(has_text="Relation authors.edited created.")).to_be_visible()
    await create("m2m", "posts", "reviewers", "authors", "", "set null")
    await expect(page.get_by_role("status").filter(has_text="Relation posts.reviewers created.")).to_be_visible()
    # A relation the API refuses (a holder field that does not exist) shows its reason.
    await create("m2o", "posts", "missing", "authors", "", "set null")
    await expect(page.get_by_role("main").get_by_role("status")).to_contain_text("VALIDATION_FAILED")
    stored = {(r["collection"], r["field"]): r for r in await calls.ok("get", "/relations")}
    assert {k: (r["type"], r["relatedCollection"], r["relatedField"], r["onDelete"]) for k, r in stored.items()} == {
        ("posts", "author"): ("m2o", "authors", "posts", "set null"),
        ("authors", "edited"): ("o2m", "posts", "editor", "restrict"),
        ("posts", "reviewers"): ("m2m", "authors", None, "set null"),
    }
    table = page.get_by_role("table", name="Relations of this site")
    await expect(table.get_by_role("row")).to_have_count(4)
    await visit.axe()
    await visit.shot("schema-relations")

    # Widening onDelete to cascade: the dry run, and the posts whose author reference it follows.
    ann = (await calls.create("authors", {"name": "Ann"}))["id"]
    await calls.create("posts", [{"title": "One", "author": ann}, {"title": "Two", "author": ann}, {"title": "Three"}])
    await page.get_by_label("On delete of posts.author").select_option("cascade")
    await page.get_by_role("button", name="Save on delete of posts.author").click()
    dialog = await risk_dialog(visit, "Make posts.author cascade?")
    await expect(dialog.get_by_role("list", name="Changes", exact=True)).to_contain_text('onDelete: "set null" → "cascade"')
    await expect(dialog.get_by_role("list", name="Destructive changes")).to_contain_text(
        "On delete widened to cascade: posts.author")
    await expect(dialog.get_by_role("status")).to_have_text("2 items of posts hold a value in author.")
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(page.get_by_role("status").filter(has_text="Relation posts.author saved.")).to_be_visible()
    assert (await calls.ok("get", f"/relations/{stored[('posts', 'author')]['id']}"))["onDelete"] == "cascade"
    # Narrowing needs no question.
    await page.get_by_label("On delete of authors.edited").select_option("set null")
    await page.get_by_role("button", name="Save on delete of authors.edited").click()
    await expect(page.get_by_role("status").filter(has_text="Relation authors.edited saved.")).to_be_visible()
    assert (await calls.ok("get", f"/relations/{stored[('authors', 'edited')]['id']}"))["onDelete"] == "set null"

    await page.get_by_role("button", name="Delete relation posts.reviewers").click()
    dialog = page.get_by_role("dialog", name="Delete the relation posts.reviewers?")
    await expect(dialog.get_by_role("list", name="Changes", exact=True)).to_contain_text("Delete relation posts.reviewers")
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(page.get_by_role("status").filter(has_text="Relation posts.reviewers deleted.")).to_be_visible()
    assert ("posts", "reviewers") not in {(r["collection"], r["field"]) for r in await calls.ok("get", "/relations")}

    # -- studio42: a change the dry run finds invalid (a field another relation still needs) shows
    # the API's problems with their paths, and cannot be applied.
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/c/posts")
    await page.get_by_role("button", name="Delete field editor").click()
    dialog = page.get_by_role("dialog", name="Delete the field posts.editor?")
    problems = dialog.get_by_role("list", name="Problems")
    await expect(problems).to_contain_text(
        "DANGLING_REFERENCE: No field 'editor' in collection 'posts' (relations / 0 / relatedField)")
    await expect(dialog.get_by_role("button", name="Apply the change")).to_be_disabled()
    await visit.axe()
    await dialog.get_by_role("button", name="Cancel").click()
    await expect(dialog).to_have_count(0)
    assert (await calls.ok("get", "/fields/posts/editor"))["field"] == "editor"

    # -- studio42: an m2a names its related collections (the freed JSON field holds the pairs).
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema/relations")
    await page.get_by_label("Type", exact=True).select_option("m2a")
    await expect(page.get_by_label("Related collection", exact=True)).to_be_hidden()
    await page.get_by_label("Collection", exact=True).select_option("posts")
    await page.get_by_label("Field", exact=True).fill("reviewers")
    targets = page.get_by_role("group", name="Related collections (m2a)")
    await targets.get_by_label("authors", exact=True).check()
    await targets.get_by_label("posts", exact=True).check()
    await visit.axe()
    await page.get_by_role("button", name="Create relation").click()
    await expect(page.get_by_role("status").filter(has_text="Relation posts.reviewers created.")).to_be_visible()
    m2a = {(r["collection"], r["field"]): r for r in await calls.ok("get", "/relations")}[("posts", "reviewers")]
    assert (m2a["type"], sorted(m2a["relatedCollections"])) == ("m2a", ["authors", "posts"])
    row = page.get_by_role("table", name="Relations of this site").get_by_role("row").filter(has_text="posts.reviewers")
    await expect(row).to_contain_text("m2a")
    await expect(row).to_contain_text("authors, posts")

    # -- studio42c: the m2a's collections changed after its creation: one more at once; one
    # dropped after the API's dry run, shown in the risk dialog.
    await calls.collection("tags", {"name": "string"})
    await page.reload()
    await row.get_by_text("Change the collections of posts.reviewers").click()
    anyof = page.get_by_role("group", name="Related collections of posts.reviewers")
    await expect(anyof.get_by_label("authors", exact=True)).to_be_checked()
    await anyof.get_by_label("tags", exact=True).check()
    await visit.axe()
    await visit.shot("schema-m2a")
    await page.get_by_role("button", name="Save the collections of posts.reviewers").click()
    await expect(page.get_by_role("status").filter(has_text="Relation posts.reviewers saved.")).to_be_visible()
    m2a = {(r["collection"], r["field"]): r for r in await calls.ok("get", "/relations")}[("posts", "reviewers")]
    assert sorted(m2a["relatedCollections"]) == ["authors", "posts", "tags"]
    await expect(row).to_contain_text("authors, posts, tags")
    await row.get_by_text("Change the collections of posts.reviewers").click()
    await anyof.get_by_label("authors", exact=True).uncheck()
    await page.get_by_role("button", name="Save the collections of posts.reviewers").click()
    dialog = page.get_by_role("dialog", name="Change the collections of posts.reviewers?")
    await expect(dialog).to_be_visible()
    await visit.axe()
    await dialog.get_by_role("button", name="Apply the change").click()
    await expect(dialog).to_have_count(0)
    # The relations drawn again (the status says "saved" since the first change: the row tells).
    await expect(row.get_by_role("cell").nth(2)).to_have_text(re.compile("^posts, tags"))
    m2a = {(r["collection"], r["field"]): r for r in await calls.ok("get", "/relations")}[("posts", "reviewers")]
    assert sorted(m2a["relatedCollections"]) == ["posts", "tags"]


async def test_the_config_manifest_export_and_import_with_its_diff(studio, visit):
    from playwright.async_api import expect

    page = visit.page
    calls, site = await new_site(studio, "cfg")
    await calls.collection("notes", {"body": "text", "mood": "string"})
    await calls.create("notes", [{"body": "Hello", "mood": "calm"}])
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema")
    await page.get_by_role("link", name="Config manifest").click()
    await expect(page.get_by_role("heading", name="Config manifest", level=1)).to_be_visible()
    await visit.axe()
    await page.get_by_role("button", name="Export", exact=True).click()
    await expect(page.get_by_role("status").filter(has_text="Exported 1 collections, 2 fields, 0 relations.")).to_be_visible()
    shown = json.loads(await page.get_by_label("Exported manifest").input_value())
    assert shown["version"] == "svc.config@v1" and [c["name"] for c in shown["collections"]] == ["notes"]
    async with page.expect_download() as info:
        await page.get_by_role("button", name="Download").click()
    download = await info.value
    assert download.suggested_filename == f"svc-config-{site}-schema.json"
    manifest = json.loads(open(await download.path(), encoding="utf-8").read())
    assert manifest == shown

    # Not a manifest of this version: the dry run's error, and nothing to apply.
    text = page.get_by_label("Manifest to import")
    await text.fill(json.dumps({**manifest, "version": "svc.config@v0"}))
    await page.get_by_role("button", name="Preview changes").click()
    await expect(page.get_by_role("heading", name="The manifest cannot be applied")).to_be_visible()
    await expect(page.get_by_role("list", name="Problems")).to_contain_text("UNSUPPORTED_MANIFEST_VERSION")
    await expect(page.get_by_role("button", name="Apply import")).to_be_disabled()

    # A new collection, a field dropped that holds data: the diff first, destructive refused
    # until allowed.
    changed = json.loads(json.dumps(manifest))
    changed["collections"].append({"name": "tags", "label": "Tags"})
    changed["fields"] = [f for f in changed["fields"] if f["field"] != "mood"]
    changed["fields"].append({"collection": "tags", "field": "label", "type": "string"})
    await text.fill(json.dumps(changed))
    await page.get_by_label("Mode").select_option("replace-managed")
    await page.get_by_role("button", name="Preview changes").click()
    counts = page.get_by_role("table", name="Changes by resource")
    await expect(counts.get_by_role("row", name=re.compile("^collection"))).to_have_text(re.compile(r"collection\s*1\s*0\s*0\s*1"))
    await expect(counts.get_by_role("row", name=re.compile("^field "))).to_have_text(re.compile(r"field\s*1\s*0\s*1\s*1"))
    await expect(page.get_by_text("Risk: high")).to_be_visible()
    await expect(page.get_by_role("list", name="Destructive changes")).to_contain_text("Delete: notes.mood (holds data)")
    await visit.axe()
    await page.get_by_role("heading", name="What the import changes").scroll_into_view_if_needed()
    await visit.shot("schema-import")
    await page.get_by_role("button", name="Apply import").click()
    await expect(page.get_by_role("region", name="Import").get_by_role("status")).to_contain_text("DESTRUCTIVE_BLOCKED")
    assert [c["name"] for c in await calls.ok("get", "/collections")] == ["notes"]
    await page.get_by_label("Allow destructive changes").check()
    await page.get_by_role("button", name="Apply import").click()
    await expect(page.get_by_role("region", name="Import").get_by_role("status")).to_have_text("Import applied: 2 created, 0 updated, 1 deleted.")
    assert sorted(c["name"] for c in await calls.ok("get", "/collections")) == ["notes", "tags"]
    assert [f["field"] for f in await calls.ok("get", "/fields/notes")] == ["body"]
    # The navigator was read again on the next screen.
    await page.get_by_role("link", name="Back to the schema").click()
    await expect(page.get_by_role("navigation", name="Collections").get_by_role("link", name="Tags")).to_be_visible()


async def test_a_member_never_reaches_the_schema_and_sites_stay_apart(studio, visit):
    from playwright.async_api import expect

    page, member, shared = visit.page, studio["member"], studio["shared"]
    site = shared.site
    await shared.calls.collection("pages", {"title": "string"})
    # Every content right on the collection, and still no admin.
    await shared.calls.grant([{"collection": "pages", "action": a} for a in ("create", "read", "update", "delete")],
                             {"userId": member.id})
    shared.app.kernel.access.invalidate(site)
    await sign_in(visit, member.email, member.password, site)
    await expect(page.get_by_role("link", name="Schema", exact=True)).to_have_count(0)
    for where in ("schema", "schema/c/pages", "schema/c/pages/f/title", "schema/relations", "schema/config"):
        await page.goto(f"{visit.base}/studio/#/s/{site}/{where}")
        await expect(page.get_by_role("alert")).to_have_text("Only site admins shape the schema.")
        await expect(page.get_by_role("button")).not_to_contain_text(["Create collection"])
        await visit.axe()
    as_member = studio["as_member"]
    for method, path, body in (
        ("post", "/collections", {"name": "mine"}),
        ("patch", "/collections/pages", {"displayName": "Taken"}),
        ("delete", "/collections/pages", None),
        ("post", "/fields/pages", {"field": "x", "type": "string"}),
        ("patch", "/fields/pages/title", {"type": "text"}),
        ("delete", "/fields/pages/title", None),
        ("post", "/relations", {"type": "m2o", "collection": "pages", "field": "title", "relatedCollection": "pages"}),
        ("get", "/config/export", None),
        ("post", "/config/import?dryRun=true", {"version": "svc.config@v1"}),
    ):
        refused = await as_member.call(method, path, **({"json": body} if body is not None else {}))
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED"), (path, refused.text)
    kept = await shared.calls.ok("get", "/fields/pages/title")
    assert kept["type"] == "string"

    # Another site's schema screens show nothing of this one.
    other = await shared.new_site("oth")
    await other.collection("secrets_b", {"code": "string"})
    site_b = other.headers["X-Svc-Site"]
    await visit.context.clear_cookies()
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD)
    await page.goto(f"{visit.base}/studio/#/s/{site_b}/schema")
    await expect(page.get_by_role("link", name="Schema of secrets_b")).to_be_visible()
    await expect(page.get_by_role("link", name="Schema of pages")).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site_b}/schema/c/pages")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await page.goto(f"{visit.base}/studio/#/s/{site}/schema")
    await expect(page.get_by_role("link", name="Schema of pages")).to_be_visible()
    await expect(page.get_by_role("link", name="Schema of secrets_b")).to_have_count(0)
    await visit.axe()

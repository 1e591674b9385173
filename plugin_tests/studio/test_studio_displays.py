"""The studio's drawn displays and the options of displays and interfaces (docs/studio.md, "Options
by interface and display") in headless Chromium: a list draws labels as chips with their
choice's text, a colour as a swatch with its value, an image as a thumbnail through the asset
transform, a file as its name and type, and the related values of an m2o, m2m and m2a through
the display's template, read with the fields the template names only; a bigInteger beyond 2^53
keeps its digits when grouped; a date shows on a 24-hour clock or relative to now. The editor
honours an interface's relation template, seconds left out, number bounds, no "none" entry and a
file input's types. Each check fails if its option were ignored. Controls are found by role and
label; axe-core checks every screen. The browser, ``visiting`` and ``sign_in`` are
test_studio_browser's."""

from __future__ import annotations

import io
import re
from typing import Any
from urllib.parse import unquote

import pytest
import pytest_asyncio
from PIL import Image
from test_studio_browser import sign_in, visiting

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

BIG = 9007199254740993  # 2^53 + 1: a JS number would read it as ...992


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (64, 32), (30, 120, 200)).save(out, "PNG")
    return out.getvalue()


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def shown(shared_site) -> Any:
    """A site of the shared app whose ``gauges`` use every drawn display, served by uvicorn."""
    calls = await shared_site.new_site("dsp")
    site = calls.headers["X-Svc-Site"]
    await calls.collection("tags", {"name": "string", "state": "string", "note": "text"})
    await calls.collection("makers", {"name": "string", "state": "string"})
    await calls.collection("gauges", {"label": "string", "kinds": "csv", "shade": "color", "big": "bigInteger",
                                      "tag": "uuid", "tagset": "json", "mixed": "json", "photo": "uuid", "doc": "uuid",
                                      "seen": "dateTime", "due": "dateTime", "count": "integer", "grade": "string",
                                      "cost": "decimal"})
    red, blue = await calls.create("tags", [{"name": "Red", "state": "open", "note": "secret-note-text"},
                                            {"name": "Blue", "state": "shut", "note": "secret-note-text"}])
    (acme,) = await calls.create("makers", [{"name": "Acme", "state": "live"}])
    for body in ({"type": "m2o", "collection": "gauges", "field": "tag", "relatedCollection": "tags"},
                 {"type": "m2m", "collection": "gauges", "field": "tagset", "relatedCollection": "tags"},
                 {"type": "m2a", "collection": "gauges", "field": "mixed", "relatedCollections": ["tags", "makers"]}):
        await calls.ok("post", "/relations", 201, json=body)
    photo = await calls.ok("put", "/files/upload/dot.png", status=201, content=png(), headers={"Content-Type": "image/png"})
    doc = await calls.ok("put", "/files/upload/report.txt", status=201, content=b"a report",
                         headers={"Content-Type": "text/plain"})
    template = {"template": "{{name}} ({{state}})"}
    for field, body in {
        "kinds": {"display": "labels", "options": {"choices": [{"value": "a", "text": "Alpha", "color": "#cc0000"},
                                                               {"value": "b", "text": "Beta"}]}},
        "shade": {"display": "color"},
        "big": {"display": "formatted-value", "options": {"displayOptions": {"thousands": True}}},
        "cost": {"display": "formatted-value", "options": {"displayOptions": {"thousands": True, "decimals": 2}}},
        "tag": {"display": "related-values", "interface": "select-dropdown-m2o",
                "options": {"displayOptions": template, "interfaceOptions": {"template": "{{state}}: {{name}}"}}},
        "tagset": {"display": "related-values", "options": {"displayOptions": template}},
        "mixed": {"display": "related-values", "options": {"displayOptions": template}},
        "photo": {"display": "image"},
        "doc": {"display": "file", "interface": "file", "options": {"interfaceOptions": {"accept": "text/plain, .md", "folder": "Reports"}}},
        "seen": {"display": "datetime", "options": {"displayOptions": {"format": "dateTime", "clock": "24"},
                                                    "interfaceOptions": {"includeSeconds": False}}},
        "due": {"display": "datetime", "options": {"displayOptions": {"relative": True}}},
        "count": {"interface": "input", "options": {"interfaceOptions": {"min": 2, "max": 9}}},
        "grade": {"interface": "select-dropdown", "options": {"interfaceOptions": {"choices": ["low", "high"], "allowNone": False}}},
    }.items():
        await calls.ok("patch", f"/fields/gauges/{field}", json=body)
    await calls.create("gauges", [{"label": "G1", "kinds": "a,b", "shade": "#00aa55", "big": BIG, "tag": red["id"],
                                   "tagset": [blue["id"], red["id"]],
                                   "mixed": [{"collection": "makers", "id": acme["id"]}, {"collection": "tags", "id": blue["id"]}],
                                   "photo": photo["id"], "doc": doc["id"], "seen": "2025-01-02T13:45:00Z",
                                   "due": "2020-01-01T00:00:00Z", "count": 3, "grade": "low",
                                   "cost": "1234567890123456789.125"}])
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield {"server": server, "site": site, "calls": calls, "acme": acme["id"]}
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, shown) -> Any:
    async with visiting(browser, shown["server"].base_url, record=True, height=1000) as seen:
        yield seen


async def test_a_list_draws_its_displays(shown, visit):
    from playwright.async_api import expect

    page, site = visit.page, shown["site"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    fields = "label,kinds,shade,big,tag,tagset,mixed,photo,doc,seen,due,cost"
    await page.goto(f"{visit.base}/studio/#/s/{site}/c/gauges?fields={fields}")
    table = page.get_by_role("table", name=re.compile("^Items of"))
    row = table.get_by_role("row").filter(has_text="G1")
    cell = lambda n: row.get_by_role("cell").nth(n + 2)  # noqa: E731 - the selection's and the id's cells come first
    # Labels: a chip each, with its choice's text (and the colour of the choice that has one).
    chips = cell(1).get_by_role("listitem")
    await expect(chips).to_have_text(["Alpha", "Beta"])
    await expect(chips.first.locator(".chip-dot")).to_have_css("background-color", "rgb(204, 0, 0)")
    # Colour: a swatch of it, with the value as text.
    await expect(cell(2)).to_have_text("#00aa55")
    await expect(cell(2).locator(".swatch")).to_have_css("background-color", "rgb(0, 170, 85)")
    # A bigInteger beyond 2^53 grouped without losing its last digit.
    await expect(cell(3)).to_have_text("9,007,199,254,740,993")
    # A decimal rounded to 2 places in decimal arithmetic (half up), every digit kept.
    await expect(cell(11)).to_have_text("1,234,567,890,123,456,789.13")
    # Related values through the display's template: m2o, m2m (in order), m2a (by collection).
    await expect(cell(4)).to_have_text("Red (open)")
    await expect(cell(5)).to_have_text("Blue (shut), Red (open)")
    await expect(cell(6)).to_have_text("Acme (live), Blue (shut)")
    # An image as a thumbnail of the asset transform; a file as its name and type.
    await expect(cell(7).get_by_role("img")).to_have_attribute("src", re.compile("^data:image/png"))
    await expect(cell(8)).to_have_text(re.compile(r"\(text/plain\)$"))
    # Dates: a 24-hour clock; relative to now.
    await expect(cell(9)).to_contain_text("13:45")
    await expect(cell(9)).not_to_contain_text("PM")
    await expect(cell(10)).to_have_text(re.compile(r"ago$"))
    await visit.axe()
    await visit.shot("list-displays")
    # The related items were read with the template's fields only (no note of theirs).
    related = [unquote(u) for u in visit.responses if "/items/tags?" in u or "/items/makers?" in u]
    assert related and all("fields=id,name,state" in u for u in related), related
    assert not [b for b in visit.bodies if "secret-note-text" in b]
    # The photo's thumbnail came through the asset transform.
    assert any(re.search(r"/assets/[^?]+\?width=48&height=48", u) for u in visit.responses)


async def test_the_editor_honours_its_interface_options(shown, visit):
    from playwright.async_api import expect

    page, site = visit.page, shown["site"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/c/gauges")
    await page.get_by_role("link", name=re.compile("^Open item")).first.click()
    # The m2o named by its interface's template (the display's is for lists).
    await expect(page.get_by_role("combobox", name="tag", exact=True)).to_have_value("open: Red")
    # The bigInteger read with all its digits (saving the item must not round it).
    await expect(page.get_by_label("big", exact=True)).to_have_value(str(BIG))
    # An m2m and an m2a named by the related-values display's template (no interface template).
    await expect(page.get_by_role("list", name="Items linked in tagset").get_by_role("listitem")).to_have_text(
        [re.compile(r"^Blue \(shut\)"), re.compile(r"^Red \(open\)")])
    mixed = page.get_by_role("list", name="Items linked in mixed")
    await expect(mixed.get_by_role("listitem")).to_have_text([re.compile(r"^Acme \(live\)"), re.compile(r"^Blue \(shut\)")])
    # -- the m2a edited: one item removed, one added from another allowed collection
    await page.get_by_role("group", name="mixed", exact=True).get_by_role("button", name="Remove Blue (shut)").click()
    await page.get_by_label("Add to mixed from").select_option("tags")
    await page.get_by_role("combobox", name="Add to mixed", exact=True).fill("Re")
    await page.get_by_role("option", name="Red (open)").click()
    await expect(mixed.get_by_role("listitem")).to_have_text([re.compile(r"^Acme \(live\)"), re.compile(r"^Red \(open\)")])
    await visit.axe()
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    saved = (await shown["calls"].ok("get", "/items/gauges"))[0]
    tags = {t["name"]: t["id"] for t in await shown["calls"].ok("get", "/items/tags")}
    assert saved["big"] == BIG
    assert [(p["collection"], p["id"]) for p in saved["mixed"]] == [("makers", shown["acme"]), ("tags", tags["Red"])]
    # The date without seconds (a step of a minute).
    await expect(page.get_by_label("seen", exact=True)).to_have_attribute("step", "60")
    # Number bounds.
    count = page.get_by_label("count", exact=True)
    await expect(count).to_have_attribute("min", "2")
    await expect(count).to_have_attribute("max", "9")
    # No "none" entry when allowNone is false.
    await expect(page.get_by_label("grade", exact=True).get_by_role("option")).to_have_text(["low", "high"])
    # The file input takes the interface's types only: another type is refused before it is
    # sent; an allowed one is uploaded and labelled with the interface's folder.
    doc = page.get_by_label("doc", exact=True)
    await expect(doc).to_have_attribute("accept", "text/plain, .md")
    await doc.set_input_files(files=[{"name": "dot.png", "mimeType": "image/png", "buffer": png()}])
    await expect(page.get_by_role("status").filter(has_text="dot.png was not uploaded: only text/plain, .md are allowed here.")
                 ).to_be_visible()
    await doc.set_input_files(files=[{"name": "notes.md", "mimeType": "text/markdown", "buffer": b"# notes"}])
    await expect(page.get_by_role("status").filter(has_text="Uploaded notes.md.")).to_be_visible()
    await visit.axe()
    await page.get_by_role("combobox", name="tag", exact=True).scroll_into_view_if_needed()
    await visit.shot("editor-options")
    uploaded = [f for f in await shown["calls"].ok("get", "/files", params={"limit": 200}) if f["key"].startswith("notes-")]
    assert [f["folder"] for f in uploaded] == ["Reports"]

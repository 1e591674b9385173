"""The studio's media library (docs/studio.md, docs/files.md) in headless Chromium, one server
and one browser: a site admin makes a folder and uploads many files into it at once, with each
one's progress and the upload guard's reason for the one refused, and sees them in the grid and
the list; edits a file's title, description, tags and folder; sets its focal point with a click
and with the arrow keys; previews it through a preset and through parameters typed for a new
preset, which it saves. A member without admin rights finds no files screen and the API refuses
its calls. Controls are found by role and label; axe-core checks every screen.

The browser, ``Visit`` and ``sign_in`` are the studio module's (``test_studio_browser.py``)."""

from __future__ import annotations

import asyncio
import io
import re
from typing import Any

import pytest
import pytest_asyncio
from PIL import Image
from test_studio_browser import check_console, held_until, open_visit, sign_in

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56  # an executable, declared as text


def picture(fmt: str, size: tuple[int, int] = (400, 200)) -> bytes:
    image = Image.new("RGB", size, (30, 120, 200))
    image.paste((220, 40, 40), (0, 0, size[0] // 2, size[1]))
    out = io.BytesIO()
    image.save(out, fmt)
    return out.getvalue()


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def library(shared_site) -> Any:
    app, site, admin = shared_site.app, shared_site.site, shared_site.calls
    member = await new_member(app, site, "subscriber")
    server = await LiveServer(app.app).start()
    try:
        yield {
            "server": server,
            "site": site,
            "admin": admin,
            "member": member,
            "as_member": Calls(app.client, member.headers),
        }
    finally:
        await server.stop()


@pytest_asyncio.fixture(loop_scope="package")
async def visit(browser, library) -> Any:
    seen = await open_visit(browser, library["server"].base_url, height=900)
    try:
        yield seen
    finally:
        await seen.close()
    check_console(seen)


async def test_a_site_admin_uploads_many_files_into_a_folder(library, visit):
    from playwright.async_api import expect

    page, admin = visit.page, library["admin"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, library["site"])
    await page.get_by_role("link", name="Files", exact=True).click()
    await expect(page.get_by_role("heading", name="Files", level=1)).to_be_visible()
    await visit.axe()
    await page.get_by_label("New folder").fill("Summer")
    await page.get_by_role("button", name="Create folder").click()
    await page.get_by_role("link", name="Folder Summer").click()
    # The folder's own screen (the top one also had no files): Summer is the breadcrumb's end.
    await expect(page.get_by_role("navigation", name="Folder").get_by_text("Summer")).to_be_visible()
    await expect(page.get_by_text("No files in this folder.")).to_be_visible()
    summer = [f for f in await admin.ok("get", "/folders") if f["name"] == "Summer"]
    assert len(summer) == 1 and f"folder={summer[0]['id']}" in page.url

    await page.get_by_label("Upload files").set_input_files(
        [
            {"name": "beach.png", "mimeType": "image/png", "buffer": picture("PNG")},
            {"name": "pier.jpg", "mimeType": "image/jpeg", "buffer": picture("JPEG")},
            {"name": "notes.txt", "mimeType": "text/plain", "buffer": ELF},
        ]
    )
    await expect(page.get_by_role("status").filter(has_text="2 of 3 uploaded, 1 refused.")).to_be_visible()
    uploads = page.get_by_role("list", name="Uploads")
    await expect(uploads.get_by_role("listitem").filter(has_text="notes.txt")).to_contain_text(
        re.compile(r"Refused: .*\(FILE_EXECUTABLE\)")
    )
    for name in ("beach.png", "pier.jpg"):
        bar = page.get_by_role("progressbar", name=f"Upload of {name}")
        assert await bar.evaluate("b => b.value > 0 && b.value === b.max")
        await expect(uploads.get_by_role("listitem").filter(has_text=name)).to_contain_text("Uploaded")
    grid = page.get_by_role("list", name="Files in this folder")
    await expect(grid.get_by_role("link")).to_have_count(2)
    stored = await admin.ok("get", "/files", params={"filter[folderId][_eq]": summer[0]["id"]})
    assert sorted(f["key"] for f in stored) == ["beach.png", "pier.jpg"]
    assert not [f for f in await admin.ok("get", "/files") if f["key"] == "notes.txt"]
    await visit.axe()
    await visit.shot("files-grid")

    await page.get_by_role("button", name="List").click()
    table = page.get_by_role("table", name="Files in this folder")
    await expect(table.get_by_role("row")).to_have_count(3)
    await expect(table.get_by_role("row").filter(has_text="pier.jpg")).to_contain_text("400 × 200")
    assert "view=list" in page.url
    await visit.axe()
    await page.get_by_role("link", name="All files").click()
    await expect(page.get_by_role("link", name="Folder Summer")).to_be_visible()


async def test_metadata_focal_point_and_presets_of_a_file(library, visit):
    from playwright.async_api import expect

    page, admin = visit.page, library["admin"]
    photo = await admin.ok(
        "put",
        "/files/upload/dune.jpg",
        status=201,
        content=picture("JPEG"),
        headers={"Content-Type": "image/jpeg"},
    )
    autumn = await admin.ok("post", "/folders", status=201, json={"name": "Autumn"})
    await admin.ok(
        "post",
        "/transform-presets",
        status=201,
        json={"key": "square", "name": "Square", "dsl": "width=100&height=100&fit=cover&format=png"},
    )
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, library["site"])
    # The picker's image held back: its box has the image's shape before the image arrives (nothing
    # moves when it does, and a click meanwhile lands where it will be).
    arrived = asyncio.Event()
    await page.route(re.compile(r"/assets/[^/?]+\?width=400&fit=inside"), held_until(arrived))
    await page.goto(f"{visit.base}/studio/#/s/{library['site']}/files/{photo['id']}")
    await expect(page.get_by_role("heading", name="dune.jpg", level=1)).to_be_visible()
    picker = page.get_by_role("button", name="No focal point: crops keep the centre")
    waiting = await picker.locator("img").bounding_box()
    assert (waiting["width"], waiting["height"]) == (400, 200), waiting
    arrived.set()
    await page.get_by_label("Title").fill("The dune")
    await page.get_by_label("Description").fill("Sand at noon.\nWind from the west.")
    await page.get_by_label("Tags").fill("sand, summer")
    await page.get_by_label("Folder", exact=True).select_option(label="Autumn")

    # A click sets the point where it lands; the arrow keys move it by 1/50 of the image.
    # Measured once the image has loaded. An img without its src yet is "complete" too: a box measured
    # then, before the picker kept the image's shape while it loaded, was the empty one (a click at 50 %
    # of its height landed near the top of the loaded image: y 10 of 200, in a CI run).
    await expect(picker.locator("img")).to_have_attribute("src", re.compile("."))
    await expect(picker.locator("img")).to_have_js_property("complete", True)
    box = await picker.locator("img").bounding_box()
    assert (box["width"], box["height"]) == (400, 200), box
    await picker.click(position={"x": box["width"] * 0.9 + 1, "y": box["height"] * 0.5 + 1})
    shown = page.get_by_role("status").filter(has_text=re.compile(r"^Focal point: x \d+, y \d+$"))
    await expect(shown).to_be_visible()
    x, y = map(int, re.findall(r"\d+", await shown.inner_text()))
    assert 350 <= x <= 370 and 90 <= y <= 110, (x, y)
    focal = page.get_by_role("button", name=re.compile("^Focal point: x"))
    await focal.focus()
    await page.keyboard.press("ArrowLeft")
    await page.keyboard.press("Shift+ArrowDown")
    await expect(focal).to_have_accessible_name(f"Focal point: x {x - 8}, y {y + 20}")
    await visit.axe()
    await page.get_by_role("button", name="Save", exact=True).click()
    await expect(page.get_by_role("status").filter(has_text="Saved.")).to_be_visible()
    saved = await admin.ok("get", f"/files/{photo['id']}")
    assert (saved["title"], saved["description"], saved["tags"], saved["folderId"], saved["focalPoint"]) == (
        "The dune",
        "Sand at noon.\nWind from the west.",
        ["sand", "summer"],
        autumn["id"],
        {"x": x - 8, "y": y + 20},
    )

    # A preset's preview, cropped around the point being moved; parameters typed for a new
    # preset preview live, a bad one shows the API's reason, and the preset is saved.
    await page.get_by_label("Preview with preset").select_option(
        label="Square (width=100&height=100&fit=cover&format=png)"
    )
    preview = page.get_by_role("img", name="Preview of The dune")
    await expect(preview).to_be_visible()
    await expect(preview).to_have_js_property("naturalWidth", 100)
    await focal.focus()
    await page.keyboard.press("ArrowRight")
    await expect(page.get_by_role("status").filter(has_text=f"focal={x},{y + 20}")).to_be_visible()
    await visit.axe()
    await visit.shot("files-detail")
    params = page.get_by_label("Parameters")
    await params.fill("width=0")
    await expect(page.get_by_role("status").filter(has_text="VALIDATION_FAILED")).to_be_visible()
    await params.fill("width=60&height=30&fit=cover&format=png")
    await expect(page.get_by_role("status").filter(has_text="Preview: width=60&height=30")).to_be_visible()
    await expect(preview).to_have_js_property("naturalWidth", 60)
    await page.get_by_label("Key").fill("banner")
    await page.get_by_label("Name", exact=True).fill("Banner")
    await page.get_by_role("button", name="Save preset").click()
    await expect(page.get_by_role("status").filter(has_text="Preset Banner saved.")).to_be_visible()
    presets = {p["key"]: p["dsl"] for p in await admin.ok("get", "/transform-presets")}
    assert presets["banner"] == "width=60&height=30&fit=cover&format=png"
    await visit.axe()


async def test_a_member_never_reaches_the_files_screens(library, visit):
    from playwright.async_api import expect

    page, member = visit.page, library["member"]
    photo = await library["admin"].ok(
        "put",
        "/files/upload/private.png",
        status=201,
        content=picture("PNG"),
        headers={"Content-Type": "image/png"},
    )
    await sign_in(visit, member.email, member.password, library["site"])
    await expect(page.get_by_role("link", name="Files", exact=True)).to_have_count(0)
    for where in ("files", f"files/{photo['id']}"):
        await page.goto(f"{visit.base}/studio/#/s/{library['site']}/{where}")
        await expect(page.get_by_role("alert")).to_have_text("Only site admins manage the files.")
        await expect(page.get_by_label("Upload files")).to_have_count(0)
        await expect(page.get_by_label("Title")).to_have_count(0)
        await visit.axe()
    # Forced through the API, the calls are refused.
    as_member = library["as_member"]
    for method, path, body in (
        ("post", "/folders", {"name": "Mine"}),
        ("patch", f"/files/{photo['id']}", {"title": "Taken"}),
        ("post", "/transform-presets", {"key": "x", "name": "X", "dsl": "width=5"}),
    ):
        refused = await as_member.call(method, path, json=body)
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (403, "PERMISSION_DENIED"), path
    upload = await as_member.call(
        "put", "/files/upload/mine.png", content=picture("PNG"), headers={"Content-Type": "image/png"}
    )
    assert upload.status_code == 403, upload.text
    assert (await library["admin"].ok("get", f"/files/{photo['id']}"))["title"] is None


# -- studio42c: cross-site, as in part 1: another site's files show neither in the library nor by
# their id (the API answers 404 there), and nothing of them reaches the page
async def test_nothing_of_another_sites_files(shared_site, library, visit):
    from playwright.async_api import expect

    page, admin, site = visit.page, library["admin"], library["site"]
    other = await shared_site.new_site("fb")
    site_b = other.headers["X-Svc-Site"]
    png = {"Content-Type": "image/png"}
    mine = await admin.ok("put", "/files/upload/only-a.png", status=201, content=picture("PNG"), headers=png)
    theirs = await other.ok("put", "/files/upload/only-b.png", status=201, content=picture("PNG"), headers=png)
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.goto(f"{visit.base}/studio/#/s/{site}/files?view=list")
    await expect(page.get_by_text("only-a.png")).to_be_visible()
    await expect(page.get_by_text("only-b.png")).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site_b}/files?view=list")
    await expect(page.get_by_text("only-b.png")).to_be_visible()
    await expect(page.get_by_text("only-a.png")).to_have_count(0)
    await visit.axe()
    await page.goto(f"{visit.base}/studio/#/s/{site_b}/files/{mine['id']}")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    await expect(page.get_by_label("Title")).to_have_count(0)
    await visit.axe()
    await page.goto(f"{visit.base}/studio/#/s/{site}/files/{theirs['id']}")
    await expect(page.get_by_role("alert")).to_have_text("Not found.")
    assert (await other.call("get", f"/files/{mine['id']}")).status_code == 404
    assert (await admin.call("get", f"/assets/{theirs['id']}")).status_code == 404

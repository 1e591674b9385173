"""The site settings screens (issue 42 point 4, docs/studio.md "Site settings") in headless
Chromium against one real server and one browser for the module:

- a site admin changes the site's configuration: a domain another site holds shows
  ``DOMAIN_TAKEN`` at the field, then the name, domain, site URL (the allowed origins follow),
  appearance, save action, brand colour and a theme token, whose preview follows as it is typed;
- a declared setting key is edited with the input of its type (the owner's refusal at the field);
- the translation memory is searched, an entry edited, entries imported (a bad line refused with
  the API's message); a glossary term added and deleted; each checked through the API, and
  nothing of another site's memory ever reaches the page;
- a member without admin rights finds no link, the screen refuses it, and the API answers 403.

Controls are found by role and label; axe-core runs in every page visited."""

from __future__ import annotations

import re
from typing import Any

import pytest
import pytest_asyncio
from test_studio_browser import sign_in, visit  # noqa: F401 - visit is a fixture (on this module's studio)

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, Calls, new_member
from kernel.testing.live import LiveServer

pytestmark = pytest.mark.asyncio(loop_scope="package")

B_SECRET = "Only in site B 6630"


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def studio(shared_site) -> Any:
    """Site A with a memory entry; site B holding the domain ``taken.example.com`` and an entry of
    its own; a subscriber of A."""
    a = shared_site.calls
    await a.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                "sourceText": "Save the file", "targetText": "Datei speichern"})
    b = await shared_site.new_site("setb")
    await b.ok("patch", "/site", json={"domain": "taken.example.com"})
    await b.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                "sourceText": B_SECRET, "targetText": "speichern B"})
    member = await new_member(shared_site.app, shared_site.site, "subscriber")
    server = await LiveServer(shared_site.app.app).start()
    # A yield fixture's teardown runs whatever the tests did.
    yield {"server": server, "a": shared_site.site, "calls": a, "member": member, "app": shared_site.app}
    await server.stop()


async def test_a_site_admin_changes_the_sites_settings(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, calls, site = visit.page, studio["calls"], studio["a"]
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Site settings").click()
    await expect(page.get_by_role("heading", name="Site settings", level=1)).to_be_visible()
    await expect(page.get_by_role("table", name="Entries of the translation memory")).to_contain_text("Save the file")
    await visit.axe()

    # A domain another site holds: DOMAIN_TAKEN at the field, nothing saved.
    domain = page.get_by_label("Domain", exact=True)
    await domain.fill("taken.example.com")
    await page.get_by_role("button", name="Save site configuration").click()
    await expect(domain).to_have_attribute("aria-invalid", "true")
    await expect(domain).to_have_accessible_description(re.compile("belongs to another site"))
    await expect(domain).to_be_focused()
    await visit.axe()

    await page.get_by_label("Name", exact=True).fill("Renamed site")
    await domain.fill("a.example.com")
    await page.get_by_label("Site URL").fill("https://www.a.example")
    await page.get_by_label("Default appearance").select_option(label="Dark")
    await page.get_by_label("Default language").fill("de-AT")  # -- studio42c
    await page.get_by_label("Default save action").select_option(value="return")
    await page.get_by_label("Brand colour").fill("#aa3300")
    # The preview follows a token as it is typed (the light mode's primary colour).
    preview_button = page.get_by_role("region", name="Theme preview").get_by_role("button")
    await page.get_by_label("Token primary", exact=True).fill("10 80% 40%")
    wanted = await page.evaluate("""() => { const p = document.createElement('p'); p.style.color = 'hsl(10 80% 40%)';
        document.body.append(p); const c = getComputedStyle(p).color; p.remove(); return c; }""")
    await expect(preview_button).to_have_css("background-color", wanted)
    await page.get_by_label("Token primary", exact=True).fill("10 80% 4")  # not a token value: the preview ignores it
    await expect(preview_button).not_to_have_css("background-color", wanted)
    await page.get_by_label("Token primary", exact=True).fill("10 80% 40%")
    # -- studio42: the description, the favicon, a token of the folded fourteen, the custom CSS.
    await page.get_by_label("Description", exact=True).fill("The site of the A team")
    await page.get_by_label("Favicon URL").fill("https://cdn.a.example/favicon.png")
    await page.get_by_text("More tokens").click()
    await page.get_by_label("Token ring", exact=True).fill("200 90% 50%")
    await page.get_by_label("Custom CSS").fill("main h1 { letter-spacing: 2px; }")
    await page.get_by_role("button", name="Save site configuration").click()
    await expect(page.get_by_role("status").filter(has_text="Site configuration saved.")).to_be_visible()
    await expect(page.get_by_role("banner")).to_contain_text("Renamed site")
    origins = page.get_by_role("list", name="Allowed origins")
    await expect(origins).to_contain_text("https://www.a.example")
    await expect(origins).to_contain_text("https://a.example.com")
    saved = await calls.ok("get", "/site")
    assert (saved["name"], saved["domain"], saved["siteUrl"], saved["defaultAppearance"], saved["defaultSaveAction"],
            saved["branding"], saved["themeOverrides"]) == (
        "Renamed site", "a.example.com", "https://www.a.example", "dark", "return",
        {"brandColor": "#aa3300", "faviconUrl": "https://cdn.a.example/favicon.png"},
        {"light": {"primary": "10 80% 40%", "ring": "200 90% 50%"}})
    assert (saved["descriptor"], saved["customCss"]) == ("The site of the A team", "main h1 { letter-spacing: 2px; }")
    assert saved["defaultLanguage"] == "de-AT"  # -- studio42c
    # Both apply at once: the style sheet to the studio, the favicon to the page.
    heading = page.get_by_role("heading", name="Site settings", level=1)
    await expect(heading).to_have_css("letter-spacing", "2px")
    assert await page.evaluate("document.querySelector(\"link[rel='icon']\").href") == "https://cdn.a.example/favicon.png"
    await visit.axe()
    await page.get_by_role("heading", name="Site settings", level=1).scroll_into_view_if_needed()
    await visit.shot("settings")

    # A declared key, with the input of its type; the owner's refusal shows at the field.
    timezone = page.get_by_label("releases.timezone", exact=True)
    await expect(timezone).to_have_accessible_description(re.compile("^Text"))
    await expect(page.get_by_label("agents.staging_window_seconds", exact=True)).to_have_attribute("type", "number")
    await timezone.fill("Mars/Olympus")
    await page.get_by_role("button", name="Save releases.timezone").click()
    await expect(timezone).to_have_attribute("aria-invalid", "true")
    await expect(timezone).to_have_accessible_description(re.compile("unknown time zone"))
    await timezone.fill("Europe/Berlin")
    await page.get_by_role("button", name="Save releases.timezone").click()
    await expect(page.get_by_role("status").filter(has_text="Saved: releases.timezone")).to_be_visible()
    assert (await calls.ok("get", "/settings/releases.timezone"))["value"] == "Europe/Berlin"
    await timezone.scroll_into_view_if_needed()  # -- studio42c
    await visit.shot("settings-keys")

    # The translation memory: search, edit, import.
    await page.get_by_role("searchbox", name="Search the memory").fill("SPEICHERN")
    await page.get_by_role("button", name="Search", exact=True).click()
    table = page.get_by_role("table", name="Entries of the translation memory")
    await expect(table.get_by_role("row")).to_have_count(2)
    await table.get_by_role("textbox", name="Translation of Save the file").fill("Die Datei speichern")
    await table.get_by_role("button", name="Save the translation of Save the file").click()
    await expect(page.get_by_role("status").filter(has_text="Translation saved")).to_be_visible()
    [entry] = await calls.ok("get", "/tm", params={"q": "save the file"})
    assert entry["targetText"] == "Die Datei speichern"
    await page.get_by_label("Import entries").fill("en\tde\tClose\tSchließen\nen\tde\t\tleer")
    await page.get_by_role("button", name="Import", exact=True).click()
    await expect(page.get_by_role("status").filter(has_text="Imported 1, refused 1.")).to_be_visible()
    await expect(page.get_by_label("Import entries")).to_have_accessible_description(re.compile("^.*Line 2: "))
    assert [e["targetText"] for e in await calls.ok("get", "/tm", params={"q": "close"})] == ["Schließen"]
    await visit.axe()
    await table.scroll_into_view_if_needed()  # -- studio42c
    await visit.shot("settings-tm")

    # The glossary: a term added, then deleted.
    await page.get_by_label("Target language").fill("de")
    await page.get_by_label("Term", exact=True).fill("svc studio")
    await page.get_by_label("Its translation").fill("svc Studio")
    await page.get_by_role("button", name="Add term").click()
    await expect(page.get_by_role("status").filter(has_text="Term saved: svc studio")).to_be_visible()
    [term] = await calls.ok("get", "/tm/glossary")
    assert (term["term"], term["translation"], term["targetLang"]) == ("svc studio", "svc Studio", "de")
    await page.get_by_role("button", name="Delete the term svc studio").click()
    await expect(page.get_by_role("status").filter(has_text="Term deleted: svc studio")).to_be_visible()
    assert await calls.ok("get", "/tm/glossary") == []
    await visit.axe()

    # Nothing of site B's memory reached the page (its domain only as typed and refused).
    assert not [b for b in visit.bodies if B_SECRET in b or "speichern B" in b]
    assert B_SECRET not in await page.content()


async def test_a_member_without_admin_rights_never_reaches_the_screens(studio, visit):  # noqa: F811
    from playwright.async_api import expect

    page, member, site = visit.page, studio["member"], studio["a"]
    await sign_in(visit, member.email, member.password, site)
    await expect(page.get_by_role("link", name="Site settings")).to_have_count(0)
    await page.goto(f"{visit.base}/studio/#/s/{site}/settings")
    await expect(page.get_by_role("alert")).to_have_text("Only site admins change the site's settings.")
    await expect(page.get_by_role("button", name="Save site configuration")).to_have_count(0)
    await visit.axe()
    forced = Calls(studio["app"].client, member.headers)
    await forced.err("patch", "/site", 403, "PERMISSION_DENIED", json={"name": "Mine now"})
    await forced.err("get", "/settings/keys", 403, "PERMISSION_DENIED")
    await forced.err("put", "/settings/releases.timezone", 403, "PERMISSION_DENIED", json={"value": "UTC"})
    await forced.err("post", "/tm", 403, "PERMISSION_DENIED", json={"sourceLang": "en", "targetLang": "de",
                                                                    "sourceText": "x", "targetText": "y"})
    await forced.err("post", "/tm/glossary", 403, "PERMISSION_DENIED", json={"sourceLang": "en", "targetLang": "de",
                                                                             "term": "x", "translation": "y"})
    assert (await studio["calls"].ok("get", "/site"))["name"] != "Mine now"


# -- studio42c: the glossary searched by language pair, a term's translation edited in place,
# terms imported (a refused line named at the field)
async def test_the_glossary_searched_edited_and_imported(studio, visit):  # noqa: F811 - the shared fixture
    from playwright.async_api import expect

    page, calls, site = visit.page, studio["calls"], studio["a"]
    for body in ({"sourceLang": "en", "targetLang": "de", "term": "checkout", "translation": "Kasse"},
                 {"sourceLang": "en", "targetLang": "fr", "term": "cart", "translation": "panier"}):
        await calls.ok("post", "/tm/glossary", status=201, json=body)
    await sign_in(visit, ADMIN_EMAIL, ADMIN_PASSWORD, site)
    await page.get_by_role("link", name="Site settings").click()
    terms = page.get_by_role("list", name="Glossary")
    await expect(terms.get_by_role("listitem")).to_have_count(2)
    search = page.get_by_role("search", name="Filter the glossary")
    await search.get_by_label("Translated into").fill("fr")
    await search.get_by_role("button", name="Show terms").click()
    await expect(terms.get_by_role("listitem")).to_have_count(1)
    await expect(terms).to_contain_text("cart (en → fr)")
    await search.get_by_label("Translated into").fill("")
    await search.get_by_label("Terms in the language").fill("en")
    await search.get_by_role("button", name="Show terms").click()
    await expect(terms.get_by_role("listitem")).to_have_count(2)
    # Edited in place: the term keeps its pair, its translation changes.
    await terms.get_by_label("Translation of the term checkout").fill("Zur Kasse")
    await terms.get_by_role("button", name="Save the term checkout").click()
    await expect(page.get_by_role("status").filter(has_text="Term saved: checkout")).to_be_visible()
    stored = {g["term"]: g for g in await calls.ok("get", "/tm/glossary")}
    assert (stored["checkout"]["translation"], stored["checkout"]["targetLang"]) == ("Zur Kasse", "de")
    # Imported: one line a term, tab separated; an empty term refused.
    await page.get_by_label("Import terms").fill("en\tde\tbasket\tWarenkorb\nen\tde\t\tleer")
    await page.get_by_role("button", name="Import the terms").click()
    await expect(page.get_by_role("status").filter(has_text="Imported 1, refused 1.")).to_be_visible()
    await expect(page.get_by_label("Import terms")).to_have_accessible_description(re.compile("Line 2: "))
    await expect(terms).to_contain_text("basket (en → de)")
    assert {g["term"]: g["translation"] for g in await calls.ok("get", "/tm/glossary")} == {
        "checkout": "Zur Kasse", "cart": "panier", "basket": "Warenkorb"}
    await visit.axe()
    await terms.scroll_into_view_if_needed()
    await visit.shot("settings-glossary")
    for term in ("checkout", "cart", "basket"):
        await page.get_by_role("button", name=f"Delete the term {term}").click()
        await expect(page.get_by_role("status").filter(has_text=f"Term deleted: {term}")).to_be_visible()
    assert await calls.ok("get", "/tm/glossary") == []

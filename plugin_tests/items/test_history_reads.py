"""``X-Svc-Draft`` and ``X-Svc-Locale`` on item reads (get, list, singleton), and the checks of
the ``translations`` field on writes."""

from __future__ import annotations

import pytest

from kernel.base.errors import ApiError
from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugins.items.read import drafts

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

DRAFT = {"X-Svc-Draft": "true"}
FIELDS = {"title": "string", "body": "text", "n": "integer", "translations": "json"}
TRANSLATED = {"de": {"title": "Eins", "body": "Text"}, "pt-BR": {"title": "Um"}, "fr": {"n": 99}}


async def _notes(calls: Calls) -> None:
    await calls.collection("notes", FIELDS, versioning=True)
    await calls.create("notes", [{"id": "a", "title": "one", "body": "b", "translations": TRANSLATED},
                                 {"id": "b", "title": "two"}])


async def test_draft_header_reads_the_draft_version(calls: Calls):
    await _notes(calls)
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "draft"})
    await calls.ok("patch", "/items/notes/a/versions/draft", json={"data": {"title": "draft title", "n": 4}})
    plain = await calls.get("notes", "a")
    assert plain["title"] == "one" and "n" not in plain
    drafted = await calls.get("notes", "a", headers=DRAFT)
    assert drafted["title"] == "draft title" and drafted["n"] == 4 and drafted["status"] == plain["status"]
    assert drafted["updatedAt"] == plain["updatedAt"]  # structural keys stay main's
    listed = (await calls.ok("get", "/items/notes", full=True, headers=DRAFT))["data"]
    assert [i["title"] for i in listed] == ["draft title", "two"]  # no draft version: main
    projected = await calls.get("notes", "a", headers=DRAFT, params={"fields": "id,n"})
    assert projected == {"id": "a", "n": 4}
    assert (await calls.get("notes", "a", headers={"X-Svc-Draft": "false"}))["title"] == "one"
    # Other named versions are not the draft.
    await calls.ok("post", "/items/notes/b/versions", status=201, json={"key": "other"})
    await calls.ok("patch", "/items/notes/b/versions/other", json={"data": {"title": "nope"}})
    assert (await calls.get("notes", "b", headers=DRAFT))["title"] == "two"


async def test_locale_header_applies_translations(calls: Calls):
    await _notes(calls)
    de = await calls.get("notes", "a", headers={"X-Svc-Locale": "de"})
    assert de["title"] == "Eins" and de["body"] == "Text" and de["translations"] == TRANSLATED
    assert (await calls.get("notes", "a", headers={"X-Svc-Locale": "de-AT"}))["title"] == "Eins"  # language
    assert (await calls.get("notes", "a", headers={"X-Svc-Locale": "pt_br"}))["title"] == "Um"  # case, _
    pt = await calls.get("notes", "a", headers={"X-Svc-Locale": "pt"})
    assert pt["title"] == "one"  # pt-BR is not pt
    assert (await calls.get("notes", "a", headers={"X-Svc-Locale": "fr"}))["n"] == 99  # adds unset fields
    listed = (await calls.ok("get", "/items/notes", full=True, headers={"X-Svc-Locale": "de"},
                             params={"fields": "id,title"}))["data"]
    assert listed == [{"id": "a", "title": "Eins"}, {"id": "b", "title": "two"}]
    plain = await calls.get("notes", "a")
    assert plain["title"] == "one"


async def test_draft_and_locale_together(calls: Calls):
    await _notes(calls)
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "draft"})
    both = {**DRAFT, "X-Svc-Locale": "de"}
    assert (await calls.get("notes", "a", headers=both))["title"] == "Eins"
    await calls.ok("patch", "/items/notes/a/versions/draft",
                   json={"data": {"translations": {"de": {"title": "Entwurf"}}}})
    assert (await calls.get("notes", "a", headers=both))["title"] == "Entwurf"
    assert (await calls.get("notes", "a", headers={"X-Svc-Locale": "de"}))["title"] == "Eins"


async def test_masks_apply_to_overlaid_values(calls: Calls, member):
    await _notes(calls)
    await calls.ok("post", "/items/notes/a/versions", status=201, json={"key": "draft"})
    await calls.ok("patch", "/items/notes/a/versions/draft", json={"data": {"n": 4, "title": "d"}})
    reader, _ = await member([{"collection": "notes", "action": "read", "fields": ["title", "translations"]}])
    assert await reader.get("notes", "a", headers=DRAFT) == {"id": "a", "title": "d", "translations": TRANSLATED}
    no_translations, _ = await member([{"collection": "notes", "action": "read", "fields": ["title"]}])
    # Without read access to the translations field, no translation is served.
    assert await no_translations.get("notes", "a", headers={"X-Svc-Locale": "de"}) == {"id": "a", "title": "one"}


async def test_singleton_reads(calls: Calls):
    await calls.collection("home", {"title": "string", "translations": "json"}, singleton=True, versioning=True)
    assert (await calls.ok("get", "/items/home", headers={**DRAFT, "X-Svc-Locale": "de"}))["id"] is None
    item = await calls.ok("patch", "/items/home", json={"title": "Home", "translations": {"de": {"title": "Start"}}})
    assert (await calls.ok("get", "/items/home", headers={"X-Svc-Locale": "de"}))["title"] == "Start"
    await calls.ok("post", f"/items/home/{item['id']}/versions", status=201, json={"key": "draft"})
    await calls.ok("patch", f"/items/home/{item['id']}/versions/draft", json={"data": {"title": "Soon"}})
    assert (await calls.ok("get", "/items/home", headers=DRAFT))["title"] == "Soon"


async def test_malformed_headers_are_400(calls: Calls):
    await _notes(calls)
    for headers in ({"X-Svc-Draft": "maybe"}, {"X-Svc-Locale": "not a locale"}, {"X-Svc-Locale": "x" * 50},
                    {"X-Svc-Locale": "12"}):
        err = await calls.err("get", "/items/notes/a", 400, "VALIDATION_FAILED", headers=headers)
        assert err["path"][0] == "headers"
        await calls.err("get", "/items/notes", 400, "VALIDATION_FAILED", headers=headers)
    # Other routes ignore them; an empty locale means none.
    assert (await calls.call("get", "/collections", headers={"X-Svc-Draft": "maybe"})).status_code == 200
    assert (await calls.get("notes", "a", headers={"X-Svc-Locale": ""}))["title"] == "one"


async def test_translations_are_checked_on_write(calls: Calls):
    await _notes(calls)
    for value, path in (([1], ["translations"]), ({"not a code!": {}}, ["translations", "not a code!"]),
                        ({"de": "Eins"}, ["translations", "de"]), ({"de": {"ghost": 1}}, ["translations", "de", "ghost"]),
                        ({"de": {"n": "viele"}}, ["translations", "de", "n"]),
                        ({"de": {"translations": {}}}, ["translations", "de", "translations"])):
        await calls.err("patch", "/items/notes/a", 400, "VALIDATION_FAILED", path, json={"translations": value})
        await calls.err("post", "/items/notes", 400, "VALIDATION_FAILED", path, json={"translations": value})
    await calls.ok("patch", "/items/notes/a", json={"translations": None})


async def test_no_query_without_headers(svc_app, calls: Calls, monkeypatch):
    await _notes(calls)
    seen = []

    async def spy(*args, **kwargs):
        seen.append(args)
        return {}

    monkeypatch.setattr(drafts, "_drafts", spy)
    monkeypatch.setattr(drafts, "_stored_translations", spy)
    await calls.get("notes", "a")
    await calls.list("notes")
    assert seen == []
    await calls.get("notes", "a", headers=DRAFT)
    assert len(seen) == 1


async def test_read_options_for_server_code(svc_app, site, calls: Calls):
    await _notes(calls)
    from kernel.auth.principal import Principal
    from plugins.items import api

    ctx = api.context(svc_app.kernel, site, Principal(kind="user", is_instance_admin=True))
    assert (await api.read(ctx, "notes", "a", locale="de"))["title"] == "Eins"
    assert (await api.read(ctx, "notes", "a"))["title"] == "one"
    assert [i["title"] for i in (await api.list_items(ctx, "notes", locale="DE_at")).items if i["id"] == "a"] == ["Eins"]
    with pytest.raises(ApiError) as err:
        await api.read(ctx, "notes", "a", locale="not a code")
    assert err.value.status == 400

"""``GET /settings/keys`` (the keys plugins declare, with their types, for an admin) and
``GET /tm?q=`` (entries whose source or target text holds the words), each with who may call
it, bad input and site B seeing nothing of site A's (issue 42 point 4's API)."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in sites of its own: they share the module's app (conftest.py's
# ``shared_site``, with the settings tests' settings), each in new sites of it
# (kernel/testing/shared.py); the demo keys are registered for one test at a time.
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_declared_keys_with_their_types_for_admins_only(calls, calls_b, site, make_member, demo_keys):
    listed = {k["key"]: k for k in await calls.ok("get", "/settings/keys")}
    assert listed["demo_limit"] == {"key": "demo_limit", "prefix": False, "type": "json", "public": False,
                                    "secret": False, "description": "a positive integer"}
    assert (listed["demo."]["prefix"], listed["demo."]["public"]) == (True, True)
    assert listed["demo_token"]["secret"] is True
    # The built-in plugins' keys, each with its declared type.
    assert (listed["releases.timezone"]["type"], listed["agents.staging_window_seconds"]["type"],
            listed["tm.provider"]["type"]) == ("string", "integer", "object")
    assert list(listed) == sorted(listed)
    assert {k["key"] for k in await calls_b.ok("get", "/settings/keys")} == set(listed)  # declared per deployment
    member = await make_member(site, "subscriber")
    await Calls(calls.client, member.headers).err("get", "/settings/keys", 403, "PERMISSION_DENIED")
    # "keys" is now a route, not a key one may store.
    await calls.err("put", "/settings/keys", 405)
    await calls.err("patch", "/settings", 400, "VALIDATION_FAILED", path_is=["keys"], json={"keys": 1})


async def test_tm_search_in_either_text(calls, calls_b, site, make_member):
    for source, target in (("Save the file", "Datei speichern"), ("Open", "Öffnen"), ("100%_done", "Fertig")):
        await calls.ok("post", "/tm", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                         "sourceText": source, "targetText": target})
    found = await calls.ok("get", "/tm", params={"q": "SPEICHERN"}, full=True)
    assert [e["sourceText"] for e in found["data"]] == ["Save the file"] and found["meta"]["total"] == 1
    assert [e["targetText"] for e in await calls.ok("get", "/tm", params={"q": "open"})] == ["Öffnen"]
    # LIKE's wildcards are plain characters here.
    assert [e["sourceText"] for e in await calls.ok("get", "/tm", params={"q": "%_"})] == ["100%_done"]
    assert [e["sourceText"] for e in await calls.ok("get", "/tm", params={"q": "_"})] == ["100%_done"]
    await calls.err("get", "/tm", 400, "VALIDATION_FAILED", path_is=["q"], params={"q": ""})
    await calls.err("get", "/tm", 400, "VALIDATION_FAILED", path_is=["q"], params={"q": "x" * 201})
    assert await calls_b.ok("get", "/tm", params={"q": "open"}) == []
    member = await make_member(site, "subscriber")  # the frontend realm: no translation memory
    await Calls(calls.client, member.headers).err("get", "/tm", 403, "PERMISSION_DENIED", params={"q": "open"})

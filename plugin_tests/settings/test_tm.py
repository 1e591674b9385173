"""Translation memory: entries (list, upsert, change, delete), the fuzzy lookup, the glossary,
the translate pipeline against a local LibreTranslate-protocol server, bad input, and site B
never seeing site A's entries or terms."""

from __future__ import annotations

import json

import pytest

from kernel.testing import shared as testing_shared
from plugins.settings.tm import tm as tm_service

# Every test writes and reads in a site of its own: they share the module's app (conftest.py's
# ``shared_site``, with the settings tests' settings), each in a new site of it
# (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

API_KEY = "lt-key-123"


def entry(source_text, target_text, **extra):
    return {"sourceLang": "en", "targetLang": "de", "sourceText": source_text, "targetText": target_text, **extra}


async def test_entries_upsert_list_change_delete(calls, calls_b, site, make_member):
    first = await calls.ok("post", "/tm", status=201, json=entry("Hello world", "Hallo Welt", quality=90,
                                                                 context="greeting"))
    assert first["source"] == "user" and first["quality"] == 90 and first["context"] == "greeting"
    again = await calls.ok("post", "/tm", status=200, json=entry("Hello world", "Hallo, Welt", source="import"))
    assert again["id"] == first["id"] and again["targetText"] == "Hallo, Welt" and again["source"] == "import"
    await calls.ok("post", "/tm", status=201, json=entry("Save", "Speichern"))
    fr = await calls.ok("post", "/tm", status=201, json={**entry("Save", "Enregistrer"), "targetLang": "fr_ca"})
    assert fr["targetLang"] == "fr-CA"
    body = await calls.ok("get", "/tm", full=True)
    assert body["meta"] == {"total": 3, "limit": 25, "offset": 0}
    body = await calls.ok("get", "/tm", full=True, params={"target": "de", "limit": 1, "offset": 1})
    assert body["meta"] == {"total": 2, "limit": 1, "offset": 1} and len(body["data"]) == 1
    body = await calls.ok("get", "/tm", full=True, params={"entrySource": "import"})
    assert [e["id"] for e in body["data"]] == [first["id"]]
    assert (await calls.ok("get", "/tm", full=True, params={"source": "fr"}))["meta"]["total"] == 0
    assert (await calls.ok("get", "/tm", full=True, params={"target": "FR-ca"}))["meta"]["total"] == 1
    changed = await calls.ok("patch", f"/tm/{first['id']}", json={"targetText": "Hallo Welt!", "quality": None})
    assert changed["targetText"] == "Hallo Welt!" and changed["quality"] is None
    # Studio members read and look up; writes need admin; the frontend realm (subscriber) and
    # anonymous callers reach none of it.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Translator"})
    member = await make_member(site, role["id"])
    assert (await calls.ok("get", "/tm", full=True, headers=member.headers))["meta"]["total"] == 3
    await calls.err("post", "/tm", 403, "PERMISSION_DENIED", json=entry("x", "y"), headers=member.headers)
    await calls.err("delete", f"/tm/{first['id']}", 403, "PERMISSION_DENIED", headers=member.headers)
    subscriber = await make_member(site, "subscriber")
    lookup = {"query": "Hello world", "sourceLang": "en", "targetLang": "de"}
    for method, path, body in (("get", "/tm", None), ("post", "/tm/lookup", lookup), ("get", "/tm/glossary", None),
                               ("post", "/tm/translate", {"text": "Hi", "from": "en", "to": "de"})):
        await calls.err(method, path, 403, "PERMISSION_DENIED", json=body, headers=subscriber.headers)
        await calls.err(method, path, 401, "UNAUTHENTICATED", json=body, headers={"Authorization": ""})
    # Site B: nothing to see, count, change or delete.
    assert await calls_b.ok("get", "/tm", full=True) == {"data": [], "meta": {"total": 0, "limit": 25, "offset": 0}}
    await calls_b.err("patch", f"/tm/{first['id']}", 404, "RECORD_NOT_FOUND", json={"targetText": "x"})
    await calls_b.err("delete", f"/tm/{first['id']}", 404, "RECORD_NOT_FOUND")
    assert await calls_b.ok("post", "/tm/lookup", json={"query": "Hello world", "sourceLang": "en",
                                                        "targetLang": "de"}) == {"match": None}
    await calls.ok("delete", f"/tm/{first['id']}", status=204)
    await calls.err("delete", f"/tm/{first['id']}", 404, "RECORD_NOT_FOUND")


async def test_fuzzy_lookup_follows_every_change(calls, site, svc_app):
    lookup = {"sourceLang": "en", "targetLang": "de"}
    assert await calls.ok("post", "/tm/lookup", json={"query": "Save the file", **lookup}) == {"match": None}
    saved = await calls.ok("post", "/tm", status=201, json=entry("Save the file now", "Datei jetzt speichern"))
    await calls.ok("post", "/tm", status=201, json=entry("Delete the folder", "Ordner löschen"))
    match = (await calls.ok("post", "/tm/lookup", json={"query": "save the file now!", **lookup}))["match"]
    assert match["id"] == saved["id"] and match["targetText"] == "Datei jetzt speichern" and 90 < match["score"] < 100
    exact = (await calls.ok("post", "/tm/lookup", json={"query": "SAVE  the file now", **lookup}))["match"]
    assert exact["score"] == 100
    # Below the threshold: no match; a lower threshold finds it.
    assert (await calls.ok("post", "/tm/lookup", json={"query": "Save it", **lookup}))["match"] is None
    low = await calls.ok("post", "/tm/lookup", json={"query": "Save it", "threshold": 40, **lookup})
    assert low["match"]["id"] == saved["id"] and low["match"]["score"] < 75
    # Language tags are compared in their canonical case.
    spelled = await calls.ok("post", "/tm/lookup", json={"query": "save the file now!", "sourceLang": "EN",
                                                         "targetLang": "De"})
    assert spelled["match"]["id"] == saved["id"]
    # Another language pair is another memory.
    assert (await calls.ok("post", "/tm/lookup", json={"query": "Save the file now", "sourceLang": "en",
                                                       "targetLang": "fr"}))["match"] is None
    # The index follows writes and deletes at once (the bus), and a write it never heard of
    # after its TTL (another worker without Redis).
    await calls.ok("delete", f"/tm/{saved['id']}", status=204)
    assert (await calls.ok("post", "/tm/lookup", json={"query": "save the file now!", **lookup}))["match"] is None
    cache = svc_app.kernel.site_caches["tm_index"]
    off = [h for h in svc_app.kernel.bus._actions if h.pattern == tm_service.CHANGED_EVENT]
    assert off, "the plugin listens to tm.changed"
    svc_app.kernel.bus._actions = [h for h in svc_app.kernel.bus._actions if h.pattern != tm_service.CHANGED_EVENT]
    ttl = cache.ttl
    try:
        quiet = await calls.ok("post", "/tm", status=201, json=entry("Open the window", "Fenster öffnen"))
        cache.ttl = 1e-9
        found = (await calls.ok("post", "/tm/lookup", json={"query": "open the window", **lookup}))["match"]
        assert found["id"] == quiet["id"]
    finally:  # the module's next tests share this app
        cache.ttl = ttl
        svc_app.kernel.bus._actions.extend(off)


async def test_lookup_and_entry_bad_input(calls):
    good = {"query": "x", "sourceLang": "en", "targetLang": "de"}
    for body, path in (({**good, "query": ""}, ["query"]), ({**good, "query": 5}, ["query"]),
                       ({**good, "sourceLang": "english!"}, ["sourceLang"]), ({**good, "targetLang": None}, ["targetLang"]),
                       ({**good, "threshold": 101}, ["threshold"]), ({**good, "threshold": "75"}, ["threshold"]),
                       ({**good, "extra": 1}, ["extra"])):
        await calls.err("post", "/tm/lookup", 400, "VALIDATION_FAILED", path_is=path, json=body)
    base = entry("a", "b")
    for body, path in (({**base, "sourceText": ""}, ["sourceText"]), ({**base, "targetText": None}, ["targetText"]),
                       ({**base, "sourceText": "x" * 10_001}, ["sourceText"]), ({**base, "quality": 101}, ["quality"]),
                       ({**base, "quality": True}, ["quality"]), ({**base, "context": 1}, ["context"]),
                       ({**base, "source": ""}, ["source"]), ({**base, "id": "x"}, ["id"]),
                       ({k: v for k, v in base.items() if k != "sourceLang"}, ["sourceLang"])):
        await calls.err("post", "/tm", 400, "VALIDATION_FAILED", path_is=path, json=body)
    made = await calls.ok("post", "/tm", status=201, json=base)
    for body, path in (({"sourceText": "z"}, ["sourceText"]), ({"targetText": ""}, ["targetText"]),
                       ({"quality": -1}, ["quality"])):
        await calls.err("patch", f"/tm/{made['id']}", 400, "VALIDATION_FAILED", path_is=path, json=body)
    await calls.err("post", "/tm", 400, "VALIDATION_FAILED", json=[base])
    await calls.err("get", "/tm", 400, "VALIDATION_FAILED", params={"limit": 500})
    await calls.err("get", "/tm", 400, "VALIDATION_FAILED", params={"source": "!!"})


async def test_glossary_terms(calls, calls_b, site, make_member):
    term = await calls.ok("post", "/tm/glossary", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                                     "term": "Dashboard", "translation": "Übersicht"})
    same = await calls.ok("post", "/tm/glossary", status=200, json={"sourceLang": "en", "targetLang": "de",
                                                                     "term": "dashboard", "translation": "Cockpit"})
    assert same["id"] == term["id"] and same["translation"] == "Cockpit"
    body = await calls.ok("get", "/tm/glossary", full=True, params={"target": "de"})
    assert body["meta"]["total"] == 1 and body["data"][0]["term"] == "Dashboard"
    member = await make_member(site, "subscriber")
    await calls.err("post", "/tm/glossary", 403, "PERMISSION_DENIED", headers=member.headers,
                    json={"sourceLang": "en", "targetLang": "de", "term": "a", "translation": "b"})
    for body, path in (({"sourceLang": "en", "targetLang": "de", "term": "", "translation": "b"}, ["term"]),
                       ({"sourceLang": "en", "targetLang": "de", "term": "a", "translation": 3}, ["translation"]),
                       ({"sourceLang": "?", "targetLang": "de", "term": "a", "translation": "b"}, ["sourceLang"]),
                       ({"sourceLang": "en", "targetLang": "de", "term": "a", "translation": "b", "x": 1}, ["x"])):
        await calls.err("post", "/tm/glossary", 400, "VALIDATION_FAILED", path_is=path, json=body)
    assert (await calls_b.ok("get", "/tm/glossary", full=True))["meta"]["total"] == 0
    await calls_b.err("delete", f"/tm/glossary/{term['id']}", 404, "RECORD_NOT_FOUND")
    await calls.ok("delete", f"/tm/glossary/{term['id']}", status=204)
    await calls.err("delete", f"/tm/glossary/{term['id']}", 404, "RECORD_NOT_FOUND")


class LibreTranslate:
    """The LibreTranslate HTTP API (``POST /translate``) as the test's outside server: it checks
    each request's shape and key, and translates by tagging the text."""

    def __init__(self, receiver):
        self.receiver = receiver
        self.url = receiver.respond("/translate", self.answer).removesuffix("/translate")

    def answer(self, request):
        assert request.method == "POST" and request.headers["Content-Type"].startswith("application/json")
        body = json.loads(request.body)
        assert set(body) <= {"q", "source", "target", "format", "api_key"}
        if body.get("api_key") != API_KEY:
            return 403, b'{"error": "Invalid API key"}', {}
        if body["target"] == "xx":
            return 400, b'{"error": "xx is not supported"}', {}
        assert body["format"] == "text"
        return 200, json.dumps({"translatedText": f"[{body['target']}] {body['q']}"}).encode(), {}

    def sent(self):
        return [json.loads(r.body) for r in self.receiver.received("/translate")]


async def test_translate_pipeline(calls, calls_b, site, make_member, http_receiver):
    server = LibreTranslate(http_receiver)
    ask = {"from": "en", "to": "de"}
    # No provider anywhere: the answer says so and invents nothing.
    nothing = await calls.ok("post", "/tm/translate", json={"text": "Good morning", **ask})
    assert nothing["translation"] is None and nothing["step"] == "none" and "provider" in nothing["message"]
    # 1. memory.
    await calls.ok("post", "/tm", status=201, json=entry("Good morning", "Guten Morgen"))
    memory = await calls.ok("post", "/tm/translate", json={"text": "good morning!", **ask})
    assert memory["step"] == "memory" and memory["translation"] == "Guten Morgen" and memory["score"] > 75
    # 2. glossary, for a text that is exactly a term.
    await calls.ok("post", "/tm/glossary", status=201, json={"sourceLang": "en", "targetLang": "de",
                                                             "term": "Dashboard", "translation": "Übersicht"})
    term = await calls.ok("post", "/tm/translate", json={"text": "dashboard", **ask})
    assert term == {**term, "step": "glossary", "translation": "Übersicht"}
    # 3. the provider (the site's setting), with glossary terms put in their translated form.
    await calls.ok("put", "/settings/tm.provider", json={"value": {"url": server.url, "apiKey": API_KEY}})
    made = await calls.ok("post", "/tm/translate", json={"text": "Open the Dashboard now", **ask})
    assert made["step"] == "provider" and made["provider"] == "libretranslate" and not made["stored"]
    assert made["translation"] == "[de] Open the Übersicht now"
    assert made["glossary"] == [{"term": "Dashboard", "translation": "Übersicht"}]
    assert server.sent()[-1] == {"q": "Open the Übersicht now", "source": "en", "target": "de", "format": "text",
                                 "api_key": API_KEY}
    # Stored back into the memory, marked by its source, then answered from there.
    stored = await calls.ok("post", "/tm/translate", json={"text": "Close it", "store": True, **ask})
    assert stored["stored"] and stored["entryId"]
    listed = await calls.ok("get", "/tm", params={"entrySource": "mt:libretranslate"})
    assert [(e["sourceText"], e["targetText"]) for e in listed] == [("Close it", "[de] Close it")]
    calls_before = len(server.sent())
    again = await calls.ok("post", "/tm/translate", json={"text": "Close it", **ask})
    assert again["step"] == "memory" and len(server.sent()) == calls_before
    # The provider's refusals are 502 TRANSLATION_FAILED with its reason.
    err = await calls.err("post", "/tm/translate", 502, "TRANSLATION_FAILED", json={"text": "Hi", "from": "en",
                                                                                      "to": "xx"})
    assert "xx is not supported" in err["message"]
    await calls.ok("put", "/settings/tm.provider", json={"value": {"url": server.url, "apiKey": "wrong"}})
    err = await calls.err("post", "/tm/translate", 502, "TRANSLATION_FAILED", json={"text": "Hi", **ask})
    assert "403" in err["message"]
    # A member may translate but not store; site B has none of A's memory, terms or provider.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Translator"})
    member = await make_member(site, role["id"])
    await calls.err("post", "/tm/translate", 403, "PERMISSION_DENIED", headers=member.headers,
                    json={"text": "Hi", "store": True, **ask})
    in_b = await calls_b.ok("post", "/tm/translate", json={"text": "Good morning", **ask})
    assert in_b["step"] == "none" and in_b["translation"] is None
    assert (await calls_b.ok("post", "/tm/translate", json={"text": "dashboard", **ask}))["step"] == "none"
    assert (await calls.ok("get", "/settings/tm.provider"))["value"] == {"hasSecret": True}


async def test_deployment_provider_and_bad_bodies(make_app, http_receiver):
    server = LibreTranslate(http_receiver)
    app = await make_app(env={"SVC_TM_PROVIDER_URL": server.url + "/", "SVC_TM_PROVIDER_API_KEY": API_KEY,
                              "SVC_ENCRYPTION_KEY": "c3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3Nzc3M=",
                              "SVC_OUTBOUND_ALLOW_NETWORKS": ""})
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.post("/api/v1/tm/translate", headers=headers, json={"text": "Bye", "from": "en", "to": "fr"})
    assert resp.status_code == 200 and resp.json()["data"]["translation"] == "[fr] Bye"
    assert server.sent() == [{"q": "Bye", "source": "en", "target": "fr", "format": "text", "api_key": API_KEY}]
    for body, path in (({"text": "", "from": "en", "to": "de"}, ["text"]), ({"text": "a", "from": "e", "to": "de"}, ["from"]),
                       ({"text": "a", "from": "en"}, ["to"]), ({"text": "a", "from": "en", "to": "de", "store": 1}, ["store"]),
                       ({"text": "a", "from": "en", "to": "de", "threshold": -1}, ["threshold"]),
                       ({"text": "a", "from": "en", "to": "de", "lang": "x"}, ["lang"])):
        resp = await app.client.post("/api/v1/tm/translate", headers=headers, json=body)
        assert resp.status_code == 400 and resp.json()["errors"][0]["path"] == path, (body, resp.text)
    # This app allows no private network: a site's provider on a loopback or private address is
    # refused when saved, and a name resolving to one is refused when connecting.
    for value, fragment in (({"url": server.url}, "loopback"), ({"url": "http://10.1.2.3/"}, "private"),
                            ({"url": "http://[::ffff:127.0.0.1]/"}, "loopback"),
                            ({"url": "ftp://x"}, "url"), ({"url": "http://0.0.0.0/"}, "url"), ("x", "object"),
                            ({"url": "https://translate.example.com", "apiKey": 5}, "apiKey"), ({"url": server.url, "x": 1}, "object")):
        resp = await app.client.put("/api/v1/settings/tm.provider", headers=headers, json={"value": value})
        assert resp.status_code == 400 and fragment in resp.json()["errors"][0]["message"], resp.text
    named = server.url.replace("127.0.0.1", "localhost")
    resp = await app.client.put("/api/v1/settings/tm.provider", headers=headers, json={"value": {"url": named}})
    assert resp.status_code == 200, resp.text
    resp = await app.client.post("/api/v1/tm/translate", headers=headers, json={"text": "Bye", "from": "en", "to": "fr"})
    assert resp.status_code == 502 and "loopback" in resp.json()["errors"][0]["message"], resp.text
    assert len(server.sent()) == 1  # only the deployment provider's call above reached it


@pytest.mark.parametrize("raw", ["ftp://x", "http://0.0.0.0"])
def test_a_bad_deployment_provider_url_stops_the_start(raw):
    from plugins.settings.tm.translate import parse_provider_url

    with pytest.raises(ValueError):
        parse_provider_url(raw)

"""Email refusals on one shared app (no SMTP server: degraded) and a site per test where a test
writes: unknown ids and keys, duplicates, a layout in use, bodies that are not JSON, and sends
while no transport is configured. (A call without a token is tests/http/test_auth_before_body.py's.)"""

from __future__ import annotations

import pytest

UNKNOWN = [("patch", "/email/templates/01a2433a-0000-7000-8000-000000000000", {"name": "n"}),
           ("delete", "/email/templates/01a2433a-0000-7000-8000-000000000000", None),
           ("patch", "/email/layouts/01a2433a-0000-7000-8000-000000000000", {"name": "n"}),
           ("delete", "/email/layouts/01a2433a-0000-7000-8000-000000000000", None),
           ("post", "/email/templates/no-such-key/preview", {"variables": {}})]


@pytest.mark.parametrize(("method", "path", "body"), UNKNOWN)
async def test_an_unknown_template_or_layout_is_404(shared_site, method, path, body):
    await shared_site.calls.err(method, path, 404, "NOT_FOUND", **({"json": body} if body is not None else {}))


async def test_an_absent_suppression_is_404_and_a_second_one_409(shared_site):
    calls = await shared_site.new_site("em")
    await calls.err("delete", "/email/suppressions/absent@example.com", 404, "RECORD_NOT_FOUND")
    await calls.ok("post", "/email/suppressions", 201, json={"email": "Ann@Example.com"})
    await calls.err("post", "/email/suppressions", 409, "CONFLICT", json={"email": "ann@example.com"})
    await calls.ok("delete", "/email/suppressions/ann@example.com", 204)
    assert (await calls.ok("get", "/email/suppressions", full=True))["data"] == []


async def test_a_duplicate_key_is_409_and_a_used_layout_stays(shared_site):
    calls = await shared_site.new_site("em")
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "L", "html": "<div>{{content}}</div>"})
    body = {"key": "k", "name": "n", "subject": "s", "text": "t", "layoutId": layout["id"]}
    await calls.ok("post", "/email/templates", 201, json=body)
    await calls.err("post", "/email/templates", 409, "CONFLICT", json=body)
    await calls.err("delete", f"/email/layouts/{layout['id']}", 409, "CONFLICT")
    assert [x["id"] for x in await calls.ok("get", "/email/layouts")] == [layout["id"]]


@pytest.mark.parametrize("path", ["/email/layouts", "/email/templates", "/email/send", "/email/test",
                                  "/email/suppressions", "/email/templates/k/preview"])
async def test_a_body_that_is_not_json_is_400(shared_site, path):
    await shared_site.calls.err("post", path, 400, "VALIDATION_FAILED", path_is=["body"], content=b"{nope",
                                headers={"Content-Type": "application/json"})


async def test_without_a_transport_sends_are_503_and_previews_work(shared_site):
    calls = await shared_site.new_site("em")
    assert (await calls.ok("get", "/email/capabilities"))["configured"] is False
    await calls.ok("post", "/email/templates", 201, json={"key": "hi", "name": "n", "subject": "Hi {{ name }}",
                                                          "text": "Hello {{ name }}"})
    preview = await calls.ok("post", "/email/templates/hi/preview", json={"variables": {"name": "Ann"}})
    assert preview["subject"] == "Hi Ann"
    await calls.err("post", "/email/send", 503, "EMAIL_NOT_CONFIGURED",
                    json={"to": ["ann@example.com"], "templateKey": "hi", "variables": {"name": "Ann"}})
    await calls.err("post", "/email/test", 503, "EMAIL_NOT_CONFIGURED", json={"to": "ops@example.com"})


async def test_a_preview_escapes_variables_in_html_only(shared_site):
    calls = await shared_site.new_site("em")
    await calls.ok("post", "/email/templates", 201, json={"key": "w", "name": "n", "subject": "s {{ name }}",
                                                          "html": "<p>{{ name }}</p>", "text": "{{ name }}"})
    preview = await calls.ok("post", "/email/templates/w/preview", json={"variables": {"name": "<b>Ann</b>"}})
    assert preview["html"] == "<p>&lt;b&gt;Ann&lt;/b&gt;</p>", preview
    assert (preview["subject"], preview["text"].strip()) == ("s <b>Ann</b>", "<b>Ann</b>"), preview


async def test_suppressions_are_lower_cased_and_searched(shared_site):
    calls = await shared_site.new_site("em")
    for email in ("Ann@Example.com", "bob@example.com"):
        await calls.ok("post", "/email/suppressions", 201, json={"email": email})
    found = await calls.ok("get", "/email/suppressions", params={"search": "ANN"})
    assert [s["email"] for s in found] == ["ann@example.com"]

"""``POST /email/templates/preview``: an unsaved template (and layout) rendered as a saved one
would be, stored nowhere and sent to no one (flows43; the studio's live preview as you type).
Disabled plugin: test_email_disabled.py."""

from __future__ import annotations

import pytest

SHELL = '<div class="shell">{{content}}<p>Footer</p></div>'


async def test_an_unsaved_template_renders_inside_a_saved_or_unsaved_layout(shared_site):
    calls = await shared_site.new_site("sp")
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "Shell", "html": SHELL})
    body = {"subject": "Order {{ order.id }}", "html": "<p>Order <b>{{ order.id }}</b></p><script>x()</script>",
            "variables": {"order": {"id": 42}}}
    plain = await calls.ok("post", "/email/templates/preview", json=body)
    assert (plain["subject"], plain["html"], plain["text"].strip()) == ("Order 42", "<p>Order <b>42</b></p>", "Order 42")
    saved = await calls.ok("post", "/email/templates/preview", json={**body, "layoutId": layout["id"]})
    assert saved["html"] == '<div class="shell"><p>Order <b>42</b></p><p>Footer</p></div>'
    unsaved = await calls.ok("post", "/email/templates/preview", json={**body, "layout": "<div class=\"frame\">{{content}}</div>"})
    assert unsaved["html"] == '<div class="frame"><p>Order <b>42</b></p></div>'
    text = await calls.ok("post", "/email/templates/preview", json={"subject": "Hi", "text": "Hi {{ name }}",
                                                                     "variables": {"name": "<Ann>"}})
    assert (text["text"], text["html"]) == ("Hi <Ann>", None)
    # Nothing was stored.
    assert await calls.ok("get", "/email/templates") == []


@pytest.mark.parametrize(("body", "path"), [
    ({"subject": "Hi", "html": "<p>{{ name </p>"}, ["html"]),
    ({"subject": "Hi {% if %}", "text": "x"}, ["subject"]),
    ({"subject": "Hi", "text": "{{ x.__class__ }}"}, ["text"]),
    ({"subject": "Hi", "html": "<p>x</p>", "layout": "<div>no slot</div>"}, ["layout"]),
    ({"subject": "Hi", "html": "<p>x</p>", "layout": "{{content}}{% for %}"}, ["layout"]),
    ({"subject": "Hi", "html": "<p>x</p>", "layout": "{{content}}", "layoutId": "x"}, ["layout"]),
    ({"subject": "Hi", "html": "<p>x</p>", "layoutId": "01a2433a-0000-7000-8000-000000000000"}, ["layoutId"]),
    ({"html": "<p>x</p>"}, ["subject"]),
    ({"subject": "Hi"}, ["html"]),
    ({"subject": "Hi", "text": "x", "variables": []}, ["variables"]),
    ({"subject": "Hi", "text": "x", "key": "k"}, None),
])
async def test_a_source_that_cannot_render_is_a_clear_400(shared_site, body, path):
    error = await shared_site.calls.err("post", "/email/templates/preview", 400, "VALIDATION_FAILED", json=body)
    if path is not None:
        assert error["path"][: len(path)] == path, error
    assert error["message"] and "Traceback" not in error["message"]


async def test_another_sites_layout_is_unknown(shared_site):
    a, b = await shared_site.new_site("spa"), await shared_site.new_site("spb")
    theirs = await b.ok("post", "/email/layouts", 201, json={"name": "B's", "html": SHELL})
    await a.err("post", "/email/templates/preview", 400, "VALIDATION_FAILED",
                json={"subject": "Hi", "html": "<p>x</p>", "layoutId": theirs["id"]})
    # A template keyed "preview" is still previewed by its key.
    await a.ok("post", "/email/templates", 201, json={"key": "preview", "name": "p", "subject": "Saved", "text": "t"})
    assert (await a.ok("post", "/email/templates/preview/preview", json={}))["subject"] == "Saved"

"""Cross-tenant: site B never sees, touches, counts or uses site A's layouts, templates and
suppressions, and a token for A's site does nothing in B; bad bodies on every resource are 400."""

from __future__ import annotations

from plugins.email import tokens


async def test_site_b_sees_nothing_of_site_a(svc_app, calls, calls_b, site, site_b):
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "L", "html": "<div>{{content}}</div>"})
    template = await calls.ok("post", "/email/templates", 201,
                              json={"key": "news", "name": "N", "subject": "S", "text": "T", "layoutId": layout["id"]})
    await calls.ok("post", "/email/suppressions", 201, json={"email": "a@example.com"})

    assert await calls_b.ok("get", "/email/layouts") == []
    assert await calls_b.ok("get", "/email/templates") == []
    listed = await calls_b.ok("get", "/email/suppressions", full=True)
    assert listed["data"] == [] and listed["meta"]["total"] == 0
    await calls_b.err("patch", f"/email/layouts/{layout['id']}", 404, "NOT_FOUND", json={"name": "x"})
    await calls_b.err("delete", f"/email/layouts/{layout['id']}", 404, "NOT_FOUND")
    await calls_b.err("patch", f"/email/templates/{template['id']}", 404, "NOT_FOUND", json={"name": "x"})
    await calls_b.err("delete", f"/email/templates/{template['id']}", 404, "NOT_FOUND")
    await calls_b.err("post", "/email/templates/news/preview", 404, "NOT_FOUND", json={})
    await calls_b.err("delete", "/email/suppressions/a@example.com", 404, "RECORD_NOT_FOUND")
    # A's layout id is unknown in B; B may use A's key for a template of its own.
    await calls_b.err("post", "/email/templates", 400, "VALIDATION_FAILED", path_is=["layoutId"],
                      json={"key": "other", "name": "O", "subject": "S", "text": "T", "layoutId": layout["id"]})
    own = await calls_b.ok("post", "/email/templates", 201, json={"key": "news", "name": "B", "subject": "B", "text": "B"})
    assert own["id"] != template["id"]
    assert [t["name"] for t in await calls.ok("get", "/email/templates")] == ["N"]

    # A token for A's site, presented to B (site header), is refused; in A it works.
    token = tokens.issue(svc_app.kernel.settings.resolved_jwt_secret(), site, "x@example.com")
    resp = await svc_app.client.post("/api/v1/email/unsubscribe", params={"token": token},
                                     headers={"X-Svc-Site": site_b})
    assert resp.status_code == 400
    assert (await calls_b.ok("get", "/email/suppressions", full=True))["meta"]["total"] == 0
    resp = await svc_app.client.post("/api/v1/email/unsubscribe", params={"token": token})
    assert resp.status_code == 200
    assert [s["email"] for s in await calls.ok("get", "/email/suppressions")] == ["a@example.com", "x@example.com"]
    assert (await calls_b.ok("get", "/email/suppressions", full=True))["meta"]["total"] == 0
    # A token naming a site that does not exist does nothing.
    ghost = tokens.issue(svc_app.kernel.settings.resolved_jwt_secret(), "no-such-site", "x@example.com")
    assert (await svc_app.client.post("/api/v1/email/unsubscribe", params={"token": ghost})).status_code == 400

    # Deleting site A takes its email rows with it; B keeps its own, and A's token stops working.
    admin = {"Authorization": calls.headers["Authorization"]}
    assert (await svc_app.client.delete(f"/api/v1/sites/{site}", headers=admin)).status_code == 204
    assert [t["name"] for t in await calls_b.ok("get", "/email/templates")] == ["B"]
    assert (await svc_app.client.post("/api/v1/email/unsubscribe", params={"token": token})).status_code == 400


async def test_bad_bodies_are_400(calls, make_member, site):
    layouts = [{}, {"name": "L"}, {"name": "L", "html": "<p>no slot</p>"}, {"name": "", "html": "{{content}}"},
               {"name": "L", "html": "{{content}}{% if x %}{% endif %}"}, {"name": "L", "html": 5},
               {"name": "L", "html": "{{content}}", "extra": 1}, {"name": "L", "html": "{{content}}" + "x" * 100_001}]
    for body in layouts:
        await calls.err("post", "/email/layouts", 400, "VALIDATION_FAILED", json=body)
    templates = [{}, {"key": "Bad Key", "name": "n", "subject": "s", "text": "t"},
                 {"key": "k", "name": "n", "subject": "s"}, {"key": "k", "name": "n", "subject": "a\r\nb", "text": "t"},
                 {"key": "k", "name": "n", "subject": "s", "text": "{{ x.__class__ }}"},
                 {"key": "k", "name": "n", "subject": "{{ foo() }}", "text": "t"},
                 {"key": "k", "name": "n", "subject": "s", "html": "{% raw %}x{% endraw %}{% set a = 1 %}"},
                 {"key": "k", "name": "n", "subject": "s", "text": "t", "layoutId": 5},
                 {"key": "k", "name": "n", "subject": "s", "text": "t", "layoutId": "nope"},
                 {"key": "k" * 101, "name": "n", "subject": "s", "text": "t"}, ["not", "an", "object"]]
    for body in templates:
        await calls.err("post", "/email/templates", 400, "VALIDATION_FAILED", json=body)
    template = await calls.ok("post", "/email/templates", 201, json={"key": "k", "name": "n", "subject": "s", "text": "t"})
    await calls.err("patch", f"/email/templates/{template['id']}", 400, "VALIDATION_FAILED", json={"text": None})
    await calls.err("patch", f"/email/templates/{template['id']}", 400, "VALIDATION_FAILED", json={"key": "A B"})
    await calls.err("post", "/email/templates/k/preview", 400, "VALIDATION_FAILED", json={"variables": "x"})
    await calls.err("post", "/email/templates/k/preview", 400, "VALIDATION_FAILED", json={"vars": {}})
    # Bounded output: a template that multiplies a large value past 1 MiB is refused, not built.
    await calls.ok("post", "/email/templates", 201, json={"key": "big", "name": "n", "subject": "s",
                                                          "text": "{{ a }}" * 20})
    await calls.err("post", "/email/templates/big/preview", 400, "VALIDATION_FAILED",
                    json={"variables": {"a": "x" * 90_000}})
    # A hostile nesting of variables (within what the JSON parser takes) is a 400, not a crash.
    await calls.err("post", "/email/templates/k/preview", 400, "VALIDATION_FAILED", path_is=["variables"],
                    headers={"Content-Type": "application/json"},
                    content=b'{"variables": ' + b'{"a": ' * 900 + b"1" + b"}" * 900 + b"}")
    big = {"variables": {"a": "x" * 50_000, "b": "y" * 60_000}}
    await calls.err("post", "/email/templates/k/preview", 400, "VALIDATION_FAILED", json=big)
    for body in ({}, {"email": "nope"}, {"email": "a@example.com\r\nb@example.com"}, {"email": "a@example.com",
                 "reason": 5}, {"email": "a@example.com", "source": "x"}):
        await calls.err("post", "/email/suppressions", 400, "VALIDATION_FAILED", json=body)
    await calls.err("get", "/email/suppressions", 400, params={"limit": "x"})
    # Site admin only: a subscriber member is refused everywhere.
    member = await make_member(site, "subscriber")
    for method, path in (("get", "/email/capabilities"), ("get", "/email/templates"), ("post", "/email/send"),
                         ("get", "/email/suppressions"), ("post", "/email/layouts")):
        resp = await calls.client.request(method.upper(), f"/api/v1{path}", headers=member.headers,
                                          json={} if method == "post" else None)
        assert resp.status_code == 403, (method, path, resp.text)

"""REST's ``fields`` cannot probe for a field the caller may not read: to a caller whose read rule
lists its fields, a hidden field and a missing one answer alike (403 ``field_policy``), plain or
with sub-fields, as filters and sorts already did (the read check comes before existence)."""

from __future__ import annotations

from kernel.testing import Calls


async def test_fields_answer_hidden_and_missing_alike(calls: Calls, make_member, site, svc_app):
    await calls.collection("posts", {"title": "string", "views": "integer", "meta": "json"})
    await calls.create("posts", {"id": "p1", "title": "t", "views": 3})
    made = await make_member(site, "subscriber")
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["title"]}], {"userId": made.id})
    svc_app.kernel.access.invalidate(site)
    user = Calls(svc_app.client, made.headers)
    for template in ("NAME", "title,NAME", "NAME.x", "NAME.x.y"):
        answers = []
        for name in ("views", "nope"):
            resp = await user.call("get", "/items/posts", params={"fields": template.replace("NAME", name)})
            answers.append((resp.status_code, resp.text.replace(name, "N")))
        assert answers[0] == answers[1], (template, answers)
        assert answers[0][0] == 403, answers
    assert (await user.ok("get", "/items/posts", params={"fields": "title"})) == [{"id": "p1", "title": "t"}]
    # An admin still learns that a name does not exist.
    await calls.err("get", "/items/posts", 400, "VALIDATION_FAILED", params={"fields": "nope"})

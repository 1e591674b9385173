"""The editorial workflow: transitions, reviewers, audit, the review list, and the gate on
every write path (PATCH, PUT, create, a release, GraphQL); site isolation and bad input."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# Every test writes and reads in sites of its own: they share the module's app (the auth rate
# limit off: its tests log in many members), each in new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

E = "/editorial"


async def setup(svc_app, site, calls, make_member, *, separate: bool = True):
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True,
                           requireSeparateReviewer=separate)
    role = await calls.ok("post", "/roles", status=201, json={"name": "Newsroom"})
    reviewer, writer, reader = [await make_member(site, role["id"]) for _ in range(3)]
    rules = [{"collection": "articles", "action": a} for a in ("read", "create", "update")]
    await calls.grant(rules, {"userId": reviewer.id})
    await calls.grant(rules, {"userId": writer.id})
    await calls.grant(rules[:1], {"userId": reader.id})
    svc_app.kernel.access.invalidate(site)
    return reviewer, writer, reader


async def test_the_review_workflow_and_the_gate(svc_app, site, calls, make_member):
    reviewer, writer, reader = await setup(svc_app, site, calls, make_member)
    as_writer, as_reviewer = Calls(svc_app.client, writer.headers), Calls(svc_app.client, reviewer.headers)
    article = await as_writer.create("articles", {"title": "Hello"})
    art = str(article["id"])
    assert article["status"] == "draft" and article["userCreated"] == writer.id
    base = f"{E}/articles/{art}"

    # The gate: not approved, not published, by PATCH, PUT or a create.
    err = await as_writer.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED",
                              json={"status": "published"})
    assert err["extensions"]["itemId"] == art
    await as_writer.err("put", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED",
                        json={"title": "Hello", "status": "published"})
    await as_writer.err("post", "/items/articles", 409, "EDITORIAL_GATE_REQUIRED",
                        json={"title": "Direct", "status": "published"})

    # submit-review needs a reviewer who may approve, other than the author here.
    for reviewer_id in (writer.id, reader.id, "no-such-user"):
        await as_writer.err("post", f"{base}/submit-review", 422, "VALIDATION_FAILED", path_is=["reviewerId"],
                            json={"reviewerId": reviewer_id})
    await as_writer.err("post", f"{base}/approve", 409, "CONFLICT")  # draft cannot be approved
    review = await as_writer.ok("post", f"{base}/submit-review", json={"reviewerId": reviewer.id})
    assert (review["state"], review["reviewerId"], review["submittedBy"]) == ("in_review", reviewer.id, writer.id)
    await as_writer.err("post", f"{base}/submit-review", 409, "CONFLICT", json={"reviewerId": reviewer.id})
    await calls.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED", json={"status": "published"})

    # Only the assigned reviewer (or an admin who is not the author) decides; never the author.
    await as_writer.err("post", f"{base}/approve", 403, "PERMISSION_DENIED")
    approved = await as_reviewer.ok("post", f"{base}/approve")
    assert approved["state"] == "approved" and approved["decidedBy"] == reviewer.id
    await as_reviewer.err("post", f"{base}/approve", 409, "CONFLICT")

    # Approved: publishing the reviewed content passes; publishing changed content does not.
    await as_writer.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED",
                        json={"status": "published", "title": "Sneaky"})
    published = await as_writer.ok("patch", f"/items/articles/{art}", json={"status": "published"})
    assert published["status"] == "published" and published["title"] == "Hello"
    # Published content is frozen: unpublish, edit (back to draft), review again.
    await as_writer.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED", json={"title": "Edit"})
    await as_writer.ok("patch", f"/items/articles/{art}", json={"status": "draft"})
    await as_writer.ok("patch", f"/items/articles/{art}", json={"title": "Edited"})
    await as_writer.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED",
                        json={"status": "published"})
    again = await as_writer.ok("post", f"{base}/submit-review", json={"reviewerId": reviewer.id})
    await as_writer.err("post", f"{base}/reject", 403, "PERMISSION_DENIED", json={"reason": "mine"})
    for body in ({}, {"reason": ""}, {"reason": 5}, {"reason": "x" * 2001}, {"reason": "x", "more": 1}):
        await as_reviewer.err("post", f"{base}/reject", 400, "VALIDATION_FAILED", json=body)
    rejected = await as_reviewer.ok("post", f"{base}/reject", json={"reason": "Needs sources"})
    assert (rejected["state"], rejected["reason"]) == ("rejected", "Needs sources")
    await as_writer.err("post", f"{base}/submit-review", 409, "CONFLICT", json={"reviewerId": reviewer.id})
    await as_writer.ok("patch", f"/items/articles/{art}", json={"title": "With sources"})  # rejected -> draft
    await as_writer.ok("post", f"{base}/submit-review", json={"reviewerId": reviewer.id})

    # The review list: every review carries its state; filters by status and assignee.
    listed = await calls.ok("get", f"{E}/reviews", full=True)
    assert [r["state"] for r in listed["data"]] == ["in_review", "rejected", "superseded"]
    assert listed["meta"]["total"] == 3 and listed["data"][1]["id"] == again["id"]
    assert [r["id"] for r in await calls.ok("get", f"{E}/reviews", params={"status": "superseded"})] == [review["id"]]
    assert len(await calls.ok("get", f"{E}/reviews", params={"assignee": reviewer.id})) == 3
    assert await calls.ok("get", f"{E}/reviews", params={"assignee": writer.id}) == []
    await calls.err("get", f"{E}/reviews", 400, "VALIDATION_FAILED", params={"status": "lost"})

    # Every transition is audited (ids only), the edit-driven ones too.
    audit = await calls.ok("get", "/audit", params={"action": "editorial_transition", "limit": 50})
    moves = [(a["details"]["from"], a["details"]["to"]) for a in reversed(audit)]
    assert moves == [("draft", "in_review"), ("in_review", "approved"), ("approved", "draft"),
                     ("draft", "in_review"), ("in_review", "rejected"), ("rejected", "draft"),
                     ("draft", "in_review")]
    assert all(a["target"]["id"] == f"articles/{art}" for a in audit)


async def test_the_gate_holds_for_releases_and_graphql(svc_app, site, calls, make_member):
    reviewer, writer, _ = await setup(svc_app, site, calls, make_member, separate=False)
    a, b = [str(x["id"]) for x in await calls.create("articles", [{"title": "a"}, {"title": "b"}])]
    await calls.ok("post", f"{E}/articles/{a}/submit-review", json={"reviewerId": reviewer.id})
    await Calls(svc_app.client, reviewer.headers).ok("post", f"{E}/articles/{a}/approve")

    rel = await calls.ok("post", "/releases", status=201, json={"name": "r", "addItems": [
        {"collection": "articles", "itemId": i, "targetStatus": "published"} for i in (a, b)]})
    blocked = await calls.ok("post", f"/releases/{rel['id']}/publish")
    assert blocked["status"] == "failed"
    assert [(o["itemId"], o["outcome"], o.get("reason")) for o in blocked["outcomes"]] == [
        (a, "skipped", "RELEASE_BLOCKED"), (b, "failed", "EDITORIAL_GATE_REQUIRED")]
    assert (await calls.get("articles", a))["status"] == "draft"

    resp = await calls.call("post", "/graphql", json={
        "query": 'mutation($id: ID!) { update_articles(id: $id, data: {status: "published"}) { id } }',
        "variables": {"id": b}})
    body = resp.json()
    assert resp.status_code == 200 and body["data"] is None, body
    assert body["errors"][0]["extensions"]["reason"] == "EDITORIAL_GATE_REQUIRED"
    assert body["errors"][0]["extensions"]["status"] == 409
    assert (await calls.get("articles", b))["status"] == "draft"

    await calls.ok("patch", f"/releases/{rel['id']}", json={"removeItems": [{"collection": "articles", "itemId": b}]})
    done = await calls.ok("post", f"/releases/{rel['id']}/publish")
    assert done["status"] == "published" and (await calls.get("articles", a))["status"] == "published"
    # Without requireSeparateReviewer the author may be named reviewer.
    await calls.ok("post", f"{E}/articles/{b}/submit-review", json={"reviewerId": writer.id})
    mine = str((await Calls(svc_app.client, writer.headers).create("articles", {"title": "w"}))["id"])
    await Calls(svc_app.client, writer.headers).ok("post", f"{E}/articles/{mine}/submit-review",
                                                   json={"reviewerId": writer.id})


async def test_collections_without_the_workflow_and_bad_input(svc_app, site, calls, make_member):
    await calls.collection("notes", {"title": "string"})
    [n] = [str(x["id"]) for x in await calls.create("notes", [{"title": "n"}])]
    await calls.err("post", f"{E}/notes/{n}/submit-review", 409, "CONFLICT", json={"reviewerId": "x"})
    await calls.ok("patch", f"/items/notes/{n}", json={"status": "published"})  # no gate without the meta
    await calls.err("post", f"{E}/nowhere/1/approve", 404, "NOT_FOUND")
    reviewer, _, _ = await setup(svc_app, site, calls, make_member)
    [art] = [str(x["id"]) for x in await calls.create("articles", [{"title": "a"}])]
    for body in ([], {"reviewerId": 5}, {"reviewerId": ""}, {"reviewerId": "x" * 37}, {"reviewer": "x"}):
        await calls.err("post", f"{E}/articles/{art}/submit-review", 400, "VALIDATION_FAILED", json=body)
    await calls.err("post", f"{E}/articles/404/submit-review", 404, "RECORD_NOT_FOUND",
                    json={"reviewerId": reviewer.id})
    await calls.err("post", f"{E}/articles/{art}/approve", 400, "VALIDATION_FAILED", json={"x": 1})
    await calls.err("get", f"{E}/reviews", 400, "VALIDATION_FAILED", params={"assignee": "x" * 40})


async def test_site_isolation(svc_app, site, calls, calls_b, make_member):
    reviewer, _, _ = await setup(svc_app, site, calls, make_member)
    [art] = [str(x["id"]) for x in await calls.create("articles", [{"title": "a"}])]
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    assert (await calls_b.ok("get", f"{E}/reviews", full=True))["meta"]["total"] == 0
    await calls_b.err("post", f"{E}/articles/{art}/approve", 404)
    subscriber = Calls(svc_app.client, (await make_member(site, "subscriber")).headers)
    await subscriber.err("get", f"{E}/reviews", 403, "PERMISSION_DENIED")
    await calls_b.collection("articles", {"title": "string"}, editorialWorkflow=True)
    await calls_b.err("post", f"{E}/articles/{art}/approve", 404, "RECORD_NOT_FOUND")
    await calls_b.err("post", f"{E}/articles/{art}/submit-review", 404, "RECORD_NOT_FOUND",
                      json={"reviewerId": reviewer.id})
    # A's reviewer is no member of B: it cannot review B's items.
    [theirs] = [str(x["id"]) for x in await calls_b.create("articles", [{"title": "b"}])]
    await calls_b.err("post", f"{E}/articles/{theirs}/submit-review", 422, "VALIDATION_FAILED",
                      json={"reviewerId": reviewer.id})
    # B's item with the same id as one of A's is B's own: A's state does not leak into B's gate.
    await calls_b.err("patch", f"/items/articles/{theirs}", 409, "EDITORIAL_GATE_REQUIRED",
                      json={"status": "published"})


async def test_hidden_authors_and_collections_stay_hidden_in_the_workflow(svc_app, site, calls, make_member):
    # Both writers read articles without userCreated: the separate-reviewer rule still knows the author.
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True, requireSeparateReviewer=True)
    role = await calls.ok("post", "/roles", status=201, json={"name": "Masked"})
    author, colleague = [await make_member(site, role["id"]) for _ in range(2)]
    rules = [{"collection": "articles", "action": "read", "fields": ["id", "title", "status"]},
             {"collection": "articles", "action": "create"}, {"collection": "articles", "action": "update"}]
    for member in (author, colleague):
        await calls.grant(rules, {"userId": member.id})
    svc_app.kernel.access.invalidate(site)
    as_author, as_colleague = Calls(svc_app.client, author.headers), Calls(svc_app.client, colleague.headers)
    article = await as_author.create("articles", {"title": "Mine"})
    assert "userCreated" not in article
    base = f"{E}/articles/{article['id']}"
    await as_colleague.err("post", f"{base}/submit-review", 422, "VALIDATION_FAILED", path_is=["reviewerId"],
                           json={"reviewerId": author.id})
    await calls.err("post", f"{base}/submit-review", 422, "VALIDATION_FAILED", path_is=["reviewerId"],
                    json={"reviewerId": author.id})
    await as_author.ok("post", f"{base}/submit-review", json={"reviewerId": colleague.id})
    # Reviews of a collection a member cannot read are not listed to them (nor counted).
    await calls.collection("memos", {"body": "string"}, editorialWorkflow=True)
    memo = await calls.create("memos", {"body": "board only"})
    board = await make_member(site, "admin")
    await calls.ok("post", f"{E}/memos/{memo['id']}/submit-review", json={"reviewerId": board.id})
    mine = await as_colleague.ok("get", f"{E}/reviews", full=True)
    assert [r["collection"] for r in mine["data"]] == ["articles"] and mine["meta"]["total"] == 1
    assert sorted(r["collection"] for r in await calls.ok("get", f"{E}/reviews")) == ["articles", "memos"]

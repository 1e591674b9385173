"""What an approval does per the collection's ``editorialPublish`` (docs/releases-and-editorial.md,
"What an approval publishes"): ``approval`` publishes the item in the approval's transaction,
``release`` (the default) leaves it approved for a release; each audited; bad values refused;
another site's approval publishes nothing of this one."""

from __future__ import annotations

import pytest

from kernel.testing import Calls, new_member

E = "/editorial"


async def _newsroom(shared_site, update_fields=None, **meta):
    """A site with an editorial ``articles`` (``meta`` added), its admin's calls, and a reviewer
    (a member whose role may read, create and update articles: ``update_fields`` of them)."""
    calls = await shared_site.new_site("pub")
    site = calls.headers["X-Svc-Site"]
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True, **meta)
    role = await calls.ok("post", "/roles", status=201, json={"name": "Newsroom"})
    rules = [{"collection": "articles", "action": a} for a in ("read", "create", "update")]
    if update_fields is not None:
        rules[2]["fields"] = update_fields
    await calls.grant(rules, {"roleId": role["id"]})
    reviewer = await new_member(shared_site.app, site, role["id"])
    shared_site.app.kernel.access.invalidate(site)
    return calls, Calls(shared_site.app.client, reviewer.headers), reviewer


async def _approve(calls, as_reviewer, reviewer, title="Hello"):
    art = str((await calls.create("articles", {"title": title}))["id"])
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    review = await as_reviewer.ok("post", f"{E}/articles/{art}/approve")
    return art, review


async def _approval_audit(calls, art):
    audit = await calls.ok("get", "/audit", params={"action": "editorial_transition"})
    return [a["details"] for a in audit if a["details"]["itemId"] == art and a["details"]["to"] == "approved"]


async def test_approval_publishes_at_once_when_the_collection_says_so(shared_site):
    calls, as_reviewer, reviewer = await _newsroom(shared_site, editorialPublish="approval")
    assert (await calls.ok("get", "/collections/articles"))["meta"]["editorialPublish"] == "approval"
    art, review = await _approve(calls, as_reviewer, reviewer)
    assert review["state"] == "approved" and review["decidedBy"] == reviewer.id
    item = await calls.ok("get", f"/items/articles/{art}")
    assert (item["status"], item["title"]) == ("published", "Hello")
    assert item["userUpdated"] == reviewer.id  # published as the approver, through the items API
    state = await calls.ok("get", f"{E}/articles/{art}")
    assert state["state"] == "approved"
    assert await _approval_audit(calls, art) == [{"collection": "articles", "itemId": art, "from": "in_review",
                                                  "to": "approved", "reviewId": review["id"],
                                                  "publish": "approval", "published": True}]
    # The publish is a revision of its own, caused by the review.
    revisions = await calls.ok("get", f"/items/articles/{art}/revisions")
    assert revisions[0]["causedBy"] == f"editorial:{review['id']}"
    # Published content stays frozen, as for any published item of the workflow.
    await calls.err("patch", f"/items/articles/{art}", 409, "EDITORIAL_GATE_REQUIRED", json={"title": "Changed"})


async def test_approval_waits_for_a_release_by_default_and_the_release_publishes(shared_site):
    calls, as_reviewer, reviewer = await _newsroom(shared_site)
    assert (await calls.ok("get", "/collections/articles"))["meta"]["editorialPublish"] == "release"
    art, review = await _approve(calls, as_reviewer, reviewer)
    assert (await calls.ok("get", f"/items/articles/{art}"))["status"] == "draft"
    assert await _approval_audit(calls, art) == [{"collection": "articles", "itemId": art, "from": "in_review",
                                                  "to": "approved", "reviewId": review["id"],
                                                  "publish": "release", "published": False}]
    release = await calls.ok("post", "/releases", status=201, json={
        "name": "Spring", "addItems": [{"collection": "articles", "itemId": art, "targetStatus": "published"}]})
    published = await calls.ok("post", f"/releases/{release['id']}/publish")
    assert published["status"] == "published"
    assert (await calls.ok("get", f"/items/articles/{art}"))["status"] == "published"


async def test_an_approval_the_publish_refuses_changes_nothing(shared_site):
    """``approval``: the publish joins the approval's transaction and writes as the approver; a
    reviewer whose update rule leaves out ``status`` may review but not publish, so the approval
    is refused with the write's 403, and the review stays open."""
    calls, as_reviewer, reviewer = await _newsroom(shared_site, ["title"], editorialPublish="approval")
    art = str((await calls.create("articles", {"title": "Hello"}))["id"])
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    await as_reviewer.err("post", f"{E}/articles/{art}/approve", 403, "PERMISSION_DENIED")
    [review] = await calls.ok("get", f"{E}/reviews")
    assert (review["state"], review["decidedBy"]) == ("in_review", None)
    assert (await calls.ok("get", f"/items/articles/{art}"))["status"] == "draft"
    assert await _approval_audit(calls, art) == []


async def test_switching_the_option_applies_to_the_next_approval(shared_site):
    calls, as_reviewer, reviewer = await _newsroom(shared_site)
    first, _ = await _approve(calls, as_reviewer, reviewer, "First")
    await calls.ok("patch", "/collections/articles", json={"meta": {"editorialPublish": "approval"}})
    second, _ = await _approve(calls, as_reviewer, reviewer, "Second")
    assert [(await calls.ok("get", f"/items/articles/{i}"))["status"] for i in (first, second)] == [
        "draft", "published"]


@pytest.mark.parametrize("value", ["now", "Approval", "", 1, True, None, ["approval"], {"mode": "approval"}])
async def test_a_bad_editorial_publish_is_400_at_its_path(shared_site, value):
    calls = await shared_site.new_site("bad")
    error = await calls.err("post", "/collections", 400, "VALIDATION_FAILED", path_is=["editorialPublish"],
                            json={"name": "articles", "editorialWorkflow": True, "editorialPublish": value})
    assert "'release'" in error["message"] and "'approval'" in error["message"]
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    await calls.err("patch", "/collections/articles", 400, "VALIDATION_FAILED",
                    path_is=["meta", "editorialPublish"], json={"meta": {"editorialPublish": value}})
    assert (await calls.ok("get", "/collections/articles"))["meta"]["editorialPublish"] == "release"


async def test_another_sites_approval_publishes_nothing_here(shared_site):
    """Site B has the same collection with ``approval`` and an item of the same id in review; its
    reviewer's approval publishes B's item, and A's (in review, same id) stays as it is."""
    calls, as_reviewer, reviewer = await _newsroom(shared_site, editorialPublish="approval")
    calls_b, as_reviewer_b, reviewer_b = await _newsroom(shared_site, editorialPublish="approval")
    art = str((await calls.create("articles", {"title": "A's"}))["id"])
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    # B's admin and B's reviewer cannot reach A's item, though its id is named.
    await calls_b.err("post", f"{E}/articles/{art}/approve", 404, "RECORD_NOT_FOUND")
    in_b = Calls(shared_site.app.client, {**reviewer.headers, "X-Svc-Site": calls_b.headers["X-Svc-Site"]})
    await in_b.err("post", f"{E}/articles/{art}/approve", 401, "UNAUTHENTICATED")
    await calls_b.create("articles", {"id": art, "title": "B's"})
    await calls_b.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer_b.id})
    await as_reviewer_b.ok("post", f"{E}/articles/{art}/approve")
    assert (await calls_b.ok("get", f"/items/articles/{art}"))["status"] == "published"
    assert (await calls.ok("get", f"/items/articles/{art}"))["status"] == "draft"
    [review] = await calls.ok("get", f"{E}/reviews")
    assert review["state"] == "in_review"
    assert await _approval_audit(calls, art) == []

"""Editorial transitions the workflow tests do not reach, on one shared app and a site per test
(docs/releases-and-editorial.md, "The editorial workflow"): a reject reason's bounds, every
other transition a 409 naming the state, an edit superseding a review, who may decide, the
reviewer rule, and the review list's filters."""

from __future__ import annotations

import pytest

from kernel.testing import Calls, new_member

E = "/editorial"


async def _newsroom(shared_site):
    """A site with ``articles`` (editorial), its admin's calls, and a reviewer and an outsider
    (members who may update articles)."""
    calls = await shared_site.new_site("ed")
    site = calls.headers["X-Svc-Site"]
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    role = await calls.ok("post", "/roles", status=201, json={"name": "Newsroom"})
    await calls.grant(
        [{"collection": "articles", "action": a} for a in ("read", "create", "update")],
        {"roleId": role["id"]},
    )
    members = [await new_member(shared_site.app, site, role["id"]) for _ in range(2)]
    shared_site.app.kernel.access.invalidate(site)
    return calls, members[0], members[1]


async def _in_review(calls, reviewer):
    art = str((await calls.create("articles", {"title": "a"}))["id"])
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    return art


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"reason": ""}, ["reason"]),
        ({"reason": "   "}, ["reason"]),
        ({"reason": "r" * 2001}, ["reason"]),
        ({"reason": "a\x00b"}, ["reason"]),
        ({"reason": 5}, ["reason"]),
        ({}, ["reason"]),
        ({"reason": "r", "note": "x"}, ["body"]),
        (["r"], ["body"]),
    ],
)
async def test_a_reject_without_a_fit_reason_is_400_and_decides_nothing(shared_site, body, path):
    calls, reviewer, _ = await _newsroom(shared_site)
    art = await _in_review(calls, reviewer)
    await calls.err("post", f"{E}/articles/{art}/reject", 400, "VALIDATION_FAILED", path_is=path, json=body)
    [review] = await calls.ok("get", f"{E}/reviews")
    assert (review["state"], review["reason"]) == ("in_review", None)


async def test_every_other_transition_is_409_naming_the_state(shared_site):
    calls, reviewer, _ = await _newsroom(shared_site)
    art = str((await calls.create("articles", {"title": "a"}))["id"])
    for action, body in (("approve", None), ("reject", {"reason": "no"})):
        error = await calls.err("post", f"{E}/articles/{art}/{action}", 409, "CONFLICT", json=body)
        assert error["extensions"]["state"] == "draft"
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    error = await calls.err(
        "post", f"{E}/articles/{art}/submit-review", 409, "CONFLICT", json={"reviewerId": reviewer.id}
    )
    assert error["extensions"]["state"] == "in_review"
    await calls.ok("post", f"{E}/articles/{art}/reject", json={"reason": "Too short"})
    error = await calls.err("post", f"{E}/articles/{art}/approve", 409, "CONFLICT")
    assert error["extensions"]["state"] == "rejected"


async def test_an_edit_supersedes_the_review_and_is_audited_as_edited(shared_site):
    calls, reviewer, _ = await _newsroom(shared_site)
    art = await _in_review(calls, reviewer)
    await calls.ok("patch", f"/items/articles/{art}", json={"title": "b"})
    [review] = await calls.ok("get", f"{E}/reviews")
    assert review["state"] == "superseded" and review["decidedAt"]
    await Calls(shared_site.app.client, reviewer.headers).err(
        "post", f"{E}/articles/{art}/approve", 409, "CONFLICT"
    )
    audit = await calls.ok("get", "/audit", params={"action": "editorial_transition"})
    edited = [a["details"] for a in audit if a["details"].get("trigger") == "edited"]
    assert edited == [
        {
            "collection": "articles",
            "itemId": art,
            "from": "in_review",
            "to": "draft",
            "reviewId": review["id"],
            "trigger": "edited",
        }
    ]


async def test_only_the_assigned_reviewer_or_an_admin_decides(shared_site):
    calls, reviewer, other = await _newsroom(shared_site)
    art = await _in_review(calls, reviewer)
    await Calls(shared_site.app.client, other.headers).err(
        "post", f"{E}/articles/{art}/approve", 403, "PERMISSION_DENIED"
    )
    decided = await calls.ok("post", f"{E}/articles/{art}/approve")  # the site admin may
    assert decided["state"] == "approved" and decided["decidedBy"] not in (None, reviewer.id)


async def test_a_reviewer_who_may_not_update_or_is_no_member_is_422(shared_site):
    calls, _, _ = await _newsroom(shared_site)
    art = str((await calls.create("articles", {"title": "a"}))["id"])
    reader = await new_member(shared_site.app, calls.headers["X-Svc-Site"], "subscriber")
    stranger = await new_member(shared_site.app, None, None, login=False)
    for reviewer_id in (reader.id, stranger.id, "01a2433a-0000-7000-8000-000000000000"):
        await calls.err(
            "post",
            f"{E}/articles/{art}/submit-review",
            422,
            "VALIDATION_FAILED",
            path_is=["reviewerId"],
            json={"reviewerId": reviewer_id},
        )
    assert await calls.ok("get", f"{E}/reviews") == []


async def test_reviews_filter_by_state_and_assignee_newest_first(shared_site):
    calls, reviewer, other = await _newsroom(shared_site)
    first = await _in_review(calls, reviewer)
    second = await _in_review(calls, other)
    await calls.ok("post", f"{E}/articles/{first}/approve")
    listed = await calls.ok("get", f"{E}/reviews", full=True, params={"limit": 1})
    assert [r["itemId"] for r in listed["data"]] == [second] and listed["meta"]["total"] == 2
    assert [r["itemId"] for r in await calls.ok("get", f"{E}/reviews", params={"status": "approved"})] == [
        first
    ]
    assert [r["itemId"] for r in await calls.ok("get", f"{E}/reviews", params={"assignee": other.id})] == [
        second
    ]
    await calls.err(
        "get",
        f"{E}/reviews",
        400,
        "VALIDATION_FAILED",
        path_is=["query", "status"],
        params={"status": "draft"},
    )


async def test_a_review_request_notifies_the_reviewer_alone(shared_site):
    calls, reviewer, outsider = await _newsroom(shared_site)
    art = await _in_review(calls, reviewer)
    [review] = await calls.ok("get", f"{E}/reviews")
    [note] = await Calls(shared_site.app.client, reviewer.headers).ok("get", "/notifications")
    assert (note["kind"], note["entityId"], note["deepLink"]) == (
        "editorial.review_requested", review["id"], f"/editorial/articles/{art}")
    assert await Calls(shared_site.app.client, outsider.headers).ok("get", "/notifications") == []
    assert await calls.ok("get", "/notifications") == []  # the site's admin is not the reviewer

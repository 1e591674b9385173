"""Editorial refusals the workflow tests do not reach: bodies that are not JSON, and a review of
site A that site B's admin, or A's reviewer holding a token of A, cannot decide."""

from __future__ import annotations

import pytest

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

from .test_editorial import E, setup

# Every test writes and reads in sites of its own: they share the module's app (the auth rate
# limit off: its tests log in many members), each in new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


@pytest.mark.parametrize("action", ["submit-review", "approve", "reject"])
async def test_a_body_that_is_not_json_is_400_at_body(calls, action):
    await calls.collection("articles", {"title": "string"}, editorialWorkflow=True)
    art = (await calls.create("articles", {"title": "a"}))["id"]
    await calls.err("post", f"{E}/articles/{art}/{action}", 400, "VALIDATION_FAILED", path_is=["body"],
                    content=b"{nope", headers={"Content-Type": "application/json"})
    assert (await calls.ok("get", f"/items/articles/{art}"))["status"] == "draft"


async def test_a_review_of_a_is_decided_in_a_only(svc_app, site, site_b, calls, calls_b, make_member):
    reviewer, _, _ = await setup(svc_app, site, calls, make_member)
    art = str((await calls.create("articles", {"title": "a"}))["id"])
    review = await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    await calls_b.collection("articles", {"title": "string"}, editorialWorkflow=True)
    await calls_b.err("post", f"{E}/articles/{art}/reject", 404, "RECORD_NOT_FOUND", json={"reason": "from b"})
    # A's reviewer with a token of A, naming site B: the token is bound to A.
    in_b = Calls(svc_app.client, {**reviewer.headers, "X-Svc-Site": site_b})
    await in_b.err("post", f"{E}/articles/{art}/approve", 401, "UNAUTHENTICATED")
    [still] = (await calls.ok("get", f"{E}/reviews", full=True))["data"]
    assert (still["id"], still["state"], still["decidedBy"]) == (review["id"], "in_review", None)


async def test_a_status_change_is_not_a_content_change(svc_app, site, calls, make_member):
    reviewer, writer, _ = await setup(svc_app, site, calls, make_member)
    as_writer, as_reviewer = Calls(svc_app.client, writer.headers), Calls(svc_app.client, reviewer.headers)
    art = str((await as_writer.create("articles", {"title": "Hello"}))["id"])
    await as_writer.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    await as_reviewer.ok("post", f"{E}/articles/{art}/approve")
    # Parked as archived and back: still approved, so it may be published without a new review.
    await as_writer.ok("patch", f"/items/articles/{art}", json={"status": "archived"})
    assert (await as_writer.ok("patch", f"/items/articles/{art}", json={"status": "published"}))["status"] == "published"
    [review] = await calls.ok("get", f"{E}/reviews")
    assert review["state"] == "approved"

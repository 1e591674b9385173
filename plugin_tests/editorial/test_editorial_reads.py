"""What a client reads of the workflow (docs/releases-and-editorial.md, "Reading the workflow"):
an item's state and the transitions the caller may take (exactly those that would pass), the
states of a page of items (hidden items left out), and the reviewers a submitter may name;
bad input, a collection without the workflow, and site isolation."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

from .test_editorial import E, setup

# Every test writes and reads in sites of its own: they share the module's app (the auth rate
# limit off: its tests log in many members), each in new sites of it (kernel/testing/shared.py).
shared_site = testing_shared.login_shared_site
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_the_transitions_shown_are_the_ones_that_pass(svc_app, site, calls, make_member):
    reviewer, writer, reader = await setup(svc_app, site, calls, make_member)
    as_writer, as_reviewer = Calls(svc_app.client, writer.headers), Calls(svc_app.client, reviewer.headers)
    as_reader = Calls(svc_app.client, reader.headers)
    art = str((await as_writer.create("articles", {"title": "Hello"}))["id"])
    one = f"{E}/articles/{art}"

    draft = await as_writer.ok("get", one)
    assert draft == {
        "collection": "articles",
        "itemId": art,
        "state": "draft",
        "review": None,
        "transitions": ["submit-review"],
    }
    assert (await as_reader.ok("get", one))["transitions"] == []  # may read, may not update
    await as_reader.err(
        "post", f"{one}/submit-review", 403, "PERMISSION_DENIED", json={"reviewerId": reviewer.id}
    )

    await as_writer.ok("post", f"{one}/submit-review", json={"reviewerId": reviewer.id})
    assert (await as_writer.ok("get", one))["transitions"] == []  # the author may not decide
    seen = await as_reviewer.ok("get", one)
    assert (seen["state"], seen["transitions"]) == ("in_review", ["approve", "reject"])
    assert (seen["review"]["state"], seen["review"]["reviewerId"]) == ("in_review", reviewer.id)
    # The instance admin (a site admin) may reject; approve too, not being the author.
    assert (await calls.ok("get", one))["transitions"] == ["approve", "reject"]

    await as_reviewer.ok("post", f"{one}/reject", json={"reason": "Needs sources"})
    rejected = await as_writer.ok("get", one)
    assert (rejected["state"], rejected["review"]["reason"], rejected["transitions"]) == (
        "rejected",
        "Needs sources",
        [],
    )
    await as_writer.ok("patch", f"/items/articles/{art}", json={"title": "With sources"})
    assert (await as_writer.ok("get", one))["transitions"] == ["submit-review"]

    # An admin who authored the item: with requireSeparateReviewer it may reject, not approve.
    mine = str((await calls.create("articles", {"title": "By the admin"}))["id"])
    await calls.ok("post", f"{E}/articles/{mine}/submit-review", json={"reviewerId": reviewer.id})
    assert (await calls.ok("get", f"{E}/articles/{mine}"))["transitions"] == ["reject"]
    await calls.err("post", f"{E}/articles/{mine}/approve", 403, "PERMISSION_DENIED")


async def test_states_of_a_page_of_items_leave_hidden_ones_out(svc_app, site, calls, make_member):
    reviewer, writer, _ = await setup(svc_app, site, calls, make_member)
    a, b, hidden = [
        str(x["id"])
        for x in await calls.create("articles", [{"title": "a"}, {"title": "b"}, {"title": "secret"}])
    ]
    await calls.ok("post", f"{E}/articles/{a}/submit-review", json={"reviewerId": reviewer.id})
    await calls.ok("post", f"{E}/articles/{hidden}/submit-review", json={"reviewerId": reviewer.id})
    states = await calls.ok(
        "get", f"{E}/states", params={"collection": "articles", "ids": f"{b},{a},{hidden},nope"}
    )
    assert states == [
        {"itemId": b, "state": "draft"},
        {"itemId": a, "state": "in_review"},
        {"itemId": hidden, "state": "in_review"},
    ]

    # A member whose read rule hides "secret" never learns its state.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Limited"})
    limited = await make_member(site, role["id"])
    await calls.grant(
        [{"collection": "articles", "action": "read", "conditions": {"title": {"_neq": "secret"}}}],
        {"userId": limited.id},
    )
    svc_app.kernel.access.invalidate(site)
    as_limited = Calls(svc_app.client, limited.headers)
    assert await as_limited.ok(
        "get", f"{E}/states", params={"collection": "articles", "ids": f"{a},{hidden}"}
    ) == [{"itemId": a, "state": "in_review"}]
    await as_limited.err("get", f"{E}/articles/{hidden}", 404, "RECORD_NOT_FOUND")

    for params, path in (
        ({"ids": a}, ["query", "collection"]),
        ({"collection": "articles"}, ["query", "ids"]),
        ({"collection": "articles", "ids": ","}, ["query", "ids"]),
        ({"collection": "articles", "ids": ",".join(str(i) for i in range(101))}, ["query", "ids"]),
        ({"collection": "articles", "ids": "x" * 65}, ["query", "ids"]),
    ):
        await calls.err("get", f"{E}/states", 400, "VALIDATION_FAILED", path_is=path, params=params)
    await calls.collection("notes", {"title": "string"})
    await calls.err("get", f"{E}/states", 409, "CONFLICT", params={"collection": "notes", "ids": a})
    await calls.err("get", f"{E}/states", 404, "NOT_FOUND", params={"collection": "nowhere", "ids": a})
    await Calls(svc_app.client, writer.headers).ok(
        "get", f"{E}/states", params={"collection": "articles", "ids": a}
    )


async def test_the_reviewers_a_submitter_may_name(svc_app, site, calls, make_member):
    reviewer, writer, reader = await setup(svc_app, site, calls, make_member)
    as_writer = Calls(svc_app.client, writer.headers)
    listed = await as_writer.ok("get", f"{E}/reviewers", params={"collection": "articles"})
    ids = {r["id"] for r in listed}
    assert {reviewer.id, writer.id} <= ids and reader.id not in ids  # the reader may not update
    assert set(listed[0]) == {"id", "email", "firstName", "lastName"}
    # For one item with requireSeparateReviewer: neither the caller nor the author.
    art = str((await calls.create("articles", {"title": "by the admin"}))["id"])
    for_item = await as_writer.ok("get", f"{E}/reviewers", params={"collection": "articles", "item": art})
    assert reviewer.id in {r["id"] for r in for_item} and writer.id not in {r["id"] for r in for_item}
    mine = str((await as_writer.create("articles", {"title": "mine"}))["id"])
    assert writer.id not in {
        r["id"]
        for r in await calls.ok("get", f"{E}/reviewers", params={"collection": "articles", "item": mine})
    }
    # Every name listed passes submit-review.
    await as_writer.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": for_item[0]["id"]})

    await Calls(svc_app.client, reader.headers).err(
        "get", f"{E}/reviewers", 403, "PERMISSION_DENIED", params={"collection": "articles"}
    )
    await as_writer.err(
        "get", f"{E}/reviewers", 404, "RECORD_NOT_FOUND", params={"collection": "articles", "item": "missing"}
    )
    await as_writer.err("get", f"{E}/reviewers", 400, "VALIDATION_FAILED", path_is=["query", "collection"])


async def test_the_reads_of_site_a_answer_nothing_in_site_b(
    svc_app, site, site_b, calls, calls_b, make_member
):
    reviewer, _, _ = await setup(svc_app, site, calls, make_member)
    art = str((await calls.create("articles", {"title": "a"}))["id"])
    await calls.ok("post", f"{E}/articles/{art}/submit-review", json={"reviewerId": reviewer.id})
    await calls_b.collection("articles", {"title": "string"}, editorialWorkflow=True)
    await calls_b.err("get", f"{E}/articles/{art}", 404, "RECORD_NOT_FOUND")
    assert await calls_b.ok("get", f"{E}/states", params={"collection": "articles", "ids": art}) == []
    assert reviewer.id not in {
        r["id"] for r in await calls_b.ok("get", f"{E}/reviewers", params={"collection": "articles"})
    }
    # A's reviewer, with a token of A, naming site B: the token is bound to A.
    in_b = Calls(svc_app.client, {**reviewer.headers, "X-Svc-Site": site_b})
    await in_b.err("get", f"{E}/articles/{art}", 401, "UNAUTHENTICATED")
    # A subscriber (the frontend realm) reads none of it.
    subscriber = Calls(svc_app.client, (await make_member(site)).headers)
    await subscriber.err("get", f"{E}/articles/{art}", 403, "PERMISSION_DENIED")
    await subscriber.err("get", f"{E}/reviewers", 403, "PERMISSION_DENIED", params={"collection": "articles"})

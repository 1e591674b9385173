"""POST /releases/:id/rollback: every item a release published returns to its revision and
status before it, in one step, audited; blockers change nothing; other sites see nothing.
The tests share the module's app, each in new sites (kernel/testing/shared.py)."""

from __future__ import annotations

from kernel.testing import shared as testing_shared
from plugin_tests.releases.conftest import draft_posts, entries, release, statuses

svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b

R = "/releases"


async def test_rollback_returns_each_item_to_its_revision_before(calls):
    await calls.collection("docs", {"title": "string", "body": "text"})
    made = await calls.create(
        "docs", [{"title": "a1", "body": "x", "status": "draft"}, {"title": "b1", "status": "published"}]
    )
    a, b = (str(m["id"]) for m in made)
    await calls.ok("patch", f"/items/docs/{a}", json={"title": "a2"})
    # The release publishes a's later content (a pinned revision) and b's new status.
    await calls.ok("patch", f"/items/docs/{a}", json={"title": "a3", "body": "y"})
    a3 = (await calls.ok("get", f"/items/docs/{a}/revisions"))[0]
    await calls.ok("patch", f"/items/docs/{a}", json={"title": "a4", "body": None})
    rel = await calls.ok(
        "post",
        R,
        status=201,
        json={
            "name": "Launch",
            "addItems": [
                {"collection": "docs", "itemId": a, "targetStatus": "published", "revisionId": a3["id"]},
                {"collection": "docs", "itemId": b, "targetStatus": "archived"},
            ],
        },
    )
    assert (await calls.ok("post", f"{R}/{rel['id']}/publish"))["status"] == "published"
    live = [await calls.get("docs", a), await calls.get("docs", b)]
    assert [(i["title"], i.get("body"), i["status"]) for i in live] == [
        ("a3", "y", "published"),
        ("b1", None, "archived"),
    ]
    detail = await calls.ok("get", f"{R}/{rel['id']}")
    before = {e["itemId"]: e["previousRevisionId"] for e in detail["items"]}

    done = await calls.ok("post", f"{R}/{rel['id']}/rollback")
    assert done["status"] == "rolled_back"
    assert done["release"]["status"] == "rolled_back" and done["release"]["rolledBackAt"] is not None
    assert done["outcomes"] == [
        {"collection": "docs", "itemId": a, "outcome": "rolled_back", "revisionId": before[a]},
        {"collection": "docs", "itemId": b, "outcome": "rolled_back", "revisionId": before[b]},
    ]
    back = [await calls.get("docs", a), await calls.get("docs", b)]
    assert [(i["title"], i.get("body"), i["status"]) for i in back] == [
        ("a4", None, "draft"),
        ("b1", None, "published"),
    ]
    history = await calls.ok("get", f"/items/docs/{a}/revisions")
    assert history[0]["causedBy"] == f"release-rollback:{rel['id']}"
    assert [e["outcome"] for e in (await calls.ok("get", f"{R}/{rel['id']}"))["items"]] == ["rolled_back"] * 2

    audit = await calls.ok("get", "/audit", params={"limit": 50})
    [entry] = [e for e in audit if e["action"] == "release_rolled_back"]
    assert entry["target"] == {"type": "release", "id": rel["id"]}
    assert entry["details"] == {
        "releaseId": rel["id"],
        "name": "Launch",
        "itemCount": 2,
        "fromStatus": "published",
    }

    # Once rolled back: again is 409; the release may be published again.
    await calls.err("post", f"{R}/{rel['id']}/rollback", 409, "RELEASE_NOT_PUBLISHED")
    assert (await calls.ok("post", f"{R}/{rel['id']}/publish"))["status"] == "published"
    assert [(await calls.get("docs", i))["status"] for i in (a, b)] == ["published", "archived"]
    assert (await calls.ok("post", f"{R}/{rel['id']}/rollback"))["status"] == "rolled_back"
    assert [(await calls.get("docs", i))["title"] for i in (a, b)] == ["a4", "b1"]


async def test_rollback_of_a_release_not_published(calls):
    a, b = await draft_posts(calls, "a", "b")
    draft = await release(calls, [a])
    resp = await calls.call("post", f"{R}/{draft['id']}/rollback")
    assert resp.status_code == 409
    assert resp.json()["errors"][0]["code"] == "RELEASE_NOT_PUBLISHED"
    assert resp.json()["errors"][0]["extensions"]["status"] == "draft"
    failed = await release(calls, [a, b], name="Blocked")
    await calls.ok("delete", f"/items/posts/{b}", status=204)
    assert (await calls.ok("post", f"{R}/{failed['id']}/publish"))["status"] == "failed"
    await calls.err("post", f"{R}/{failed['id']}/rollback", 409, "RELEASE_NOT_PUBLISHED")
    await calls.err("post", f"{R}/nope/rollback", 404, "RECORD_NOT_FOUND")
    assert await statuses(calls, [a]) == ["draft"]


async def test_a_blocker_rolls_nothing_back(calls):
    a, b = await draft_posts(calls, "a", "b")
    rel = await release(calls, [a, b])
    assert (await calls.ok("post", f"{R}/{rel['id']}/publish"))["status"] == "published"
    await calls.ok("delete", f"/items/posts/{b}", status=204)
    resp = await calls.call("post", f"{R}/{rel['id']}/rollback")
    assert resp.status_code == 409, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "ROLLBACK_BLOCKED"
    assert [(o["itemId"], o["reason"]) for o in error["extensions"]["outcomes"]] == [(b, "ITEM_DELETED")]
    assert await statuses(calls, [a]) == ["published"]  # a stayed: one step, all or nothing
    assert (await calls.ok("get", f"{R}/{rel['id']}"))["status"] == "published"
    audit = await calls.ok("get", "/audit", params={"limit": 50})
    assert not [e for e in audit if e["action"] == "release_rolled_back"]


async def test_best_effort_rolls_back_what_it_published(calls):
    a, b = await draft_posts(calls, "a", "b")
    rel = await release(calls, [a], atomicityMode="best_effort")
    await calls.ok("patch", f"{R}/{rel['id']}", json={"addItems": entries([b])})
    await calls.ok("delete", f"/items/posts/{b}", status=204)
    assert (await calls.ok("post", f"{R}/{rel['id']}/publish"))["status"] == "partially_failed"
    done = await calls.ok("post", f"{R}/{rel['id']}/rollback")
    assert [(o["itemId"], o["outcome"]) for o in done["outcomes"]] == [(a, "rolled_back")]
    assert await statuses(calls, [a]) == ["draft"]


async def test_rollback_site_isolation(calls, calls_b):
    [a] = await draft_posts(calls, "a")
    rel = await release(calls, [a])
    await calls.ok("post", f"{R}/{rel['id']}/publish")
    await calls_b.err("post", f"{R}/{rel['id']}/rollback", 404, "RECORD_NOT_FOUND")
    assert await statuses(calls, [a]) == ["published"]
    assert (await calls.ok("get", f"{R}/{rel['id']}"))["status"] == "published"


async def test_an_item_edited_after_the_publish_blocks_the_rollback_unless_forced(calls):
    a, b = await draft_posts(calls, "a", "b")
    rel = await release(calls, [a, b])
    assert (await calls.ok("post", f"{R}/{rel['id']}/publish"))["status"] == "published"
    # Someone improves b after the launch: a rollback must not throw that away silently.
    await calls.ok("patch", f"/items/posts/{b}", json={"title": "b, corrected"})
    edit = (await calls.ok("get", f"/items/posts/{b}/revisions"))[0]
    resp = await calls.call("post", f"{R}/{rel['id']}/rollback")
    assert resp.status_code == 409, resp.text
    error = resp.json()["errors"][0]
    assert error["code"] == "ROLLBACK_BLOCKED"
    [blocker] = error["extensions"]["outcomes"]
    assert (blocker["itemId"], blocker["reason"]) == (b, "CHANGED_SINCE_PUBLISH")
    assert edit["id"] in blocker["message"]
    # Nothing changed: a is still published, b keeps its edit, the release is still published.
    assert await statuses(calls, [a, b]) == ["published", "published"]
    assert (await calls.get("posts", b))["title"] == "b, corrected"
    assert (await calls.ok("get", f"{R}/{rel['id']}"))["status"] == "published"
    # A bad body is 400 before anything happens.
    await calls.err("post", f"{R}/{rel['id']}/rollback", 400, "VALIDATION_FAILED", json={"force": "yes"})
    await calls.err("post", f"{R}/{rel['id']}/rollback", 400, "VALIDATION_FAILED", json={"forced": True})
    # force: both go back; the later edit stays in b's revisions and can be reverted to.
    done = await calls.ok("post", f"{R}/{rel['id']}/rollback", json={"force": True})
    assert [(o["itemId"], o["outcome"]) for o in done["outcomes"]] == [(a, "rolled_back"), (b, "rolled_back")]
    assert await statuses(calls, [a, b]) == ["draft", "draft"]
    assert (await calls.get("posts", b))["title"] == "b"
    kept = [r["id"] for r in await calls.ok("get", f"/items/posts/{b}/revisions")]
    assert edit["id"] in kept
    await calls.ok("post", f"/items/posts/{b}/revert", json={"revisionId": edit["id"]})
    assert (await calls.get("posts", b))["title"] == "b, corrected"


async def test_force_false_and_an_empty_body_check_later_edits(calls):
    [a] = await draft_posts(calls, "a")
    rel = await release(calls, [a])
    await calls.ok("post", f"{R}/{rel['id']}/publish")
    await calls.ok("patch", f"/items/posts/{a}", json={"status": "archived"})
    await calls.err("post", f"{R}/{rel['id']}/rollback", 409, "ROLLBACK_BLOCKED", json={"force": False})
    assert await statuses(calls, [a]) == ["archived"]

"""-- govern43: GET /work lists a site's long work (here a release's publish) with its progress, for
the site's admins only: another site's admin sees none of it, a member is refused."""

from __future__ import annotations

from kernel.testing import Calls
from plugin_tests.releases.conftest import draft_posts, release


async def test_a_publish_is_listed_with_its_progress_and_outcome(calls, calls_b, svc_app, site, make_member):
    assert await calls.ok("get", "/work") == []
    a, b, c = await draft_posts(calls, "a", "b", "c")
    rel = await release(calls, [a, b, c], atomicityMode="best_effort", name="Autumn")
    await calls.ok("post", f"/releases/{rel['id']}/publish")
    [done] = await calls.ok("get", "/work")
    assert {k: done[k] for k in ("kind", "label", "target", "status", "done", "total", "error")} == {
        "kind": "publish", "label": "Autumn", "target": {"type": "release", "id": rel["id"]},
        "status": "done", "done": 3, "total": 3, "error": None}
    assert done["startedBy"]["email"] and done["finishedAt"] >= done["startedAt"]

    # A publish whose items fail ends failed, saying how many.
    d, e = await draft_posts(calls, "d", "e")
    blocked = await release(calls, [d, e], name="Blocked")
    await calls.ok("delete", f"/items/posts/{e}", status=204)
    assert (await calls.ok("post", f"/releases/{blocked['id']}/publish"))["status"] == "failed"
    latest = (await calls.ok("get", "/work"))[0]
    assert (latest["label"], latest["status"], latest["error"]) == (
        "Blocked", "failed", "failed: 2 of 2 items not published")
    assert [w["label"] for w in await calls.ok("get", "/work", params={"status": "done"})] == ["Autumn"]
    assert [w["label"] for w in await calls.ok("get", "/work", params={"limit": 1})] == ["Blocked"]
    await calls.err("get", "/work", 400, "VALIDATION_FAILED", ["query", "status"], params={"status": "nope"})
    await calls.err("get", "/work", 400, "VALIDATION_FAILED", params={"limit": 0})

    # Another site's admin sees none of it; a member (not an admin) and nobody are refused.
    assert await calls_b.ok("get", "/work") == []
    admin_b = await make_member(calls_b.headers["X-Svc-Site"], role="admin")
    assert await Calls(svc_app.client, admin_b.headers).ok("get", "/work") == []
    admin_a = await make_member(site, role="admin")
    assert len(await Calls(svc_app.client, admin_a.headers).ok("get", "/work")) == 2
    member = await make_member(site)
    await Calls(svc_app.client, member.headers).err("get", "/work", 403, "PERMISSION_DENIED")
    await Calls(svc_app.client, {"X-Svc-Site": site}).err("get", "/work", 401, "UNAUTHENTICATED")

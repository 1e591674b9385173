"""Preview sites: a PR webhook with syncConfig.preview seeds <siteId>__pr-<n> from the PR's
manifest and content (job git.preview); a sync reseeds it; closing tears it down leaving no row;
the preview is isolated like any site; provenance names the PR and commit of the seeded items."""

import base64
import json
from datetime import UTC, datetime, timedelta

from git_helpers import TOKEN, connect, git_app, github_hook, github_pull, guarded
from sqlalchemy import func, select

from kernel.db.meta import metadata
from kernel.testing import Calls, new_member, run_due_jobs
from plugins.git.tables import deliveries

SHA1, SHA2 = "1" * 40, "2" * 40


def serve_file(receiver, path, sha, document):
    content = base64.b64encode(json.dumps(document).encode()).decode()
    receiver.respond(f"/repos/acme/site/contents/{path}?ref={sha}",
                     guarded(TOKEN, {"encoding": "base64", "content": content}))


async def _manifest(app, admin):
    """A manifest with a pages collection, exported from a scratch site."""
    scratch = await app.create_site(admin, prefix="m")
    calls = Calls(app.client, {**admin, "X-Svc-Site": scratch})
    await calls.collection("pages", {"slug": "string", "title": "string"})
    return await calls.ok("get", "/config/export", params={"scope": "schema"})


async def _rows_of(app, site_id):
    found = {}
    async with app.kernel.db.engine.connect() as conn:
        for table in metadata.sorted_tables:
            if "site_id" in table.c and table.name != "svc_sites":
                count = (await conn.execute(select(func.count()).select_from(table)
                                            .where(table.c.site_id == site_id))).scalar()
                if count:
                    found[table.name] = count
    return found


async def test_preview_seed_sync_isolation_provenance_and_teardown(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    admin = {"Authorization": calls.headers["Authorization"]}
    made = await connect(calls, syncConfig={"preview": True})
    manifest = await _manifest(app, admin)
    # a PR's manifest may not make the preview call out (webhooks) or change its settings
    hostile = {**manifest, "webhooks": [{"name": "leak", "kind": "webhook", "url": "http://10.0.0.1/hook"}]}
    serve_file(http_receiver, "svc/manifest.json", SHA1, hostile)
    serve_file(http_receiver, "svc/content.json", SHA1, {"pages": [{"slug": "home", "title": "First"}]})
    resp = await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                             {"action": "opened", "pull_request": github_pull(6, sha=SHA1)})
    assert resp.status_code == 200
    await run_due_jobs(app)
    preview = f"{site}__pr-6"
    in_preview = Calls(app.client, {**admin, "X-Svc-Site": preview})
    pages = (await in_preview.list("pages"))["data"]
    assert [(p["slug"], p["title"]) for p in pages] == [("home", "First")]
    await calls.err("get", "/items/pages", 404)  # the parent site got nothing
    exported = await in_preview.ok("get", "/config/export", params={"scope": "webhooks"})
    assert exported["webhooks"] == []
    # provenance: the seeded item's revision names PR 6 and its commit
    found = await calls.ok("get", f"/integrations/git/{made['id']}/provenance",
                           params={"collection": "pages", "itemId": pages[0]["id"], "number": 6})
    assert [(f["number"], f["sha"], f["siteId"]) for f in found] == [(6, SHA1, preview)]
    # a member of the parent site is not a member of the preview
    member = await new_member(app, site, "subscriber")
    resp = await app.client.get("/api/v1/items/pages", headers={**member.headers, "X-Svc-Site": preview})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), resp.text  # a token of another site
    # a sync reseeds from the new head, from scratch
    serve_file(http_receiver, "svc/manifest.json", SHA2, manifest)
    serve_file(http_receiver, "svc/content.json", SHA2, {"pages": [{"slug": "about", "title": "Second"}]})
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "synchronize", "pull_request": github_pull(6, sha=SHA2)})
    await run_due_jobs(app)
    pages = (await in_preview.list("pages"))["data"]
    assert [(p["slug"], p["title"]) for p in pages] == [("about", "Second")]
    assert await _rows_of(app, preview)
    # closing tears it down, leaving nothing
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "closed", "pull_request": github_pull(6, sha=SHA2, state="closed", merged=True)})
    await run_due_jobs(app)
    assert await _rows_of(app, preview) == {}
    from plugins.items.tables import item_counts

    async with app.kernel.db.engine.connect() as conn:
        left = (await conn.execute(select(func.coalesce(func.sum(item_counts.c.n), 0))
                                   .where(item_counts.c.site_id == preview))).scalar()
    assert left == 0
    resp = await app.client.get("/api/v1/items/pages", headers={**admin, "X-Svc-Site": preview})
    assert resp.status_code == 404 and resp.json()["errors"][0]["code"] == "SITE_NOT_FOUND"
    await calls.err("get", f"/integrations/git/{made['id']}/provenance", 404, "RECORD_NOT_FOUND",
                    params={"collection": "pages", "itemId": pages[0]["id"], "number": 6})
    assert await _rows_of(app, site)  # the parent is untouched


async def test_no_preview_without_the_flag_and_delete_tears_previews_down(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    serve_file(http_receiver, "svc/content.json", SHA1, {})
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "opened", "pull_request": github_pull(3, sha=SHA1)})
    await run_due_jobs(app)
    admin = {"Authorization": calls.headers["Authorization"]}
    assert (await app.client.get("/api/v1/items/x", headers={**admin, "X-Svc-Site": f"{site}__pr-3"})
            ).status_code == 404
    await calls.ok("patch", f"/integrations/git/{made['id']}", json={"syncConfig": {"preview": True}})
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "reopened", "pull_request": github_pull(3, sha=SHA1)})
    await run_due_jobs(app)
    assert (await app.client.get(f"/api/v1/sites/{site}__pr-3", headers=admin)).status_code == 200
    await calls.ok("delete", f"/integrations/git/{made['id']}", status=204)
    assert (await app.client.get(f"/api/v1/sites/{site}__pr-3", headers=admin)).status_code == 404


async def test_provenance_refusals(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    made = await connect(calls)
    path = f"/integrations/git/{made['id']}/provenance"
    await calls.err("get", path, 400, "VALIDATION_FAILED", params={"itemId": "x"})
    await calls.err("get", path, 400, "VALIDATION_FAILED", params={"collection": "pages"})
    await calls.err("get", path, 400, "VALIDATION_FAILED", params={"collection": "p", "itemId": "x", "number": "-1"})
    await calls.err("get", path, 404, "RECORD_NOT_FOUND", params={"collection": "p", "itemId": "x", "number": "9"})


async def test_a_site_git_did_not_make_is_never_seeded_over_or_deleted(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    admin = {"Authorization": calls.headers["Authorization"]}
    made = await connect(calls, syncConfig={"preview": True})
    other = f"{site}__pr-9"
    resp = await app.client.post("/api/v1/sites", headers=admin, json={"id": other, "name": "Someone's site"})
    assert resp.status_code == 201, resp.text
    theirs = Calls(app.client, {**admin, "X-Svc-Site": other})
    await theirs.collection("notes", {"text": "string"})
    await theirs.create("notes", {"text": "keep me"})
    serve_file(http_receiver, "svc/content.json", SHA1, {})
    for action, state in (("opened", "open"), ("closed", "closed")):
        await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                          {"action": action, "pull_request": github_pull(9, sha=SHA1, state=state)})
        await run_due_jobs(app)
        assert [n["text"] for n in (await theirs.list("notes"))["data"]] == ["keep me"]
    await calls.err("get", f"/integrations/git/{made['id']}/provenance", 404, "RECORD_NOT_FOUND",
                    params={"collection": "notes", "itemId": "x", "number": 9})


async def test_previews_of_a_deleted_parent_are_swept(make_app, http_receiver):
    from plugins.git.previews import sweep_job

    app, calls, site = await git_app(make_app, http_receiver)
    admin = {"Authorization": calls.headers["Authorization"]}
    made = await connect(calls, syncConfig={"preview": True})
    serve_file(http_receiver, "svc/content.json", SHA1, {})
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "opened", "pull_request": github_pull(4, sha=SHA1)})
    await run_due_jobs(app)
    assert (await app.client.get(f"/api/v1/sites/{site}__pr-4", headers=admin)).status_code == 200
    assert (await app.client.delete(f"/api/v1/sites/{site}", headers=admin)).status_code == 204
    # delivery ids are kept 30 days, then forgotten by the same sweep
    other = await app.create_site(admin, prefix="o")
    other_calls = Calls(app.client, {**admin, "X-Svc-Site": other})
    kept = await connect(other_calls)
    await github_hook(app.client, other, kept["id"], kept["webhookSecret"], "ping", {}, delivery="old")
    await github_hook(app.client, other, kept["id"], kept["webhookSecret"], "ping", {}, delivery="new")
    async with app.kernel.db.begin() as conn:
        await conn.execute(deliveries.update().where(deliveries.c.delivery_id == "old")
                           .values(received_at=datetime.now(UTC) - timedelta(days=31)))
    await sweep_job(app.kernel)
    async with app.kernel.db.engine.connect() as conn:
        assert [r[0] for r in await conn.execute(select(deliveries.c.delivery_id))] == ["new"]
    assert (await app.client.get(f"/api/v1/sites/{site}__pr-4", headers=admin)).status_code == 404


async def test_a_preview_is_delivered_with_the_parents_public_reads_only(make_app, http_receiver):
    app, calls, site = await git_app(make_app, http_receiver)
    admin = {"Authorization": calls.headers["Authorization"]}
    made = await connect(calls, syncConfig={"preview": True})
    await calls.collection("pages", {"slug": "string", "title": "string"})
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r.get("systemKey") == "public")
    await calls.grant([{"collection": "pages", "action": "read", "fields": ["slug", "title"]}],
                      {"roleId": public["id"]})
    scratch = await app.create_site(admin, prefix="m")
    scratch_calls = Calls(app.client, {**admin, "X-Svc-Site": scratch})
    await scratch_calls.collection("pages", {"slug": "string", "title": "string"})
    await scratch_calls.collection("drafts", {"text": "string"})
    serve_file(http_receiver, "svc/manifest.json", SHA1,
               await scratch_calls.ok("get", "/config/export", params={"scope": "schema"}))
    serve_file(http_receiver, "svc/content.json", SHA1, {"pages": [{"slug": "home", "title": "From the PR"}],
                                                         "drafts": [{"text": "not public"}]})
    await github_hook(app.client, site, made["id"], made["webhookSecret"], "pull_request",
                      {"action": "opened", "pull_request": github_pull(5, sha=SHA1)})
    await run_due_jobs(app)
    preview = f"{site}__pr-5"
    page = await app.client.get(f"/api/v1/deliver/page/{preview}/home")
    assert page.status_code == 200, page.text
    assert "From the PR" in page.text
    hidden = await app.client.get("/api/v1/items/drafts", headers={"X-Svc-Site": preview})
    assert hidden.status_code == 403
    # the parent's public role still reads no drafts of its own, and the preview's grant is its own
    resp = await app.client.get("/api/v1/items/pages", headers={"X-Svc-Site": site})
    assert resp.status_code == 200 and resp.json()["data"] == []

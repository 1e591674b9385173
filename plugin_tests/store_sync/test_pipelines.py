"""Pipelines: create, list, detail, patch (rotation, pause), delete with its log; credentials
write-only and sealed; the encryption key required; roles; names; site B sees nothing of A's."""

from __future__ import annotations

from sqlalchemy import select

from plugins.store_sync.tables import pipelines, sync_log

from .store_sync_helpers import PIPES, PROJECT, RTDB_SECRET, grant_public_read, log_of, service_account, until


def docstore_body(google, **extra):
    return {"name": "fs", "target": "docstore", "credentials": service_account(google), "collections": ["posts"],
            **extra}


def rtdb_body(rtdb, **extra):
    return {"name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url(), "secret": RTDB_SECRET},
            "collections": ["posts"], **extra}


async def test_create_list_detail_never_show_credentials(calls, google, rtdb):
    resp = await calls.call("post", PIPES, json=docstore_body(google))
    assert resp.status_code == 201, resp.text
    made = resp.json()["data"]
    assert made["status"] == "active" and made["target"] == "docstore" and made["projectId"] == PROJECT
    assert made["collections"] == ["posts"] and made["targetPath"] == "{collection}"
    assert (made["syncOnCreate"], made["syncOnUpdate"], made["syncOnDelete"]) == (True, True, True)
    assert made["lastSyncAt"] is None and made["lastSyncItemCount"] is None and made["hasCredentials"] is True
    assert "credentials" not in made and "PRIVATE KEY" not in resp.text
    other = await calls.ok("post", PIPES, status=201, json=rtdb_body(
        rtdb, targetPath="mirror/{collection}/{id}", syncOnDelete=False, projectId="my-rtdb-project"))
    assert other["projectId"] == "my-rtdb-project" and other["syncOnDelete"] is False
    listed = await calls.call("get", PIPES)
    assert [p["id"] for p in listed.json()["data"]] == [made["id"], other["id"]]
    detail = await calls.call("get", f"{PIPES}/{other['id']}")
    for resp in (listed, detail):
        assert RTDB_SECRET not in resp.text and "PRIVATE KEY" not in resp.text and "databaseUrl" not in resp.text


async def test_credentials_are_sealed_at_rest(calls, svc_app, google, rtdb):
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    async with svc_app.kernel.db.connect() as conn:
        stored = (await conn.execute(select(pipelines.c.credentials).where(pipelines.c.id == made["id"]))).scalar()
    assert stored.startswith("sv1.") and RTDB_SECRET not in stored and "127.0.0.1" not in stored


async def test_the_encryption_key_is_required(make_app, google):
    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"})
    headers = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    resp = await app.client.post(f"/api/v1{PIPES}", headers=headers, json=docstore_body(google))
    assert resp.status_code == 400 and resp.json()["errors"][0]["code"] == "ENCRYPTION_KEY_REQUIRED"
    assert (await app.client.get(f"/api/v1{PIPES}", headers=headers)).json()["data"] == []


async def test_patch_rotates_credentials_and_pauses(calls, svc_app, google, rtdb):
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    one = f"{PIPES}/{made['id']}"
    async with svc_app.kernel.db.connect() as conn:
        before = (await conn.execute(select(pipelines.c.credentials).where(pipelines.c.id == made["id"]))).scalar()
    rotated = await calls.ok("patch", one, json={"credentials": {"databaseUrl": rtdb.url(), "secret": "new-secret-1"}})
    assert rotated["hasCredentials"] is True and "credentials" not in rotated
    async with svc_app.kernel.db.connect() as conn:
        after = (await conn.execute(select(pipelines.c.credentials).where(pipelines.c.id == made["id"]))).scalar()
    assert after != before
    assert (await calls.ok("patch", one, json={"status": "paused"}))["status"] == "paused"
    resumed = await calls.ok("patch", one, json={"status": "active", "collections": ["posts", "pages"],
                                                 "targetPath": "x/{collection}", "name": "renamed"})
    assert (resumed["status"], resumed["collections"], resumed["name"]) == ("active", ["posts", "pages"], "renamed")
    # The credentials of a docstore pipeline are a service account, not rtdb's shape (and back).
    await calls.err("patch", one, 400, "VALIDATION_ERROR", ["credentials", "client_email"],
                    json={"credentials": service_account(google)})
    await calls.err("patch", one, 400, "VALIDATION_ERROR", ["target"], json={"target": "docstore"})


async def test_roles_and_names(calls, google, rtdb):
    role = await calls.ok("post", "/roles", status=201, json={"name": "Sync reader"})
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb, role=role["id"]))
    assert made["role"] == role["id"]
    public = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb, name="pub"))
    assert public["role"] != role["id"]
    await calls.err("post", PIPES, 400, "VALIDATION_ERROR", ["role"], json=rtdb_body(rtdb, name="x", role="nope"))
    await calls.err("post", PIPES, 409, "CONFLICT", json=rtdb_body(rtdb))
    await calls.err("patch", f"{PIPES}/{public['id']}", 409, "CONFLICT", json={"name": "rt"})


async def test_delete_cascades_the_log(calls, svc_app, site, rtdb):
    await calls.collection("posts", {"title": "string"})
    await grant_public_read(calls, "posts")
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    await calls.create("posts", {"title": "one"})
    await until(lambda: len(rtdb.writes) == 1)
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert log[0]["status"] == "ok" and log[0]["pushed"] == 1
    await calls.ok("delete", f"{PIPES}/{made['id']}", status=204)
    await calls.err("get", f"{PIPES}/{made['id']}", 404, "RECORD_NOT_FOUND")
    await calls.err("get", f"{PIPES}/{made['id']}/log", 404, "RECORD_NOT_FOUND")
    async with svc_app.kernel.db.connect() as conn:
        left = (await conn.execute(select(sync_log.c.id).where(sync_log.c.pipeline_id == made["id"]))).all()
    assert left == []
    # Gone with it, for good: a dispatcher run that listed it before finds no checkpoint and
    # makes none (test_delete_race.py drives that order).
    assert await svc_app.kernel.events.checkpoint(site, f"store_sync:{made['id']}") is None
    await svc_app.kernel.events.dispatcher.idle()
    assert await svc_app.kernel.events.checkpoint(site, f"store_sync:{made['id']}") is None
    assert len(rtdb.writes) == 1


async def test_site_b_sees_and_touches_nothing_of_site_a(calls, calls_b, rtdb, svc_app):
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    one = f"{PIPES}/{made['id']}"
    assert await calls_b.ok("get", PIPES) == []
    assert (await calls_b.ok("get", PIPES, full=True))["meta"]["total"] == 0
    await calls_b.err("get", one, 404, "RECORD_NOT_FOUND")
    await calls_b.err("patch", one, 404, "RECORD_NOT_FOUND", json={"name": "mine"})
    await calls_b.err("patch", one, 404, "RECORD_NOT_FOUND", json={"credentials": {"databaseUrl": rtdb.url(),
                                                                                   "secret": "stolen"}})
    await calls_b.err("delete", one, 404, "RECORD_NOT_FOUND")
    await calls_b.err("get", f"{one}/log", 404, "RECORD_NOT_FOUND")
    await calls_b.err("post", f"{one}/backfill", 404, "RECORD_NOT_FOUND", json={})
    # B's pipeline of the same name is its own; A's is untouched.
    await calls_b.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    detail = await calls.ok("get", one)
    assert detail["name"] == "rt" and detail["updatedAt"] == made["updatedAt"]


async def test_members_and_anonymous_callers_are_refused(calls, svc_app, site, make_member, rtdb, anon_calls):
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    member = await make_member(site, "subscriber")
    from kernel.testing import Calls

    theirs = Calls(svc_app.client, member.headers)
    await theirs.err("get", PIPES, 403)
    await theirs.err("post", PIPES, 403, json=rtdb_body(rtdb, name="m"))
    await theirs.err("post", f"{PIPES}/{made['id']}/backfill", 403, json={})
    await anon_calls.err("get", f"{PIPES}/{made['id']}", 401)



async def test_credentials_sealed_with_a_lost_key_are_a_logged_failure(make_app, tmp_path, rtdb):
    import base64

    from kernel.app import shutdown_kernel
    from kernel.testing import Calls

    from .store_sync_helpers import env_for

    data_dir = tmp_path / "app"
    first = await make_app(data_dir=data_dir, env=env_for(None))
    admin = {"Authorization": f"Bearer {await first.login()}"}
    site = await first.create_site(admin)
    calls = Calls(first.client, {**admin, "X-Svc-Site": site})
    await calls.collection("posts", {"title": "string"})
    await grant_public_read(calls, "posts")
    made = await calls.ok("post", PIPES, status=201, json=rtdb_body(rtdb))
    await shutdown_kernel(first.kernel)
    other_key = base64.b64encode(b"z" * 32).decode()
    second = await make_app(data_dir=data_dir, env={**env_for(None), "SVC_ENCRYPTION_KEY": other_key})
    calls = Calls(second.client, {"Authorization": f"Bearer {await second.login()}", "X-Svc-Site": site})
    await calls.create("posts", {"title": "x"})
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert log[0]["status"] == "failed" and "credentials do not open" in log[0]["error"]
    assert not rtdb.requests


async def test_a_docstore_pipeline_without_the_store_sync_extra_is_503(calls, monkeypatch):
    """google-auth is the store-sync extra (kernel/base/extras.py): a server without it answers 503
    naming the install line, and stores nothing."""
    import sys

    monkeypatch.setitem(sys.modules, "google.auth", None)  # as if `pip install svc-cms` without the extra
    error = await calls.err("post", PIPES, 503, "SERVICE_UNAVAILABLE", json=docstore_body(None))
    assert "pip install 'svc-cms[store-sync]'" in error["message"], error
    assert await calls.ok("get", PIPES) == []

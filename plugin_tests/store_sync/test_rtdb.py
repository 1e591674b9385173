"""The rtdb target against a local Realtime Database REST server: PUT and DELETE of JSON at
``<databaseUrl>/<path>.json`` with ``auth=<secret>``, the secret never shown, and a sync that
survives a restart without losing or reordering an item's writes."""

from __future__ import annotations

from kernel.app import shutdown_kernel
from kernel.testing import Calls

from .store_sync_helpers import PIPES, RTDB_SECRET, env_for, grant_public_read, log_of, until


def body(rtdb, **extra):
    return {"name": "rt", "target": "rtdb", "credentials": {"databaseUrl": rtdb.url("/db"), "secret": RTDB_SECRET},
            "collections": ["posts"], **extra}


async def setup(calls, rtdb, **extra):
    await calls.collection("posts", {"title": "string", "n": "integer"})
    await grant_public_read(calls, "posts")
    return await calls.ok("post", PIPES, status=201, json=body(rtdb, **extra))


async def test_put_and_delete_with_the_auth_parameter(calls, rtdb):
    made = await setup(calls, rtdb, targetPath="site/{collection}/{id}")
    item = await calls.create("posts", {"title": "Hello", "n": 2})
    key = f"db/site/posts/{item['id']}"
    await until(lambda: key in rtdb.tree)
    assert rtdb.tree[key]["title"] == "Hello" and rtdb.tree[key]["n"] == 2 and rtdb.tree[key]["id"] == item["id"]
    put = next(r for r in rtdb.requests if r["method"] == "PUT")
    assert put["path"] == f"/{key}.json" and put["query"] == {"auth": [RTDB_SECRET]}
    await calls.ok("delete", f"/items/posts/{item['id']}", status=204)
    await until(lambda: key not in rtdb.tree)
    assert rtdb.writes[-1] == ("DELETE", key, None)
    assert all(r["query"] == {"auth": [RTDB_SECRET]} for r in rtdb.requests)
    log = await calls.call("get", f"{PIPES}/{made['id']}/log")
    assert RTDB_SECRET not in log.text


async def test_a_wrong_secret_is_a_failure_that_never_shows_the_secret(calls, rtdb):
    made = await setup(calls, rtdb)
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"credentials": {"databaseUrl": rtdb.url("/db"),
                                                                           "secret": "wrong-secret-value"}})
    await calls.create("posts", {"title": "x"})
    log = await log_of(calls, made["id"], lambda entries: bool(entries))
    assert log[0]["status"] == "failed" and "HTTP 401" in log[0]["error"]
    for path in (f"{PIPES}/{made['id']}/log", f"{PIPES}/{made['id']}", PIPES):
        assert "wrong-secret-value" not in (await calls.call("get", path)).text
    # Rotating to the right secret lets the same batch through (the failure kept its position).
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"credentials": {"databaseUrl": rtdb.url("/db"),
                                                                           "secret": RTDB_SECRET}})
    await until(lambda: len(rtdb.writes) == 1)


async def test_paused_pipelines_wait_and_resume_where_they_stopped(calls, rtdb):
    made = await setup(calls, rtdb)
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"status": "paused"})
    item = await calls.create("posts", {"title": "while paused"})
    marker = await calls.ok("post", PIPES, status=201, json=body(rtdb, name="other", targetPath="o/{collection}"))
    await calls.create("posts", {"title": "seen by the other"})
    await until(lambda: any(k.startswith("db/o/") for k in rtdb.tree))
    assert f"db/posts/{item['id']}" not in rtdb.tree
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"status": "active"})
    await until(lambda: f"db/posts/{item['id']}" in rtdb.tree)
    assert marker["id"] != made["id"]


async def test_a_restart_loses_and_reorders_nothing(make_app, tmp_path, rtdb):
    """The target fails while the first app runs; the app stops between events; a second app on
    the same database pushes what was pending, and each item's writes arrive in order."""
    data_dir = tmp_path / "app"
    first = await make_app(data_dir=data_dir, env=env_for(None))
    admin = {"Authorization": f"Bearer {await first.login()}"}
    site = await first.create_site(admin)
    calls = Calls(first.client, {**admin, "X-Svc-Site": site})
    made = await setup(calls, rtdb)
    a = await calls.create("posts", {"title": "a", "n": 1})
    await until(lambda: len(rtdb.writes) == 1)
    rtdb.fail_next = 10**6  # the database is down from now on
    await calls.ok("patch", f"/items/posts/{a['id']}", json={"n": 2})
    await log_of(calls, made["id"], lambda entries: any(e["status"] == "failed" for e in entries))
    b = await calls.create("posts", {"title": "b", "n": 1})
    await calls.ok("patch", f"/items/posts/{a['id']}", json={"n": 3})
    await shutdown_kernel(first.kernel)
    accepted = list(rtdb.writes)
    assert accepted == [("PUT", f"db/posts/{a['id']}", {**accepted[0][2], "n": 1})]

    rtdb.fail_next = 0  # the database is back, and so is svc
    second = await make_app(data_dir=data_dir, env=env_for(None))
    calls = Calls(second.client, {"Authorization": f"Bearer {await second.login()}", "X-Svc-Site": site})
    await until(lambda: rtdb.tree.get(f"db/posts/{a['id']}", {}).get("n") == 3 and f"db/posts/{b['id']}" in rtdb.tree)
    a_values = [value["n"] for method, key, value in rtdb.writes if key == f"db/posts/{a['id']}"]
    assert a_values[0] == 1 and a_values[-1] == 3 and a_values == sorted(a_values)
    assert [key for _, key, _ in rtdb.writes[1:]] == [f"db/posts/{b['id']}", f"db/posts/{a['id']}"]
    await calls.create("posts", {"title": "after"})
    await until(lambda: len(rtdb.writes) == 4)
    await log_of(calls, made["id"], lambda entries: entries[0]["firstEventId"] != entries[1]["firstEventId"]
                 and entries[0]["pushed"] == 1)
    detail = await calls.ok("get", f"{PIPES}/{made['id']}")
    assert detail["lastError"] is None and detail["lastSyncItemCount"] == 1


async def test_a_deleted_role_is_a_logged_failure_until_role_is_set(calls, rtdb):
    await calls.collection("posts", {"title": "string", "n": "integer"})
    role = await calls.ok("post", "/roles", status=201, json={"name": "Mirror reader"})
    await calls.grant([{"collection": "posts", "action": "read", "fields": ["*"]}], {"roleId": role["id"]})
    made = await calls.ok("post", PIPES, status=201, json=body(rtdb, role=role["id"]))
    first = await calls.create("posts", {"title": "one"})
    await until(lambda: f"db/posts/{first['id']}" in rtdb.tree)
    await calls.ok("delete", f"/roles/{role['id']}", status=204)
    second = await calls.create("posts", {"title": "two"})
    log = await log_of(calls, made["id"], lambda entries: entries[0]["status"] == "failed")
    assert "role no longer exists" in log[0]["error"]
    await calls.err("post", f"{PIPES}/{made['id']}/backfill", 409, "CONFLICT")
    await grant_public_read(calls, "posts")
    await calls.ok("patch", f"{PIPES}/{made['id']}", json={"role": "public"})
    await until(lambda: f"db/posts/{second['id']}" in rtdb.tree)

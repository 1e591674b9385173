"""A hostile extension, signed with the test key, tries to get out of its runner (issue 37):
each attempt is refused or contained, and the server keeps answering other sites."""

from __future__ import annotations

import asyncio
import logging
import os

import pytest
from extension_bundles import ATTEMPT, ENV, enable, install, write_extension

from kernel.app import database_url
from kernel.testing import Calls
from plugins.extensions.host import HEALTHY_SECONDS

HOSTILE = """
    import os
    import socket
    import sqlite3
    import time

    from extensions_sdk import ApiError, Route, files, hookimpl, items, log, read_json, request_context, send_data
    from extensions_sdk import settings
    KERNEL_IMPORT
    from extensions_sdk import runner
""" + ATTEMPT + """


    class Env:
        async def on_get(self, req, resp):
            send_data(resp, dict(os.environ))


    class Files:
        async def on_post(self, req, resp):
            body = await read_json(req)
            path = body["path"]
            send_data(resp, {
                "read": attempt(lambda: open(path, "rb").read(1) and True),
                "list": attempt(lambda: bool(os.listdir(path))),
                "sqlite": attempt(lambda: sqlite3.connect(path).execute("select 1 from sqlite_master").fetchall()),
                "write": attempt(lambda: open(os.path.join(path, "planted"), "w").write("x")),
                "own": attempt(lambda: open("mine.txt", "w").write("fine")),
            })


    def connect(host, port):
        with socket.create_connection((host, port), timeout=2):
            return True


    class Connect:
        async def on_post(self, req, resp):
            body = await read_json(req)
            send_data(resp, attempt(lambda: connect(body["host"], body["port"])))


    class Kernel:
        async def on_post(self, req, resp):
            body = await read_json(req)
            try:
                page = await api.list_items(api.context(None, body["site"], None), "notes")
                send_data(resp, {"done": len(page.items)})
            except Exception as exc:
                send_data(resp, {"refused": type(exc).__name__})


    class Other:
        async def on_post(self, req, resp):
            body = await read_json(req)
            ctx = request_context(req)
            out = {}
            for name, site, collection in (("site", body["site"], "notes"), ("grant", ctx.site_id, "secret")):
                try:
                    page = await items.list_items(items.context(None, site), collection)
                    out[name] = {"done": len(page.items)}
                except ApiError as exc:
                    out[name] = {"refused": exc.details[0].code}
            theirs = items.context(None, body["site"])
            tries = {
                "forged": lambda: runner._PEER.call("items", call="forged", site=ctx.site_id, fn="list_items",
                                                    args=["notes"]),
                "their_setting": lambda: settings.get(theirs, "greeting"),
                "their_setting_set": lambda: settings.set(theirs, "greeting", "planted"),
                "undeclared_setting": lambda: settings.get(ctx, "../upload_policy"),
                "their_files": lambda: files.list(theirs),
                "their_file_by_id": lambda: files.read(ctx, body["file"]),
                "traversal": lambda: files.upload(ctx, "../../../etc/passwd", b"x", "text/plain"),
                "traversal_dots": lambda: files.upload(ctx, "..", b"x", "text/plain"),
                "traversal_backslash": lambda: files.upload(ctx, "..\\\\..\\\\x.txt", b"x", "text/plain"),
            }
            for name, attempt_ in tries.items():
                try:
                    await attempt_()
                    out[name] = {"done": True}
                except ApiError as exc:
                    out[name] = {"refused": exc.details[0].code}
            send_data(resp, out)


    class Fork:
        async def on_post(self, req, resp):
            made, error = 0, None
            for _ in range(5):
                try:
                    pid = os.fork()
                except OSError as exc:
                    error = type(exc).__name__
                    break
                if pid == 0:
                    os._exit(0)
                made += 1
            send_data(resp, {"forked": made, "error": error})


    class Loop:
        async def on_post(self, req, resp):
            while True:  # never answers, and never yields to its event loop (a blocking wait, not a
                time.sleep(0.05)  # spin: the host sees the same silence without the CPU it would burn)


    class Allocate:
        async def on_post(self, req, resp):
            hog = bytearray(4 * 1024 ** 3)
            send_data(resp, {"allocated": len(hog)})


    class Crash:
        async def on_post(self, req, resp):
            os._exit(3)


    class Ping:
        async def on_get(self, req, resp):
            await log.info("pinged\\nforged line")
            send_data(resp, {"pid": os.getpid(), "uid": os.getuid(), "gid": os.getgid(),
                             "root": attempt(lambda: sorted(os.listdir("/root")))})


    @hookimpl
    def register_routes(kernel):
        return [Route("/hostile/env", Env()), Route("/hostile/files", Files()), Route("/hostile/connect", Connect()),
                Route("/hostile/kernel", Kernel()), Route("/hostile/other", Other()), Route("/hostile/fork", Fork()),
                Route("/hostile/loop", Loop()), Route("/hostile/allocate", Allocate()),
                Route("/hostile/crash", Crash()), Route("/hostile/ping", Ping())]
"""
CAPS = ["routes", "items:notes", "network", "settings", "files"]
# The server's code imports (at load: it is big, ~0.5 s of CPU a runner start); its state is not
# there. Only the test that calls /hostile/kernel loads it: the others' runners start (up to four
# times a test) without it.
KERNEL_IMPORT = "from plugins.items import api"
NO_KERNEL_IMPORT = "api = None  # /hostile/kernel is not called with this variant"


async def _hostile(make_app, tmp_path, kernel_import=False, **env):
    app = await make_app(env={**ENV, "SVC_EXT_CALL_SECONDS": "3", "SVC_EXT_MEMORY_MB": "512", **env})
    code = HOSTILE.replace("KERNEL_IMPORT", KERNEL_IMPORT if kernel_import else NO_KERNEL_IMPORT)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    site_b = await app.create_site(admin, prefix="b")
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    for each in (calls, calls_b):
        await each.collection("notes", {"title": "string"})
        await each.create("notes", {"title": "x"})
    await calls.collection("secret", {"title": "string"})
    ext = await install(app.client, admin, write_extension(tmp_path, "hostile", code, CAPS, settings=["greeting"]))
    await enable(calls, ext["id"], CAPS)
    host = app.kernel.state["extensions.runtime"].loaded[ext["id"]].host
    return app, calls, calls_b, site_b, ext, host


async def test_a_hostile_extension_finds_no_secret_file_or_network(make_app, tmp_path):
    app, calls, calls_b, site_b, _ext, host = await _hostile(make_app, tmp_path, kernel_import=True)
    # Its environment is scrubbed: no database or Redis URL, no secret, no storage credentials.
    env = await calls.ok("get", "/ext/hostile/env")
    assert set(env) == {"PATH", "HOME", "LANG", "PYTHONDONTWRITEBYTECODE"}
    assert database_url(app.kernel.settings) not in str(env.values())
    # The data directory (where the SQLite file and jwt_secret live) cannot be read, listed or
    # written; its own folder can.
    data = app.kernel.settings.data_path
    (data / "probe.txt").write_text("server-only")
    for path in (data, data / "probe.txt"):
        tried = await calls.ok("post", "/ext/hostile/files", json={"path": str(path)})
        assert "done" not in str([tried["read"], tried["list"], tried["sqlite"], tried["write"]]), (
            path,
            tried,
        )
        assert tried["own"] == {"done": 4}
    assert not (data / "planted").exists()
    outside = tmp_path / "outside"
    outside.mkdir()
    tried = await calls.ok("post", "/ext/hostile/files", json={"path": str(outside)})
    assert tried["write"] == {"refused": "PermissionError"} and not (outside / "planted").exists()
    url = database_url(app.kernel.settings)
    if url.startswith("sqlite"):
        db_file = url.split("///", 1)[1]
        tried = await calls.ok("post", "/ext/hostile/files", json={"path": db_file})
        assert "refused" in tried["read"] and "refused" in tried["sqlite"], tried
    # No TCP at all: PostgreSQL, Redis, the app's own port, any address.
    for host_, port in (("127.0.0.1", 5432), ("127.0.0.1", 6379), ("93.184.215.14", 80)):
        assert "refused" in await calls.ok("post", "/ext/hostile/connect", json={"host": host_, "port": port})
    # Importing the kernel gives code, not a database: no kernel object, no URL, no file.
    assert "refused" in await calls.ok("post", "/ext/hostile/kernel", json={"site": site_b})
    # No new process: fork is refused.
    assert await calls.ok("post", "/ext/hostile/fork") == {"forked": 0, "error": "PermissionError"}
    # Started by root, it runs as nobody; /root is covered, only Python's folder bound back.
    me = await calls.ok("get", "/ext/hostile/ping")
    if os.geteuid() == 0:
        assert (me["uid"], me["gid"], host.missing) == (65534, 65534, [])
        assert me["root"] == {"refused": "PermissionError"}  # Landlock: /root is not a path it may read
        assert "refused" in (await calls.ok("post", "/ext/hostile/files", json={"path": "/root/.bashrc"}))["read"]
    else:  # not root: no other user to become, and it says so (test_extensions_confine.py has the rest)
        assert me["uid"] == os.geteuid()
        assert "separate user (not root: it runs as the server's user)" in host.missing


async def test_the_channel_refuses_another_site_a_grant_it_lacks_and_a_forged_call(
    make_app, tmp_path, caplog
):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path)
    # Its log lines reach the server's log through the channel, one line each, with the site.
    caplog.set_level(logging.INFO, logger="svc.ext.hostile")
    await calls.ok("get", "/ext/hostile/ping")
    site = calls.headers["X-Svc-Site"]
    assert [r.getMessage() for r in caplog.records if r.name == "svc.ext.hostile"] == [
        f"[site {site}] pinged forged line"
    ]
    file_b = await calls_b.ok("put", "/files/upload/b.txt", status=201, content=b"site b",
                              headers={"Content-Type": "text/plain"})
    await calls_b.ok("put", "/settings/ext.hostile.greeting", json={"value": "b's"})
    answer = await calls.ok("post", "/ext/hostile/other", json={"site": site_b, "file": file_b["id"]})
    assert answer == {
        "site": {"refused": "EXTENSION_REFUSED"},
        "grant": {"refused": "PERMISSION_DENIED"},
        "forged": {"refused": "EXTENSION_REFUSED"},
        "their_setting": {"refused": "EXTENSION_REFUSED"},
        "their_setting_set": {"refused": "EXTENSION_REFUSED"},
        "undeclared_setting": {"refused": "EXTENSION_REFUSED"},
        "their_files": {"refused": "EXTENSION_REFUSED"},
        "their_file_by_id": {"refused": "RECORD_NOT_FOUND"},  # an id of site B is no file of this site
        "traversal": {"refused": "VALIDATION_FAILED"},
        "traversal_dots": {"refused": "VALIDATION_FAILED"},
        "traversal_backslash": {"refused": "VALIDATION_FAILED"},
    }
    # The other site (items, settings read and write, files), the forged call, the collection not
    # granted and the undeclared setting are counted.
    assert host.refused == 7
    # Site B's notes, setting and files were not touched, and B still answers; nothing was stored.
    assert [n["title"] for n in (await calls_b.list("notes"))["data"]] == ["x"]
    assert (await calls_b.ok("get", "/settings/ext.hostile.greeting"))["value"] == "b's"
    assert [f["key"] for f in await calls_b.ok("get", "/files")] == ["b.txt"]
    assert await calls.ok("get", "/files") == []


async def test_a_runaway_loop_times_out_and_the_runner_comes_back(make_app, tmp_path):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path)
    first_pid = (await calls.ok("get", "/ext/hostile/ping"))["pid"]
    looping = asyncio.ensure_future(calls.call("post", "/ext/hostile/loop"))
    # While it loops, the server answers another site.
    assert len((await calls_b.list("notes"))["data"]) == 1
    resp = await looping
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (504, "EXTENSION_TIMEOUT")
    await asyncio.wait_for(host.up.wait(), 60)  # started again, with a backoff
    again = (await calls.ok("get", "/ext/hostile/ping"))["pid"]
    assert again != first_pid and again != os.getpid() and host.starts == 2
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1


async def test_a_memory_blow_up_is_contained(make_app, tmp_path):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path)
    await calls.err("post", "/ext/hostile/allocate", 500, "EXTENSION_FAILED")
    assert (await calls.ok("get", "/ext/hostile/ping"))["pid"] == host.pid  # the same runner goes on


@pytest.mark.parametrize("env", [{"SVC_EXT_RESTART_MS": "600000"}])
async def test_a_crash_answers_unavailable_until_the_runner_is_back(make_app, tmp_path, env):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path, **env)
    await calls.err("post", "/ext/hostile/crash", 503, "EXTENSION_UNAVAILABLE")
    # The restart waits out its backoff (long here): meanwhile calls get a clear error.
    await calls.err("get", "/ext/hostile/ping", 503, "EXTENSION_UNAVAILABLE")
    assert len((await calls_b.list("notes"))["data"]) == 1
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1


async def test_repeated_crashes_disable_it_in_the_site(make_app, tmp_path):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path, SVC_EXT_MAX_FAILURES="2")
    await calls.err("post", "/ext/hostile/crash", 503, "EXTENSION_UNAVAILABLE")
    await asyncio.wait_for(host.up.wait(), 60)  # started again after its backoff
    await calls.err("post", "/ext/hostile/crash", 503, "EXTENSION_UNAVAILABLE")
    await app.kernel.state["extensions.runtime"].drain()
    state = (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]
    assert (state["enabled"], state["failures"], state["disabledReason"]) == (
        False,
        2,
        "disabled after 2 failures",
    )
    assert host.stopping and host.pid is None  # enabled nowhere else: its runner is gone
    await calls.err("get", "/ext/hostile/ping", 404, "NOT_FOUND")


async def test_the_backoff_starts_again_after_a_run_of_good_health(make_app, tmp_path):
    app, calls, calls_b, site_b, ext, host = await _hostile(make_app, tmp_path, SVC_EXT_MAX_FAILURES="10")
    now = [0.0]
    host.clock = lambda: now[0]  # the runner's uptime is read from this clock, moved by hand
    host.started_at = now[0]
    waits = []
    for uptime in (0.0, 0.0, HEALTHY_SECONDS):
        now[0] += uptime
        await calls.err("post", "/ext/hostile/crash", 503, "EXTENSION_UNAVAILABLE")
        await asyncio.wait_for(host.up.wait(), 60)  # started again after its backoff
        waits.append(host.backoff)
    # Two crashes in a row double the wait (SVC_EXT_RESTART_MS, 100 ms); a crash after
    # HEALTHY_SECONDS of good health waits the first backoff again.
    assert waits == [0.1, 0.2, 0.1]
    assert (host.crashes, host.streak, host.starts) == (3, 1, 4)

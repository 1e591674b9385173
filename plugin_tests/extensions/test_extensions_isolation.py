"""Extension code is isolated and bounded: a crashing hook never breaks a built-in write and is
disabled after SVC_EXT_MAX_FAILURES; the items API and outbound requests refuse what was not
granted; hooks that could not be undone or scoped refuse the load; jobs follow enablement."""

from __future__ import annotations

import sys

import pytest
from extension_bundles import ENV, enable, install, write_extension

from kernel.testing import Calls, run_due_jobs

CRASHY = '''
    from extensions_sdk import hookimpl


    async def boom(event, payload, ctx):
        raise RuntimeError("the extension is broken")


    @hookimpl
    def register_event_handlers(bus, kernel):
        bus.on_filter("items.create", boom)
        bus.on_action("items.create", boom)
'''

READER = '''
    from extensions_sdk import Route, hookimpl, items, outbound, request_context, send_data


    class Read:
        async def on_get(self, req, resp, collection):
            ctx = request_context(req)
            page = await items.list_items(ctx, collection)
            send_data(resp, {"count": len(page.items) if hasattr(page, "items") else len(page)})


    class Fetch:
        async def on_get(self, req, resp):
            send_data(resp, {"status": (await outbound.get("http://127.0.0.1:9/")).status_code})


    @hookimpl
    def register_routes(kernel):
        return [Route("/reader/items/{collection}", Read()), Route("/reader/net", Fetch())]
'''


async def _setup(make_app, **env):
    app = await make_app(env={**ENV, **env})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    return app, admin, Calls(app.client, {**admin, "X-Svc-Site": site})


async def test_a_crashing_hook_is_isolated_counted_and_disabled(make_app, tmp_path):
    app, admin, calls = await _setup(make_app, SVC_EXT_MAX_FAILURES="3")
    await calls.collection("notes", {"title": "string"})
    caps = ["events:items.create", "items:notes"]
    ext = await install(app.client, admin, write_extension(tmp_path, "crashy", CRASHY, caps))
    runtime = app.kernel.state["extensions.runtime"]
    # Item events carry whole items: without the collection's grant the handlers are not called.
    await enable(calls, ext["id"], ["events:items.create"])
    await calls.create("notes", {"title": "unseen"})
    await runtime.drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 0
    await calls.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": caps})
    # The built-in write succeeds although both of the extension's handlers raise (2 failures).
    note = await calls.create("notes", {"title": "still saved"})
    assert (await calls.get("notes", note["id"]))["title"] == "still saved"
    await runtime.drain()
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["site"]["enabled"] is True and state["site"]["failures"] == 2
    # The third failure disables it in the site (the same write's action fails a fourth time);
    # later writes do not call it.
    await calls.create("notes", {"title": "again"})
    await runtime.drain()
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["site"]["enabled"] is False
    assert state["site"]["disabledReason"] == "disabled after 3 failures"
    assert not runtime.loaded
    # That write's action fails a fourth time if it runs before the extension is unloaded, or
    # finds it gone (timing decides: both are right); from then on no write calls it.
    await calls.create("notes", {"title": "third"})
    await runtime.drain()
    settled = (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"]
    assert settled in (3, 4)
    await calls.create("notes", {"title": "fourth"})
    await runtime.drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == settled
    # Enabling again starts the count afresh.
    assert (await calls.ok("post", f"/extensions/{ext['id']}/enable"))["site"]["failures"] == 0


async def test_items_and_network_need_their_grants(make_app, tmp_path):
    app, admin, calls = await _setup(make_app)
    for name in ("granted", "secret"):
        await calls.collection(name, {"title": "string"})
        await calls.create(name, {"title": "x"})
    ext = await install(app.client, admin, write_extension(tmp_path, "reader", READER,
                                                           ["routes", "items:granted", "network"]))
    await enable(calls, ext["id"], ["routes", "items:granted"])
    assert await calls.ok("get", "/ext/reader/items/granted") == {"count": 1}
    # The caller is the instance admin, who may read everything: the extension still may not.
    error = await calls.err("get", "/ext/reader/items/secret", 403, "PERMISSION_DENIED")
    assert "secret" in error["message"]
    error = await calls.err("get", "/ext/reader/net", 403, "PERMISSION_DENIED")
    assert error["extensions"]["capability"] == "network"
    await calls.ok("post", f"/extensions/{ext['id']}/capabilities",
                   json={"capabilities": ["routes", "items:granted", "network"]})
    # With the grant, the server's kernel.base.outbound makes the request, under the SSRF rules.
    error = await calls.err("get", "/ext/reader/net", 403, "PERMISSION_DENIED")
    assert error["extensions"]["reason"] == "outbound_refused"
    # Outside the extension nothing changed: the admin reads "secret" directly.
    assert len((await calls.list("secret"))["data"]) == 1
    # The refusals are not counted as the extension's failures.
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 0


REFUSED = {
    "authenticate-hook": ('''
        from extensions_sdk import hookimpl

        @hookimpl
        def authenticate(request, kernel, site):
            return None
    ''', ["routes"], "not available to uploaded extensions"),
    "route-outside-prefix": ('''
        from extensions_sdk import Route, hookimpl

        class R:
            async def on_get(self, req, resp):
                pass

        @hookimpl
        def register_routes(kernel):
            return [Route("/items/hijack", R())]
    ''', ["routes"], "live under /refused"),
    "routes-not-requested": ('''
        from extensions_sdk import Route, hookimpl

        @hookimpl
        def register_routes(kernel):
            return []
    ''', ["network"], "needs the 'routes' capability"),
    "event-not-requested": ('''
        from extensions_sdk import hookimpl

        @hookimpl
        def register_event_handlers(bus, kernel):
            bus.on_action("users.items.create", lambda *a: None)
    ''', ["events:articles.items.create"], "not covered"),
    "import-error": ('''
        raise ImportError("missing dependency")
    ''', ["routes"], "missing dependency"),
    "job-name": ('''
        from extensions_sdk import hookimpl

        async def tick(kernel, site_id):
            pass

        @hookimpl
        def register_jobs(jobs, kernel):
            jobs.periodic("events.prune", tick, every_seconds=60)
    ''', ["jobs"], "start with 'ext.refused.'"),
}


@pytest.mark.parametrize("case", sorted(REFUSED))
async def test_unsafe_registrations_refuse_the_load(make_app, tmp_path, case):
    app, admin, calls = await _setup(make_app)
    code, caps, message = REFUSED[case]
    ext = await install(app.client, admin, write_extension(tmp_path, "refused", code, caps))
    await calls.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": caps})
    error = await calls.err("post", f"/extensions/{ext['id']}/enable", 422, "EXTENSION_LOAD_FAILED")
    assert message in error["message"]
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["site"]["enabled"] is False and state["site"]["disabledReason"].startswith("load failed")
    assert not app.kernel.extension_routes.owners() and not app.kernel.state["extensions.runtime"].loaded
    assert not any(name.startswith("svc_ext_refused_") for name in sys.modules)
    assert app.kernel.pm.get_plugin("ext:refused") is None
    assert "events.prune" in app.kernel.jobs.names()  # the kernel's job is untouched


TICKER = '''
    from extensions_sdk import hookimpl, items


    async def tick(kernel, site_id):
        await items.create(items.context(kernel, site_id), "notes", {"title": f"tick in {site_id}"})


    @hookimpl
    def register_jobs(jobs, kernel):
        jobs.periodic("ext.ticker.tick", tick, every_seconds=60)
'''


async def test_jobs_run_per_enabled_site_and_go_away(make_app, tmp_path):
    app, admin, calls = await _setup(make_app)
    site_b = await app.create_site(admin, prefix="b")
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    for each in (calls, calls_b):
        await each.collection("notes", {"title": "string"})
    ext = await install(app.client, admin, write_extension(tmp_path, "ticker", TICKER, ["jobs", "items:notes"]))
    await enable(calls, ext["id"], ["jobs", "items:notes"])
    # enabled in B, but without the jobs grant
    await calls_b.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": ["items:notes"]})
    await calls_b.ok("post", f"/extensions/{ext['id']}/enable")
    assert "ext.ticker.tick" in app.kernel.jobs.names()
    await run_due_jobs(app)
    # The job ran in A only, as the grant's principal, through the channel.
    site = calls.headers["X-Svc-Site"]
    assert [n["title"] for n in (await calls.list("notes"))["data"]] == [f"tick in {site}"]
    assert (await calls_b.list("notes"))["data"] == []
    await calls.ok("post", f"/extensions/{ext['id']}/disable")
    await calls_b.ok("post", f"/extensions/{ext['id']}/disable")
    assert "ext.ticker.tick" not in app.kernel.jobs.names()


WRITER = '''
    from extensions_sdk import Route, hookimpl, items, request_context, send_data


    class Write:
        async def on_post(self, req, resp):
            send_data(resp, await items.create(request_context(req), "notes", {"title": "by ext"}), status=201)


    @hookimpl
    def register_routes(kernel):
        return [Route("/writer", Write())]
'''


async def test_built_in_handlers_of_an_extension_write_are_not_limited(make_app, tmp_path):
    """A filter of server code set off by the extension's write reads what the extension may not."""
    from plugins.items import api as items

    app, admin, calls = await _setup(make_app)
    await calls.collection("notes", {"title": "string"})
    await calls.collection("other", {"title": "string"})
    await calls.create("other", {"title": "hidden from the extension"})
    seen = []

    async def built_in(event, payload, ctx):
        actor = items.context(ctx.kernel, ctx.site_id, ctx.principal)
        seen.append(len((await items.list_items(actor, "other", uow=ctx.uow)).items))

    undo = app.kernel.bus.on_filter("notes.items.create", built_in)
    try:
        ext = await install(app.client, admin, write_extension(tmp_path, "writer", WRITER, ["routes", "items:notes"]))
        await enable(calls, ext["id"], ["routes", "items:notes"])
        created = await calls.ok("post", "/ext/writer", 201)
        assert created["title"] == "by ext" and seen == [1]
    finally:
        undo()


BROKEN_ROUTE = '''
    from extensions_sdk import Route, hookimpl


    class Broken:
        async def on_get(self, req, resp):
            raise RuntimeError("secret detail")


    @hookimpl
    def register_routes(kernel):
        return [Route("/broken", Broken(), auth="public")]
'''


async def test_a_crashing_route_answers_500_and_counts(make_app, tmp_path):
    app, admin, calls = await _setup(make_app, SVC_EXT_MAX_FAILURES="2")
    ext = await install(app.client, admin, write_extension(tmp_path, "broken", BROKEN_ROUTE, ["routes"]))
    await enable(calls, ext["id"], ["routes"])
    error = await calls.err("get", "/ext/broken", 500, "EXTENSION_FAILED")
    assert "secret detail" not in error["message"]
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1
    # Wrong method on an extension route: 405, not counted.
    await calls.err("post", "/ext/broken", 405, "METHOD_NOT_ALLOWED")
    await calls.err("get", "/ext/broken", 500, "EXTENSION_FAILED")
    await app.kernel.state["extensions.runtime"].drain()
    state = await calls.ok("get", f"/extensions/{ext['id']}")
    assert state["site"]["enabled"] is False and state["site"]["failures"] == 2
    await calls.err("get", "/ext/broken", 404, "NOT_FOUND")


OVERREACH = '''
    from extensions_sdk import hookimpl
    from plugins.items import api as items


    async def peek(event, payload, ctx):
        actor = items.context(ctx.kernel, ctx.site_id, ctx.principal)
        await items.list_items(actor, "secret", uow=ctx.uow)


    async def veto(event, payload, ctx):
        from kernel import ApiError
        if payload["after"].get("title") == "forbidden":
            raise ApiError.validation("the extension refuses this title", path=["title"])


    @hookimpl
    def register_event_handlers(bus, kernel):
        bus.on_filter("notes.items.create", peek)
        bus.on_filter("notes.items.update", veto)
'''


async def test_a_refused_read_in_a_filter_is_a_failure_not_a_veto(make_app, tmp_path):
    app, admin, calls = await _setup(make_app)
    await calls.collection("notes", {"title": "string"})
    await calls.collection("secret", {"title": "string"})
    caps = ["events:notes.items.create", "events:notes.items.update", "items:notes"]
    ext = await install(app.client, admin, write_extension(tmp_path, "overreach", OVERREACH, caps))
    await enable(calls, ext["id"], caps)
    note = await calls.create("notes", {"title": "saved anyway"})
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1
    # A deliberate ApiError from a filter is a veto, as for any filter, and no failure.
    await calls.err("patch", f"/items/notes/{note['id']}", 400, "VALIDATION_FAILED", json={"title": "forbidden"})
    assert (await calls.get("notes", note["id"]))["title"] == "saved anyway"
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1

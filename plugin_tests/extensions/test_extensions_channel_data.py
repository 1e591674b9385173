"""Settings an extension declares and the files API, through its runner's channel (issue 37):
each call is checked against the site's grants (``settings``, ``files``), refused and counted
beyond them, and runs as the call's principal. The hostile cases (another site's settings and
files, names that try to be paths) are in test_extensions_hostile.py."""

from __future__ import annotations

from extension_bundles import ENV, enable, install, write_extension

from kernel.testing import Calls, new_member

KEEPER = """
    from extensions_sdk import Route, files, hookimpl, read_json, request_context, send_data, settings


    class Greeting:
        async def on_get(self, req, resp):
            send_data(resp, await settings.get(request_context(req), "greeting", "hello"))

        async def on_put(self, req, resp):
            body = await read_json(req)
            send_data(resp, await settings.set(request_context(req), "greeting", body["value"]))


    class Files:
        async def on_post(self, req, resp):
            ctx, body = request_context(req), await read_json(req)
            made = await files.upload(ctx, body["filename"], body["text"].encode(), "text/plain")
            page = await files.list(ctx, limit=10)
            send_data(resp, {
                "made": made,
                "listed": [f["key"] for f in page.items],
                "total": page.total,
                "read": (await files.read(ctx, made["id"])).decode(),
                "got": (await files.get(ctx, made["id"]))["id"],
            })


    async def remember(event, payload, ctx):
        payload["title"] = await settings.get(ctx, "greeting", "none")
        await settings.set(ctx, "greeting", "from a filter")  # refused: the write goes on


    @hookimpl
    def register_routes(kernel):
        return [Route("/keeper/greeting", Greeting()), Route("/keeper/files", Files())]


    @hookimpl
    def register_event_handlers(bus, kernel):
        bus.on_filter("notes.items.create", remember)
"""
CAPS = ["routes", "settings", "files", "events:notes.items.create", "items:notes"]


async def test_declared_settings_and_files_go_through_the_channel_within_the_grants(make_app, tmp_path):
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    folder = write_extension(tmp_path, "keeper", KEEPER, CAPS, settings=["greeting"])
    ext = await install(app.client, admin, folder)
    await enable(calls, ext["id"], ["routes"])
    host = app.kernel.state["extensions.runtime"].loaded[ext["id"]].host

    # Without the grants: 403, counted as refused calls of the channel.
    await calls.err("get", "/ext/keeper/greeting", 403, "PERMISSION_DENIED")
    await calls.err("post", "/ext/keeper/files", 403, "PERMISSION_DENIED", json={"filename": "a.txt", "text": "x"})
    assert host.refused == 2
    assert await calls.ok("get", "/files") == []

    await calls.ok("post", f"/extensions/{ext['id']}/capabilities", json={"capabilities": CAPS})
    # Its setting is the site setting ext.keeper.greeting: the admin's value reaches it, and
    # what it writes is the site's.
    assert await calls.ok("get", "/ext/keeper/greeting") == "hello"
    await calls.ok("put", "/settings/ext.keeper.greeting", json={"value": "hi"})
    assert await calls.ok("get", "/ext/keeper/greeting") == "hi"
    assert await calls.ok("put", "/ext/keeper/greeting", json={"value": {"lang": "de"}}) == {"lang": "de"}
    assert (await calls.ok("get", "/settings/ext.keeper.greeting"))["value"] == {"lang": "de"}

    answer = await calls.ok("post", "/ext/keeper/files", json={"filename": "note.txt", "text": "hello"})
    made = answer["made"]
    assert (answer["listed"], answer["total"], answer["read"], answer["got"]) == (["note.txt"], 1, "hello", made["id"])
    assert (made["key"], made["type"], made["filesize"]) == ("note.txt", "text/plain", 5)
    assert (await calls.ok("get", f"/files/{made['id']}"))["uploadedBy"] == made["uploadedBy"]
    assert host.refused == 2

    # A route acts as its caller: a subscriber may read the setting (the extension's choice),
    # but the files API refuses what the subscriber's role refuses.
    member = await new_member(app, site, "subscriber")
    as_member = Calls(app.client, member.headers)
    assert await as_member.ok("get", "/ext/keeper/greeting") == {"lang": "de"}
    await as_member.err("post", "/ext/keeper/files", 403, "PERMISSION_DENIED", json={"filename": "b.txt", "text": "x"})
    assert [f["key"] for f in await calls.ok("get", "/files")] == ["note.txt"]


    # In a filter (the writer's transaction), a setting is read but not written: the write goes
    # on, unchanged by the filter, and the refusal is counted as the extension's failure.
    await calls.collection("notes", {"title": "string"})
    created = await calls.create("notes", {"title": "mine"})
    assert created["title"] == "mine"
    assert (await calls.ok("get", "/settings/ext.keeper.greeting"))["value"] == {"lang": "de"}
    assert host.refused == 3
    await app.kernel.state["extensions.runtime"].drain()
    assert (await calls.ok("get", f"/extensions/{ext['id']}"))["site"]["failures"] == 1


async def test_uninstall_drops_the_extensions_settings_in_every_site(make_app, tmp_path):
    """An uninstalled extension leaves no ``ext.<name>.*`` setting behind, in any site, and a
    reinstall starts from its defaults (not from the old values)."""
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    sites = [await app.create_site(admin), await app.create_site(admin)]
    calls = [Calls(app.client, {**admin, "X-Svc-Site": s}) for s in sites]
    folder = write_extension(tmp_path, "keeper", KEEPER, CAPS, settings=["greeting"])
    ext = await install(app.client, admin, folder)
    for c in calls:
        await enable(c, ext["id"], CAPS)
    await calls[0].ok("put", "/ext/keeper/greeting", json={"value": "site one"})
    await calls[1].ok("put", "/settings/ext.keeper.greeting", json={"value": "site two"})
    assert await calls[0].ok("get", "/ext/keeper/greeting") == "site one"  # cached in this worker

    await calls[0].ok("delete", f"/extensions/{ext['id']}", status=204)
    for c in calls:
        await c.err("get", "/settings/ext.keeper.greeting", 404)
        listed = await c.ok("get", "/settings")
        keys = list(listed) if isinstance(listed, dict) else [s["key"] for s in listed]
        assert not [k for k in keys if k.startswith("ext.keeper.")]

    again = await install(app.client, admin, folder)
    for c in calls:
        await enable(c, again["id"], CAPS)
        assert await c.ok("get", "/ext/keeper/greeting") == "hello"  # the default: nothing came back

"""Holes found in the security review of extensions (each test failed before its fix): the
``network`` grant is "outbound requests through kernel.base.outbound, the SSRF-safe client", so an
extension holding it must not reach loopback, private or metadata addresses through it."""

from __future__ import annotations

from extension_bundles import ENV, enable, install, write_extension

from kernel.testing import Calls

FETCHER = '''
    from extensions_sdk import ApiError, Route, hookimpl, outbound, read_json, send_data


    class Fetch:
        async def on_post(self, req, resp):
            url = (await read_json(req))["url"]
            try:
                send_data(resp, {"status": (await outbound.get(url)).status_code})
            except ApiError as exc:
                send_data(resp, {"refused": exc.details[0].extensions.get("reason")})


    @hookimpl
    def register_routes(kernel):
        return [Route("/fetcher/fetch", Fetch())]
'''


async def test_a_network_grant_reaches_public_addresses_only(make_app, tmp_path, http_receiver):
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    ext = await install(app.client, admin, write_extension(tmp_path, "fetcher", FETCHER, ["routes", "network"]))
    await enable(calls, ext["id"], ["routes", "network"])
    http_receiver.respond("/internal", lambda request: (200, b"internal", {}))
    by_name = http_receiver.url("/internal").replace("127.0.0.1", "localhost")
    internal = [http_receiver.url("/internal"), by_name, "http://169.254.169.254/latest/meta-data",
                "http://10.0.0.1/", "http://[::ffff:127.0.0.1]/"]
    for url in internal:  # a name is checked where it resolves to
        answer = await calls.ok("post", "/ext/fetcher/fetch", json={"url": url})
        assert answer == {"refused": "outbound_refused"}, url
    assert http_receiver.hits["/internal"] == 0


async def test_a_nul_in_an_extension_id_is_not_found_not_a_500(make_app):
    """PostgreSQL refuses NUL in text: such an id names nothing (was 500 INTERNAL on PostgreSQL)."""
    app = await make_app(env=ENV)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await calls.err("get", "/extensions/a%00b", 404, "NOT_FOUND")
    await calls.err("post", "/extensions/a%00b/enable", 404, "NOT_FOUND")

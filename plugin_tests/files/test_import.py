"""``POST /files/import``: the outbound-URL rule checked on the address connected to, no
redirects, the upload guard on the fetched bytes."""

from __future__ import annotations

from .conftest import error_code
from .corpus import gradient_jpeg


async def test_import_fetches_through_the_guard(svc_app, calls, http_receiver):
    """(This app allows 127.0.0.1/32 through SVC_OUTBOUND_ALLOW_NETWORKS.)"""
    data = gradient_jpeg((30, 20))
    url = http_receiver.serve_raw("/img/sunset.jpg", data, content_type="image/jpeg")
    record = await calls.ok("post", "/files/import", status=201,
                            json={"url": url, "data": {"title": "Sunset", "tags": ["imported"]}})
    assert (record["key"], record["title"], record["tags"], record["width"]) == ("sunset.jpg", "Sunset",
                                                                                 ["imported"], 30)
    assert (await calls.call("get", f"/assets/{record['id']}")).content == data
    # A name without an extension takes the type's.
    url = http_receiver.serve_raw("/download", data, content_type="image/jpeg; charset=binary")
    assert (await calls.ok("post", "/files/import", status=201, json={"url": url}))["key"] == "download.jpg"
    # Redirects are not followed; a failing remote is 502 IMPORT_FAILED; bad bodies are 400.
    http_receiver.respond("/moved", lambda r: (302, b"", {"Location": http_receiver.url("/img/sunset.jpg")}))
    before = http_receiver.hits["/img/sunset.jpg"]
    resp = await calls.call("post", "/files/import", json={"url": http_receiver.url("/moved")})
    assert (resp.status_code, error_code(resp)) == (502, "IMPORT_FAILED")
    assert http_receiver.hits["/img/sunset.jpg"] == before
    resp = await calls.call("post", "/files/import", json={"url": http_receiver.url("/missing.jpg")})
    assert (resp.status_code, error_code(resp)) == (502, "IMPORT_FAILED")
    for body in ({}, {"url": 5}, {"url": "ftp://example.com/a.jpg"}, {"url": url, "data": []},
                 {"url": url, "data": {"key": "x"}}, {"url": url, "other": 1}):
        await calls.err("post", "/files/import", 400, "VALIDATION_FAILED", json=body)
    # Outside the allowed network, the rule still holds (169.254.x is link-local).
    await calls.err("post", "/files/import", 400, "VALIDATION_FAILED", json={"url": "http://169.254.169.254/x"})


async def test_import_refuses_internal_addresses(make_app, http_receiver):
    """Without an allowed network: loopback, private, link-local and mapped forms are refused,
    literal or resolved at connect time; the local server never sees a request."""
    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": ""})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    http_receiver.serve_raw("/a.jpg", gradient_jpeg((10, 10)), content_type="image/jpeg")
    port = http_receiver.port
    for url in (f"http://127.0.0.1:{port}/a.jpg", f"http://localhost:{port}/a.jpg",
                f"http://[::ffff:127.0.0.1]:{port}/a.jpg", f"http://[::1]:{port}/a.jpg", f"http://0x7f.1:{port}/a.jpg",
                "http://10.0.0.8/a.jpg", "http://[fe80::1]/a.jpg", "http://0.0.0.0/a.jpg", "http://[::]/a.jpg",
                "http://user:pw@example.com/a.jpg", "file:///etc/passwd"):
        resp = await app.client.post("/api/v1/files/import", json={"url": url}, headers=headers)
        assert (resp.status_code, error_code(resp)) == (400, "VALIDATION_FAILED"), (url, resp.text)
    assert http_receiver.received() == []
    # The guard's first step comes before any outbound request too.
    resp = await app.client.post("/api/v1/files/import", json={"url": "https://example.com/a.jpg"},
                                 headers={"X-Svc-Site": site})
    assert resp.status_code == 401

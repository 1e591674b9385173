"""Published advisories of other headless CMSs, replayed against svc's file import (each passes when
svc is not vulnerable): Directus CVE-2026-35409 (GHSA-wv3h-5fx7-966h), the SSRF deny-list bypassed
with IPv4-mapped IPv6 spellings of a loopback, private or metadata address."""

from __future__ import annotations

from .conftest import error_code
from .corpus import gradient_jpeg

# The same internal addresses, spelled as IPv6 forms that carry an IPv4 address.
SPELLINGS = ("[::ffff:127.0.0.1]", "[::ffff:7f00:1]", "[0:0:0:0:0:ffff:7f00:0001]", "[::FFFF:127.0.0.1]",
             "[::ffff:10.0.0.8]", "[::ffff:c0a8:0101]", "[::ffff:169.254.169.254]", "[::ffff:a9fe:a9fe]",
             "[::127.0.0.1]", "[::ffff:0:127.0.0.1]", "[::ffff:0.0.0.0]", "[::ffff:100.100.100.200]")


async def test_directus_cve_2026_35409_ipv4_mapped_ipv6_spellings_are_refused(make_app, http_receiver):
    """Directus normalised no IPv4-mapped IPv6 address before its deny-list. Here the check is on
    the address a URL resolves to, at connect time, with mapped, compatible and translated forms
    unwrapped: every spelling is 400 and the local server never sees a request."""
    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": ""})
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": site}
    http_receiver.serve_raw("/a.jpg", gradient_jpeg((10, 10)), content_type="image/jpeg")
    for host in SPELLINGS:
        url = f"http://{host}:{http_receiver.port}/a.jpg"
        resp = await app.client.post("/api/v1/files/import", json={"url": url}, headers=headers)
        assert (resp.status_code, error_code(resp)) == (400, "VALIDATION_FAILED"), (url, resp.text)
    assert http_receiver.received() == []

"""kernel.base.outbound's pinned client over real TLS: a local HTTPS server with a certificate from a
local CA (trustme, the ``tls_ca`` fixture). The connection goes to the checked address while the
certificate is checked against the URL's host name; a certificate for another name, one of a CA
the app does not trust, or the local CA without SVC_OUTBOUND_CA_FILE fails the request."""

from __future__ import annotations

import contextlib

import httpx
import pytest
import trustme

from kernel.base import outbound
from kernel.testing import HttpReceiver, tls_server_context

TIMEOUT = httpx.Timeout(5.0)


@contextlib.contextmanager
def https_server(cert):
    receiver = HttpReceiver(tls=tls_server_context(cert))
    receiver.serve("/up", {"ok": True})
    try:
        yield receiver
    finally:
        receiver.stop()




async def _refused(client: httpx.AsyncClient, url: str, reason: str) -> None:
    with pytest.raises(httpx.ConnectError) as caught:
        await client.get(url)
    message = str(caught.value)
    assert "CERTIFICATE_VERIFY_FAILED" in message and reason in message, message


async def test_https_reaches_the_pinned_address_under_the_hosts_name(make_app, tls_ca, tls_ca_file):
    app = await make_app(env={"SVC_OUTBOUND_CA_FILE": tls_ca_file})
    client = outbound.client(app.kernel, "t.tls", timeout=TIMEOUT, operator=True)
    # The certificate names only "localhost": the connection is pinned to 127.0.0.1, and the
    # name checked (and sent as SNI and Host) stays the URL's.
    with https_server(tls_ca.issue_cert("localhost")) as server:
        answer = await client.get(server.url("/up", host="localhost"))
        assert answer.status_code == 200 and answer.json() == {"ok": True}
        assert server.received("/up")[0].headers["Host"] == f"localhost:{server.port}"
        # The same server by its address: the certificate does not name 127.0.0.1.
        await _refused(client, server.url("/up"), "IP address mismatch")
        assert server.hits["/up"] == 1


async def test_a_certificate_for_another_name_is_refused(make_app, tls_ca, tls_ca_file):
    app = await make_app(env={"SVC_OUTBOUND_CA_FILE": tls_ca_file})
    client = outbound.client(app.kernel, "t.tls", timeout=TIMEOUT, operator=True)
    with https_server(tls_ca.issue_cert("other.example")) as server:
        await _refused(client, server.url("/up", host="localhost"), "Hostname mismatch")
        assert server.hits["/up"] == 0


async def test_a_certificate_of_an_untrusted_ca_is_refused(make_app, tls_ca, tls_ca_file):
    app = await make_app(env={"SVC_OUTBOUND_CA_FILE": tls_ca_file})
    client = outbound.client(app.kernel, "t.tls", timeout=TIMEOUT, operator=True)
    with https_server(trustme.CA().issue_cert("localhost")) as server:
        await _refused(client, server.url("/up", host="localhost"), "unable to get local issuer certificate")
        assert server.hits["/up"] == 0


async def test_without_the_ca_file_only_public_cas_are_trusted(make_app, tls_ca):
    app = await make_app()
    client = outbound.client(app.kernel, "t.tls", timeout=TIMEOUT, operator=True)
    with https_server(tls_ca.issue_cert("localhost")) as server:
        await _refused(client, server.url("/up", host="localhost"), "unable to get local issuer certificate")
        assert server.hits["/up"] == 0


async def test_a_ca_file_that_cannot_be_loaded_stops_the_start(tmp_path):
    from kernel.base.settings import Settings, SettingsError

    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    for value in (str(bad), str(tmp_path / "missing.pem")):
        with pytest.raises(SettingsError, match="SVC_OUTBOUND_CA_FILE"):
            Settings.from_env(environ={"SVC_OUTBOUND_CA_FILE": value})

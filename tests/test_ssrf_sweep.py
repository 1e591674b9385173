"""The SSRF sweep (issue 35): every URL-taking feature times every spelling of a refused address.

the outbound rule (docs/operations.md#outbound-requests): the unspecified address is refused when a URL is saved; loopback,
private, link-local and metadata addresses (and IPv4-mapped forms) are refused on the resolved
address at connect time unless the operator opens their network (``SVC_OUTBOUND_ALLOW_NETWORKS``);
redirects are not followed. Features that check a literal address when saved (file import,
translation providers, store-sync targets) refuse it there too.

The features: webhooks, flows' ``request`` (a literal and a templated URL), web push endpoints,
trusted issuers (``jwksUri``, ``discoveryUrl``, the ``jwks_uri`` a discovery document names, and
a token naming the issuer sent from outside), file import, the copilot's and MCP's
``import_file``, a site's translation provider, git hosts, store-sync targets (``databaseUrl``
and a service account's ``token_uri``) and an extension's client (in its sandbox scope; an
uploaded one: ``plugin_tests/extensions/test_extensions_review_holes.py``).

One app for the module, one site per feature. The app opens only ``127.0.0.2/32``: the
``Redirector`` there (a real HTTP server) answers 302 to the ``Canary`` on ``127.0.0.1`` and
``[::1]`` (a real HTTP server that answers 200 and records every request), and serves
discovery documents naming a refused ``jwks_uri``. Every case asserts the feature's exact refusal
and that the canary saw nothing (``test_the_canary_saw_nothing`` checks it once more at the end).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import os
import socket
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote, unquote

import httpx
import pytest
import pytest_asyncio
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kernel.base import outbound, sandbox
from kernel.base.errors import ApiError
from kernel.events import Cursor, Event
from kernel.testing import SharedSite, shared_site_with
from plugins.accounts.external import jwks
from plugins.cdc import webhooks
from plugins.git import providers
from plugins.realtime import push
from plugins.store_sync import targets

pytestmark = pytest.mark.asyncio(loop_scope="module")

REDIRECTOR_HOST = "127.0.0.2"
ISSUER = "https://idp.sweep.example"

# kind -> hosts (the canary's port is added to each); a case id is "<kind>:<host>".
LOOPBACK = ["127.0.0.1", "localhost", "0x7f000001", "2130706433", "017700000001", "[::1]", "[::ffff:127.0.0.1]"]
UNSPECIFIED = ["0", "0.0.0.0", "0x0", "[::]", "[::ffff:0.0.0.0]"]
INTERNAL = ["10.0.0.1", "172.16.0.1", "192.168.0.1", "169.254.169.254", "[fd00::1]", "[fd00:ec2::254]"]
SPELLINGS = [("loopback", h) for h in LOOPBACK] + [("unspecified", h) for h in UNSPECIFIED] + \
    [("internal", h) for h in INTERNAL] + [("redirect", REDIRECTOR_HOST)]
IDS = [f"{kind}:{host}" for kind, host in SPELLINGS]


def _literal(host: str) -> bool:
    return host != "localhost"


# ------------------------------------------------------------------------------ local servers

class _Recording(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:  # quiet
        pass

    def _answer(self) -> None:
        self.server.seen.append((self.command, self.path))  # type: ignore[attr-defined]
        status, headers, body = self.server.answer(self.path)  # type: ignore[attr-defined]
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = _answer  # noqa: N815 - http.server's names


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], family: int, answer: Any, seen: list[Any]) -> None:
        self.address_family = family
        self.answer, self.seen = answer, seen
        super().__init__(address, _Recording)


def _serve(hosts: list[tuple[str, int]], answer: Any, seen: list[Any]) -> tuple[int, list[_Server]]:
    """HTTP servers on each host at one port in 21000-21999 (the house's range for helpers)."""
    start = 21000 + (os.getpid() * 7) % 900
    for port in range(start, start + 100):
        servers: list[_Server] = []
        try:
            for host, family in hosts:
                servers.append(_Server((host, port), family, answer, seen))
        except OSError:
            for server in servers:
                server.server_close()
            continue
        for server in servers:
            threading.Thread(target=server.serve_forever, daemon=True).start()
        return port, servers
    raise RuntimeError("no free port in 21000-21999 for the sweep's servers")


@dataclass
class Sweep:
    shared: SharedSite
    canary_port: int
    redirector_port: int
    canary_seen: list[Any]
    servers: list[_Server]
    sites: dict[str, Any] = field(default_factory=dict)

    @property
    def kernel(self) -> Any:
        return self.shared.app.kernel

    def url(self, host: str, path: str = "/x") -> str:
        port = self.redirector_port if host == REDIRECTOR_HOST else self.canary_port
        return f"http://{host}:{port}{path}"

    async def calls(self, feature: str) -> Any:
        if feature not in self.sites:
            self.sites[feature] = await self.shared.new_site(prefix=feature[:8])
        return self.sites[feature]

    def assert_canary_untouched(self, case: str) -> None:
        seen, self.canary_seen[:] = list(self.canary_seen), []  # each case answers for its own
        assert seen == [], f"{case}: a request reached the loopback canary: {seen}"


def _vapid_env() -> dict[str, str]:
    public, private = push.new_key_pair()
    return {"SVC_VAPID_PUBLIC_KEY": public, "SVC_VAPID_PRIVATE_KEY": private,
            "SVC_VAPID_SUBJECT": "mailto:ops@sweep.example"}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def sweep(svc_shared_db, svc_template_db, tmp_path_factory):
    if not hasattr(socket, "AF_INET6") or not socket.has_ipv6:
        pytest.skip("the canary listens on [::1] too")
    seen: list[Any] = []
    canary_port, canary = _serve([("127.0.0.1", socket.AF_INET), ("::1", socket.AF_INET6)],
                                 lambda path: (200, {"Content-Type": "application/json"}, b'{"keys": []}'), seen)

    def redirect(path: str) -> tuple[int, dict[str, str], bytes]:
        if path.startswith("/disc/"):  # a discovery document naming a jwks_uri on the given host
            host = unquote(path[len("/disc/"):])
            target = f"http://{host}:{canary_port}/jwks" if host != REDIRECTOR_HOST else \
                f"http://{host}:{redirector_port}/hop"
            return 200, {"Content-Type": "application/json"}, json.dumps({"jwks_uri": target}).encode()
        return 302, {"Location": f"http://127.0.0.1:{canary_port}/landed"}, b""

    redirector_port, redirector = _serve([(REDIRECTOR_HOST, socket.AF_INET)], redirect, [])
    env = {"SVC_OUTBOUND_ALLOW_NETWORKS": f"{REDIRECTOR_HOST}/32",  # the first hop only
           "SVC_ENCRYPTION_KEY": base64.b64encode(b"w" * 32).decode(), "SVC_RATE_LIMIT_AUTH": "0",
           **_vapid_env()}
    try:
        async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, env=env) as shared:
            yield Sweep(shared, canary_port, redirector_port, seen, [*canary, *redirector])
    finally:
        for server in [*canary, *redirector]:
            server.shutdown()
            server.server_close()


@pytest.fixture(autouse=True)
def _each_case_answers_for_its_canary_hits(request):
    """A case that failed before its own canary check still has its hits reported (and cleared)
    here, not by the next case."""
    yield
    if "sweep" in request.fixturenames:
        request.getfixturevalue("sweep").assert_canary_untouched(request.node.name)


# ------------------------------------------------------------------------------ the features

@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_webhooks(sweep, kind, host):
    calls = await sweep.calls("webhooks")
    body = {"name": f"w{IDS.index(f'{kind}:{host}')}", "kind": "webhook", "url": sweep.url(host), "secret": "whsec-0123456789abcdef"}
    if kind == "unspecified":
        await calls.err("post", "/cdc/subscriptions", 400, "VALIDATION_FAILED", ["url"], json=body)
        return sweep.assert_canary_untouched(f"webhook {host}")
    sub = await calls.ok("post", "/cdc/subscriptions", 201, json=body)
    site = calls.headers["X-Svc-Site"]
    event = Event(1, site, "items.create", "posts", "1", None, dt.datetime.now(dt.UTC), Cursor(1, 1))
    with pytest.raises(webhooks.DeliveryFailed) as failed:
        await webhooks.deliver(sweep.kernel, site, sub["id"], [event], 1)
    want = "the endpoint answered a redirect (not followed)" if kind == "redirect" else "refused address: "
    assert str(failed.value).startswith(want), str(failed.value)
    sweep.assert_canary_untouched(f"webhook {host}")


async def _flow_run(sweep, calls, flow_id, body):
    started = await calls.ok("post", f"/flows/{flow_id}/run", 202, json=body)
    await sweep.kernel.jobs.run_due()
    return await calls.ok("get", f"/flows/{flow_id}/runs/{started['runId']}")


def _request_flow(url: str) -> dict[str, Any]:
    return {"name": "r", "status": "active", "trigger": "manual",
            "graph": {"nodes": [{"id": "out", "operation": "request", "options": {"url": url}}], "edges": []}}


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_flow_request(sweep, kind, host):
    calls = await sweep.calls("flows")
    if kind == "unspecified":
        await calls.err("post", "/flows", 400, "VALIDATION_FAILED", json=_request_flow(sweep.url(host)))
        return sweep.assert_canary_untouched(f"flow request {host}")
    flow = await calls.ok("post", "/flows", 201, json=_request_flow(sweep.url(host)))
    run = await _flow_run(sweep, calls, flow["id"], {})
    step = run["steps"][0]
    if kind == "redirect":
        assert (run["status"], step["error"]["code"], step["output"]["status"]) == ("failed", "REQUEST_FAILED", 302)
    else:
        assert (run["status"], step["error"]["code"]) == ("failed", "URL_REFUSED"), run
    sweep.assert_canary_untouched(f"flow request {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_flow_request_with_a_templated_url(sweep, kind, host):
    calls = await sweep.calls("flows-templated")
    flow = sweep.sites.get("templated-flow")
    if flow is None:  # a templated URL is checked when it is known: at the run
        flow = sweep.sites["templated-flow"] = await calls.ok(
            "post", "/flows", 201, json=_request_flow("http://{{ $trigger.target }}/x"))
    target = sweep.url(host).removeprefix("http://").removesuffix("/x")
    run = await _flow_run(sweep, calls, flow["id"], {"target": target})
    step = run["steps"][0]
    want = "REQUEST_FAILED" if kind == "redirect" else "URL_REFUSED"
    assert (run["status"], step["error"]["code"]) == ("failed", want), run
    sweep.assert_canary_untouched(f"templated flow request {host}")


def _push_keys() -> dict[str, str]:
    point = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return {"p256dh": push.b64url(point), "auth": push.b64url(os.urandom(16))}


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_web_push_endpoints(sweep, kind, host):
    calls = await sweep.calls("push")
    keys = _push_keys()
    body = {"endpoint": sweep.url(host, f"/push/{quote(host)}"), "keys": keys}
    if kind == "unspecified" or host.startswith("["):  # VAPID cannot sign for an IPv6 literal: 400 too
        await calls.err("post", "/push/subscriptions", 400, "VALIDATION_FAILED", ["endpoint"], json=body)
        return sweep.assert_canary_untouched(f"push {host}")
    made = await calls.ok("post", "/push/subscriptions", 201, json=body)
    row = {"id": made["id"], "endpoint": body["endpoint"], **keys}
    outcome = await push.deliver(sweep.kernel, calls.headers["X-Svc-Site"], row, b"{}", "n1",
                                 attempt=push.MAX_ATTEMPTS)
    assert outcome == ("failed" if kind == "redirect" else "refused")
    sweep.assert_canary_untouched(f"push {host}")


def _issuer(n: str, **source: str) -> dict[str, Any]:
    return {"issuer": f"{ISSUER}/{n}", "audience": "svc", "algorithms": ["RS256"], **source}


async def _issuer_case(sweep, name, field_name, url, want):
    """Create an issuer with ``url`` as its ``field_name``, then fetch its keys: ``want`` is the
    start of the refusal (a ``KeySetError``: the token is 401), or None for 422 when saved."""
    calls = await sweep.calls("issuers")
    body = _issuer(quote(name, safe=""), **{field_name: url})
    if want is None:
        await calls.err("post", "/admin/auth/issuers", 422, "VALIDATION_FAILED", [field_name], json=body)
        return
    made = await calls.ok("post", "/admin/auth/issuers", 201, json=body)
    config = {"issuer": made["issuer"], "jwksUri": made["jwksUri"], "discoveryUrl": made["discoveryUrl"]}
    with pytest.raises(jwks.KeySetError) as failed:
        await jwks.fetch_key_set(sweep.kernel, config)
    assert str(failed.value).startswith(want), str(failed.value)


def _issuer_want(sweep, kind, url):
    return {"unspecified": None, "redirect": f"{url} answered HTTP 302"}.get(kind, "refused address: ")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_issuer_jwks_uri(sweep, kind, host):
    url = sweep.url(host)
    await _issuer_case(sweep, f"j-{host}", "jwksUri", url, _issuer_want(sweep, kind, url))
    sweep.assert_canary_untouched(f"issuer jwksUri {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_issuer_discovery_url(sweep, kind, host):
    url = sweep.url(host)
    await _issuer_case(sweep, f"d-{host}", "discoveryUrl", url, _issuer_want(sweep, kind, url))
    sweep.assert_canary_untouched(f"issuer discoveryUrl {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_the_jwks_uri_a_discovery_document_names(sweep, kind, host):
    """The discovery document is on the opened redirector; the jwks_uri it names is not."""
    discovery = sweep.url(REDIRECTOR_HOST, f"/disc/{quote(host, safe='')}")
    if kind == "unspecified":
        want = "refusing the URL"
    else:
        want = _issuer_want(sweep, kind, sweep.url(REDIRECTOR_HOST, "/hop"))
    await _issuer_case(sweep, f"n-{host}", "discoveryUrl", discovery, want)
    sweep.assert_canary_untouched(f"discovered jwks_uri {host}")


def _token(issuer: str) -> str:
    """A token naming ``issuer`` (its signature is never reached: the keys cannot be fetched)."""
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).rstrip(b"=").decode()

    now = int(dt.datetime.now(dt.UTC).timestamp())
    return f"{part({'alg': 'RS256', 'typ': 'JWT', 'kid': 'k1'})}." \
        f"{part({'iss': issuer, 'aud': 'svc', 'sub': 'u1', 'iat': now, 'exp': now + 300})}.c2ln"


@pytest.mark.parametrize(("kind", "host"), [s for s in SPELLINGS if s[0] != "unspecified"],
                         ids=[i for i in IDS if not i.startswith("unspecified")])
async def test_a_token_naming_an_issuer_is_401_and_fetches_nothing(sweep, kind, host):
    """From outside: any request carrying a JWT of the issuer makes svc fetch its keys; the fetch
    is refused (or not redirected), and the token is 401."""
    calls = await sweep.calls("issuers-e2e")
    made = await calls.ok("post", "/admin/auth/issuers", 201,
                          json=_issuer(quote(f"e-{host}", safe=""), jwksUri=sweep.url(host)))
    resp = await sweep.shared.app.client.get("/api/v1/auth/me", headers={
        "Authorization": f"Bearer {_token(made['issuer'])}", "X-Svc-Site": calls.headers["X-Svc-Site"]})
    assert (resp.status_code, resp.json()["errors"][0]["code"]) == (401, "UNAUTHENTICATED"), resp.text
    sweep.assert_canary_untouched(f"token of issuer {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_file_import(sweep, kind, host):
    calls = await sweep.calls("files")
    if kind == "redirect":
        error = await calls.err("post", "/files/import", 502, "IMPORT_FAILED", json={"url": sweep.url(host)})
        assert error["extensions"]["status"] == 302
    else:  # a literal when saved, a name at connect time: the same answer
        await calls.err("post", "/files/import", 400, "VALIDATION_FAILED", ["url"], json={"url": sweep.url(host)})
    sweep.assert_canary_untouched(f"file import {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_copilot_import(sweep, kind, host):
    """The copilot's ``import <url>`` runs the files plugin's import."""
    calls = await sweep.calls("copilot")
    if kind == "redirect":
        await calls.err("post", "/ai/chat", 502, "IMPORT_FAILED", json={"message": f"import {sweep.url(host)}"})
    else:
        await calls.err("post", "/ai/chat", 400, "VALIDATION_FAILED", ["url"],
                        json={"message": f"import {sweep.url(host)}"})
    sweep.assert_canary_untouched(f"copilot import {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_mcp_import(sweep, kind, host):
    """The MCP tool ``import_file`` (a JSON-RPC ``tools/call`` on ``/mcp``, stateless with JSON
    answers): the tool's result is an error carrying the import's refusal."""
    calls = await sweep.calls("mcp")
    headers = {**calls.headers, "Accept": "application/json, text/event-stream"}
    if "mcp-session" not in sweep.sites:
        opened = await sweep.shared.app.client.post("/api/v1/mcp", headers=headers, json={
            "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "sweep", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        sweep.sites["mcp-session"] = opened.headers["mcp-session-id"]
    resp = await sweep.shared.app.client.post("/api/v1/mcp", headers={
        **headers, "Mcp-Session-Id": sweep.sites["mcp-session"], "Mcp-Protocol-Version": "2025-06-18"}, json={
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "import_file", "arguments": {"url": sweep.url(host)}}})
    assert resp.status_code == 200, resp.text
    result = resp.json()["result"]
    error = json.loads(result["content"][0]["text"])["error"]
    want = "IMPORT_FAILED" if kind == "redirect" else "VALIDATION_FAILED"
    assert (result["isError"], error["code"]) == (True, want), result
    sweep.assert_canary_untouched(f"MCP import {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_translation_provider(sweep, kind, host):
    calls = await sweep.calls("tm")
    value = {"value": {"url": sweep.url(host, "")}}
    if kind != "redirect" and _literal(host):
        resp = await calls.call("put", "/settings/tm.provider", json=value)
        assert (resp.status_code, resp.json()["errors"][0]["code"]) == (400, "VALIDATION_FAILED"), resp.text
        return sweep.assert_canary_untouched(f"translation provider {host}")
    await calls.ok("put", "/settings/tm.provider", json=value)
    await calls.err("post", "/tm/translate", 502, "TRANSLATION_FAILED", json={"text": "Hi", "from": "en", "to": "fr"})
    sweep.assert_canary_untouched(f"translation provider {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_git_hosts(sweep, kind, host):
    """The git hosts are the operator's settings; every request to one, and the job-log redirect
    a host answers, is checked at connect time."""
    if kind == "redirect":
        answer = await providers.request(sweep.kernel, "GET", sweep.url(host))
        assert answer.status == 302  # handed back, not followed
    else:
        with pytest.raises(providers.ProviderError, match="The provider URL is refused"):
            await providers.request(sweep.kernel, "GET", sweep.url(host))
    sweep.assert_canary_untouched(f"git host {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_store_sync_targets(sweep, kind, host):
    calls = await sweep.calls("storesync")
    credentials = {"databaseUrl": sweep.url(host, ""), "secret": "s3cret"}
    body = {"name": "rt", "target": "rtdb", "credentials": credentials, "collections": ["posts"]}
    if kind != "redirect" and _literal(host):
        await calls.err("post", "/store-sync/pipelines", 400, "VALIDATION_ERROR", ["credentials", "databaseUrl"],
                        json=body)
        return sweep.assert_canary_untouched(f"store sync {host}")
    await calls.ok("post", "/store-sync/pipelines", 201, json={**body, "name": f"rt{IDS.index(f'{kind}:{host}')}"})
    with pytest.raises(targets.PushFailed) as failed:
        await targets.push_rtdb(sweep.kernel, credentials, [targets.Write("posts/1", {"a": 1})])
    want = "answered a redirect (not followed)" if kind == "redirect" else "refused address"
    assert want in str(failed.value), str(failed.value)
    sweep.assert_canary_untouched(f"store sync {host}")


@pytest.fixture(scope="module")
def service_account_key() -> str:
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_store_sync_token_uri(sweep, service_account_key, kind, host):
    """A docstore pipeline's service account names its ``token_uri``: the OAuth grant goes there."""
    calls = await sweep.calls("storesync-docstore")
    credentials = {"type": "service_account", "project_id": "sweep-project", "private_key": service_account_key,
                   "client_email": "sync@sweep-project.iam.gserviceaccount.com", "token_uri": sweep.url(host, "/token")}
    body = {"name": f"fs{IDS.index(f'{kind}:{host}')}", "target": "docstore", "credentials": credentials,
            "collections": ["posts"]}
    if kind != "redirect" and _literal(host):
        await calls.err("post", "/store-sync/pipelines", 400, "VALIDATION_ERROR", ["credentials", "token_uri"],
                        json=body)
        return sweep.assert_canary_untouched(f"store sync token_uri {host}")
    await calls.ok("post", "/store-sync/pipelines", 201, json=body)
    with pytest.raises(targets.PushFailed) as failed:
        await targets.access_token(sweep.kernel, f"sweep:{host}", credentials)
    want = "answered a redirect (not followed)" if kind == "redirect" else "the token endpoint: refused address"
    assert want in str(failed.value), str(failed.value)
    sweep.assert_canary_untouched(f"store sync token_uri {host}")


@pytest.mark.parametrize(("kind", "host"), SPELLINGS, ids=IDS)
async def test_extensions(sweep, kind, host):
    """An extension with the ``network`` grant: nothing the operator opened reaches it (not even
    the redirector), and its client refuses before connecting."""
    scope = sandbox.ExtensionScope("sweeper", None, frozenset({"network"}))
    with sandbox.running(scope):
        if _literal(host):
            with pytest.raises(ApiError) as refused:
                outbound.check_url(sweep.url(host))
            assert (refused.value.status, refused.value.code) == (400, "VALIDATION_FAILED")
        http = outbound.client(sweep.kernel, "sweep", timeout=httpx.Timeout(5.0))
        with pytest.raises(outbound.OutboundRefused):
            await http.get(sweep.url(host))
    sweep.assert_canary_untouched(f"extension {host}")


async def test_the_canary_records_a_request_the_rule_lets_through(sweep):
    """What the sweep's "nothing reached the canary" rests on: a request pinned under a policy
    that opens loopback does reach it, and is recorded before it is answered."""
    import httpx

    target = await outbound.pinned(sweep.url("localhost", "/opened"), outbound.Policy(outbound.LOOPBACK))
    async with httpx.AsyncClient(trust_env=False) as client:
        answer = await client.get(target.url, headers=target.headers)
    assert answer.status_code == 200 and sweep.canary_seen == [("GET", "/opened")]
    sweep.canary_seen.clear()


async def test_the_canary_saw_nothing(sweep):
    sweep.assert_canary_untouched("the whole sweep")

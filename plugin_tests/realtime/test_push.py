"""Web push: VAPID keys, subscriptions, and real deliveries to a local push service whose
requests the test checks like a push service would (VAPID JWT) and decrypts like a browser
would (aes128gcm with the subscription's private key)."""

from __future__ import annotations

import base64
import datetime as dt
import json
import os

import http_ece
import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from kernel.testing import Calls, new_member
from kernel.testing import shared as testing_shared
from plugin_tests.realtime.helpers import connect, frame, ticket
from plugins.realtime import api, push

# The tests without VAPID keys write and read in sites of their own: they share the module's app
# (and its one server), each in new sites of it (kernel/testing/shared.py). The deliveries run the
# instance's jobs on an app with keys of its own (``vapid_app``).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b
server = testing_shared.shared_live_server

PUBLIC, PRIVATE = push.new_key_pair()
SUBJECT = "mailto:ops@example.com"
VAPID_ENV = {"SVC_VAPID_PUBLIC_KEY": PUBLIC, "SVC_VAPID_PRIVATE_KEY": PRIVATE, "SVC_VAPID_SUBJECT": SUBJECT}


def b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


class Browser:
    """A subscriber's key pair and auth secret, as a browser's PushManager makes them."""

    def __init__(self) -> None:
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.auth = os.urandom(16)
        point = self.key.public_key().public_bytes(serialization.Encoding.X962,
                                                   serialization.PublicFormat.UncompressedPoint)
        self.keys = {"p256dh": b64(point), "auth": b64(self.auth)}

    def decrypt(self, body: bytes) -> dict:
        return json.loads(http_ece.decrypt(body, private_key=self.key, auth_secret=self.auth, version="aes128gcm"))


def check_vapid(request, audience: str) -> dict:
    """What a push service checks: ``vapid t=<JWT>,k=<public key>``, the JWT signed by that key."""
    scheme, _, params = request.headers["Authorization"].partition(" ")
    parts = dict(p.split("=", 1) for p in params.split(","))
    assert scheme == "vapid" and parts["k"] == PUBLIC
    point = base64.urlsafe_b64decode(parts["k"] + "=" * (-len(parts["k"]) % 4))
    key = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), point)
    claims = jwt.decode(parts["t"], key, algorithms=["ES256"], audience=audience)
    assert claims["sub"] == SUBJECT and claims["exp"] > dt.datetime.now(dt.UTC).timestamp()
    assert request.headers["Content-Encoding"] == "aes128gcm" and int(request.headers["TTL"]) > 0
    return claims


@pytest.fixture
async def vapid_app(make_app):
    app = await make_app(env=VAPID_ENV)
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    return app, Calls(app.client, {**headers, "X-Svc-Site": site}), site


async def test_vapid_key_is_404_until_configured(calls):
    err = await calls.err("get", "/push/vapid-public-key", 404, "PUSH_NOT_CONFIGURED")
    assert "VAPID" in err["message"]
    assert await calls.ok("get", "/push/status") == {"vapidConfigured": False, "realtimeAvailable": True,
                                                     "subscriptions": 0}


async def test_vapid_key_is_served_once_configured(vapid_app):
    _app, vcalls, _site = vapid_app
    assert await vcalls.ok("get", "/push/vapid-public-key") == {"publicKey": PUBLIC}
    assert (await vcalls.ok("get", "/push/status"))["vapidConfigured"] is True


async def test_subscriptions_upsert_per_user_and_endpoint(calls, calls_b, make_member, site):
    endpoint = "https://push.example.net/send/abc"
    browser = Browser()
    first = await calls.ok("post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": browser.keys})
    again = await calls.ok("post", "/push/subscriptions", status=200,
                           json={"endpoint": endpoint, "keys": Browser().keys, "expirationTime": None})
    assert first["id"] == again["id"] and first["endpoint"] == endpoint and "keys" not in first
    member = await make_member(site, "admin")
    theirs = Calls(calls.client, member.headers)
    await theirs.ok("post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": browser.keys})
    assert (await calls.ok("get", "/push/status"))["subscriptions"] == 1
    assert (await calls_b.ok("get", "/push/status"))["subscriptions"] == 0  # counted per site
    await calls_b.err("delete", "/push/subscriptions", 404, "RECORD_NOT_FOUND", json={"endpoint": endpoint})
    await calls.ok("delete", "/push/subscriptions", status=204, json={"endpoint": endpoint})
    await calls.err("delete", "/push/subscriptions", 404, "RECORD_NOT_FOUND", json={"endpoint": endpoint})
    assert (await theirs.ok("get", "/push/status"))["subscriptions"] == 1


def _compressed() -> str:
    key = ec.generate_private_key(ec.SECP256R1()).public_key()
    return b64(key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.CompressedPoint))


@pytest.mark.parametrize(("body", "path"), [
    ({}, ["endpoint"]),
    ({"endpoint": "ftp://push.example.net/x", "keys": "K"}, ["endpoint"]),
    ({"endpoint": "https://0.0.0.0/x", "keys": "K"}, ["endpoint"]),
    ({"endpoint": "https://[::]/x", "keys": "K"}, ["endpoint"]),
    ({"endpoint": "https://push.example.net:99999/x", "keys": "K"}, ["endpoint"]),
    ({"endpoint": "https://push.example.net/" + "x" * 2000, "keys": "K"}, ["endpoint"]),
    ({"endpoint": 5, "keys": "K"}, ["endpoint"]),
    ({"endpoint": "https://push.example.net/x"}, ["keys"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "abc", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}},
     ["keys", "p256dh"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "COMPRESSED", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}},
     ["keys", "p256dh"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "BAD_POINT", "auth": "AAAAAAAAAAAAAAAAAAAAAA"}},
     ["keys", "p256dh"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "GOOD", "auth": "AAAA"}}, ["keys", "auth"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "GOOD", "auth": 16}}, ["keys", "auth"]),
    ({"endpoint": "https://push.example.net/x", "keys": {"p256dh": "GOOD", "auth": "AAAAAAAAAAAAAAAAAAAAAA",
                                                          "x": 1}}, ["keys"]),
    ({"endpoint": "https://push.example.net/x", "keys": "K", "userId": "someone"}, ["userId"]),
])
async def test_subscription_bodies_are_checked(shared_site, body, path):
    calls = shared_site.calls
    keys = body.get("keys")
    if keys == "K":
        body = {**body, "keys": Browser().keys}
    elif isinstance(keys, dict):
        subst = {"COMPRESSED": _compressed(), "GOOD": Browser().keys["p256dh"],
                 "BAD_POINT": b64(b"\x04" + b"\x01" * 64)}
        body = {**body, "keys": {k: subst.get(v, v) if isinstance(v, str) else v for k, v in keys.items()}}
    await calls.err("post", "/push/subscriptions", 400, "VALIDATION_FAILED", path_is=path, json=body)


async def test_push_routes_refuse_bad_callers_and_bodies(calls, anon_calls, make_member, site):
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "k"})
    as_key = Calls(calls.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site})
    await as_key.err("post", "/push/subscriptions", 403, "PERMISSION_DENIED",
                     json={"endpoint": "https://push.example.net/x", "keys": Browser().keys})
    for method, path in (("get", "/push/status"), ("post", "/push/test"), ("post", "/push/subscriptions"),
                         ("get", "/push/vapid-public-key")):
        await anon_calls.err(method, path, 401, "UNAUTHENTICATED")
    await calls.err("delete", "/push/subscriptions", 400, "VALIDATION_FAILED", json={})
    await calls.err("delete", "/push/subscriptions", 400, "VALIDATION_FAILED", json={"endpoint": "x", "y": 1})
    await calls.err("post", "/push/test", 400, "VALIDATION_FAILED", json={"to": "everyone"})
    subscriber = await make_member(site, "subscriber")
    await Calls(calls.client, subscriber.headers).err("post", "/push/test", 403, "PERMISSION_DENIED")


async def test_push_test_without_keys_still_sends_the_frame(server, calls):
    async with connect(server, await ticket(calls)) as ws:
        await ws.send_json({"type": "ping"})
        await frame(ws)
        data = await calls.ok("post", "/push/test", status=202)
        assert data["pushQueued"] is False
        got = await frame(ws)
        assert got == {"type": "notification", "notification": data["notification"]}


async def test_a_notification_arrives_encrypted_and_signed(vapid_app, http_receiver, run_due_jobs):
    app, calls, _site = vapid_app
    browser = Browser()
    endpoint = http_receiver.serve_raw("/push/one", b"", 201)
    await calls.ok("post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": browser.keys})
    data = await calls.ok("post", "/push/test", status=202)
    assert data["pushQueued"] is True
    await run_due_jobs(app)
    [request] = http_receiver.received("/push/one")
    check_vapid(request, f"http://127.0.0.1:{http_receiver.port}")
    assert browser.decrypt(request.body) == {"type": "notification", "notification": data["notification"]}


async def test_a_notification_for_one_user_is_pushed_to_that_user_alone(vapid_app, http_receiver, run_due_jobs):
    app, calls, site = vapid_app
    meant, other = await new_member(app, site, "admin"), await new_member(app, site, "admin")
    browsers = {}
    for who, member in (("meant", meant), ("other", other)):
        browsers[who] = Browser()
        await Calls(app.client, member.headers).ok("post", "/push/subscriptions", status=201, json={
            "endpoint": http_receiver.serve_raw(f"/push/{who}", b"", 201), "keys": browsers[who].keys})
    note = await api.notify(app.kernel, site, kind="ai.approval.requested", title="Approve?", recipient=meant.id)
    await run_due_jobs(app)
    [request] = http_receiver.received("/push/meant")
    assert browsers["meant"].decrypt(request.body) == {"type": "notification", "notification": note}
    assert http_receiver.received("/push/other") == []  # the job ran: it sent to one subscription only


@pytest.mark.parametrize("status", [404, 410])
async def test_a_gone_subscription_is_deleted(vapid_app, http_receiver, run_due_jobs, status):
    app, calls, _site = vapid_app
    endpoint = http_receiver.serve_raw("/push/gone", b"", status)
    await calls.ok("post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": Browser().keys})
    await calls.ok("post", "/push/test", status=202)
    await run_due_jobs(app)
    assert len(http_receiver.received("/push/gone")) == 1
    assert (await calls.ok("get", "/push/status"))["subscriptions"] == 0
    await calls.ok("post", "/push/test", status=202)
    await run_due_jobs(app)
    assert len(http_receiver.received("/push/gone")) == 1  # nothing more is sent there


@pytest.mark.parametrize("status", [429, 503])
async def test_busy_push_services_are_retried_through_jobs(vapid_app, http_receiver, run_due_jobs, status):
    app, calls, _site = vapid_app
    browser = Browser()
    http_receiver.serve_raw("/push/busy", b"", status)
    endpoint = http_receiver.url("/push/busy")
    await calls.ok("post", "/push/subscriptions", status=201, json={"endpoint": endpoint, "keys": browser.keys})
    data = await calls.ok("post", "/push/test", status=202)
    await run_due_jobs(app)
    assert len(http_receiver.received("/push/busy")) == 1
    await run_due_jobs(app)  # the retry is not due yet
    assert len(http_receiver.received("/push/busy")) == 1
    http_receiver.serve_raw("/push/busy", b"", 201)
    await run_due_jobs(app, now=dt.datetime.now(dt.UTC) + dt.timedelta(seconds=push.RETRY_BASE + 1))
    requests = http_receiver.received("/push/busy")
    assert len(requests) == 2
    assert browser.decrypt(requests[1].body)["notification"]["id"] == data["notification"]["id"]
    assert (await calls.ok("get", "/push/status"))["subscriptions"] == 1


def test_keygen_prints_a_working_pair(capsys):
    from kernel.cli import main

    assert main(["push", "keygen"]) == 0
    lines = dict(line.split("=", 1) for line in capsys.readouterr().out.split())
    assert push.public_of(lines["SVC_VAPID_PRIVATE_KEY"]) == lines["SVC_VAPID_PUBLIC_KEY"]
    assert push.parse_public_key(lines["SVC_VAPID_PUBLIC_KEY"])

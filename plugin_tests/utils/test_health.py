"""GET /api/v1/utils/health: real checks, run concurrently, 503 with the report when one fails."""

from __future__ import annotations

import asyncio

from kernel import hookimpl
from kernel.hooks.plugins import available_plugins
from kernel.testing import JWT_SECRET
from kernel.testing import shared as testing_shared
from plugins.utils import health

# Every test but the broken plugin's (plugins of its own) reads the health of the module's shared
# app (kernel/testing/shared.py); a test that breaks a check does so with monkeypatch, undone at
# its end.
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

HEALTH = "/api/v1/utils/health"
BUILTIN = {"database", "cache", "storage", "search", "queue"}


class BrokenCheckPlugin:
    """Registers a failing check through the hook, as a real plugin would."""

    name = "broken_check"

    @hookimpl
    def register_health_checks(self, kernel):
        async def smtp_relay():
            raise ConnectionError(f"cannot reach smtp://relay:hunter22@mail.local (token={JWT_SECRET})")

        return {"relay": smtp_relay}


async def test_health_ok(client):
    resp = await client.get(HEALTH)
    assert resp.status_code == 200, resp.text
    assert resp.headers["Cache-Control"] == "no-store"
    data = resp.json()["data"]
    assert data["status"] == "ok"
    assert data["checks"] == {name: "ok" for name in BUILTIN}
    runtime = data["runtime"]
    assert {"python", "platform", "pid", "uptimeSeconds", "plugins", "checkMs"} <= set(runtime)
    assert {"accounts", "utils"} <= set(runtime["plugins"])
    assert set(runtime["checkMs"]) == BUILTIN
    assert data["version"]


async def test_health_needs_no_credentials_and_ignores_a_bad_site(client):
    resp = await client.get(HEALTH, headers={"X-Svc-Site": "no-such-site"})
    assert resp.status_code == 200


async def test_a_failing_plugin_check_gives_503_without_secrets(make_app):
    app = await make_app(plugins=[*sorted(available_plugins()), BrokenCheckPlugin()])
    resp = await app.client.get(HEALTH)
    assert resp.status_code == 503, resp.text
    assert resp.headers["Cache-Control"] == "no-store"
    error = resp.json()["errors"][0]
    assert error["code"] == "SERVICE_UNAVAILABLE"
    assert error["message"].startswith("relay: ConnectionError: cannot reach smtp://***@mail.local")
    report = error["extensions"]["health"]
    assert report["status"] == "error"
    assert report["checks"]["relay"].startswith("error: ConnectionError")
    assert all(report["checks"][name] == "ok" for name in BUILTIN)
    assert "hunter22" not in resp.text and JWT_SECRET not in resp.text


async def test_a_failing_builtin_check_gives_503(svc_app, monkeypatch):
    async def down():
        raise OSError("database is locked")

    monkeypatch.setattr(svc_app.kernel.db, "ping", down)
    resp = await svc_app.client.get(HEALTH)
    assert resp.status_code == 503
    error = resp.json()["errors"][0]
    assert error["message"] == "database: OSError: database is locked"
    assert error["extensions"]["health"]["checks"]["database"] == "error: OSError: database is locked"


async def test_a_hung_check_times_out(svc_app, monkeypatch):
    async def hangs():
        await asyncio.sleep(30)

    monkeypatch.setattr(health, "CHECK_TIMEOUT", 0.2)
    monkeypatch.setitem(svc_app.kernel.health_checks, "slow", hangs)
    resp = await svc_app.client.get(HEALTH)  # the check sleeps 30 s: only the timeout gives this answer
    assert resp.status_code == 503
    error = resp.json()["errors"][0]
    # Only the hung check is asserted: on a loaded machine a real dependency's first answer can
    # take longer than the 0.2 s this test allows, and then it is listed too.
    assert error["extensions"]["health"]["checks"]["slow"] == "error: timed out after 0.2 s"
    assert error["message"].endswith("slow: timed out after 0.2 s")


async def test_checks_run_concurrently_and_may_take_the_kernel(svc_app, monkeypatch):
    seen = []
    first_started, second_started = asyncio.Event(), asyncio.Event()

    # Each check waits until the other has started: run one after the other, they would both
    # time out (503) instead of answering ok.
    async def first(kernel):
        seen.append(kernel)
        first_started.set()
        await second_started.wait()
        return "ok (3 pending)"

    async def second():
        second_started.set()
        await first_started.wait()
        return "ok"

    monkeypatch.setitem(svc_app.kernel.health_checks, "first", first)
    monkeypatch.setitem(svc_app.kernel.health_checks, "second", second)
    resp = await svc_app.client.get(HEALTH)
    assert resp.status_code == 200, resp.text
    data = resp.json()["data"]
    assert seen == [svc_app.kernel]
    assert data["checks"]["first"] == "ok" and data["checks"]["second"] == "ok"
    assert data["runtime"]["checkDetails"]["first"] == "ok (3 pending)"


async def test_a_plugin_cannot_replace_a_builtin_check(svc_app, monkeypatch):
    async def fake():
        raise RuntimeError("should not run")

    monkeypatch.setitem(svc_app.kernel.health_checks, "database", fake)
    resp = await svc_app.client.get(HEALTH)
    assert resp.status_code == 200


def test_reasons_mask_credentials():
    secrets = ["s3cret-value"]
    exc = RuntimeError("connect postgresql://svc:pw@db/x failed; password=abc s3cret-value\nsecond line")
    reason = health.short_reason(exc, secrets)
    assert reason == "RuntimeError: connect postgresql://***@db/x failed; password=*** ***"


def test_every_encryption_key_is_masked():
    from types import SimpleNamespace

    settings = SimpleNamespace(values={"encryption_key": "k1:" + "A" * 44,
                                       "encryption_keys": ("k0:" + "B" * 44, "C" * 44)}, extra={})
    masked = health.secret_values(settings)
    assert {"k1:" + "A" * 44, "k0:" + "B" * 44, "C" * 44} <= set(masked)

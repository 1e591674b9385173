"""SVC_SITE_MAX_IN_FLIGHT: one site's requests in progress in a process are capped; others pass."""

from __future__ import annotations

import asyncio

import pytest

from kernel import ApiError, Route, hookimpl
from kernel.base.settings import Settings, SettingsError
from kernel.hooks.plugins import available_plugins
from kernel.http.media import send_data
from kernel.http.middleware import QUEUE_FACTOR, SiteInFlight


class Slow:
    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.entered = 0

    async def on_get(self, req, resp):
        self.entered += 1
        await self.release.wait()
        send_data(resp, {"ok": True})

    async def on_post(self, req, resp):
        raise ApiError.forbidden("refused after admission")


class SlowPlugin:
    name = "slow_probe"

    def __init__(self) -> None:
        self.resource = Slow()

    @hookimpl
    def register_routes(self, kernel):
        return [Route("/slow-probe", self.resource, site="required", auth="public")]


async def until(check):
    for _ in range(300):  # a deadline only
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("not reached")


async def test_a_site_past_its_cap_waits_in_its_own_lane_and_past_its_queue_is_refused(make_app):
    probe = SlowPlugin()
    app = await make_app(plugins=[*sorted(available_plugins()), probe], env={"SVC_SITE_MAX_IN_FLIGHT": "1"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    noisy, quiet = await app.create_site(admin, prefix="noisy"), await app.create_site(admin, prefix="quiet")
    gate = app.kernel.state["site_in_flight"]

    def slow(site):
        return asyncio.ensure_future(app.client.get("/api/v1/slow-probe", headers={"X-Svc-Site": site}))

    held = [slow(noisy) for _ in range(1 + QUEUE_FACTOR)]  # one in, four waiting
    await until(lambda: gate.counts.get(noisy) == 1 + QUEUE_FACTOR and probe.resource.entered == 1)
    await asyncio.sleep(0.05)
    assert probe.resource.entered == 1  # the others wait for the slot
    refused = await app.client.get("/api/v1/slow-probe", headers={"X-Svc-Site": noisy})
    assert refused.status_code == 429
    assert refused.json()["errors"][0]["code"] == "RATE_LIMITED"
    assert refused.headers["Retry-After"] == "1"
    other = slow(quiet)
    await until(lambda: probe.resource.entered == 2)  # the quiet site went past the noisy queue
    probe.resource.release.set()
    answers = await asyncio.gather(*held, other)
    assert [r.status_code for r in answers] == [200] * (2 + QUEUE_FACTOR)
    assert gate.counts == {}
    # A request refused after admission gives its slot back too.
    for _ in range(3):
        assert (await app.client.post("/api/v1/slow-probe", headers={"X-Svc-Site": noisy})).status_code == 403
    assert gate.counts == {}


async def test_a_waiter_that_leaves_gives_its_place_back():
    gate = SiteInFlight(1)
    assert await gate.enter("a")
    waiter = asyncio.ensure_future(gate.enter("a"))
    await asyncio.sleep(0)
    assert gate.counts == {"a": 2}
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert gate.counts == {"a": 1}
    gate.leave("a")
    assert gate.counts == {}


async def test_the_counter_frees_sites_it_no_longer_holds():
    gate = SiteInFlight(1)
    assert await gate.enter("a") and await gate.enter("b")
    gate.leave("a")
    gate.leave("b")
    assert gate.counts == {} and gate.gates == {}


@pytest.mark.parametrize("bad", ["-1", "lots"])
def test_a_bad_cap_stops_the_start(bad):
    with pytest.raises(SettingsError, match="SVC_SITE_MAX_IN_FLIGHT"):
        Settings.from_env(environ={"SVC_SITE_MAX_IN_FLIGHT": bad})

"""Rate-limit buckets declared by plugins (``register_rate_limits``), checked at boot."""

from __future__ import annotations

import time

import pytest

from kernel import RateBucket, Route, Setting, hookimpl
from kernel.app import create_app
from kernel.hooks.plugins import PluginError


class Ping:
    async def on_get(self, req, resp):
        resp.media = {"data": "pong"}


class BucketPlugin:
    """Declares ``pings`` (2 per 30 s per IP, unless ``SVC_PINGS_PER_WINDOW`` says otherwise)."""

    name = "bucketed"

    def __init__(self, bucket_name: str = "pings", route_bucket: str | dict | None = "pings",
                 bucket: RateBucket | None = None) -> None:
        self.bucket_name = bucket_name
        self.route_bucket = route_bucket
        self.bucket = bucket or RateBucket("pings_per_window", 30.0, "ip")

    @hookimpl
    def register_settings(self):
        return [Setting("SVC_PINGS_PER_WINDOW", 2, int, "Pings per window.")]

    @hookimpl
    def register_rate_limits(self, kernel):
        return {self.bucket_name: self.bucket}

    @hookimpl
    def register_routes(self, kernel):
        return [Route("/pings", Ping(), site="none", auth="public", rate_limit=self.route_bucket)]


async def test_a_plugin_bucket_limits_its_route(make_app):
    app = await make_app(plugins=[BucketPlugin()])
    assert app.kernel.rate_buckets["pings"] == RateBucket("pings_per_window", 30.0, "ip")
    answers = [await app.client.get("/api/v1/pings") for _ in range(3)]
    assert [r.status_code for r in answers] == [200, 200, 429]
    assert answers[0].headers["X-RateLimit-Limit"] == "2"
    assert [r.headers["X-RateLimit-Remaining"] for r in answers] == ["1", "0", "0"]
    assert answers[2].json()["errors"][0]["code"] == "RATE_LIMITED"
    # The bucket's own window, not a minute: the next slot is free within 30 s.
    assert int(answers[2].headers["X-RateLimit-Reset"]) <= int(time.time()) + 31


async def test_the_limit_setting_of_a_bucket_is_read(make_app):
    app = await make_app(plugins=[BucketPlugin()], env={"SVC_PINGS_PER_WINDOW": "0"})
    for _ in range(4):
        resp = await app.client.get("/api/v1/pings")
        assert resp.status_code == 200 and "X-RateLimit-Limit" not in resp.headers


async def test_a_fixed_limit_and_per_method_buckets(make_app):
    plugin = BucketPlugin(route_bucket={"GET": "pings"}, bucket=RateBucket(1, 60.0, "principal"))
    app = await make_app(plugins=[plugin])
    assert (await app.client.get("/api/v1/pings")).status_code == 200
    assert (await app.client.get("/api/v1/pings")).status_code == 429


async def test_the_built_in_buckets_are_declared_by_their_plugins(svc_app):
    buckets = svc_app.kernel.rate_buckets
    assert buckets["auth"] == RateBucket("rate_limit_auth", 60.0, "ip")
    assert buckets["items_read"].per == buckets["items_write"].per == "principal"


def _boot(make_app, tmp_path, plugin):
    return create_app(make_app.settings(tmp_path / "data"), [plugin])


def test_a_route_naming_an_unknown_bucket_fails_at_boot(make_app, tmp_path):
    with pytest.raises(PluginError, match=r"/api/v1/pings .*'bucketed'.*'pingz'.*no enabled plugin declares"):
        _boot(make_app, tmp_path, BucketPlugin(route_bucket={"GET": "pingz"}))


def test_a_bucket_declared_twice_fails_at_boot(make_app, tmp_path):
    with pytest.raises(PluginError, match=r"(accounts|bucketed)': rate-limit bucket 'auth' is already declared by plugin '(accounts|bucketed)'"):
        _boot(make_app, tmp_path, BucketPlugin(bucket_name="auth", route_bucket="auth"))


@pytest.mark.parametrize(("bucket", "message"), [
    (RateBucket("no_such_setting"), "names the setting 'no_such_setting'"),
    (RateBucket(-1), "limit must be an integer >= 0"),
    (RateBucket(5, 0), "window must be a positive number"),
    (RateBucket(5, 60.0, "site"), "per must be one of"),
])
def test_a_bad_bucket_fails_at_boot(make_app, tmp_path, bucket, message):
    with pytest.raises(PluginError, match=message):
        _boot(make_app, tmp_path, BucketPlugin(bucket=bucket))

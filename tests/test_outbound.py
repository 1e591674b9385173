"""The outbound-URL rule (``kernel/base/outbound.py``): checked when saved, and on the resolved address at
connect."""

import pytest

from kernel.base.errors import ApiError
from kernel.base.outbound import OPERATOR, STRICT, OutboundRefused, Policy, check_url, pinned, refusal
from kernel.base.settings import parse_networks


@pytest.mark.parametrize("url", [
    "ftp://example.com/x", "http://", "example.com/hook", "http://0.0.0.0/x", "http://0/x", "http://0x0/x",
    "http://0.0/x", "http://000.000.000.000/", "http://[::]/x", "http://[0:0::0]/x", "http://[::ffff:0.0.0.0]/x",
    "http://user:pw@example.com/x", "http://exa mple.com/", "http://example.com/\n", "", None, 5,
    "http://example.com:99999/", "https://example.com/" + "a" * 2100,
])
def test_refused_when_saved(url):
    with pytest.raises(ApiError) as caught:
        check_url(url)
    assert caught.value.status == 400


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080/hook", "https://example.com/hook?x=1", "http://[::1]/h",
                                 "http://10.0.0.5/h"])
def test_a_literal_private_address_is_checked_at_connect_time_not_when_saved(url):
    assert check_url(url) == url


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://10.1.2.3/", "http://169.254.169.254/latest",
                                 "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://0x7f.1/", "http://[fe80::1]/",
                                 "http://[2002:7f00:1::]/", "http://[2002:a01:203::1]/",  # 6to4 of 127.0.0.1, 10.1.2.3
                                 "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"])  # Teredo of 127.0.0.1
def test_a_policy_refuses_internal_literals_when_saved(url):
    with pytest.raises(ApiError) as caught:
        check_url(url, policy=STRICT)
    assert caught.value.status == 400 and caught.value.code == "VALIDATION_FAILED"


async def test_pinned_connects_to_the_checked_address_with_the_original_host():
    target = await pinned("http://localhost:8123/hook?a=1", OPERATOR)
    assert target.url in ("http://127.0.0.1:8123/hook?a=1", "http://[::1]:8123/hook?a=1")
    assert target.headers == {"Host": "localhost:8123"} and target.extensions == {}
    with pytest.raises(OutboundRefused, match="loopback"):
        await pinned("http://localhost/x")
    with pytest.raises(OutboundRefused, match="unspecified"):
        await pinned("http://0/x", OPERATOR)
    with pytest.raises(OutboundRefused, match="does not resolve"):
        await pinned("http://no-such-host.invalid/x", OPERATOR)


def _ip(text):
    import ipaddress

    return ipaddress.ip_address(text)


def test_allowed_networks_open_what_they_name_and_metadata_only_when_named_exactly():
    wide = Policy(parse_networks("127.0.0.0/8,10.0.0.0/8,169.254.0.0/16,0.0.0.0/0"))
    assert refusal(_ip("127.0.0.1"), wide) is None and refusal(_ip("10.9.8.7"), wide) is None
    assert refusal(_ip("::ffff:127.0.0.1"), wide) is None  # the same host as 127.0.0.1
    assert refusal(_ip("169.254.169.254"), wide) == "a cloud metadata address"
    assert refusal(_ip("fd00:ec2::254"), Policy(parse_networks("fd00::/8"))) == "a cloud metadata address"
    assert refusal(_ip("169.254.169.254"), Policy(parse_networks("169.254.169.254/32"))) is None
    assert refusal(_ip("0.0.0.0"), wide) == "the unspecified address"
    assert refusal(_ip("192.168.1.1"), wide) is None and refusal(_ip("192.168.1.1"), STRICT) is not None
    assert refusal(_ip("93.184.215.14"), STRICT) is None
    # IPv6 site-local (fec0::/10) is not "private" to ipaddress, and was let through
    assert refusal(_ip("fec0::1"), STRICT) == "a loopback, private, link-local or reserved address"
    assert refusal(_ip("feff::1"), STRICT) == "a loopback, private, link-local or reserved address"
    assert refusal(_ip("fec0::1"), Policy(parse_networks("fec0::/10"))) is None


async def test_development_opens_loopback_except_for_a_fetch_on_a_users_behalf(make_app):
    from kernel.base.outbound import policy

    app = await make_app(env={"SVC_ENV": "development", "SVC_OUTBOUND_ALLOW_NETWORKS": "10.20.0.0/16"})
    tenant, on_behalf = policy(app.kernel), policy(app.kernel, on_behalf=True)
    assert refusal(_ip("127.0.0.1"), tenant) is None and refusal(_ip("::1"), tenant) is None
    assert refusal(_ip("127.0.0.1"), on_behalf) == "a loopback, private, link-local or reserved address"
    for rule in (tenant, on_behalf):  # the operator's list holds for both; metadata is never implied
        assert refusal(_ip("10.20.3.4"), rule) is None
        assert refusal(_ip("169.254.169.254"), rule) == "a cloud metadata address"
        assert refusal(_ip("10.21.0.1"), rule) is not None


async def test_the_operator_client_reaches_loopback_and_a_tenant_client_does_not(make_app, http_receiver):
    import logging

    import httpx

    from kernel.base import outbound

    app = await make_app(env={"SVC_OUTBOUND_ALLOW_NETWORKS": ""})  # production's default: nothing opened
    url = http_receiver.serve("/up", {"ok": True})
    timeout = httpx.Timeout(5.0)
    operator = outbound.client(app.kernel, "t.operator", timeout=timeout, operator=True)
    tenant = outbound.client(app.kernel, "t.tenant", timeout=timeout)
    records: list[logging.LogRecord] = []
    seen = logging.Handler(logging.INFO)
    seen.emit = records.append  # type: ignore[method-assign]
    logged = logging.getLogger("svc.outbound")
    logged.addHandler(seen)
    # setLevel, not .level =: it clears the loggers' isEnabledFor cache, which an outbound request
    # of an earlier test in this process (an app logging at warning) may have filled with False.
    level = logged.level
    logged.setLevel(logging.INFO)
    try:
        assert (await operator.get(url)).json() == {"ok": True}
        assert (await operator.get(http_receiver.serve("/up?token=s3cret", {"ok": True}))).json() == {"ok": True}
    finally:
        logged.removeHandler(seen)
        logged.setLevel(level)
    host = url.split("/")[2]
    # One line per answer naming the host; never the path nor the query (a token may be there).
    assert [r.getMessage() for r in records] == [f"GET http://{host} -> 200"] * 2
    with pytest.raises(OutboundRefused, match="loopback"):
        await tenant.get(url)
    with pytest.raises(OutboundRefused, match="unspecified"):
        await operator.get(url.replace("127.0.0.1", "0.0.0.0"))
    assert http_receiver.hits["/up"] == 1

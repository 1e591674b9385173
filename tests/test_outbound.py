"""The outbound-URL rule (``kernel/outbound.py``): checked when saved, and on the resolved address at
connect."""

import pytest

from kernel.errors import ApiError
from kernel.outbound import OutboundRefused, check_url, pinned


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
def test_allowed_for_webhooks(url):
    assert check_url(url) == url


@pytest.mark.parametrize("url", ["http://127.0.0.1/", "http://10.1.2.3/", "http://169.254.169.254/latest",
                                 "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://0x7f.1/", "http://[fe80::1]/",
                                 "http://[2002:7f00:1::]/", "http://[2002:a01:203::1]/",  # 6to4 of 127.0.0.1, 10.1.2.3
                                 "http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/"])  # Teredo of 127.0.0.1
def test_public_only_refuses_internal_literals(url):
    with pytest.raises(ApiError):
        check_url(url, public_only=True)


async def test_pinned_connects_to_the_checked_address_with_the_original_host():
    target = await pinned("http://localhost:8123/hook?a=1")
    assert target.url in ("http://127.0.0.1:8123/hook?a=1", "http://[::1]:8123/hook?a=1")
    assert target.headers == {"Host": "localhost:8123"} and target.extensions == {}
    with pytest.raises(OutboundRefused, match="loopback"):
        await pinned("http://localhost/x", public_only=True)
    with pytest.raises(OutboundRefused, match="unspecified"):
        await pinned("http://0/x")
    with pytest.raises(OutboundRefused, match="does not resolve"):
        await pinned("http://no-such-host.invalid/x")

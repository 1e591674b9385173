"""What consent and restriction change elsewhere, read through ``kernel.policy.privacy``: pageview
attribution (analytics), marketing sends (email), and the defaults when no plugin answers."""

from __future__ import annotations

from kernel.policy import privacy
from kernel.testing import Calls, new_member

BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
GRANT = {"granted": True, "source": "banner", "version": "1"}


async def _hit(app, site: str, headers: dict[str, str], path: str) -> None:
    resp = await app.client.post(f"/api/v1/pageviews/{site}/hit", json={"path": path},
                                 headers={**headers, "User-Agent": BROWSER})
    assert resp.status_code == 204


async def _export_paths(me: Calls) -> list[str]:
    return [p["path"] for p in (await me.ok("get", "/me/data-export"))["pageviews"]]


async def test_a_hit_is_attributed_only_with_analytics_consent_and_without_restriction(svc_app, site, make_member):
    member = await make_member(site)
    me = Calls(svc_app.client, member.headers)
    await _hit(svc_app, site, member.headers, "/before-consent")
    await me.ok("put", "/me/consents/analytics", json=GRANT)
    await _hit(svc_app, site, member.headers, "/with-consent")
    await me.ok("put", "/me/restriction", json={"restricted": True})
    await _hit(svc_app, site, member.headers, "/while-restricted")
    await me.ok("put", "/me/restriction", json={"restricted": False})
    await me.ok("put", "/me/consents/analytics", json={**GRANT, "granted": False})
    await _hit(svc_app, site, member.headers, "/after-withdrawal")
    assert await _export_paths(me) == ["/with-consent"]
    # Every hit still counts, anonymously when not attributed.
    stats = await me.ok("get", "/pageviews/stats")
    assert sum(day["views"] for day in stats) == 4


async def test_the_kernel_helpers_answer_the_hooks(svc_app, site, make_member):
    member = await make_member(site)
    kernel = svc_app.kernel
    assert await privacy.consent_granted(kernel, site, member.id, "analytics") is False
    assert await privacy.restricted(kernel, site, member.id) is False
    me = Calls(svc_app.client, member.headers)
    await me.ok("put", "/me/consents/analytics", json=GRANT)
    await me.ok("put", "/me/restriction", json={"restricted": True})
    # The PUT dropped the cached answer: the next read sees it at once.
    assert await privacy.consent_granted(kernel, site, member.id, "analytics") is True
    assert await privacy.restricted(kernel, site, member.id) is True
    assert await privacy.consent_granted(kernel, site, None, "analytics") is None


async def test_without_the_privacy_plugin_the_documented_defaults_apply(make_app):
    from kernel.testing import disabled_with_dependents

    app = await make_app(env={"SVC_PLUGINS_DISABLED": disabled_with_dependents("privacy")})
    member = await new_member(app, "default")
    assert await privacy.consent_granted(app.kernel, "default", member.id, "analytics") is None
    assert await privacy.restricted(app.kernel, "default", member.id) is False
    assert await privacy.marketing_excluded(app.kernel, "default", [member.email]) == set()


async def test_marketing_sends_skip_members_without_consent_or_restricted(make_app, mailbox):
    app = await make_app(smtp_host="127.0.0.1", smtp_port=mailbox.port,
                         env={"SVC_EMAIL_FROM": "News <news@example.com>"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    silent = await new_member(app, site)
    willing = await new_member(app, site)
    restricted = await new_member(app, site)
    for who in (willing, restricted):
        await Calls(app.client, who.headers).ok("put", "/me/consents/marketing", json=GRANT)
    await Calls(app.client, restricted.headers).ok("put", "/me/restriction", json={"restricted": True})
    outsider = "outsider@example.org"  # no user of the site: the unsubscribe link governs them
    body = {"to": [silent.email, willing.email.upper(), restricted.email, outsider], "category": "marketing",
            "inline": {"subject": "News", "text": "Hello"}}
    sent = await calls.ok("post", "/email/send", json=body)
    assert sent["sent"] == 2 and sent["withoutConsent"] == 2 and sent["suppressed"] == 0
    await mailbox.wait_for(2)
    received = sorted(m["To"].lower() for m in mailbox.messages())
    assert received == sorted([willing.email.lower(), outsider])
    # A transactional mail is not marketing: consent does not gate it.
    plain = await calls.ok("post", "/email/send", json={**body, "category": "transactional", "to": [silent.email]})
    assert plain["sent"] == 1 and plain["withoutConsent"] == 0

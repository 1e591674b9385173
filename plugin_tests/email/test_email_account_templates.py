"""Account emails on templates: a site's template keyed ``account.password-reset`` replaces the
built-in reset email (layout, escaping and sanitising included); a site without one, or one
whose template cannot render, gets the built-in text."""

from __future__ import annotations

from kernel.testing import new_member, run_due_jobs
from plugin_tests.email.conftest import smtp_app


async def test_a_site_overrides_the_reset_email(make_app, mailbox):
    app, calls, site = await smtp_app(make_app, mailbox)
    other = await app.create_site({"Authorization": calls.headers["Authorization"]})
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "L", "html": "<div>{{content}}</div>"})
    await calls.ok("post", "/email/templates", 201, json={
        "key": "account.password-reset", "name": "Reset", "subject": "{{ siteName }}: new password",
        "layoutId": layout["id"],
        "html": '<p>Hello {{ email }}</p><p><a href="{{ url }}">Choose a new password</a></p><script>x()</script>'})
    member = await new_member(app, [site, other], login=False)

    for where in (site, other):
        resp = await app.client.post("/api/v1/auth/forgot-password", json={"email": member.email},
                                     headers={"X-Svc-Site": where})
        assert resp.status_code == 202
    await run_due_jobs(app, periodic=False)  # the job queue sends the account emails
    # Both were sent at once, each on its own connection: they may arrive in either order.
    custom, builtin = sorted(await mailbox.wait_for(2, to=member.email), key=lambda m: "Reset" in m["Subject"])
    assert custom["Subject"] == "Test site: new password"
    html = custom.get_body(("html",)).get_content()
    assert "<script" not in html and "/reset-password?token=" in html and "&amp;site=" + site in html
    text = custom.get_body(("plain",)).get_content()
    assert "Choose a new password (http" in text and "/reset-password?token=" in text
    assert builtin["Subject"].startswith("Reset your password for")  # the other site has no template

    # A template that cannot render with these values (the link joined with itself past the work
    # budget; empty when it was saved) falls back to the built-in email.
    templates = await calls.ok("get", "/email/templates")
    await calls.ok("patch", f"/email/templates/{templates[0]['id']}", json={"html": "{{ url|join(url|join(url|join(url))) }}"})
    await app.client.post("/api/v1/auth/forgot-password", json={"email": member.email}, headers={"X-Svc-Site": site})
    await run_due_jobs(app, periodic=False)  # the job queue sends the account emails
    messages = await mailbox.wait_for(3, to=member.email)
    assert messages[-1]["Subject"] == "Reset your password for Test site"

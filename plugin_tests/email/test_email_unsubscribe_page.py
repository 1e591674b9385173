"""The unsubscribe page a person sees, in headless Chromium: a mail link suppresses the address
and shows a confirmation; its button undoes a mistaken click (link scanners follow links)."""

from __future__ import annotations

from plugins.email import tokens


async def test_unsubscribe_and_undo_in_a_browser(make_app, live_server, chromium):
    from playwright.async_api import async_playwright

    app = await make_app()
    server = await live_server(app)
    admin = {"Authorization": f"Bearer {await app.login()}", "X-Svc-Site": "default"}
    token = tokens.issue(app.kernel.settings.resolved_jwt_secret(), "default", "reader@example.com")
    requested: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = await browser.new_page()  # a fresh context: no cookie, no header, like a mail client
            page.on("request", lambda request: requested.append(request.url))
            await page.goto(f"{server.base_url}/api/v1/email/unsubscribe?token={token}")
            assert await page.text_content("#title") == "You are unsubscribed"
            assert "reader@example.com" in await page.text_content("#message")
            listed = (await app.client.get("/api/v1/email/suppressions", headers=admin)).json()["data"]
            assert [s["email"] for s in listed] == ["reader@example.com"]

            await page.click("#undo")
            await page.wait_for_selector("#title:has-text('subscribed again')", timeout=10_000)
            listed = (await app.client.get("/api/v1/email/suppressions", headers=admin)).json()["data"]
            assert listed == []

            await page.goto(f"{server.base_url}/api/v1/email/unsubscribe?token=broken")
            assert await page.text_content("#title") == "This link does not work"
        finally:
            await browser.close()
    assert requested and all(url.startswith(server.base_url) for url in requested), requested

    # An admin's suppression is not lifted by the recipient's undo button.
    await app.client.post("/api/v1/email/suppressions", headers=admin, json={"email": "reader@example.com"})
    resp = await server.client.post("/api/v1/email/unsubscribe/undo", data={"token": token})
    assert resp.status_code == 200 and "Still unsubscribed" in resp.text
    assert len((await app.client.get("/api/v1/email/suppressions", headers=admin)).json()["data"]) == 1

"""examples/realtime/index.html in headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright): the page takes a ticket, connects, subscribes, and shows an item created through
the API once its event arrives. Skips without Chromium (the ``chromium`` fixture)."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlencode

PAGE = Path(__file__).resolve().parents[2] / "examples" / "realtime" / "index.html"


async def test_the_example_page_shows_an_item_created_through_the_api(chromium, make_app, live_server,
                                                                      http_receiver):
    from playwright.async_api import async_playwright

    static = http_receiver  # serves the page from an origin of its own, as a site's frontend would be
    page_url = static.serve_raw("/index.html", PAGE.read_bytes(), content_type="text/html")
    origin = f"http://127.0.0.1:{static.port}"
    app = await make_app(env={"SVC_CORS_ORIGINS": origin})
    server = await live_server(app)
    token = await app.login()
    headers = {"Authorization": f"Bearer {token}"}
    site = await app.create_site(headers)
    headers["X-Svc-Site"] = site
    for path, body in (("/collections", {"name": "posts"}), ("/fields/posts", {"field": "title", "type": "string"})):
        assert (await app.client.post(f"/api/v1{path}", json=body, headers=headers)).status_code == 201
    query = urlencode({"api": f"{server.base_url}/api/v1", "site": site, "token": token, "collection": "posts"})
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            await page.goto(f"{page_url}#{query}")  # the fragment: the static server keys on the path
            try:
                await page.wait_for_selector("text=watching posts", timeout=15_000)
            except Exception:
                raise AssertionError(f"the page never subscribed; console: {console}") from None
            resp = await app.client.post("/api/v1/items/posts", json={"title": "Hello from the API"},
                                         headers=headers)
            assert resp.status_code == 201
            item_id = resp.json()["data"]["id"]
            li = await page.wait_for_selector(f'li[data-id="{item_id}"]', timeout=15_000)
            assert await li.text_content() == "Hello from the API"
        finally:
            await browser.close()

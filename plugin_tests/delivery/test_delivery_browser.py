"""examples/delivery/index.html in headless Chromium (Debian's /usr/bin/chromium, driven by
Playwright): the page renders a hydrated page fetched from /deliver/page, its sendBeacon counts
a pageview, and a reload revalidates the page with a 304. Skips without Chromium."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlencode

from delivery_seed import seed_site

from kernel.testing import Calls

PAGE = Path(__file__).resolve().parents[2] / "examples" / "delivery" / "index.html"
# Headless Chromium names itself HeadlessChrome, which the bot filter rightly refuses.
DESKTOP_UA = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"


def recording(app, seen: list[tuple[str, str, int]]):
    """The ASGI app, noting (method, path, status) of each answer: what the browser really got."""
    async def wrapped(scope, receive, send):
        async def noting(message):
            if message["type"] == "http.response.start":
                seen.append((scope["method"], scope["path"], message["status"]))
            await send(message)

        await app(scope, receive, noting)

    return wrapped


async def test_the_example_page_renders_counts_and_revalidates(chromium, make_app, live_server, http_receiver):
    from playwright.async_api import async_playwright

    page_url = http_receiver.serve_raw("/index.html", PAGE.read_bytes(), content_type="text/html")
    origin = f"http://127.0.0.1:{http_receiver.port}"
    app = await make_app(env={"SVC_CORS_ORIGINS": origin})
    seen: list[tuple[str, str, int]] = []
    server = await live_server(recording(app.app, seen))
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site})
    await seed_site(app, calls, site)
    await calls.ok("put", "/settings/pageviews", json={"value": {"flushIntervalS": 1}})
    query = urlencode({"api": f"{server.base_url}/api/v1", "site": site, "slug": "home"})
    page_path = f"/api/v1/deliver/page/{site}/home"
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        try:
            context = await browser.new_context(user_agent=DESKTOP_UA)
            page = await context.new_page()
            console: list[str] = []
            page.on("console", lambda message: console.append(message.text))
            await page.goto(f"{page_url}#{query}")
            try:
                await page.wait_for_selector("#status[data-beacon=true]", timeout=15_000)
            except Exception:
                raise AssertionError(f"the page never rendered; console: {console}") from None
            assert await page.text_content("h1") == "Home"
            assert await page.text_content("section[data-collection=heroes]") == "Hello"
            await page.reload()
            await page.wait_for_selector("#status[data-beacon=true]", timeout=15_000)
            assert await page.text_content("h1") == "Home"
        finally:
            await browser.close()
    fetched = [status for method, path, status in seen if method == "GET" and path == page_path]
    assert fetched[:2] == [200, 304], seen
    for _ in range(100):  # the beacons are flushed within a second
        resp = await calls.call("get", "/pageviews/stats")
        if resp.json()["data"][-1]["views"] >= 2:
            break
        await asyncio.sleep(0.1)
    assert resp.json()["data"][-1]["views"] == 2 and resp.json()["data"][-1]["uniques"] == 1, seen
    assert [s for m, p, s in seen if m == "POST" and p == f"/api/v1/pageviews/{site}/hit"] == [204, 204]

"""The explorer (development only): a self-contained page that a headless Chromium loads, runs a
query in and reads the schema docs of, with no request leaving the server (no CDN). Skips where
``/usr/bin/chromium`` is absent (the ``chromium`` fixture)."""

from __future__ import annotations

import pytest

from kernel.testing import Calls
from plugin_tests.graphql.conftest import seed_blog


@pytest.fixture
async def dev_server(make_app, live_server):
    app = await make_app(env={"SVC_ENV": "development"})
    server = await live_server(app)
    token = await app.login()
    site = await app.create_site({"Authorization": f"Bearer {token}"})
    await seed_blog(Calls(app.client, {"Authorization": f"Bearer {token}", "X-Svc-Site": site}))
    return server, token, site


async def test_explorer_page_is_self_contained(dev_server):
    server, _token, _site = dev_server
    resp = await server.client.get("/api/v1/graphql")
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("text/html")
    page = resp.text
    assert 'id="query"' in page and 'id="run"' in page and 'id="result"' in page
    assert "http://" not in page and "https://" not in page and "src=" not in page  # nothing fetched elsewhere
    assert "default-src 'none'" in resp.headers["content-security-policy"]


async def test_explorer_runs_a_query_in_chromium(dev_server, chromium):
    from playwright.async_api import async_playwright

    server, token, site = dev_server
    requested: list[str] = []
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
        try:
            page = await browser.new_page()
            page.on("request", lambda request: requested.append(request.url))
            await page.goto(f"{server.base_url}/api/v1/graphql?site={site}")
            await page.fill("#token", token)
            await page.fill("#query", '{ posts(sort: ["id"], limit: 1) { id title author { name } } }')
            await page.click("#run")
            # A selector, not wait_for_function: the page's CSP forbids the eval that one needs.
            await page.wait_for_selector("#result:has-text('Hello world')", timeout=10_000)
            shown = await page.text_content("#result")
            assert '"author"' in shown and '"Ann"' in shown
            await page.click("#load-docs")
            await page.wait_for_selector("#docs h3", timeout=10_000)
            docs = await page.text_content("#docs")
            assert "posts_by_id" in docs and "create_posts" in docs and "posts_events" in docs
        finally:
            await browser.close()
    assert requested and all(url.startswith(server.base_url) for url in requested), requested

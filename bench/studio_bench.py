"""The studio's first load in headless Chromium (issue 41, docs/performance.md "The studio").

An app of its own (``inprocess.py``: SQLite in a temporary folder, or ``--database-url``) served
by uvicorn on 127.0.0.1, a collection of 50 items with six fields and a display template, and
for each of ``--runs`` rounds:

- **cold**: a new browser context (empty cache) holding only the ``svc_refresh`` cookie of a
  login opens the list's URL with a page of 50 (``#/s/<site>/c/articles?limit=50``). Measured: the bytes of every response
  as transferred (svc does not compress: the bodies as sent), the JS and CSS among them, and
  what those weigh gzip-compressed (level 6, what a compressing proxy in front would send); and
  the time from the navigation's start until the list is interactive: the table shows its rows
  and its first item link takes the focus (``performance.now()`` in the page).
- **warm**: the same URL loaded again in that context (assets from the browser cache: they are
  immutable) and the same time.

Medians are printed with every run's figures, as JSON with ``--json``.

    .venv/bin/python bench/studio_bench.py --runs 5
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from inprocess import ADMIN_EMAIL, PASSWORD, in_process_app  # noqa: E402

from kernel.testing import CHROMIUM  # noqa: E402
from kernel.testing.live import LiveServer  # noqa: E402

ITEMS = 50
FIELDS = {
    "title": "string",
    "body": "text",
    "views": "integer",
    "published": "boolean",
    "day": "date",
    "category": "string",
}
# The list is interactive when its rows are drawn and its first item link can take the focus.
READY = """() => {
  const ITEMS = __ITEMS__;
  const rows = document.querySelectorAll("table tbody tr");
  const link = document.querySelector("table tbody a");
  if (rows.length < ITEMS || !link) return false;
  link.focus();
  return document.activeElement === link ? {rows: rows.length, ms: performance.now()} : false;
}""".replace("__ITEMS__", str(ITEMS))


async def seed(client: Any) -> tuple[str, dict[str, str]]:
    login = await client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": PASSWORD})
    token = login.json()["data"]["token"]
    admin = {"Authorization": f"Bearer {token}"}
    site = (await client.post("/api/v1/sites", headers=admin, json={"id": "bench", "name": "Bench"})).json()[
        "data"
    ]
    headers = {**admin, "X-Svc-Site": site["id"]}
    fields = [{"field": name, "type": kind} for name, kind in FIELDS.items()]
    made = await client.post(
        "/api/v1/collections",
        headers=headers,
        json={
            "collection": "articles",
            "fields": fields,
            "meta": {"display_template": "{{ title }} ({{ views }} views)"},
        },
    )
    assert made.status_code == 201, made.text
    items = [
        {
            "title": f"Article {i:03d}",
            "body": "Some text " * 20,
            "views": i,
            "published": i % 2 == 0,
            "day": "2026-12-01",
            "category": "news",
        }
        for i in range(ITEMS)
    ]
    created = await client.post("/api/v1/items/articles", headers=headers, json=items)
    assert created.status_code == 201, created.text
    return site["id"], headers


async def one_run(browser: Any, base: str, site: str) -> dict[str, Any]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        login = await context.request.post(
            f"{base}/api/v1/auth/login", data={"email": ADMIN_EMAIL, "password": PASSWORD}
        )
        assert login.ok, await login.text()
        page = await context.new_page()
        bodies: list[tuple[str, str, int, bytes]] = []

        async def record(response: Any) -> None:
            body = await response.body()
            sizes = await response.request.sizes()
            kind = response.headers.get("content-type", "").split(";")[0]
            bodies.append(
                (response.url, kind, sizes["responseBodySize"] + sizes["responseHeadersSize"], body)
            )

        page.on("response", lambda r: asyncio.ensure_future(record(r)))
        url = f"{base}/studio/#/s/{site}/c/articles?limit={ITEMS}"  # all 50 on one page
        await page.goto(url)
        cold = await (await page.wait_for_function(READY, timeout=30_000)).json_value()
        await page.wait_for_load_state("networkidle")
        assets = [b for b in bodies if b[1] in ("text/javascript", "text/css")]
        first = {
            "cold_ms": round(cold["ms"], 1),
            "rows": cold["rows"],
            "requests": len(bodies),
            "bytes": sum(b[2] for b in bodies),
            "asset_files": len(assets),
            "asset_bytes": sum(len(b[3]) for b in assets),
            "asset_gzip_bytes": sum(len(gzip.compress(b[3], 6)) for b in assets),
        }
        bodies.clear()
        await page.reload()
        warm = await (await page.wait_for_function(READY, timeout=30_000)).json_value()
        await page.wait_for_load_state("networkidle")
        first["warm_ms"] = round(warm["ms"], 1)
        first["warm_bytes"] = sum(b[2] for b in bodies)
        return first
    finally:
        await context.close()


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    from playwright.async_api import async_playwright

    async with in_process_app(args.database_url) as (app, client):
        site, _headers = await seed(client)
        server = await LiveServer(app).start()
        try:
            async with async_playwright() as pw:
                browser = await pw.chromium.launch(
                    executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
                )
                try:
                    # A warm-up: Python's and Chromium's first use.
                    await one_run(browser, server.base_url, site)
                    runs = [await one_run(browser, server.base_url, site) for _ in range(args.runs)]
                finally:
                    await browser.close()
        finally:
            await server.stop()
    summary = {key: statistics.median(r[key] for r in runs) for key in runs[0]}
    if args.json:
        print(json.dumps({"runs": runs, "median": summary}, indent=2))
        return
    for r in runs:
        print(r)
    print("median:", summary)


if __name__ == "__main__":
    asyncio.run(main())

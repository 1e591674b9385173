"""Helpers of the pageviews tests: beacons as browsers and bots send them, and a poll of the
stats until flushed counts arrive."""

from __future__ import annotations

import asyncio
import datetime as dt
from typing import Any

API = "/api/v1"
BROWSER = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
OTHER_BROWSER = "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_0) AppleWebKit/605.1.15 (KHTML, like Gecko) Safari/605.1"
GOOGLEBOT = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"


async def beacon(client: Any, site: str, path: str, *, ua: str = BROWSER, headers: dict[str, str] | None = None,
                 body: Any = None, raw: bytes | None = None) -> Any:
    """POST a beacon as ``navigator.sendBeacon`` does (a text/plain body)."""
    content = raw if raw is not None else __import__("json").dumps(body or {"path": path}).encode()
    return await client.post(f"{API}/pageviews/{site}/hit", content=content,
                             headers={"User-Agent": ua, "Content-Type": "text/plain;charset=UTF-8", **(headers or {})})


def today() -> str:
    return dt.datetime.now(dt.UTC).date().isoformat()


async def stats(client: Any, headers: dict[str, str], path: str | None = None) -> dict[str, int]:
    params = {"from": today(), "to": today(), **({"path": path} if path else {})}
    resp = await client.get(f"{API}/pageviews/stats", headers=headers, params=params)
    assert resp.status_code == 200, resp.text
    (row,) = resp.json()["data"]
    assert row["date"] == today()
    return {"views": row["views"], "uniques": row["uniques"]}


async def stats_when(client: Any, headers: dict[str, str], views: int, path: str | None = None,
                     timeout: float = 10.0) -> dict[str, int]:
    """The stats once they show ``views`` (a flush or a consumer runs in the background)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        found = await stats(client, headers, path)
        if found["views"] >= views or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.1)

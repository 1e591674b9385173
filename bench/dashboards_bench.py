"""A dashboard of 8 panels on 100,000 items, in process over ASGI (docs/performance.md, "Dashboards").

Seeds an ``orders`` collection (fields made through the API; items written straight into
``svc_items`` in 5,000-row bulk inserts, then ``ANALYZE``), makes a dashboard of eight panels
(count, sum, avg by category, count by channel, daily and weekly time series, a filtered max,
a monthly series grouped by category), then per round and per caller (the admin, and a member
whose read rule has a row condition): one item write (which drops the cached answers), the 8
panels run **cold** one after the other, then **warm** (served from the panel cache). Prints
the medians of the whole dashboard's milliseconds and each panel's, and one JSON line.

    .venv/bin/python bench/dashboards_bench.py                     # SQLite in a temp dir
    .venv/bin/python bench/dashboards_bench.py --database-url postgresql://postgres@127.0.0.1/svc_bench_dash
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from inprocess import ADMIN_EMAIL, PASSWORD, in_process_app  # noqa: E402
from items_query_bench import analyze  # noqa: E402

from kernel.base.ids import uuid7  # noqa: E402
from plugins.items.tables import items  # noqa: E402
from plugins.schema.api import load_schema  # noqa: E402

SITE = "default"
BATCH = 5_000
CATEGORIES = ["news", "tech", "sports", "culture", "science"]
CHANNELS = ["web", "shop", "app"]
RANGE = {"from": "2026-01-01", "to": "2026-04-01"}
PANELS = [
    ("metric", {"aggregate": "count"}),
    ("metric", {"aggregate": "sum", "field": "amount"}),
    ("bar-chart", {"aggregate": "avg", "field": "amount", "groupBy": ["category"]}),
    ("pie-chart", {"aggregate": "count", "groupBy": ["channel"]}),
    ("time-series", {"aggregate": "count", "dateRange": {"field": "placed", "interval": "day", **RANGE}}),
    ("time-series", {"aggregate": "sum", "field": "amount", "dateRange": {"field": "placed", "interval": "week"}}),
    ("metric", {"aggregate": "max", "field": "amount", "filter": {"category": {"_eq": "tech"}}}),
    ("time-series", {"aggregate": "count", "groupBy": ["category"],
                     "dateRange": {"field": "placed", "interval": "month"}}),
]


def order(rng: random.Random) -> dict[str, Any]:
    day = dt.datetime(2025, 7, 1, tzinfo=dt.UTC) + dt.timedelta(minutes=rng.randrange(365 * 24 * 60))
    return {"placed": day.strftime("%Y-%m-%dT%H:%M:%SZ"), "amount": rng.randint(1, 500),
            "category": rng.choice(CATEGORIES), "channel": rng.choice(CHANNELS)}


async def call(client: httpx.AsyncClient, method: str, path: str, headers: dict[str, str], **kw: Any) -> Any:
    resp = await client.request(method, f"/api/v1{path}", headers=headers, **kw)
    if resp.status_code >= 300:
        raise RuntimeError(f"{method} {path}: {resp.status_code} {resp.text[:300]}")
    return (resp.json()["data"], resp.headers.get("X-Svc-Panel-Cache")) if resp.content else (None, None)


async def seed(app: Any, client: httpx.AsyncClient, headers: dict[str, str], n: int) -> None:
    await call(client, "POST", "/collections", headers, json={"name": "orders", "fields": [
        {"field": "placed", "type": "dateTime"}, {"field": "amount", "type": "integer"},
        {"field": "category", "type": "string"}, {"field": "channel", "type": "string"}]})
    kernel = app.kernel
    async with kernel.db.connect() as conn:
        coll = (await load_schema(conn, SITE)).collection("orders")
    rng = random.Random(11)
    first, _ = await call(client, "POST", "/items/orders", headers, json=order(rng))
    user = first["userCreated"]
    t0, done = time.perf_counter(), 1
    while done < n:
        now = dt.datetime.now(dt.UTC)
        rows = [{"site_id": SITE, "collection_id": coll.id, "id": uuid7(), "status": "published", "sort": None,
                 "data": order(rng), "created_at": now, "updated_at": now, "user_created": user,
                 "user_updated": user, "deleted_at": None} for _ in range(min(BATCH, n - done))]
        async with kernel.db.begin() as conn:
            await conn.execute(insert(items), rows)
        done += len(rows)
    print(f"seeded {n:,} orders in {time.perf_counter() - t0:.1f} s; analyze {await analyze(kernel):.1f} s")


async def member_headers(client: httpx.AsyncClient, admin: dict[str, str]) -> dict[str, str]:
    """A member reading dashboards and the orders of three categories (a row condition)."""
    email = "reader@example.com"
    await call(client, "POST", "/users", admin, json={"email": email, "password": PASSWORD})
    users, _ = await call(client, "GET", "/users", admin)
    user = next(u for u in users if u["email"] == email)
    policy, _ = await call(client, "POST", "/policies", admin, json={"name": "dashboard readers"})
    for rule in ({"collection": "svc_dashboards", "action": "read"},
                 {"collection": "orders", "action": "read",
                  "conditions": {"category": {"_in": ["news", "tech", "sports"]}}}):
        await call(client, "POST", f"/policies/{policy['id']}/permissions", admin, json=rule)
    await call(client, "POST", f"/policies/{policy['id']}/attach", admin, json={"userId": user["id"]})
    login, _ = await call(client, "POST", "/auth/login", {"X-Svc-Site": SITE}, json={"email": email, "password": PASSWORD})
    return {"Authorization": f"Bearer {login['token']}", "X-Svc-Site": SITE}


async def run_dashboard(client: httpx.AsyncClient, headers: dict[str, str], d: str,
                        panels: list[str]) -> tuple[float, list[float], set[str]]:
    per, states = [], set()
    t0 = time.perf_counter()
    for p in panels:
        t = time.perf_counter()
        _, state = await call(client, "POST", f"/dashboards/{d}/panels/{p}/data", headers)
        per.append((time.perf_counter() - t) * 1000)
        states.add(state or "")
    return (time.perf_counter() - t0) * 1000, per, states


async def main(args: argparse.Namespace) -> None:
    async with in_process_app(args.database_url) as (app, client):
        login, _ = await call(client, "POST", "/auth/login", {}, json={"email": ADMIN_EMAIL, "password": PASSWORD})
        admin = {"Authorization": f"Bearer {login['token']}", "X-Svc-Site": SITE}
        await seed(app, client, admin, args.n)
        dash, _ = await call(client, "POST", "/dashboards", admin, json={"name": "Sales"})
        panels = []
        for i, (kind, query) in enumerate(PANELS):
            made, _ = await call(client, "POST", f"/dashboards/{dash['id']}/panels", admin, json={
                "name": f"panel {i}", "type": kind, "position": {"x": i % 4 * 3, "y": i // 4 * 3, "w": 3, "h": 3},
                "query": {"collection": "orders", **query}})
            panels.append(made["id"])
        callers = {"admin": admin, "member": await member_headers(client, admin)}
        out: dict[str, Any] = {"dialect": app.kernel.db.dialect, "n": args.n}
        for who, headers in callers.items():
            cold, warm, per_cold = [], [], []
            for r in range(args.rounds):
                await call(client, "POST", "/items/orders", admin, json=order(random.Random(r)))
                total, per, states = await run_dashboard(client, headers, dash["id"], panels)
                assert states == {"miss"}, states
                cold.append(total)
                per_cold.append(per)
                total, _, states = await run_dashboard(client, headers, dash["id"], panels)
                assert states == {"hit"}, states
                warm.append(total)
            panel_ms = [round(statistics.median(p[i] for p in per_cold), 1) for i in range(len(panels))]
            out[who] = {"cold_ms": round(statistics.median(cold), 1), "warm_ms": round(statistics.median(warm), 1),
                        "cold_panel_ms": panel_ms}
            print(f"{who:7s} 8 panels cold {out[who]['cold_ms']:8.1f} ms (median of {args.rounds}), "
                  f"warm {out[who]['warm_ms']:6.1f} ms; cold per panel {panel_ms}")
        print(json.dumps(out))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=None)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    asyncio.run(main(parser.parse_args()))

"""Regulated content: the read cost of sensitive fields, and migrate/rewrap throughput.

In-process (the ASGI app through httpx, SQLite in a temporary folder, one core): a collection
``patients`` of ``--n`` items with 3 sensitive text fields (and 2 plain ones), and a twin
``plain`` without sensitive fields. It reports the median time of ``GET /items/<c>?limit=25&meta=none``
(25-item page) over ``--reads`` requests for:

- ``plain``: the twin collection without sensitive fields (its site has some, so the read hook
  runs and only walks the page: the cost a non-sensitive collection pays in such a site);
- ``clear``: envelope mode off, an admin (values stored plaintext, shown and logged);
- ``masked``: envelope mode on, a member without ``read_decrypted`` (masked, nothing decrypted);
- ``decrypted``: envelope mode on, an admin (75 values decrypted, 75 log rows in one insert);

and the throughput of ``envelope/migrate`` (items/s, batch 200) and ``keys/rewrap`` (data keys/s).
Well under a minute at the default size:

    .venv/bin/python bench/regulated_bench.py --n 2000 --reads 100
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import statistics
import tempfile
import time

import httpx

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.base.settings import Settings
from kernel.db.migrate import migration_paths, upgrade

PASSWORD = "bench-admin-pass-1"
KEYS = {"SVC_ENCRYPTION_KEY": "main:" + base64.b64encode(b"m" * 32).decode(),
        "SVC_ENCRYPTION_KEYS": "next:" + base64.b64encode(b"n" * 32).decode()}
FIELDS = {"name": "string", "ward": "string", **{f: {"type": "text", "options": {"sensitive": True}}
                                                 for f in ("ssn", "diagnosis", "notes")}}


async def run(n: int, reads: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        env = {"SVC_DATA_DIR": tmp, "SVC_ADMIN_EMAIL": "admin@example.com", "SVC_ADMIN_PASSWORD": PASSWORD,
               "JWT_SECRET": "bench-secret-0123456789-0123456789", "SVC_JOBS_INPROCESS": "false",
               "SVC_RATE_LIMIT_ITEMS_READ": "0", "SVC_RATE_LIMIT_ITEMS_WRITE": "0", "SVC_RATE_LIMIT_AUTH": "0",
               "SVC_MAX_BATCH": "1000", **KEYS}
        app = create_app(Settings.from_env(environ=env))
        kernel = app.kernel
        upgrade(str(kernel.db.engine.url).replace("+aiosqlite", ""), migration_paths(kernel.pm))
        await startup_kernel(kernel)
        client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
        try:
            await bench(client, n, reads)
        finally:
            await client.aclose()
            await shutdown_kernel(kernel)


async def bench(client: httpx.AsyncClient, n: int, reads: int) -> None:
    token = (await client.post("/api/v1/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
             ).json()["data"]["token"]
    admin = {"Authorization": f"Bearer {token}"}
    assert (await client.post("/api/v1/sites", json={"id": "bench", "name": "b"}, headers=admin)).status_code == 201
    h = {**admin, "X-Svc-Site": "bench"}
    for name, fields in (("patients", FIELDS), ("plain", {k: "text" if isinstance(v, dict) else v
                                                          for k, v in FIELDS.items()})):
        body = {"name": name, "fields": [{"field": f, **({"type": s} if isinstance(s, str) else s)}
                                         for f, s in fields.items()]}
        assert (await client.post("/api/v1/collections", json=body, headers=h)).status_code == 201
        for start in range(0, n, 500):
            rows = [{"name": f"p{i}", "ward": "A", "ssn": f"{i:09d}", "diagnosis": "influenza type A, mild",
                     "notes": "follow-up in two weeks; allergic to penicillin"} for i in range(start, min(n, start + 500))]
            assert (await client.post(f"/api/v1/items/{name}", json=rows, headers=h)).status_code == 201
    # A member with read only (sees masks).
    role = (await client.post("/api/v1/roles", json={"name": "r"}, headers=h)).json()["data"]
    member = {"email": "m@example.com", "password": "member-pass-1", "roleId": role["id"]}
    assert (await client.post("/api/v1/users", json=member, headers=h)).status_code == 201
    pol = (await client.post("/api/v1/policies", json={"name": "p"}, headers=h)).json()["data"]
    await client.post(f"/api/v1/policies/{pol['id']}/permissions", json={"collection": "patients", "action": "read"},
                      headers=h)
    await client.post(f"/api/v1/policies/{pol['id']}/attach", json={"roleId": role["id"]}, headers=h)
    mtoken = (await client.post("/api/v1/auth/login", json={"email": member["email"], "password": member["password"]},
                                headers={"X-Svc-Site": "bench"})).json()["data"]["token"]
    m = {"Authorization": f"Bearer {mtoken}", "X-Svc-Site": "bench"}

    async def page(collection: str, headers: dict[str, str]) -> tuple[float, float]:
        times = []
        cpu = time.process_time()
        for i in range(reads):
            offset = (i * 25) % max(1, n - 25)
            t = time.perf_counter()
            resp = await client.get(f"/api/v1/items/{collection}", params={"limit": 25, "offset": offset,
                                                                           "meta": "none"}, headers=headers)
            times.append(time.perf_counter() - t)
            assert resp.status_code == 200, resp.text
        return statistics.median(times) * 1000, (time.process_time() - cpu) * 1000 / reads

    results = {"plain (no sensitive field)": await page("plain", h), "clear (envelope off, admin)":
               await page("patients", h)}
    t = time.perf_counter()
    state = (await client.post("/api/v1/admin/encryption/envelope", json={"enabled": True, "password": PASSWORD},
                               headers=h)).json()["data"]
    while not state["done"]:
        state = (await client.post("/api/v1/admin/encryption/envelope/migrate", json={}, headers=h)).json()["data"]
    migrate_s = time.perf_counter() - t
    results["masked (envelope on, no read_decrypted)"] = await page("patients", m)
    results["decrypted (envelope on, admin)"] = await page("patients", h)
    await client.post("/api/v1/admin/encryption/keys/rotate", json={"keyId": "next"}, headers=h)
    t = time.perf_counter()
    progress = {"done": False}
    while not progress["done"]:
        progress = (await client.post("/api/v1/admin/encryption/keys/rewrap", json={}, headers=h)).json()["data"]
    rewrap_s = time.perf_counter() - t
    print(f"n={n} items, 3 sensitive text fields, page of 25, median of {reads} reads (SQLite, in-process)")
    print(f"  {'':45s} {'wall p50':>9s} {'CPU/req':>9s}")
    for name, (ms, cpu) in results.items():
        print(f"  {name:45s} {ms:6.2f} ms {cpu:6.2f} ms")
    print(f"  migrate (encrypt {n} items, batch 200)            {n / migrate_s:9.0f} items/s")
    print(f"  rewrap ({n} data keys, batch 200)                 {n / rewrap_s:9.0f} data keys/s")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument("--reads", type=int, default=100)
    args = parser.parse_args()
    asyncio.run(run(args.n, args.reads))

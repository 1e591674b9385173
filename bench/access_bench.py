"""Access-decision and password-hash timings, in process (no HTTP).

Measures ``kernel.access.decide`` for a member with a role chain, a team and several policies,
cached (snapshot in the per-process cache) and uncached (cache dropped before each call, so
the ``load_access`` queries run), plus one argon2id hash and verify. Usage:

    .venv/bin/python bench/access_bench.py
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from kernel.app import create_app, shutdown_kernel, startup_kernel
from kernel.auth.passwords import hash_password, verify_password
from kernel.auth.principal import Principal
from kernel.base.ids import uuid7
from kernel.base.settings import Settings
from kernel.db.meta import now_utc
from kernel.db.migrate import migration_paths, upgrade
from kernel.tenancy.scope import SiteDB
from plugins.access.api import role_by_system_key, set_membership
from plugins.access.tables import attachments, permissions, policies, roles, team_members, teams
from plugins.accounts.service import create_user


def timed(samples: list[float]) -> str:
    samples.sort()
    return (f"median {statistics.median(samples) * 1e6:8.1f} us   p99 "
            f"{samples[int(len(samples) * 0.99) - 1] * 1e6:8.1f} us")


async def main() -> None:
    data = Path(tempfile.mkdtemp())
    settings = Settings.from_env(environ={"SVC_DATA_DIR": str(data), "SVC_ADMIN_PASSWORD": "bench-pass-1",
                                          "SVC_JOBS_INPROCESS": "false"})
    app = create_app(settings)
    kernel = app.kernel
    upgrade(f"sqlite:///{data / 'svc.sqlite3'}", migration_paths(kernel.pm))
    await startup_kernel(kernel)
    now = now_utc()
    async with kernel.db.begin() as conn:
        db = SiteDB("default", conn)
        user_id = await create_user(kernel, conn, email="m@example.com", password="member-pass-1")
        base = await role_by_system_key(conn, "default", "subscriber")
        parent, child = uuid7(), uuid7()
        await db.insert(roles, [
            {"id": parent, "name": "Editors", "parent_id": base["id"], "admin_access": False, "created_at": now},
            {"id": child, "name": "Junior editors", "parent_id": parent, "admin_access": False, "created_at": now}])
        await set_membership(conn, "default", user_id, child)
        team = uuid7()
        await db.insert(teams, {"id": team, "name": "Desk", "created_at": now})
        await db.insert(team_members, {"team_id": team, "user_id": user_id})
        for i, target in enumerate([{"role_id": child}, {"role_id": parent}, {"team_id": team}, {"user_id": user_id}]):
            policy = uuid7()
            await db.insert(policies, {"id": policy, "name": f"p{i}", "admin_access": False, "created_at": now})
            await db.insert(attachments, {"id": uuid7(), "policy_id": policy, "created_at": now, **target})
            await db.insert(permissions, [
                {"id": uuid7(), "policy_id": policy, "collection": f"c{j}", "action": action,
                 "fields": ["*"] if j % 2 else ["title", "body"],
                 "conditions": {"owner": {"_eq": "$CURRENT_USER"}} if action != "read" else None,
                 "created_at": now}
                for j in range(5) for action in ("read", "update")])
    principal = Principal(kind="user", user_id=user_id)
    decide = kernel.access.decide
    assert (await decide(principal, "default", "c1", "read")).allowed
    cached, uncached = [], []
    for _ in range(5000):
        start = time.perf_counter()
        await decide(principal, "default", "c3", "update")
        cached.append(time.perf_counter() - start)
    for _ in range(500):
        kernel.access.invalidate("default")
        start = time.perf_counter()
        await decide(principal, "default", "c3", "update")
        uncached.append(time.perf_counter() - start)
    print(f"access decision, cached:   {timed(cached)}")
    print(f"access decision, uncached: {timed(uncached)}  (4 policies, 40 rules, role chain of 3, 1 team)")
    await shutdown_kernel(kernel)
    hashes, verifies = [], []
    digest = hash_password("member-pass-1")
    for _ in range(20):
        start = time.perf_counter()
        hash_password("member-pass-1")
        hashes.append(time.perf_counter() - start)
        start = time.perf_counter()
        verify_password(digest, "member-pass-1")
        verifies.append(time.perf_counter() - start)
    print(f"argon2id hash:   median {statistics.median(hashes) * 1000:.1f} ms")
    print(f"argon2id verify: median {statistics.median(verifies) * 1000:.1f} ms  "
          f"(one core: at most ~{1 / statistics.median(verifies):.0f} logins/s)")


if __name__ == "__main__":
    asyncio.run(main())

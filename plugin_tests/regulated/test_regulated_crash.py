"""Crash safety: a real process running migration (then rewrap) batches is SIGKILLed between
batches; what it committed stays, nothing is lost or half-done, and the HTTP routes resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

from regulated_setup import ENC, KEYS_ENV, PATIENT_FIELDS, site_calls
from sqlalchemy import select

from kernel.testing import ADMIN_PASSWORD, JWT_SECRET
from plugins.items.tables import items
from plugins.regulated.tables import data_keys

LOOP = Path(__file__).with_name("batch_loop.py")
ROOT = Path(__file__).resolve().parents[2]


def run_until_killed(env: dict[str, str], kind: str, site: str, batches: int) -> list[str]:
    """Start the loop, SIGKILL it right after ``batches`` committed batches; its output lines."""
    proc = subprocess.Popen([sys.executable, str(LOOP), kind, site, "4"], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        assert proc.stdout is not None
        while len(lines) < batches:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "no output"
            lines.append(line.strip())
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    return lines


async def stored_ssn(app, site) -> dict[str, str]:
    async with app.kernel.db.connect() as conn:
        rows = (await conn.execute(select(items.c.id, items.c.data).where(items.c.site_id == site))).all()
    return {r[0]: (json.loads(r[1]) if isinstance(r[1], str) else r[1])["ssn"] for r in rows}


async def test_kill_between_batches_loses_nothing(make_app, tmp_path):
    data_dir = tmp_path / "crash"
    app = await make_app(env=dict(KEYS_ENV), data_dir=data_dir)
    site, calls = await site_calls(app)
    await calls.collection("patients", PATIENT_FIELDS)
    made = {(await calls.create("patients", {"name": f"p{i}", "ssn": f"ssn-{i}"}))["id"]: f"ssn-{i}"
            for i in range(14)}
    state = await calls.ok("post", f"{ENC}/envelope", json={"enabled": True, "password": ADMIN_PASSWORD})
    assert state["migration"]["state"] == "encrypting"

    env = {**os.environ, **KEYS_ENV, "SVC_DATA_DIR": str(data_dir), "JWT_SECRET": JWT_SECRET,
           "SVC_JOBS_INPROCESS": "false", "PYTHONPATH": str(ROOT)}
    if app.kernel.settings.database_url:
        env["SVC_DATABASE_URL"] = app.kernel.settings.database_url
    env.pop("SVC_REDIS_URL", None)
    lines = run_until_killed(env, "migrate", site, 2)
    assert lines == ["batch 4", "batch 4"]

    # Exactly the committed batches are encrypted (a batch is all or nothing), the cursor agrees.
    ssn = await stored_ssn(app, site)
    encrypted = sorted(i for i, v in ssn.items() if v.startswith("renc1."))
    state = await calls.ok("get", f"{ENC}/envelope")
    assert len(encrypted) == state["migration"]["migrated"] >= 8 and not state["done"]
    assert encrypted == sorted(made)[:len(encrypted)]  # in cursor order, no gap

    while not state["done"]:  # resume through HTTP
        state = await calls.ok("post", f"{ENC}/envelope/migrate", json={"limit": 3})
    assert all(v.startswith("renc1.") for v in (await stored_ssn(app, site)).values())
    for item_id, value in made.items():
        assert (await calls.get("patients", item_id))["ssn"] == value

    # The same for rewrap after a rotation.
    await calls.ok("post", f"{ENC}/keys/rotate", json={"keyId": "next"})
    assert run_until_killed(env, "rewrap", site, 1) == ["batch 4"]
    async with app.kernel.db.connect() as conn:
        kids = (await conn.execute(select(data_keys.c.key_id).where(data_keys.c.site_id == site))).scalars().all()
    assert sorted(kids).count("next") >= 4 and set(kids) <= {"main", "next"}
    progress = await calls.ok("post", f"{ENC}/keys/rewrap", json={})
    while not progress["done"]:
        progress = await calls.ok("post", f"{ENC}/keys/rewrap", json={})
    for item_id, value in made.items():
        assert (await calls.get("patients", item_id))["ssn"] == value

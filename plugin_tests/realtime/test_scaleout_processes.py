"""Two `svc serve` processes sharing one SQLite file and Redis: a write on A reaches a socket on B."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid

import httpx
import pytest
from websockets.asyncio.client import connect as ws_connect

from kernel.testing import free_port, svc_test_database_url, wait_until_answering

PASSWORD = "scaleout-pass-1"


@pytest.mark.skipif(bool(svc_test_database_url()), reason="runs on the embedded default (one SQLite file)")
async def test_a_write_on_process_a_reaches_a_socket_on_process_b(tmp_path, redis_url):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ADMIN_PASSWORD=PASSWORD, JWT_SECRET="j" * 40,
               SVC_REDIS_URL=redis_url, SVC_REDIS_NAMESPACE=f"svctest:{uuid.uuid4().hex[:12]}",
               SVC_LOG_LEVEL="warning")
    procs, ports = [], []
    try:
        for _ in range(2):  # one after the other: the first migrates the shared file
            port = free_port()
            proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port), "--workers", "1"],
                                    env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            procs.append(proc)
            ports.append(port)
            await asyncio.to_thread(wait_until_answering, proc, f"http://127.0.0.1:{port}/api/v1/utils/health")
        a = f"http://127.0.0.1:{ports[0]}/api/v1"
        async with httpx.AsyncClient(base_url=a, timeout=20) as http:
            token = (await http.post("/auth/login", json={"email": "admin@example.com", "password": PASSWORD})
                     ).json()["data"]["token"]
            headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
            assert (await http.post("/collections", json={"name": "posts"}, headers=headers)).status_code == 201
            ticket = (await http.post("/realtime/ticket", headers=headers)).json()["data"]["ticket"]
            url = f"ws://127.0.0.1:{ports[1]}/api/v1/realtime?ticket={ticket}"
            async with ws_connect(url, close_timeout=1) as ws:  # process B
                await ws.send(json.dumps({"type": "subscribe", "collection": "posts"}))
                assert json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] == "subscribed"
                created = await http.post("/items/posts", json={"id": "from-a"}, headers=headers)  # process A
                assert created.status_code == 201
                while True:
                    got = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if got["type"] != "ping":
                        break
                assert got == {"type": "event", "collection": "posts", "action": "create", "itemId": "from-a",
                               "payload": None}
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()

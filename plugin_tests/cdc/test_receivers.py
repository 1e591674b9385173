"""The receivers of docs/change-feed.md (examples/webhooks/) run as real processes, take svc's
signed deliveries, and turn away a tampered or unsigned one."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from kernel.testing import free_port, skip_or_fail

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "webhooks"
SECRET = "whsec-documented-receiver-1"


def _command(kind: str, port: int) -> list[str]:
    if kind == "python":
        return [sys.executable, str(EXAMPLES / "receiver.py"), str(port)]
    node = shutil.which("node")
    if node is None:
        skip_or_fail("Node.js is not installed (apt-get install nodejs): the JavaScript receiver cannot run here")
    return [node, str(EXAMPLES / "receiver.js"), str(port)]


@pytest.mark.parametrize("kind", ["python", "javascript"])
async def test_documented_receiver(kind, calls, tmp_path):
    port = free_port()
    out = open(tmp_path / "out.txt", "wb")  # noqa: SIM115 - the child writes it
    proc = subprocess.Popen(_command(kind, port), stdout=out, stderr=subprocess.DEVNULL,
                            env={"SVC_WEBHOOK_SECRET": SECRET, "PATH": "/usr/bin:/bin"})
    try:
        url = f"http://127.0.0.1:{port}/"
        async with httpx.AsyncClient() as client:
            for _ in range(200):
                try:
                    unsigned = await client.post(url, content=b'{"events": [{"id": "1"}]}')
                    break
                except httpx.TransportError:
                    assert proc.poll() is None, (tmp_path / "out.txt").read_text()
                    await asyncio.sleep(0.05)
            assert unsigned.status_code == 401
            forged = await client.post(url, content=b'{"events": [{"id": "2"}]}',
                                       headers={"X-Svc-Signature": f"t={int(time.time())},v1={'0' * 64}"})
            assert forged.status_code == 401
        await calls.collection("posts", {"title": "string"})
        await calls.ok("post", "/cdc/subscriptions", status=201, json={
            "name": "documented", "kind": "webhook", "url": url, "secret": SECRET, "operations": ["create"]})
        item = (await calls.create("posts", {"title": "hello"}))["id"]
        for _ in range(300):
            if item in (tmp_path / "out.txt").read_text():
                break
            await asyncio.sleep(0.05)
        lines = (tmp_path / "out.txt").read_text().split("\n")
        assert [line.split()[1:] for line in lines if line.strip()] == [["items.create", item]]
    finally:
        proc.terminate()
        proc.wait(10)
        out.close()

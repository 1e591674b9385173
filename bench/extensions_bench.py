"""Extensions out of process (issue 37): what the runner costs, in process over ASGI.

Three figures, each for ``SVC_EXT_ISOLATION=process`` and, for comparison, ``inline``:

- the p50 and p95 of an extension route that answers at once (``/ext/bench-ext/ping``: one round
  trip through the channel) and of one that reads an item through the items API
  (``/ext/bench-ext/notes/{id}``: two), beside the built-in ``GET /items/notes/{id}`` (before and
  after the extension, whose bus filter on ``notes.items.update`` runs in the runner, is enabled)
  and a built-in ``PATCH /items/notes/{id}`` that this filter changes; each with the CPU time per
  call of the server process and of the runner (``/proc``), which a loaded machine disturbs far
  less than the wall-clock figures;
  and, with process isolation, the p50 of the time the server spent in ``Host.invoke`` (the
  call into the runner and back, the runner's work and its callbacks included);
- the memory of one runner process (RSS, PSS and USS from ``/proc``);
- the time to enable the extension in a site (the runner's start and load included).

    python bench/extensions_bench.py [--calls 400] [--database-url URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
from inprocess import ADMIN_EMAIL, PASSWORD, in_process_app  # noqa: E402

from extensions_sdk.bundle import build_bundle  # noqa: E402
from extensions_sdk.signing import generate_keypair, sign_bytes  # noqa: E402

CODE = """
from extensions_sdk import Route, hookimpl, items, request_context, send_data


class Ping:
    async def on_get(self, req, resp):
        send_data(resp, {"pong": True})


class Note:
    async def on_get(self, req, resp, id):
        send_data(resp, await items.read(request_context(req), "notes", id))


async def stamp(event, payload, ctx):
    payload["title"] = (payload.get("title") or "") + "!"
    return payload


@hookimpl
def register_event_handlers(bus, kernel):
    bus.on_filter("notes.items.update", stamp)


@hookimpl
def register_routes(kernel):
    return [Route("/bench-ext/ping", Ping()), Route("/bench-ext/notes/{id}", Note())]
"""


CAPABILITIES = ["routes", "items:notes", "events:notes.items.update"]


def _bundle(root: Path, private: str) -> tuple[bytes, str]:
    package = root / "bench_ext"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(CODE))
    (root / "manifest.json").write_text(
        '{"name": "bench-ext", "version": "1.0.0", "publisher": "bench", "entry": "bench_ext",'
        f' "capabilities": {json.dumps(CAPABILITIES)}}}'
    )
    bundle = build_bundle(root)
    return bundle, sign_bytes(private, bundle)


def _memory(pid: int) -> dict[str, float]:
    """RSS, PSS and USS (its private pages: what one more runner of it adds) of ``pid``, in MiB."""
    kib: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("Rss", "Pss", "Private_Clean", "Private_Dirty"):
            kib[key] = int(rest.split()[0])
    return {
        "rssMiB": round(kib["Rss"] / 1024, 1),
        "pssMiB": round(kib["Pss"] / 1024, 1),
        "ussMiB": round((kib["Private_Clean"] + kib["Private_Dirty"]) / 1024, 1),
    }


# How long each call into the runner took, as the server's ``Host.invoke`` saw it (the channel's
# round trip, the runner's own work and the callbacks it made included): only with process isolation.
INVOKED: list[float] = []


def _time_invoke() -> None:
    """Record the duration of every ``Host.invoke`` in ``INVOKED`` (bench only)."""
    from plugins.extensions.host import Host

    if getattr(Host.invoke, "timed", False):
        return
    invoke = Host.invoke

    async def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await invoke(self, *args, **kwargs)
        finally:
            INVOKED.append((time.perf_counter() - start) * 1000)

    timed.timed = True  # type: ignore[attr-defined]
    Host.invoke = timed  # type: ignore[method-assign]


def _cpu_seconds(pid: int | None) -> float:
    """User and system CPU time of process ``pid`` so far (0 without one)."""
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _timed(
    client: Any, path: str, headers: dict[str, str], calls: int, runner: int | None = None, **body: Any
) -> dict[str, float]:
    method = "PATCH" if body else "GET"
    for _ in range(20):  # warm up
        (await client.request(method, path, headers=headers, **body)).raise_for_status()
    took = []
    INVOKED.clear()
    cpu, runner_cpu = time.process_time(), _cpu_seconds(runner)
    for _ in range(calls):
        start = time.perf_counter()
        resp = await client.request(method, path, headers=headers, **body)
        took.append((time.perf_counter() - start) * 1000)
        resp.raise_for_status()
    server_ms = (time.process_time() - cpu) / calls * 1000
    runner_ms = (_cpu_seconds(runner) - runner_cpu) / calls * 1000
    took.sort()
    out = {
        "p50ms": round(statistics.median(took), 3),
        "p95ms": round(took[int(len(took) * 0.95)], 3),
        "serverCpuMs": round(server_ms, 3),
        "runnerCpuMs": round(runner_ms, 3),
    }
    if INVOKED:
        out["invokeP50ms"] = round(statistics.median(INVOKED), 3)
    return out


async def run(isolation: str, calls: int, database_url: str | None) -> dict[str, Any]:
    private, public = generate_keypair()
    env = {"MARKETPLACE_PUBLIC_KEYS": f"bench:{public}", "SVC_EXT_ISOLATION": isolation}
    _time_invoke()
    async with in_process_app(database_url, env) as (app, client):
        login = (
            await client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": PASSWORD})
        ).json()["data"]
        admin = {"Authorization": f"Bearer {login['token']}"}
        site = (
            await client.post("/api/v1/sites", headers=admin, json={"id": "bench", "name": "Bench"})
        ).json()["data"]["id"]
        headers = {**admin, "X-Svc-Site": site}
        await client.post(
            "/api/v1/collections",
            headers=headers,
            json={"collection": "notes", "fields": [{"field": "title", "type": "string"}]},
        )
        note = (await client.post("/api/v1/items/notes", headers=headers, json={"title": "x"})).json()["data"]
        item = f"/api/v1/items/notes/{note['id']}"
        before = await _timed(client, item, headers, calls)
        with tempfile.TemporaryDirectory() as tmp:
            bundle, signature = _bundle(Path(tmp), private)
        ext = (
            await client.post(
                "/api/v1/extensions/upload",
                headers=admin,
                files={"bundle": ("b.zip", bundle, "application/zip")},
                data={"signature": signature},
            )
        ).json()["data"]
        await client.post(
            f"/api/v1/extensions/{ext['id']}/capabilities",
            headers=headers,
            json={"capabilities": CAPABILITIES},
        )
        enables = []
        for _ in range(5):
            start = time.perf_counter()
            (await client.post(f"/api/v1/extensions/{ext['id']}/enable", headers=headers)).raise_for_status()
            enables.append((time.perf_counter() - start) * 1000)
            (await client.post(f"/api/v1/extensions/{ext['id']}/disable", headers=headers)).raise_for_status()
        (await client.post(f"/api/v1/extensions/{ext['id']}/enable", headers=headers)).raise_for_status()
        host = app.kernel.state["extensions.runtime"].loaded[ext["id"]].host
        pid = host.pid if host is not None else None
        out: dict[str, Any] = {
            "isolation": isolation,
            "builtin_item_get_before_enable": before,
            "builtin_item_get": await _timed(client, item, headers, calls, pid),
            "ext_ping": await _timed(client, "/api/v1/ext/bench-ext/ping", headers, calls, pid),
            "ext_item_read": await _timed(
                client, f"/api/v1/ext/bench-ext/notes/{note['id']}", headers, calls, pid
            ),
            "builtin_patch_filtered": await _timed(client, item, headers, calls, pid, json={"title": "y"}),
            "enable_ms_p50": round(statistics.median(enables), 1),
        }
        if host is not None:
            out["runner_memory"] = _memory(host.pid)
        return out


ECHO = """
import asyncio, socket, sys
from extensions_sdk import channel
async def main():
    async def echo(message):
        return {"ok": True}
    peer = await channel.open_peer(socket.socket(fileno=int(sys.argv[1])), echo)
    await peer.closed.wait()
asyncio.run(main())
"""


async def channel_round_trip(calls: int) -> dict[str, float]:
    """The channel alone: a call to a process that answers at once (no runner, no extension)."""
    import socket
    import subprocess

    from extensions_sdk import channel

    mine, theirs = socket.socketpair()
    proc = subprocess.Popen([sys.executable, "-c", ECHO, str(theirs.fileno())], pass_fds=(theirs.fileno(),))
    theirs.close()

    async def nothing(message: Any) -> None:
        return None

    peer = await channel.open_peer(mine, nothing)
    try:
        for _ in range(50):
            await peer.call("ping")
        took = []
        for _ in range(calls):
            start = time.perf_counter()
            await peer.call("route", payload={"path": "/bench-ext/ping", "headers": {"accept": "*/*"}})
            took.append((time.perf_counter() - start) * 1000)
        took.sort()
        return {"p50ms": round(statistics.median(took), 3), "p95ms": round(took[int(len(took) * 0.95)], 3)}
    finally:
        peer.close()
        proc.kill()
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    print({"channel_round_trip": asyncio.run(channel_round_trip(args.calls))})
    for isolation in ("inline", "process"):
        print(asyncio.run(run(isolation, args.calls, args.database_url)))


if __name__ == "__main__":
    main()

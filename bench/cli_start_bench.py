"""The CPU an ``svc`` command costs from start to exit (issue 39 point 8): every test that starts
``svc`` processes pays it per process.

Each command runs ``--runs`` times, in a fresh process each time (``python -m kernel.cli``, as
the tests start it), on one data dir migrated beforehand (so ``svc migrate`` finds nothing to
do; ``svc sites create`` makes a new site each run). The figure is the process's user + system
CPU as the kernel counts it for a waited-for child (``resource.getrusage(RUSAGE_CHILDREN)``,
what ``/usr/bin/time`` prints), the median and the smallest over the runs, with the wall time
beside it. ``svc serve`` is counted from its start until ``/api/v1/utils/health`` answers (its
own CPU up to then: ``/proc/PID/stat``), then stopped.

    python bench/cli_start_bench.py [--runs 7] [--only "sites list"]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = ("--help", "sites list", "sites create", "plugins list", "migrate", "jobs", "serve")
TICKS = os.sysconf("SC_CLK_TCK")


def _env(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_DATA_DIR=str(data_dir), SVC_ADMIN_PASSWORD="bench-admin-pass", JWT_SECRET="b" * 40)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # the cached bytecode is part of every real start
    return env


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_command(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``svc`` process run to its exit."""
    before, began = _children_cpu(), time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "kernel.cli", *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    wall, cpu = time.perf_counter() - began, _children_cpu() - before
    if done.returncode != 0:
        raise SystemExit(f"svc {' '.join(args)} failed ({done.returncode}): {done.stderr[-2000:]}")
    return cpu, wall


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _own_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def run_serve(env: dict[str, str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``svc serve`` until ``/api/v1/utils/health`` answers."""
    port = _free_port()
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port)], env=env, cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = began + 120
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"svc serve exited with {proc.returncode}")
            try:
                if httpx.get(f"http://127.0.0.1:{port}/api/v1/utils/health", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.perf_counter() > deadline:
                raise SystemExit("svc serve did not answer its health check within 120 s")
            time.sleep(0.05)
        wall, cpu = time.perf_counter() - began, _own_cpu(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return cpu, wall


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", action="append", choices=COMMANDS, help="measure only these commands")
    args = parser.parse_args()
    commands = args.only or list(COMMANDS)
    with tempfile.TemporaryDirectory(prefix="svc-cli-bench-") as tmp:
        data = Path(tmp) / "data"
        env = _env(data)
        run_command(["migrate"], env)  # the instance every command then works on
        run_command(["--help"], env)  # and the bytecode of what it imports is written
        print(f"{'command':<16} {'cpu p50':>8} {'cpu min':>8} {'wall p50':>9}   ({args.runs} runs, seconds)")
        for command in commands:
            cpus, walls = [], []
            for i in range(args.runs):
                if command == "serve":
                    cpu, wall = run_serve(env)
                elif command == "sites create":
                    cpu, wall = run_command(["sites", "create", f"bench-{i}"], env)
                else:
                    cpu, wall = run_command(command.split(), env)
                cpus.append(cpu)
                walls.append(wall)
            print(f"{command:<16} {statistics.median(cpus):8.2f} {min(cpus):8.2f} {statistics.median(walls):9.2f}")
        shutil.rmtree(data, ignore_errors=True)


if __name__ == "__main__":
    main()

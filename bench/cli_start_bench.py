"""The CPU an ``svc`` command costs from start to exit (issue 39 point 8): every test that starts
``svc`` processes pays it per process.

Each command runs ``--runs`` times, in a fresh process each time (``python -m kernel.cli``, as
the tests start it), on one data dir migrated beforehand (so ``svc migrate`` finds nothing to
do; ``svc sites create`` makes a new site each run). The figure is the process's user + system
CPU as the kernel counts it for a waited-for child (``resource.getrusage(RUSAGE_CHILDREN)``,
what ``/usr/bin/time`` prints), the median and the smallest over the runs, with the wall time
beside it. ``svc serve`` is counted from its start until ``/api/v1/utils/health`` answers (the
CPU of its process tree up to then, from ``/proc``: its worker processes included), then stopped.

``--against PATH`` measures another checkout too (with its own ``.venv``, e.g. a worktree of
main): each run alternates between the two, so both see the same load, and both are printed.

    python bench/cli_start_bench.py [--runs 7] [--only "sites list"] [--against ../main-checkout]
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


def _python(tree: Path) -> str:
    return sys.executable if tree == ROOT else str(tree / ".venv" / "bin" / "python")


def run_command(args: list[str], env: dict[str, str], tree: Path = ROOT) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one ``svc`` process of the checkout ``tree`` run to its exit."""
    before, began = _children_cpu(), time.perf_counter()
    done = subprocess.run([_python(tree), "-m", "kernel.cli", *args], env=env, cwd=tree,
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


def _tree_cpu(root: int) -> float:
    """The CPU seconds of process ``root`` and its living descendants, plus the children they reaped."""
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stats[int(entry.name)] = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # ended meanwhile
                continue
    parent = {pid: int(fields[1]) for pid, fields in stats.items()}

    def descends(pid: int) -> bool:
        while pid > 1:
            if pid == root:
                return True
            pid = parent.get(pid, 0)
        return False

    # utime, stime, cutime, cstime: fields 14 to 17 of stat, 11 to 14 after the command's name
    return sum(sum(int(f) for f in fields[11:15]) for pid, fields in stats.items() if descends(pid)) / TICKS


def run_serve(env: dict[str, str], tree: Path = ROOT) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of ``svc serve`` until ``/api/v1/utils/health`` answers."""
    port = _free_port()
    began = time.perf_counter()
    proc = subprocess.Popen([_python(tree), "-m", "kernel.cli", "serve", "--port", str(port)], env=env, cwd=tree,
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
        wall, cpu = time.perf_counter() - began, _tree_cpu(proc.pid)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return cpu, wall


def measure(command: str, i: int, env: dict[str, str], tree: Path) -> tuple[float, float]:
    if command == "serve":
        return run_serve(env, tree)
    if command == "sites create":
        return run_command(["sites", "create", f"bench-{tree.name}-{i}"], env, tree)
    return run_command(command.split(), env, tree)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", action="append", choices=COMMANDS, help="measure only these commands")
    parser.add_argument("--against", type=Path, default=None,
                        help="another checkout (with its .venv) to measure in turn with this one")
    args = parser.parse_args()
    commands = args.only or list(COMMANDS)
    trees = [ROOT] if args.against is None else [ROOT, args.against.resolve()]
    with tempfile.TemporaryDirectory(prefix="svc-cli-bench-") as tmp:
        envs = {}
        for n, tree in enumerate(trees):
            envs[tree] = _env(Path(tmp) / f"data-{n}")
            run_command(["migrate"], envs[tree], tree)  # the instance every command then works on
            run_command(["--help"], envs[tree], tree)  # and the bytecode of what it imports is written
        print(f"{'command':<16} {'cpu p50':>8} {'cpu min':>8} {'wall p50':>9}   ({args.runs} runs, seconds)")
        for command in commands:
            figures: dict[Path, tuple[list[float], list[float]]] = {tree: ([], []) for tree in trees}
            for i in range(args.runs):
                for tree in trees if i % 2 == 0 else reversed(trees):
                    cpu, wall = measure(command, i, envs[tree], tree)
                    figures[tree][0].append(cpu)
                    figures[tree][1].append(wall)
            for tree in trees:
                cpus, walls = figures[tree]
                label = command if tree == ROOT else f"  ({tree.name})"
                print(f"{label:<16} {statistics.median(cpus):8.2f} {min(cpus):8.2f} {statistics.median(walls):9.2f}")
        for env in envs.values():
            shutil.rmtree(env["SVC_DATA_DIR"], ignore_errors=True)


if __name__ == "__main__":
    main()

"""The start of an extension runner's confinement (``extensions_sdk.confine.apply``), as the host
starts a runner: ``python -I`` with the scrubbed environment and the host's config (namespaces,
hidden data dir, limits, another user, seccomp, Landlock), in a fresh process each time.

With ``--compare``, every other start lets the libraries look the C library up themselves (as
before ``_libc_by_soname``), so both are measured under the same load, interleaved.

Two figures over ``--runs`` starts: the p50 time ``apply`` takes inside the child, and the p50
wall time from spawn to exit (Python's start, the imports and ``apply``). Also how many times the
child ran ``ctypes.util.find_library`` (each runs ``ldconfig -p`` in a subprocess) and the time
spent there.

    python bench/runner_start_bench.py [--runs 30]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

CHILD = """
import ctypes.util, json, os, sys, time
calls = []
real = ctypes.util.find_library
def counted(name):
    began = time.perf_counter()
    try:
        return real(name)
    finally:
        calls.append((time.perf_counter() - began) * 1000)
ctypes.util.find_library = counted
from extensions_sdk import confine
if os.environ.get("BENCH_LOOKUP") == "ldconfig":  # as before: the libraries look libc up themselves
    import contextlib
    confine._libc_by_soname = contextlib.nullcontext
config = json.loads(os.environ["SVC_EXT_RUNNER"])
start = time.perf_counter()
missing = confine.apply(config)
took = (time.perf_counter() - start) * 1000
print(json.dumps({"apply_ms": took, "find_library": len(calls), "find_ms": sum(calls), "missing": missing}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--compare", action="store_true")
    args = parser.parse_args()
    ways = ("soname", "ldconfig") if args.compare else ("soname",)
    for way, figures in zip(ways, _measure(args.runs, ways), strict=True):
        applies, walls, finds, find_ms, missing = figures
        print(f"[{way}] runs: {len(applies)}; find_library calls per start: {sorted(set(finds))}")
        print(f"[{way}] time in find_library p50: {statistics.median(find_ms):.1f} ms")
        print(f"[{way}] confine.apply p50: {statistics.median(applies):.1f} ms (min {min(applies):.1f})")
        print(f"[{way}] spawn to exit p50: {statistics.median(walls):.1f} ms (min {min(walls):.1f})")
        print(f"[{way}] protections missing here: {missing}")


def _measure(runs: int, ways: tuple[str, ...]) -> list[tuple[list[float], list[float], list[int], list[float], Any]]:
    from plugins.extensions.host import _readable, scrubbed_env

    out: dict[str, Any] = {w: ([], [], [], [], None) for w in ways}
    for i in range(runs * len(ways)):
        way = ways[i % len(ways)]
        applies, walls, finds, find_ms, _missing = out[way]
        with tempfile.TemporaryDirectory(prefix="svc-ext-bench-") as workdir, \
                tempfile.TemporaryDirectory(prefix="svc-data-bench-") as data:
            config = {"name": "bench", "entry": "bench", "workdir": workdir, "readable": _readable(),
                      "hidden": [data], "limits": {"memory_bytes": 512 * 1024 * 1024, "cpu_seconds": 30,
                                                   "open_files": 64, "processes": 64,
                                                   "file_bytes": 16 * 1024 * 1024}}
            env = {**scrubbed_env(config), "BENCH_LOOKUP": way}
            start = time.perf_counter()
            child = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(HERE.parent)!r})\n"
                                  + CHILD], env=env, cwd=workdir, capture_output=True, text=True, check=True,
                                 start_new_session=True)
            walls.append((time.perf_counter() - start) * 1000)
        result = json.loads(child.stdout)
        applies.append(result["apply_ms"])
        finds.append(result["find_library"])
        find_ms.append(result["find_ms"])
        out[way] = (applies, walls, finds, find_ms, result["missing"])
    return [out[w] for w in ways]


if __name__ == "__main__":
    main()

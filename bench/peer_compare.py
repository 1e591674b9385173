"""The peer comparison (``$PEER_BENCH/workload.py``) with server CPU read over process trees.

``workload.py`` reads the CPU of the one pid it is given. With ``svc serve --workers N`` that pid
is uvicorn's supervisor, which serves nothing, so its "srv cpu ms/req" column stayed empty (or
svc had to run with one worker, which is not the comparison the README asks for). This runs the
same ``workload.py`` in this process with its CPU reading replaced by the sum over the pid's
whole tree (the supervisor and its workers; Directus's one process and any children), plus
``--extra-pids`` for the target (a ``svc worker`` started apart). Everything else (the
scenarios, the alternating rounds, the report) is ``workload.py``'s own.

    /tmp/bench-venv/bin/python bench/peer_compare.py --workload $PEER_BENCH/workload.py \\
        [--extra-pids 1234,5678] compare --target "kind=svc,...,pid=<svc serve pid>" \\
        --peer "kind=directus,env=/tmp/peer.env" --n 10000 --rounds 3 --duration 6 --out /tmp/c.json

Run it with the interpreter that has ``httpx`` (``workload.py`` needs it). The database
server's CPU is not counted for either side: on a shared machine PostgreSQL serves other work too.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from loadclient import cpu_seconds, tree  # noqa: E402 - a sibling module, found through sys.path


def load_workload(path: str):
    """``workload.py`` as a module (it is a script of the team's peer folder, not a package)."""
    spec = importlib.util.spec_from_file_location("workload", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules["workload"] = module
    spec.loader.exec_module(module)
    return module


def tree_cpu_reader(extra: dict[int, list[int]]):
    """A ``read_cpu_s(pid)`` that sums ``pid``'s process tree and the pids added to it."""
    def read_cpu_s(pid: int) -> float | None:
        pids = tree(pid) + extra.get(pid, [])
        return cpu_seconds(pids)
    return read_cpu_s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workload", required=True, help="path of the peer folder's workload.py")
    ap.add_argument("--extra-pids", default="",
                    help="comma list of pids counted with the target's tree (e.g. a `svc worker`)")
    ours, rest = ap.parse_known_args()
    workload = load_workload(ours.workload)
    extra = [int(p) for p in ours.extra_pids.split(",") if p.strip()]
    target_pid = None
    if "--target" in rest:
        spec = workload.parse_spec(rest[rest.index("--target") + 1])
        target_pid = int(spec["pid"]) if spec.get("pid") else None
    if extra and target_pid is None:
        raise SystemExit("--extra-pids needs pid= in the --target spec")
    workload.read_cpu_s = tree_cpu_reader({target_pid: extra} if target_pid else {})
    sys.argv = [ours.workload, *rest]
    workload.main()


if __name__ == "__main__":
    main()

"""Sum the per-test costs that ``SVC_TEST_COST=DIR`` recorded (tests/cost_report.py) by module.

    python scripts/test_cost.py DIR [--run all|services] [--top N] [--by test]
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("--run", choices=("all", "services"), default="all",
                        help="the first pass (all) or the PostgreSQL+Redis pass (services)")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--by", choices=("module", "test"), default="module")
    args = parser.parse_args()
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    for path in sorted(args.folder.glob(f"{args.run}-*.jsonl")):
        for raw in path.read_text(encoding="utf-8").splitlines():
            line = json.loads(raw)
            key = line["test"].split("::")[0] if args.by == "module" else line["test"]
            total = totals[key]
            total[0] += line["cpu"]
            total[1] += line["wall"]
            total[2] += 1
    cpu = sum(t[0] for t in totals.values())
    wall = sum(t[1] for t in totals.values())
    print(f"{sum(t[2] for t in totals.values())} tests: {cpu:.0f} s of CPU, {wall:.0f} s of wall time (summed over workers)")
    print(f"{'cpu s':>8} {'wall s':>8} {'tests':>6}  {args.by}")
    for key, (c, w, n) in sorted(totals.items(), key=lambda kv: -kv[1][0])[: args.top]:
        print(f"{c:8.1f} {w:8.1f} {n:6d}  {key}")


if __name__ == "__main__":
    main()

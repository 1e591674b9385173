#!/usr/bin/env python3
"""Tests per 1,000 lines of plugin code, per plugin (docs/testing.md, "Test density").

A test is a ``test_*`` function of ``plugin_tests/<plugin>/`` (a parametrized test counts once:
cases of one check are not separate tests); a line is a non-blank line of ``plugins/<plugin>/``.
Prints a Markdown table, densest first, and the median. ``--below-median`` exits 1 when one of the
named plugins is below it.
"""

from __future__ import annotations

import argparse
import ast
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def code_lines(plugin: str) -> int:
    """Non-blank lines of the plugin's Python code."""
    return sum(1 for path in (ROOT / "plugins" / plugin).rglob("*.py")
               for line in path.read_text().splitlines() if line.strip())


def test_count(plugin: str) -> int:
    """``test_*`` functions (module level or in a ``Test*`` class) of the plugin's tests."""
    count = 0
    for path in (ROOT / "plugin_tests" / plugin).rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                count += 1
    return count


def densities() -> dict[str, tuple[int, int, float]]:
    """plugin -> (tests, lines, tests per 1,000 lines), for each plugin with code."""
    table = {}
    for folder in sorted(p for p in (ROOT / "plugins").iterdir() if p.is_dir() and p.name != "__pycache__"):
        lines = code_lines(folder.name)
        if lines:
            tests = test_count(folder.name)
            table[folder.name] = (tests, lines, 1000 * tests / lines)
    return table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--below-median", nargs="*", default=[], metavar="PLUGIN",
                        help="exit 1 if any of these plugins is below the median")
    args = parser.parse_args(argv)
    table = densities()
    median = statistics.median(d for _, _, d in table.values())
    print("| Plugin | Tests | Lines | Tests per 1,000 lines |\n|---|---:|---:|---:|")
    for name, (tests, lines, density) in sorted(table.items(), key=lambda kv: -kv[1][2]):
        print(f"| {name} | {tests} | {lines:,} | {density:.1f} |")
    print(f"\nMedian: {median:.1f}", flush=True)
    below = [name for name in args.below_median if table[name][2] < median]
    if below:
        print("below the median: " + ", ".join(below), file=sys.stderr)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())

"""No run of ``MIN_RUN`` or more lines stands twice, to the letter, in the product code.

The product code is ``kernel/``, ``plugins/`` and ``extensions_sdk/`` (tests, benchmarks and
examples repeat setup on purpose). Lines are compared with their indentation stripped; blank lines
and the lines of import statements are left out (a file's imports say what it uses, not what it
does). What two places say alike but in other words (the same shape with other names) is the
`duplicates` tool's to find, not this test's: see docs/decisions/duplicates-column-lists.md.
"""

from __future__ import annotations

import ast
import hashlib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("kernel", "plugins", "extensions_sdk")
MIN_RUN = 13  # issue 38, point 5: no two places share more than 12 lines


def _import_lines(tree: ast.AST) -> set[int]:
    return {
        line
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for line in range(node.lineno, (node.end_lineno or node.lineno) + 1)
    }


def compared_lines(source: str) -> list[tuple[int, str]]:
    """``(line number, stripped text)`` of the lines a run is made of."""
    skipped = _import_lines(ast.parse(source))
    return [
        (number, text.strip())
        for number, text in enumerate(source.splitlines(), 1)
        if text.strip() and number not in skipped
    ]


def repeated_runs(sources: dict[str, str], min_run: int = MIN_RUN) -> list[str]:
    """``path:line = path:line`` for each first place where ``min_run`` compared lines stand
    again, to the letter, somewhere else (in another file, or further down the same one)."""
    places: dict[bytes, list[tuple[str, int]]] = defaultdict(list)
    for path, source in sorted(sources.items()):
        lines = compared_lines(source)
        for start in range(len(lines) - min_run + 1):
            run = "\n".join(text for _, text in lines[start : start + min_run])
            places[hashlib.blake2b(run.encode(), digest_size=16).digest()].append((path, lines[start][0]))
    found: dict[tuple[str, str], str] = {}
    for where in places.values():
        (first, first_line), *others = where
        for path, line in others:
            # one row per pair of files: the first run they share
            found.setdefault((first, path), f"{first}:{first_line} = {path}:{line}")
    return sorted(found.values())


def _product_sources() -> dict[str, str]:
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for folder in PRODUCT
        for path in sorted((ROOT / folder).rglob("*.py"))
        if ".venv" not in path.parts and "__pycache__" not in path.parts
    }


def test_no_run_of_lines_is_written_twice():
    assert repeated_runs(_product_sources()) == []


def test_a_run_written_twice_is_found():
    body = "".join(f"    total += values[{i}]\n" for i in range(MIN_RUN))
    short = "".join(f"    total += values[{i}]\n" for i in range(MIN_RUN - 1))
    imports = "from x import (\n" + "".join(f"    name{i},\n" for i in range(MIN_RUN)) + ")\n"
    sources = {
        "plugins/a/sums.py": f"{imports}\ndef a(values):\n    total = 0\n{body}    return total\n",
        "plugins/b/sums.py": f"{imports}\ndef b(values):\n\n    total = 1\n{body}\n    return total\n",
        "plugins/c/sums.py": f"{imports}\ndef c(values):\n    total = 2\n{short}    return -total\n",
    }
    # a's and b's runs differ in the line before (total = 0 / 1) and share the 13 lines after it,
    # blank lines aside; c shares only 12 of them; the 15 lines of imports all three share do not count
    assert repeated_runs(sources) == ["plugins/a/sums.py:19 = plugins/b/sums.py:20"]

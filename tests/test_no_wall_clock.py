"""No wall clock in asserts (docs/testing.md, rule 6): an AST scan of tests/ and plugin_tests/.

Two patterns fail it:

- an ``assert`` comparing an elapsed time with a number: a difference of clock readings
  (``time.monotonic()``, ``time.perf_counter()``, ``time.time()``, ``loop.time()``, their ``_ns``
  forms) or a value named like an elapsed time or a duration (``elapsed``, ``took``,
  ``duration``, ``durationMs``, ``["durationMs"]``) on one side, a number on the other. A speed
  target belongs in ``bench/``; where a bound protects something, assert that bound instead.
- ``await asyncio.sleep(x)`` or ``time.sleep(x)`` (x > 0) followed, directly or one statement
  later (a read of what the sleep waited on), by an ``assert`` of absence (``not x``,
  ``is None``, ``== []``, ``== {}``, ``== 0``, ``len(...) == 0``): "nothing happened yet" is
  not "nothing will happen". Await the event that would have come, or assert the state that
  makes it impossible (a consumer's checkpoint at the log's head, a job queue drained). An
  awaited ``.wait()`` between the two is such an event.

A deadline that only turns a hang into a failure (``assert time.monotonic() < deadline``), and
a duration's shape (``durationMs >= 0``), are neither, and stay allowed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ("tests", "plugin_tests")
CLOCKS = {"monotonic", "perf_counter", "time", "monotonic_ns", "perf_counter_ns", "time_ns"}
DURATION_NAME = re.compile(r"(^|_)(elapsed|took|duration)|duration(ms|_ms|seconds|_s)?$|^elapsed", re.I)


def _is_clock_call(node: ast.AST) -> bool:
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in CLOCKS and not node.args)


def _is_elapsed(node: ast.AST) -> bool:
    """A clock difference, or a name, attribute or string subscript that names a duration."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Sub):
        return any(_is_clock_call(side) for side in (node.left, node.right))
    if isinstance(node, ast.Name):
        return bool(DURATION_NAME.search(node.id))
    if isinstance(node, ast.Attribute):
        return bool(DURATION_NAME.search(node.attr))
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(
            node.slice.value, str):
        return bool(DURATION_NAME.search(node.slice.value))
    return False


def _is_number(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.UnaryOp):
        return _is_number(node.operand)
    if isinstance(node, ast.BinOp):
        return _is_number(node.left) and _is_number(node.right)
    return False


def _non_negative_check(node: ast.Compare) -> bool:
    """``x >= 0`` or ``0 <= x``: a shape check (a duration is never negative), not a bound."""
    zero = [isinstance(side, ast.Constant) and side.value == 0 for side in (node.left, *node.comparators)]
    return len(node.ops) == 1 and (zero[1] and isinstance(node.ops[0], ast.GtE)
                                   or zero[0] and isinstance(node.ops[0], ast.LtE))


def _elapsed_compared(test: ast.AST) -> bool:
    for node in ast.walk(test):
        if isinstance(node, ast.Compare) and not any(isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn)
                                                     for op in node.ops):
            sides = [node.left, *node.comparators]
            if (any(_is_elapsed(side) for side in sides) and any(_is_number(side) for side in sides)
                    and not _non_negative_check(node)):
                return True
    return False


def _is_sleep(stmt: ast.stmt) -> bool:
    """``await asyncio.sleep(x)`` (or anyio's), or a thread's ``time.sleep(x)``, for a constant x > 0."""
    if not isinstance(stmt, ast.Expr):
        return False
    awaited = isinstance(stmt.value, ast.Await)
    call = stmt.value.value if awaited else stmt.value
    modules = ("asyncio", "anyio") if awaited else ("time",)
    return (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "sleep"
            and isinstance(call.func.value, ast.Name) and call.func.value.id in modules
            and len(call.args) == 1 and _is_number(call.args[0]) and ast.literal_eval(call.args[0]) > 0)


def _is_empty(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is None or node.value == 0 and not isinstance(node.value, bool)
    if isinstance(node, ast.List | ast.Tuple | ast.Set):
        return not node.elts
    return isinstance(node, ast.Dict) and not node.keys


def _awaits_an_event(stmt: ast.stmt) -> bool:
    """``await x.wait()``, ``await asyncio.wait_for(...)``: what comes after waited for a signal."""
    value = getattr(stmt, "value", None)
    if not isinstance(value, ast.Await) or not isinstance(value.value, ast.Call):
        return False
    func = value.value.func
    return isinstance(func, ast.Attribute) and func.attr in ("wait", "wait_for", "wait_closed")


def _asserts_absence(stmt: ast.stmt) -> bool:
    if not isinstance(stmt, ast.Assert):
        return False
    test = stmt.test
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    for part in parts:
        if isinstance(part, ast.UnaryOp) and isinstance(part.op, ast.Not):
            return True
        if isinstance(part, ast.Compare) and len(part.ops) == 1 and isinstance(part.ops[0], ast.Eq | ast.Is):
            if _is_empty(part.comparators[0]) or _is_empty(part.left):
                return True
    return False


def wall_clock_findings(source: str, name: str = "<test>") -> list[str]:
    """Every wall-clock assert in ``source``, as ``name:line: what``."""
    found: list[str] = []
    tree = ast.parse(source)
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and _elapsed_compared(node.test):
            found.append(f"{name}:{node.lineno}: an elapsed time compared with a number")
        for field in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(node, field, None)
            if not isinstance(block, list):
                continue
            for i, stmt in enumerate(block):
                if not (isinstance(stmt, ast.stmt) and _is_sleep(stmt)):
                    continue
                # The assert right after the sleep, or one statement later (a read of the state
                # the sleep waited on: ``got = await fetch()``, then ``assert got == []``).
                for later in block[i + 1:i + 3]:
                    if _asserts_absence(later):
                        found.append(f"{name}:{later.lineno}: a sleep, then an assert that nothing happened")
                        break
                    if _is_sleep(later) or _awaits_an_event(later):
                        break
    return found


def test_no_test_asserts_on_the_wall_clock():
    found: list[str] = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += wall_clock_findings(path.read_text(), str(path.relative_to(ROOT)))
    assert not found, "wall-clock asserts (docs/testing.md, rule 6):\n" + "\n".join(found)


@pytest.mark.parametrize("source", [
    "started = time.monotonic()\nassert time.monotonic() - started < 1.2\n",
    "assert 150 <= log[0]['durationMs'] < 1000\n",
    "assert elapsed < 0.5\n",
    "assert took_ms <= 10\n",
    "assert self.duration > 1\n",
    "assert loop.time() - t0 >= 0.2\n",
    "async def f():\n    await asyncio.sleep(0.5)\n    assert got == []\n",
    "async def f():\n    await asyncio.sleep(1)\n    assert not hits and x == 1\n",
    "async def f():\n    await asyncio.sleep(0.2)\n    assert await cache.get('k') is None\n",
    "async def f():\n    for _ in range(3):\n        await asyncio.sleep(0.1)\n        assert len(seen) == 0\n",
    "async def f():\n    await asyncio.sleep(0.4)\n    got = await calls.ok('get', '/goals')\n    assert got == []\n",
    "async def f():\n    await asyncio.sleep(0.3)\n    assert len(goals) == 2\n    assert other == []\n",
    "def f():\n    time.sleep(0.5)\n    rows = db.all()\n    assert not rows\n",
])
def test_the_scan_finds(source):
    assert len(wall_clock_findings(source)) == 1


@pytest.mark.parametrize("source", [
    "deadline = time.monotonic() + 5\nassert time.monotonic() < deadline, 'timed out'\n",
    "assert log[0]['durationMs'] >= 0 and 0 <= elapsed\n",
    "assert log[0]['durationMs'] is not None\n",
    "assert result.depth < 10\n",
    "async def f():\n    await asyncio.sleep(0)\n    assert got == []\n",
    "async def f():\n    await asyncio.sleep(0.1)\n    assert got == [1]\n",
    "async def f():\n    await event.wait()\n    assert not pending\n",
    "async def f():\n    await asyncio.sleep(0.1)\n    await done.wait()\n    assert not pending\n",
    "async def f():\n    await asyncio.sleep(0.1)\n    a = 1\n    b = 2\n    assert got == []\n",
    "def f():\n    time.sleep(0)\n    assert not rows\n",
    "assert timeout == 0.2\n",
])
def test_the_scan_leaves_alone(source):
    assert wall_clock_findings(source) == []

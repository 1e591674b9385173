"""Asserts that cannot fail are refused (docs/testing.md, rule 7; issue 39).

Two shapes are found by reading the test modules' syntax trees:

- a status check that accepts a set, ``assert resp.status_code in (401, 403)``: the contract names
  one status, so the test names it (where two inputs get two answers, the test says which gets
  which);
- an assert of a call that returns its own input, ``assert check_filter(tree)``: a valid input is
  returned unchanged, so the assert only says the input was truthy. Compare the result instead.

A function "returns its input" when every ``return`` of it gives back one of its parameters (or
``None``); such functions of ``kernel/`` and ``plugins/`` are found by the same reading, and
``RETURNS_INPUT`` adds the ones that do so through a helper, each proven below.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEST_DIRS = ("tests", "plugin_tests")
CODE_DIRS = ("kernel", "plugins")

# Functions that return their input through another call (the syntax alone does not show it).
RETURNS_INPUT = {
    "check_filter": "FilterGrammar.check returns the tree it was given once its shape is valid",
}

# Exceptions to the rules, each with why: (path, line text) -> reason. Keep it empty if you can.
ALLOWED: dict[tuple[str, str], str] = {}


def _modules(dirs: tuple[str, ...], text_matches: re.Pattern[str] | None = None) -> list[tuple[str, ast.Module]]:
    """The parsed modules under ``dirs`` (only those whose text ``text_matches`` searches, if given)."""
    found = []
    for top in dirs:
        for path in sorted((ROOT / top).rglob("*.py")):
            if ".venv" in path.parts:
                continue
            source = path.read_text()
            if text_matches is None or text_matches.search(source):
                found.append((str(path.relative_to(ROOT)), ast.parse(source, str(path))))
    return found


def asserted_calls(modules: list[tuple[str, ast.Module]]) -> set[str]:
    """The names of the functions the asserts of ``modules`` call directly (``assert f(...)``,
    ``assert not f(...)``, awaited or not): the only ones whose returns matter here."""
    names = set()
    for _, module in modules:
        for node in ast.walk(module):
            if isinstance(node, ast.Assert):
                test = _asserted(node)
                if isinstance(test, ast.Call) and _called_name(test):
                    names.add(_called_name(test))
    return names


def _returns_a_parameter(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Every ``return`` of ``fn`` (not of a nested function) gives back a parameter or ``None``,
    and at least one gives back a parameter."""
    params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]} - {"self", "cls"}
    returns: list[ast.Return] = []
    todo: list[ast.AST] = list(fn.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        if isinstance(node, ast.Return):
            returns.append(node)
        todo.extend(ast.iter_child_nodes(node))
    given_back = [r for r in returns if isinstance(r.value, ast.Name) and r.value.id in params]
    nones = [r for r in returns if r.value is None or (isinstance(r.value, ast.Constant) and r.value.value is None)]
    return bool(given_back) and len(given_back) + len(nones) == len(returns)


def returns_input_functions(names: set[str] | None = None) -> dict[str, str]:
    """Names of module-level functions of the code that return their input, with why. A name
    counts only when every module-level definition of it does (a name is all a test's call shows).
    Given ``names`` (the ones the tests' asserts call), only the files whose text defines one of
    them are parsed: every definition of such a name is in one of those files, so the verdicts on
    ``names`` are the same, for a fraction of the parsing (the suite's slowest pure test)."""
    verdicts: dict[str, list[bool]] = {}
    alternatives = "|".join(map(re.escape, sorted(names or ())))
    defines = None if names is None else re.compile(rf"def (?:{alternatives})\(")
    for _, module in _modules(CODE_DIRS, defines):
        for node in module.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                verdicts.setdefault(node.name, []).append(_returns_a_parameter(node))
    found = {name: "every return gives back a parameter" for name, seen in verdicts.items() if all(seen)}
    return {**found, **RETURNS_INPUT}


def _called_name(call: ast.Call) -> str | None:
    func = call.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def _status_set(test: ast.expr) -> bool:
    """``<something named status> in (a, b, ...)`` with two or more HTTP status literals."""
    for node in ast.walk(test):
        if not isinstance(node, ast.Compare):
            continue
        for op, right in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, ast.In) and isinstance(right, (ast.Tuple, ast.List, ast.Set)) and len(right.elts) > 1 \
                    and all(isinstance(e, ast.Constant) and type(e.value) is int and 100 <= e.value <= 599
                            for e in right.elts) and "status" in ast.unparse(node.left).lower():
                return True
    return False


def _asserted(node: ast.Assert) -> ast.expr:
    """What ``node`` asserts, without a leading ``not`` and ``await``."""
    test = node.test.operand if isinstance(node.test, ast.UnaryOp) and isinstance(node.test.op, ast.Not) \
        else node.test
    return test.value if isinstance(test, ast.Await) else test


def weak_asserts(modules: list[tuple[str, ast.Module]], returns_input: dict[str, str]) -> list[str]:
    """``path:line: why`` for every assert of the two refused shapes."""
    found = []
    for path, module in modules:
        for node in ast.walk(module):
            if not isinstance(node, ast.Assert):
                continue
            status_set = _status_set(node.test)
            test = _asserted(node)
            echoes = isinstance(test, ast.Call) and _called_name(test) in returns_input
            if not (status_set or echoes):
                continue
            text = ast.unparse(node.test)  # only for the asserts found: unparsing every one was slow
            if (path, text) in ALLOWED:
                continue
            if status_set:
                found.append(f"{path}:{node.lineno}: a set of statuses ({text}): name the contract's one status")
            if echoes:
                found.append(f"{path}:{node.lineno}: {_called_name(test)}() returns its input ({text}): "
                             "compare its result")
    return found


def test_no_weak_asserts_in_the_suite():
    tests = _modules(TEST_DIRS)
    found = weak_asserts(tests, returns_input_functions(asserted_calls(tests)))
    assert found == [], "asserts that cannot fail (docs/testing.md, rule 7):\n" + "\n".join(found)


SAMPLE = '''
async def test_x(resp, other, tree):
    assert resp.status_code in (401, 403)
    assert other.status in [400, 404], "why"
    assert check_filter(tree)
    assert not echo(tree)
    assert resp.status_code == 403
    assert resp.status_code in (200,)
    assert check_filter(tree) == tree
    assert len(tree) in (1, 2)
    assert normalise(tree)
'''


def test_the_check_finds_each_shape_and_nothing_else():
    module = ast.parse(SAMPLE)
    found = weak_asserts([("sample.py", module)], {"check_filter": "r", "echo": "r"})
    assert [line.split(": ")[0] for line in found] == ["sample.py:3", "sample.py:4", "sample.py:5", "sample.py:6"]


def test_the_reading_of_returns():
    module = ast.parse('''
def echo(value, *, strict=False):
    if value is None:
        return None
    return value

def other(value):
    if value:
        return value
    return {}

def nothing(value):
    return None

def nested(value):
    def inner():
        return 1
    return value
''')
    verdicts = {fn.name: _returns_a_parameter(fn) for fn in module.body if isinstance(fn, ast.FunctionDef)}
    assert verdicts == {"echo": True, "other": False, "nothing": False, "nested": True}


def test_each_listed_function_returns_its_input():
    from plugins.items.query.filters import check_filter

    tree = {"a": {"_eq": 1}}
    assert check_filter(tree) is tree
    assert set(RETURNS_INPUT) == {"check_filter"}, "prove a new entry here"


def test_each_exception_names_a_real_assert():
    for path, text in ALLOWED:
        module = ast.parse((ROOT / path).read_text())
        assert any(isinstance(n, ast.Assert) and ast.unparse(n.test) == text for n in ast.walk(module)), (path, text)

"""The house rules on imports, read from the source with ``ast`` (nothing is imported or run).

1. The kernel (``kernel/``, ``kernel/testing.py`` included) and the extension SDK import no plugin.
2. A plugin imports another plugin only through that plugin's ``api.py``,
3. and only when its plugin object declares that plugin in ``requires``.

Every import counts: module level or inside a function, ``import x``, ``from x import y``,
relative imports, and ``importlib.import_module("...")`` / ``__import__("...")`` with a literal.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from kernel.plugins import available_plugins

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of everything ``path`` imports; ``from a import b`` gives ``a.b``
    (``b`` may be a module or a name in ``a``; both are checked as ``a.b``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            found += [(node.lineno, f"{module}.{alias.name}") for alias in node.names]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if called in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def _python_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if ".venv" not in p.parts)


def _plugin_requires() -> dict[str, tuple[str, ...]]:
    """Plugin package (folder under ``plugins/``) -> the names its plugin object requires."""
    requires: dict[str, tuple[str, ...]] = {}
    for name, ep in available_plugins().items():
        module_path = ep.value.split(":")[0]
        if module_path.startswith("plugins."):
            package = module_path.split(".")[1]
            assert package == name, f"entry point {name!r} lives in plugins/{package}: name them alike"
            requires[package] = tuple(getattr(ep.load(), "requires", ()) or ())
    return requires


def kernel_breaches() -> list[str]:
    breaches = []
    for folder in (ROOT / "kernel", ROOT / "extensions_sdk"):
        for path in _python_files(folder):
            for line, name in imported_modules(path):
                if name == "plugins" or name.startswith("plugins."):
                    breaches.append(f"{path.relative_to(ROOT)}:{line} imports {name}")
    return breaches


def plugin_breaches(requires: dict[str, tuple[str, ...]]) -> list[str]:
    breaches = []
    for path in _python_files(PLUGINS):
        parts = path.relative_to(PLUGINS).parts
        if len(parts) < 2:
            continue  # plugins/__init__.py
        own = parts[0]
        for line, name in imported_modules(path):
            pieces = name.split(".")
            if pieces[0] != "plugins" or len(pieces) < 2 or pieces[1] == own:
                continue
            other = pieces[1]
            where = f"{path.relative_to(ROOT)}:{line} imports {name}"
            if len(pieces) < 3 or pieces[2] != "api":
                breaches.append(f"{where}: import plugin {other!r} only through plugins.{other}.api")
            elif other not in requires.get(own, ()):
                breaches.append(f"{where}: add {other!r} to the plugin's requires")
    return breaches


def test_the_kernel_imports_no_plugin():
    assert kernel_breaches() == []


def test_plugins_import_each_other_only_through_api_and_requires():
    requires = _plugin_requires()
    assert set(requires) >= {"accounts", "access", "schema", "items"}
    assert plugin_breaches(requires) == []


# The checker itself must see every form of import.

@pytest.mark.parametrize(("source", "expected"), [
    ("import plugins.access.tables", "plugins.access.tables"),
    ("from plugins.access import tables", "plugins.access.tables"),
    ("from plugins.schema.numeric import parse_decimal", "plugins.schema.numeric.parse_decimal"),
    ("def f():\n    from plugins.access.api import membership", "plugins.access.api.membership"),
    ("from ...access import tables", "plugins.access.tables"),
    ("from ..query import ir", "plugins.items.query.ir"),
    ("import importlib\nimportlib.import_module('plugins.schema.types')", "plugins.schema.types"),
])
def test_imports_are_found_in_every_form(monkeypatch, source, expected):
    path = PLUGINS / "items" / "query" / "_layout_probe.py"
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: source)
    assert expected in [name for _, name in imported_modules(path)]


def test_breaches_are_reported(monkeypatch):
    sources = {
        ROOT / "plugins" / "accounts" / "users.py": "from plugins.access.tables import memberships",
        ROOT / "plugins" / "items" / "search.py": "from plugins.schema.api import get_schema",
        ROOT / "plugins" / "utils" / "service.py": "from plugins.items import api",
    }
    monkeypatch.setattr(sys.modules[__name__], "_python_files", lambda folder: sorted(sources))
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: sources[self])
    found = plugin_breaches({"accounts": ("access",), "items": ("schema",), "utils": ()})
    assert len(found) == 2
    assert "users.py:1 imports plugins.access.tables.memberships: import plugin 'access' only through" in found[0]
    assert "service.py:1 imports plugins.items.api: add 'items' to the plugin's requires" in found[1]

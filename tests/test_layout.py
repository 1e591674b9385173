"""The house rules on imports, read from the source with ``ast`` (nothing is imported or run).

1. The kernel (``kernel/``, ``kernel/testing/__init__.py`` included) and the extension SDK import no plugin.
2. A plugin imports another plugin only through that plugin's ``api.py``,
3. and only when its plugin object declares that plugin in ``requires``.
4. No import circles among the modules of the kernel, nor among those of one plugin: a piece two
   modules share lives in a third module both import.
5. The kernel's packages stand on floors (``KERNEL_FLOORS``): base at the bottom, db, events, jobs
   and tenancy below http, metrics and admin above the tables they read; items' rooms likewise.
6. No folder holds more than 15 flat modules (``MAX_FLAT_MODULES``), with no exceptions.

Every rule has a test that runs its checker on a bad example and sees it fail.

Every import counts: module level or inside a function, ``import x``, ``from x import y``,
relative imports, and ``importlib.import_module("...")`` / ``__import__("...")`` with a literal.
For circles, a function-level import counts too (it only hides a circle); imports under
``if TYPE_CHECKING:`` do not (they never run), nor does a package's implicit import of its parent.
"""

from __future__ import annotations

import ast
import functools
import importlib
import re
import sys
from pathlib import Path

import pytest

from kernel.hooks.plugins import available_plugins

ROOT = Path(__file__).resolve().parent.parent
PLUGINS = ROOT / "plugins"


def _module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: Path, *, runtime: bool = False, root: Path = ROOT) -> list[tuple[int, str]]:
    """``(line, dotted name)`` of everything ``path`` imports; ``from a import b`` gives ``a.b``
    (``b`` may be a module or a name in ``a``; both are checked as ``a.b``). ``runtime`` leaves
    out the imports under ``if TYPE_CHECKING:``."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    if runtime:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                node.body = []
    package = _module_name(path, root) if path.name == "__init__.py" else _module_name(path, root).rpartition(".")[0]
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


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


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


def kernel_breaches(root: Path = ROOT) -> list[str]:
    breaches = []
    for folder in (root / "kernel", root / "extensions_sdk"):
        for path in _python_files(folder):
            for line, name in imported_modules(path, root=root):
                if name == "plugins" or name.startswith("plugins."):
                    breaches.append(f"{path.relative_to(root)}:{line} imports {name}")
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


def import_graph(folder: Path, root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the modules of ``folder`` it imports (a name imported from a module is that module)."""
    paths = {_module_name(p, root): p for p in _python_files(folder)}
    graph: dict[str, set[str]] = {}
    for module, path in paths.items():
        targets = set()
        for _, name in imported_modules(path, runtime=True, root=root):
            while name and name not in paths:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module
    (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def _packages() -> list[Path]:
    return [ROOT / "kernel", *sorted(p for p in PLUGINS.iterdir() if (p / "__init__.py").exists())]


def test_the_kernel_imports_no_plugin():
    assert kernel_breaches() == []


def test_plugins_import_each_other_only_through_api_and_requires():
    requires = _plugin_requires()
    assert set(requires) >= {"accounts", "access", "schema", "items"}
    assert plugin_breaches(requires) == []


@pytest.mark.parametrize("folder", _packages(), ids=lambda p: p.name)
def test_no_import_circles(folder):
    assert import_cycles(import_graph(folder)) == []


# The checker itself must see every form of import.

@pytest.mark.parametrize(("source", "expected"), [
    ("import plugins.access.tables", "plugins.access.tables"),
    ("from plugins.access import tables", "plugins.access.tables"),
    ("from plugins.schema.fieldtypes.numeric import parse_decimal", "plugins.schema.fieldtypes.numeric.parse_decimal"),
    ("def f():\n    from plugins.access.api import membership", "plugins.access.api.membership"),
    ("from ...access import tables", "plugins.access.tables"),
    ("from ..query import ir", "plugins.items.query.ir"),
    ("import importlib\nimportlib.import_module('plugins.schema.fieldtypes.types')", "plugins.schema.fieldtypes.types"),
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


def test_import_circles_are_found(monkeypatch):
    folder = PLUGINS / "probe"
    sources = {
        folder / "__init__.py": "",
        folder / "a.py": "from plugins.probe.b import f",
        folder / "b.py": "def g():\n    from plugins.probe import c",
        folder / "c.py": "import plugins.probe.a\nfrom plugins.probe import d",
        folder / "d.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from plugins.probe import c",
        folder / "e.py": "from plugins.probe.d import x",
    }
    monkeypatch.setattr(sys.modules[__name__], "_python_files", lambda _: sorted(sources))
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: sources[self])
    graph = import_graph(folder)
    assert graph["plugins.probe.d"] == set()
    assert import_cycles(graph) == [["plugins.probe.a", "plugins.probe.b", "plugins.probe.c"]]
    assert import_cycles({"x": {"y"}, "y": {"x"}, "z": {"z"}, "w": {"x"}}) == [["x", "y"]]


def test_plugin_test_modules_have_unique_names():
    # plugin_tests/<area>/ are not packages: pytest imports each test module by its bare name,
    # so two areas' test_x.py collide ("import file mismatch") and the run stops.
    names: dict[str, list[str]] = {}
    for path in sorted((ROOT / "plugin_tests").rglob("*.py")):
        if path.name != "__init__.py" and not (path.parent / "__init__.py").exists():
            names.setdefault(path.name, []).append(str(path.relative_to(ROOT)))
    assert {n: p for n, p in names.items() if len(p) > 1 and n != "conftest.py"} == {}


# ---------------------------------------------------------------------------- the kernel names no feature
# Besides importing none, a kernel module names no plugin in its code: no ``plugins.<name>`` module
# path and no path of a plugin's routes (``/api/v1/auth/login``, ``f"/items/{c}"``) in a string
# literal. Docstrings and comments may cite them; code asks hooks instead. Test support of a
# plugin's routes lives in that plugin's own pytest plugin (``plugins/<name>/testing.py``, which
# adds its helpers to the harness with ``kernel.testing.harness_helper``).

API_PREFIX = "/api/v1"


def _docstrings(tree: ast.AST) -> set[int]:
    """``id`` of every docstring node (the first string statement of a module, class or function)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def string_literals(source: str) -> list[tuple[int, str]]:
    """``(line, text)`` of the string literals of ``source`` but its docstrings; an f-string's
    replacement fields read ``{}``."""
    tree = ast.parse(source)
    skip = _docstrings(tree)
    inside: set[int] = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            parts = []
            for value in node.values:
                inside.add(id(value))
                if isinstance(value, ast.Constant):
                    parts.append(str(value.value))
                else:
                    parts.append("{}")
            found.append((node.lineno, "".join(parts)))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip \
                and id(node) not in inside:
            found.append((node.lineno, node.value))
    return found


def _segments(path: str) -> list[str]:
    path = path.split("?", 1)[0]
    if path.startswith(API_PREFIX + "/"):
        path = path[len(API_PREFIX):]
    return [s for s in path.strip("/").split("/")]


def _matches(literal: list[str], template: list[str]) -> bool:
    """Same length, each segment equal or a parameter on either side, and one fixed segment equal."""
    pairs = list(zip(literal, template, strict=False))
    return len(literal) == len(template) and all(a == b or "{" in a or "{" in b for a, b in pairs) \
        and any(a == b and "{" not in a for a, b in pairs)


def plugin_routes(tmp_path: Path) -> dict[str, str]:
    """Every route template a plugin registers (an app with every installed plugin) -> its plugin."""
    from kernel.app import build_kernel
    from kernel.base.settings import Settings

    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    owners = set(available_plugins())
    routes = {}
    for impl in kernel.pm.hook.register_routes.get_hookimpls():
        if impl.plugin_name in owners:
            for route in impl.function(kernel=kernel) or ():
                routes[route.template] = impl.plugin_name
    return routes


def naming_breaches(sources: dict[str, str], routes: dict[str, str]) -> list[tuple[str, int, str, str]]:
    """``(file, line, literal, what it names)`` for each literal of ``sources`` (file -> text)
    naming a plugin module (``plugins.<name>...``) or a route of a plugin."""
    templates = [(_segments(t), t, owner) for t, owner in routes.items()]
    breaches = []
    for where, source in sources.items():
        for line, text in string_literals(source):
            if text.startswith("plugins."):
                breaches.append((where, line, text, f"the module {text}"))
                continue
            if text.startswith("{}/"):  # f"{API}/extensions/upload"
                text = API_PREFIX + text[2:]
            if not text.startswith("/") or " " in text:
                continue
            literal = _segments(text)
            for segments, template, owner in templates:
                if literal[0] and _matches(literal, segments):
                    breaches.append((where, line, text, f"a route of {owner} ({template})"))
                    break
    return breaches


def _kernel_sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8") for p in _python_files(ROOT / "kernel")}


def test_the_kernel_names_no_plugin_nor_its_routes(tmp_path):
    found = naming_breaches(_kernel_sources(), plugin_routes(tmp_path))
    assert [f"{where}:{line} names {text!r}, {what}" for where, line, text, what in found] == []


def test_naming_a_plugin_or_its_routes_is_found():
    routes = {"/api/v1/auth/login": "accounts", "/api/v1/items/{collection}/{item_id}": "items"}
    source = '''"""Docstrings may cite /auth/login and plugins.items."""
LOGIN = "/api/v1/auth/login"
def get(c, i):
    return f"/items/{c}/{i}"
MODULE = "plugins.items.api"
UPLOAD = f"{API}/items/{c}/{i}"
FINE = ("/sites/x/y", "/authx/login", "plain words", "/api/v1/sites", "/items/x", "plugins")
'''
    found = naming_breaches({"kernel/probe.py": source}, routes)
    assert sorted(found) == [
        ("kernel/probe.py", 2, "/api/v1/auth/login", "a route of accounts (/api/v1/auth/login)"),
        ("kernel/probe.py", 4, "/items/{}/{}", "a route of items (/api/v1/items/{collection}/{item_id})"),
        ("kernel/probe.py", 5, "plugins.items.api", "the module plugins.items.api"),
        ("kernel/probe.py", 6, "/api/v1/items/{}/{}", "a route of items (/api/v1/items/{collection}/{item_id})"),
    ]


# ---------------------------------------------------------------------------- items' floors
# The items plugin's folders follow its flow. A floor holds one or more rooms (a module or a
# package of the plugin); a room may import itself and the rooms of the floors below, never a
# room of a floor above, nor another room of its own floor (a function-level import counts; one
# under ``if TYPE_CHECKING:`` does not). The façade (``service.py``) sits beside ``api.py``, above
# read, write, history and search; read and write share a floor, so the write path reads nothing
# of ``read/`` (the live rows and the read hook it needs are ``core/``'s).

ITEMS_FLOORS: tuple[tuple[str, ...], ...] = (  # bottom to top
    ("errors", "tables", "migrations"),
    ("query",),
    ("core",),  # what read and write share: context, rows, guard, grants, rowfilter, records, reveal
    ("read", "write"),
    ("search",),
    ("history",),
    ("upkeep",),
    ("service", "erase"),  # the façade; a subject's erasure across items, history and search
    ("live_reach",),  # whether a live reader may see an event's item (reads through the façade)
    ("api",),
    ("http",),
    ("plugin", "testing"),
)


def room_of(module: str, prefix: str, floors: tuple[tuple[str, ...], ...]) -> tuple[int, str] | None:
    """``(floor, room)`` of ``module`` (a dotted name under ``prefix``), by its first name below
    it; ``None`` for the package itself (its ``__init__`` holds only the room sign)."""
    rest = module[len(prefix):].lstrip(".")
    if not rest:
        return None
    room = rest.split(".")[0]
    for level, names in enumerate(floors):
        if room in names:
            return level, room
    raise AssertionError(f"{module} stands on no floor: add {room!r} to the floors of {prefix}")


def floor_breaches(folder: Path, floors: tuple[tuple[str, ...], ...], root: Path = ROOT) -> list[str]:
    """``module -> imported module`` for each import of ``folder``'s modules that runs up a floor
    or across to another room of the same floor."""
    prefix = _module_name(folder / "__init__.py", root)
    found = []
    for module, targets in sorted(import_graph(folder, root).items()):
        here = room_of(module, prefix, floors)
        for target in sorted(targets):
            there = room_of(target, prefix, floors)
            if here is None or there is None or there[1] == here[1] or there[0] < here[0]:
                continue
            way = "up to" if there[0] > here[0] else "across to"
            found.append(f"{module} -> {target} ({here[1]} imports {way} {there[1]})")
    return found


def test_items_imports_run_only_down_its_floors():
    assert floor_breaches(PLUGINS / "items", ITEMS_FLOORS) == []


def test_upward_and_sideways_imports_are_found(monkeypatch):
    folder = PLUGINS / "probe"
    sources = {
        folder / "__init__.py": "",
        folder / "service.py": "from plugins.probe.read import listing\nfrom plugins.probe.write import path",
        folder / "read" / "__init__.py": "",
        folder / "read" / "listing.py": "from plugins.probe import tables\nfrom plugins.probe.read import plan",
        folder / "read" / "plan.py": "",
        folder / "write" / "__init__.py": "",
        folder / "write" / "path.py": "def f():\n    from plugins.probe import service\n"
                                      "from plugins.probe.read.listing import x",
        folder / "tables.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from plugins.probe import read",
    }
    monkeypatch.setattr(sys.modules[__name__], "_python_files", lambda _: sorted(sources))
    monkeypatch.setattr(Path, "read_text", lambda self, encoding=None: sources[self])
    floors = (("tables",), ("read", "write"), ("service",))
    assert floor_breaches(folder, floors) == [
        "plugins.probe.write.path -> plugins.probe.read.listing (write imports across to read)",
        "plugins.probe.write.path -> plugins.probe.service (write imports up to service)",
    ]
    with pytest.raises(AssertionError, match="plugins.probe.service stands on no floor"):
        floor_breaches(folder, floors[:2])


# ---------------------------------------------------------------------------- plugins meet through functions
# A plugin imports another plugin's ``api`` and nothing else (above); an ``api`` module exports
# functions and types, never a table (nor a join or a subquery built at import); no plugin's code
# names another plugin's table in SQL (a string literal, docstrings aside); and a foreign key of a
# plugin's tables points only at the kernel's tables, its own, or those of a plugin it requires.
# Released migrations are history and are not read.

_TABLE_SQL = re.compile(r"""create_table\(\s*["'](\w+)["']|CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)""",
                        re.IGNORECASE)


_WORD = re.compile(r"\w+")


@functools.cache
def _parsed(source: str) -> ast.Module:
    """``source``'s tree, parsed once for the rules below (they read the same files)."""
    return ast.parse(source)


def _plugin_code(package: Path) -> list[Path]:
    return [p for p in _python_files(package) if "migrations" not in p.relative_to(package).parts]


def table_owners() -> dict[str, str]:
    """SQL table name -> the plugin that defines it (a ``Table(...)`` in its code, or a table its
    migrations create)."""
    owners: dict[str, str] = {}
    for package in _packages()[1:]:
        for path in _python_files(package):
            source = path.read_text(encoding="utf-8")
            if "migrations" in path.relative_to(package).parts:
                owners.update({a or b: package.name for a, b in _TABLE_SQL.findall(source)})
                continue
            if "Table(" not in source:
                continue
            for node in ast.walk(_parsed(source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Table" \
                        and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    owners[node.args[0].value] = package.name
    return owners


def _foreign_key_targets(tree: ast.AST) -> list[tuple[int, str, int]]:
    """``(line, table, id of the literal)`` of every ``ForeignKey("table.column")``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "ForeignKey" \
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            found.append((node.lineno, node.args[0].value.split(".")[0], id(node.args[0])))
    return found


def sql_breaches(sources: dict[str, str], owners: dict[str, str],
                 requires: dict[str, tuple[str, ...]]) -> list[str]:
    """What ``sources`` (``plugins/<name>/...`` -> text) say of other plugins' tables: a literal
    naming one, or a foreign key to one of a plugin not required."""
    breaches = []
    for where, source in sorted(sources.items()):
        own = Path(where).parts[1]
        if "ForeignKey" not in source and not any(owners[w] != own for w in set(_WORD.findall(source)) & owners.keys()):
            continue  # names no table of another plugin anywhere: nothing to parse
        tree = _parsed(source)
        keys = _foreign_key_targets(tree)
        for line, table, _ in keys:
            owner = owners.get(table)
            if owner not in (None, own) and owner not in requires.get(own, ()):
                breaches.append(f"{where}:{line} has a foreign key to {table} of {owner}, which {own} does not require")
        skip = _docstrings(tree) | {key for _, _, key in keys}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
                for table in _WORD.findall(node.value):
                    if owners.get(table, own) != own:
                        breaches.append(f"{where}:{node.lineno} names {table}, a table of {owners[table]}")
    return breaches


def test_api_modules_export_no_tables():
    from sqlalchemy.sql.expression import FromClause

    exported = {}
    for package in _packages()[1:]:
        if (package / "api.py").exists():
            api = importlib.import_module(f"plugins.{package.name}.api")
            exported[package.name] = sorted(n for n, v in vars(api).items()
                                            if not n.startswith("_") and isinstance(v, FromClause))
    assert {"access", "accounts", "schema", "items"} <= set(exported)
    assert {name: tables for name, tables in exported.items() if tables} == {}


def test_no_plugin_names_another_plugins_table():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
               for package in _packages()[1:] for p in _plugin_code(package)}
    owners = table_owners()
    assert owners["svc_users"] == "accounts" and owners["svc_memberships"] == "access"
    assert owners["svc_search_fts"] == "items"  # made by a migration's SQL
    assert sql_breaches(sources, owners, _plugin_requires()) == []


def test_naming_another_plugins_table_is_found():
    owners = {"svc_users": "accounts", "svc_memberships": "access", "svc_items": "items"}
    sources = {
        "plugins/privacy/consent.py": '"""Joins svc_users in a docstring: fine."""\n'
                                      'Q = "SELECT id FROM svc_users JOIN svc_memberships USING (id)"\n',
        "plugins/access/tables.py": 'from sqlalchemy import ForeignKey\nK = ForeignKey("svc_users.id")\n',
        "plugins/privacy/tables.py": 'K = ForeignKey("svc_users.id")\nM = "svc_items_x svc_itemsy"\n',
        "plugins/items/search.py": 'Q = text("SELECT * FROM svc_items")\n',
    }
    found = sql_breaches(sources, owners, {"privacy": ("accounts", "access")})
    assert found == [
        "plugins/access/tables.py:2 has a foreign key to svc_users of accounts, which access does not require",
        "plugins/privacy/consent.py:2 names svc_users, a table of accounts",
        "plugins/privacy/consent.py:2 names svc_memberships, a table of access",
    ]


# -- house38: shared pieces own the repeated shapes (issue 38, point 5)

_SITE_COLUMN = re.compile(r"""Column\(\s*["']site_id["']\s*,\s*(?:sa\.)?String\(63\)\s*,""")
# The standard columns kernel.db.meta builds, spelled out: (pattern, what to say).
_SPELLED_COLUMNS = (
    (_SITE_COLUMN, "the site_id column; use site_column()"),
    (re.compile(r"""Column\(\s*["']id["']\s*,\s*(?:sa\.)?String\(36\)\s*,\s*primary_key=True\s*\)"""),
     "the id column; use id_column()"),
    (re.compile(r"""Column\(\s*["'](?:created|updated)_at["']\s*,\s*(?:sa\.)?DateTime\(timezone=True\)\s*,"""
                r"""\s*nullable=False\s*\)"""),
     "a created_at/updated_at column; use timestamp_column() or timestamps()"),
)


def standard_column_breaches(sources: dict[str, str]) -> list[str]:
    """Places that spell out a standard column (``site_id``, the ``id`` key, ``created_at`` and
    ``updated_at``) instead of calling its helper in ``kernel.db.meta``, and plugin modules that
    register the migrations folder the convention already finds."""
    found = [f"{path}:{source.count(chr(10), 0, m.start()) + 1} spells {what}"
             for path, source in sources.items() for pattern, what in _SPELLED_COLUMNS
             for m in pattern.finditer(source)]
    found += [f"{path} implements register_migrations for its own migrations/ folder (found by convention)"
              for path, source in sources.items()
              if path.startswith("plugins/") and "def register_migrations" in source]
    return sorted(found)


def test_shared_pieces_are_used():
    sources = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
               for folder in (ROOT / "kernel", PLUGINS) for p in _python_files(folder)
               if p != ROOT / "kernel" / "db" / "meta.py"}
    assert standard_column_breaches(sources) == []


def test_a_spelled_out_site_column_is_found():
    sources = {
        "plugins/notes/tables.py": 'T = Table("n", metadata,\n    Column("site_id", String(63), nullable=False))\n',
        "plugins/notes/migrations/versions/notes_0001_n.py":
            'sa.Column(\n    "site_id", sa.String(63), sa.ForeignKey("svc_sites.id"), primary_key=True)\n',
        "plugins/notes/plugin.py": "@hookimpl\ndef register_migrations():\n    return '.'\n",
        "plugins/fine/tables.py": 'T = Table("f", metadata, id_column(), site_column(), Column("site", String(63)),\n'
                                  '    Column("id2", String(36), primary_key=True), *timestamps(),\n'
                                  '    Column("created_at", DateTime(timezone=True), nullable=True))\n',
        "plugins/notes/other.py": 'T = Table("o", metadata, Column("id", String(36), primary_key=True),\n'
                                  '    sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False))\n',
    }
    assert standard_column_breaches(sources) == [
        "plugins/notes/migrations/versions/notes_0001_n.py:1 spells the site_id column; use site_column()",
        "plugins/notes/other.py:1 spells the id column; use id_column()",
        "plugins/notes/other.py:2 spells a created_at/updated_at column; use timestamp_column() or timestamps()",
        "plugins/notes/plugin.py implements register_migrations for its own migrations/ folder (found by convention)",
        "plugins/notes/tables.py:2 spells the site_id column; use site_column()",
    ]


# -- house38: the kernel's floors, and no crowded folder (issue 38, points 2 and 6)
# The kernel's packages stand on floors, like items' rooms: a package (or a root module) imports
# its own modules and those of the floors below, never a floor above nor a package of its own
# floor. The base floor (ids, the JSON codec, errors, the settings reader...) imports nothing of
# the kernel; db, events, jobs and tenancy never reach http; the metrics that read several
# kernel tables and the admin routes stand above them. docs/architecture.md draws the same floors.

KERNEL_FLOORS: tuple[tuple[str, ...], ...] = (  # bottom to top
    ("base", "version"),  # ids, timestamps, errors, JSON codec, settings, secrets, backoff, ...
    ("hooks", "redisio", "storage", "mailer"),  # hookspecs and the plugin manager; Redis plumbing
    ("cache", "db"),  # the caches (and the per-site caches); the engine, metadata, migrations
    ("auth", "tenancy"),  # principals, tokens, passwords; sites, the site-scoped query helper
    ("events", "jobs", "messaging"),  # the event log; the job queue; the bus, topics, slots
    ("core",),  # the Kernel, the request context, the unit of work
    ("policy", "metrics"),  # access, filter grammar, audit, privacy; /metrics figures
    ("http",),  # routing, middleware, media, errors, CORS, WebSocket, SSE, rate limits, OpenAPI
    ("admin", "workers"),  # /sites and /admin/jobs; svc serve --workers N (broker, fan-out gate)
    ("app",),  # create_app: puts the floors together
    ("asgi", "sealed", "testing"),  # the uvicorn app; the boot check of sealed secrets; the harness
    ("cli",),  # the svc command
)


def _floor(name: str) -> int:
    return next(level for level, rooms in enumerate(KERNEL_FLOORS) if name in rooms)


def test_the_kernel_imports_run_only_down_its_floors():
    assert floor_breaches(ROOT / "kernel", KERNEL_FLOORS) == []


def test_the_kernel_floors_keep_http_above_the_data():
    assert KERNEL_FLOORS[0] == ("base", "version")
    assert all(_floor("http") > _floor(name) for name in ("base", "db", "events", "jobs", "tenancy", "core"))
    assert _floor("metrics") > max(_floor("events"), _floor("jobs")) and _floor("admin") > _floor("http")


def _write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_kernel_floor_breach_is_found_in_a_tree(tmp_path):
    _write_tree(tmp_path, {
        "kernel/__init__.py": "",
        "kernel/base/__init__.py": "",
        "kernel/base/errors.py": "",
        "kernel/db/__init__.py": "",
        "kernel/db/engine.py": "from kernel.base import errors\n"
                               "def codec():\n    from kernel.http.media import loads\n",
        "kernel/http/__init__.py": "",
        "kernel/http/media.py": "from kernel.db import engine\n",
        "kernel/jobs/__init__.py": "",
        "kernel/jobs/queue.py": "from kernel.db.engine import codec\nfrom kernel.events import log\n",
        "kernel/events/__init__.py": "",
        "kernel/events/log.py": "",
    })
    floors = (("base",), ("db",), ("events", "jobs"), ("http",))
    assert floor_breaches(tmp_path / "kernel", floors, tmp_path) == [
        "kernel.db.engine -> kernel.http.media (db imports up to http)",
        "kernel.jobs.queue -> kernel.events.log (jobs imports across to events)",
    ]
    # the same function-level import closes a circle, and the circle check sees it
    assert import_cycles(import_graph(tmp_path / "kernel", tmp_path)) == [["kernel.db.engine", "kernel.http.media"]]


def test_a_kernel_import_of_a_plugin_is_found_in_a_tree(tmp_path):
    _write_tree(tmp_path, {
        "kernel/__init__.py": "",
        "kernel/app.py": "def boot():\n    from plugins.items import api\n",
        "kernel/fine.py": "from kernel import app\nimport pluggy\n",
        "extensions_sdk/__init__.py": "import plugins.schema.fieldtypes.types\n",
    })
    assert kernel_breaches(tmp_path) == [
        "kernel/app.py:2 imports plugins.items.api",
        "extensions_sdk/__init__.py:1 imports plugins.schema.fieldtypes.types",
    ]


# A folder holds at most MAX_FLAT_MODULES modules beside its ``__init__.py`` (subpackages do not
# count; released migrations are history and do not either): past that, group them by concern
# into packages. No folder is exempt (issue 38 grouped the kernel's and then the plugins').

MAX_FLAT_MODULES = 15


def flat_modules(root: Path) -> dict[str, int]:
    """Folder (relative to ``root``) -> how many modules it holds beside its ``__init__.py``, for
    every folder of the kernel, the plugins and the SDK."""
    counts: dict[str, int] = {}
    for top in ("kernel", "plugins", "extensions_sdk"):
        for path in _python_files(root / top):
            folder = path.parent.relative_to(root)
            if path.name == "__init__.py" or folder.parts[-2:] == ("migrations", "versions"):
                continue
            counts[folder.as_posix()] = counts.get(folder.as_posix(), 0) + 1
    return counts


def crowded_folders(counts: dict[str, int]) -> list[str]:
    return [f"{folder} holds {n} flat modules (at most {MAX_FLAT_MODULES}): group them into packages"
            for folder, n in sorted(counts.items()) if n > MAX_FLAT_MODULES]


def test_no_folder_is_crowded():
    counts = flat_modules(ROOT)
    assert counts["kernel"] <= 8 and counts["kernel/base"] >= 10  # the root groups its modules by concern
    assert crowded_folders(counts) == []


def test_a_crowded_folder_is_found_in_a_tree(tmp_path):
    files = {"kernel/__init__.py": "", "plugins/notes/__init__.py": "", "plugins/big/__init__.py": ""}
    files.update({f"kernel/m{i}.py": "" for i in range(16)})
    files.update({f"plugins/notes/n{i}.py": "" for i in range(15)})
    files.update({f"plugins/notes/migrations/versions/notes_{i:04}.py": "" for i in range(30)})
    files.update({f"plugins/big/b{i}.py": "" for i in range(21)})
    _write_tree(tmp_path, files)
    counts = flat_modules(tmp_path)
    assert counts["plugins/notes"] == 15 and "plugins/notes/migrations/versions" not in counts
    assert crowded_folders(counts) == [
        "kernel holds 16 flat modules (at most 15): group them into packages",
        "plugins/big holds 21 flat modules (at most 15): group them into packages",
    ]


# docs/architecture.md draws the house as it stands: its drawings of the kernel's floors and of
# the plugins' requirement graph are made from the same sources as the checks above, and kept equal.

ARCHITECTURE = ROOT / "docs" / "architecture.md"


def doc_block(text: str, marker: str) -> str:
    """The fenced block that follows the ``<!-- marker: ... -->`` comment in ``text``."""
    found = re.search(r"<!-- " + re.escape(marker) + r"\b[^\n]*-->\n```\n(.*?)\n```", text, re.DOTALL)
    assert found, f"docs/architecture.md has no block under <!-- {marker} -->"
    return found.group(1)


def floors_drawing(floors: tuple[tuple[str, ...], ...]) -> str:
    """The floors top to bottom, one line each: ``floor 11  cli``."""
    return "\n".join(f"floor {level:<3}" + "  ".join(rooms) for level, rooms in reversed(list(enumerate(floors))))


def test_the_architecture_doc_draws_the_kernel_floors():
    drawing = floors_drawing(KERNEL_FLOORS)
    assert doc_block(ARCHITECTURE.read_text(encoding="utf-8"), "kernel-floors") == drawing, (
        "docs/architecture.md: draw the kernel's floors as KERNEL_FLOORS has them:\n" + drawing)


def test_the_architecture_doc_draws_the_plugin_graph(tmp_path):
    from kernel.base.settings import Settings
    from kernel.cli import format_requirement_graph, plugin_rows

    rows = plugin_rows(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    drawing = format_requirement_graph(rows, width=100)
    assert "floor 0" in drawing and {row["name"] for row in rows} >= {"accounts", "access", "items", "schema"}
    assert doc_block(ARCHITECTURE.read_text(encoding="utf-8"), "plugin-graph") == drawing, (
        "docs/architecture.md: the plugin graph is what `svc plugins list --graph` prints at 100 columns:\n" + drawing)


def test_a_stale_drawing_is_found():
    text = "<!-- kernel-floors: kept -->\n```\nfloor 1  http\nfloor 0  base\n```\n"
    assert doc_block(text, "kernel-floors") == "floor 1  http\nfloor 0  base"
    assert doc_block(text, "kernel-floors") != floors_drawing((("base",), ("db",), ("http",)))
    with pytest.raises(AssertionError, match="no block under <!-- plugin-graph -->"):
        doc_block(text, "plugin-graph")

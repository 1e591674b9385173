"""Alembic runner: one branch per plugin (its ``migrations/`` folder), upgraded to all heads.

A plugin's branch is found by convention: the ``migrations/versions`` folder beside the plugin's
module (``plugins/<area>/plugin.py`` -> ``plugins/<area>/migrations``). A plugin whose folder
lives elsewhere names it with the ``register_migrations`` hook (the kernel's own does).

Revision ids are ``<plugin>_NNNN_<slug>`` (the kernel's ``kernel_NNNN_<slug>``), at most 32
characters (the width of Alembic's ``version_num`` column). A revision that was renamed says
so in ``renamed_from`` (one old id or a tuple); before upgrading, ``upgrade`` rewrites old ids
found in ``alembic_version`` to the new ones, so databases stamped before a rename keep upgrading.

Alembic is imported only where a migration runs. A database with every revision applied is
recognised without it (``revision_graph`` reads the revision files' ``revision``,
``down_revision`` and ``depends_on`` as text; ``current_heads`` reads ``alembic_version``):
importing Alembic's runtime (its dialect modules, Mako, and Pygments where installed) was about a
tenth of every ``svc`` command's CPU.
"""

from __future__ import annotations

import ast
import logging
import re
import types
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, inspect, text

from kernel.db.engine import PG_COMMAND_TIMEOUT, PG_CONNECT_TIMEOUT, sync_engine

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger("svc.migrate")
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "alembic")
# The files Alembic loads as revisions from a version location (alembic.script.base,
# ``_only_source_rev_file``; not recursive, no sourceless files).
_REVISION_FILE = re.compile(r"(?!\.\#|__init__)(.*\.py)$")


def conventional_migrations(plugin: Any) -> str | None:
    """The ``migrations`` folder beside a plugin module, if it holds a ``versions`` folder: the
    plugin's Alembic branch by convention. ``None`` for plugin objects that are not modules (a
    test's temporary plugin) and for modules without the folder."""
    file = getattr(plugin, "__file__", None) if isinstance(plugin, types.ModuleType) else None
    if not file:
        return None
    folder = Path(file).resolve().parent / "migrations"
    return str(folder) if (folder / "versions").is_dir() else None


def migration_paths(pm: Any) -> list[str]:
    """Every enabled plugin's ``migrations/versions`` folder (the kernel's own included): found by
    convention beside each registered plugin module, plus any named by ``register_migrations``."""
    folders = [conventional_migrations(plugin) for plugin in pm.get_plugins()]
    folders += pm.hook.register_migrations()
    return sorted({str(Path(f) / "versions") for f in folders if f and (Path(f) / "versions").is_dir()})


def alembic_config(paths: list[str]) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    cfg.set_main_option("version_locations", " ".join(paths))
    cfg.set_main_option("path_separator", "space")
    return cfg


def renamed_revisions(cfg: Config) -> dict[str, str]:
    """Old revision id -> current id, from each script's ``renamed_from``."""
    from alembic.script import ScriptDirectory

    renamed: dict[str, str] = {}
    for script in ScriptDirectory.from_config(cfg).walk_revisions():
        old = getattr(script.module, "renamed_from", None) or ()
        for old_id in (old,) if isinstance(old, str) else old:
            renamed[old_id] = script.revision
    return renamed


def restamp_renamed(conn: Connection, renamed: dict[str, str]) -> list[str]:
    """Rewrite old revision ids in ``alembic_version`` to their new ids; returns the old ids found."""
    if not renamed or not inspect(conn).has_table("alembic_version"):
        return []
    stamped = [row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version"))]
    found = [rev for rev in stamped if rev in renamed]
    for old_id in found:
        conn.execute(text("UPDATE alembic_version SET version_num = :new WHERE version_num = :old"),
                     {"new": renamed[old_id], "old": old_id})
    if found:
        log.info("alembic_version: renamed %s", ", ".join(f"{o} -> {renamed[o]}" for o in found))
    return found


def revision_graph(paths: list[str]) -> dict[str, tuple[str, ...]] | None:
    """Each revision in ``paths`` with the revisions it needs applied first (its ``down_revision``
    and ``depends_on``), read from the files' text as Alembic would find them, without importing
    the files or Alembic. ``None`` where only Alembic can tell: a file that does not state these
    as literals at its top level, a revision declared twice, or one that names a revision no file
    has (Alembic refuses that)."""
    graph: dict[str, tuple[str, ...]] = {}
    for folder in paths:
        if not Path(folder).is_dir():
            continue
        for path in sorted(Path(folder).iterdir()):
            if not path.is_file() or not _REVISION_FILE.match(path.name):
                continue
            found = _revision_of(path)
            if found is None or found[0] in graph:
                return None
            revision, down, depends = found
            graph[revision] = (*down, *depends)
    if any(needed not in graph for needs in graph.values() for needed in needs):
        return None
    return graph


def at_heads(graph: dict[str, tuple[str, ...]], stamped: list[str]) -> bool:
    """Whether ``alembic upgrade heads`` would run nothing on a database stamped with ``stamped``:
    every revision of ``graph`` is a stamped one or needed by one (Alembic's own test, with
    ``depends_on`` counted), and the graph has no cycle (Alembic refuses one)."""
    if not stamped or any(rev not in graph for rev in stamped):
        return False
    applied: set[str] = set()
    todo = list(stamped)
    while todo:
        rev = todo.pop()
        if rev not in applied:
            applied.add(rev)
            todo.extend(graph[rev])
    return len(applied) == len(graph) and not _has_cycle(graph)


def _has_cycle(graph: dict[str, tuple[str, ...]]) -> bool:
    state: dict[str, int] = {}  # 1: on the current path, 2: done

    def visit(rev: str) -> bool:
        state[rev] = 1
        for needed in graph[rev]:
            if state.get(needed) == 1 or (needed not in state and visit(needed)):
                return True
        state[rev] = 2
        return False

    return any(rev not in state and visit(rev) for rev in graph)


_STATED = ("revision", "down_revision", "depends_on")
_NAMESPACE_WRITERS = ("globals", "vars", "setattr", "exec", "eval", "__import__")


def _revision_of(path: Path) -> tuple[str, tuple[str, ...], tuple[str, ...]] | None:
    """A revision file's ``revision``, ``down_revision`` and ``depends_on`` (each of the last two
    none, one or several), or ``None`` where the module could set them otherwise than by one
    literal assignment at its top level."""
    try:
        tree = ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return None
    values: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and _stores(node):
                return None  # set in an ``if``, a ``for``, an import ...: the module decides at run time
            continue
        if _stores(value):  # a walrus in the value
            return None
        for target in targets:
            if not isinstance(target, ast.Name):
                if _stores(target):
                    return None
                continue
            if target.id in _STATED:
                if target.id in values:
                    return None
                try:
                    values[target.id] = ast.literal_eval(value)
                except ValueError:
                    return None
    for n in ast.walk(tree):  # set from inside a function, or through the module's namespace
        if isinstance(n, ast.Global) and set(n.names) & set(_STATED):
            return None
        if isinstance(n, ast.Name) and n.id in _NAMESPACE_WRITERS:
            return None
    revision, down = values.get("revision"), values.get("down_revision", ...)
    down, depends = _revision_ids(down), _revision_ids(values.get("depends_on"))
    if not isinstance(revision, str) or down is None or depends is None:
        return None
    return revision, down, depends


def _stores(node: ast.AST) -> bool:
    """Whether ``node`` binds ``revision``, ``down_revision`` or ``depends_on`` anywhere in it."""
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)) and n.id in _STATED:
            return True
        if isinstance(n, ast.alias) and (n.name == "*" or (n.asname or n.name) in _STATED):
            return True
    return False


def _revision_ids(value: Any) -> tuple[str, ...] | None:
    """``None``, one id or a sequence of ids as a tuple; ``None`` for anything else (a missing
    ``down_revision`` is passed as ``...``: Alembic requires it)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        return tuple(value)
    return None


def stamped_revisions(conn: Connection) -> list[str]:
    """The revisions ``alembic_version`` holds (none where the table is missing), sorted."""
    if not inspect(conn).has_table("alembic_version"):
        return []
    return sorted(row[0] for row in conn.execute(text("SELECT version_num FROM alembic_version")))


def upgrade(database_url: str, paths: list[str], *, connect_timeout: int = PG_CONNECT_TIMEOUT,
            command_timeout: float = PG_COMMAND_TIMEOUT) -> None:
    """Create or upgrade the schema: ``alembic upgrade heads`` over the given branches, after
    rewriting revision ids renamed since the database was stamped (in the same transaction).
    A database where every revision of ``paths`` is applied already is left alone without
    importing Alembic (``revision_graph``, ``at_heads``): Alembic would find nothing to run.

    ``connect_timeout`` and ``command_timeout`` bound PostgreSQL's answers as they do the app's
    (``kernel.db.engine.db_timeouts``: ``SVC_DB_CONNECT_TIMEOUT``, ``SVC_DB_COMMAND_TIMEOUT``):
    a server that does not answer fails the migration with ``OperationalError`` instead of
    hanging it, and so does one statement running longer than ``command_timeout`` (0: none)."""
    engine = sync_engine(database_url, connect_timeout=connect_timeout, command_timeout=command_timeout)
    try:
        graph = revision_graph(paths)
        if graph:
            with engine.connect() as conn:
                if at_heads(graph, stamped_revisions(conn)):
                    return
        from alembic import command

        with engine.begin() as conn:
            cfg = alembic_config(paths)
            restamp_renamed(conn, renamed_revisions(cfg))
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "heads")
    finally:
        engine.dispose()


def current_heads(database_url: str, paths: list[str], *, connect_timeout: int = PG_CONNECT_TIMEOUT,
                  command_timeout: float = PG_COMMAND_TIMEOUT) -> list[str]:
    """The revisions ``alembic_version`` holds, bounded like ``upgrade``."""
    engine = sync_engine(database_url, connect_timeout=connect_timeout, command_timeout=command_timeout)
    try:
        with engine.connect() as conn:
            return stamped_revisions(conn)
    finally:
        engine.dispose()

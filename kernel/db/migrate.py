"""Alembic runner: one branch per plugin (its ``migrations/`` folder), upgraded to all heads.

A plugin's branch is found by convention: the ``migrations/versions`` folder beside the plugin's
module (``plugins/<area>/plugin.py`` -> ``plugins/<area>/migrations``). A plugin whose folder
lives elsewhere names it with the ``register_migrations`` hook (the kernel's own does).

Revision ids are ``<plugin>_NNNN_<slug>`` (the kernel's ``kernel_NNNN_<slug>``), at most 32
characters (the width of Alembic's ``version_num`` column). A revision that was renamed says
so in ``renamed_from`` (one old id or a tuple); before upgrading, ``upgrade`` rewrites old ids
found in ``alembic_version`` to the new ones, so databases stamped before a rename keep upgrading.
"""

from __future__ import annotations

import logging
import types
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text

from kernel.db.engine import PG_COMMAND_TIMEOUT, PG_CONNECT_TIMEOUT, sync_engine

log = logging.getLogger("svc.migrate")
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "alembic")


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
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    cfg.set_main_option("version_locations", " ".join(paths))
    cfg.set_main_option("path_separator", "space")
    return cfg


def renamed_revisions(cfg: Config) -> dict[str, str]:
    """Old revision id -> current id, from each script's ``renamed_from``."""
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


def upgrade(database_url: str, paths: list[str], *, connect_timeout: int = PG_CONNECT_TIMEOUT,
            command_timeout: float = PG_COMMAND_TIMEOUT) -> None:
    """Create or upgrade the schema: ``alembic upgrade heads`` over the given branches, after
    rewriting revision ids renamed since the database was stamped (in the same transaction).

    ``connect_timeout`` and ``command_timeout`` bound PostgreSQL's answers as they do the app's
    (``kernel.db.engine.db_timeouts``: ``SVC_DB_CONNECT_TIMEOUT``, ``SVC_DB_COMMAND_TIMEOUT``):
    a server that does not answer fails the migration with ``OperationalError`` instead of
    hanging it, and so does one statement running longer than ``command_timeout`` (0: none)."""
    engine = sync_engine(database_url, connect_timeout=connect_timeout, command_timeout=command_timeout)
    try:
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
    from alembic.runtime.migration import MigrationContext

    engine = sync_engine(database_url, connect_timeout=connect_timeout, command_timeout=command_timeout)
    try:
        with engine.connect() as conn:
            return sorted(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()

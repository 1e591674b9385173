"""Alembic runner: one branch per plugin (its ``migrations/`` folder), upgraded to all heads."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from alembic import command
from alembic.config import Config
from sqlalchemy import create_engine

from kernel.db.engine import sync_url

log = logging.getLogger("svc.migrate")
SCRIPT_LOCATION = str(Path(__file__).resolve().parent / "alembic")


def migration_paths(pm: Any) -> list[str]:
    """Every enabled plugin's migrations folder (the kernel's own included)."""
    paths = []
    for path in pm.hook.register_migrations():
        if path and (Path(path) / "versions").is_dir():
            paths.append(str(Path(path) / "versions"))
    return sorted(set(paths))


def alembic_config(paths: list[str]) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", SCRIPT_LOCATION)
    cfg.set_main_option("version_locations", " ".join(paths))
    cfg.set_main_option("path_separator", "space")
    return cfg


def upgrade(database_url: str, paths: list[str]) -> None:
    """Create or upgrade the schema: ``alembic upgrade heads`` over the given branches."""
    engine = create_engine(sync_url(database_url))
    try:
        with engine.begin() as conn:
            cfg = alembic_config(paths)
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "heads")
    finally:
        engine.dispose()


def current_heads(database_url: str, paths: list[str]) -> list[str]:
    from alembic.runtime.migration import MigrationContext

    engine = create_engine(sync_url(database_url))
    try:
        with engine.connect() as conn:
            return sorted(MigrationContext.configure(conn).get_current_heads())
    finally:
        engine.dispose()

"""Hook implementations of the access plugin (its table of contents)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kernel import hookimpl
from plugins.access import api, loader

name = "access"


@hookimpl
def register_migrations() -> str:
    return str(Path(__file__).resolve().parent / "migrations")


@hookimpl
async def load_access(kernel: Any, site_id: str, principal: Any) -> Any:
    return await loader.load_snapshot(kernel, site_id, principal)


@hookimpl
async def site_created(kernel: Any, site: dict[str, Any], conn: Any) -> None:
    await api.seed_site_roles(conn, site["id"])

"""A collection's row looked up by name, and the 404 for a missing one.

Shared by ``collections`` (which writes collections, and creates inline fields through
``fields``) and ``fields`` (which checks the collection a field belongs to).
"""

from __future__ import annotations

from typing import Any

from kernel.base.errors import ApiError
from kernel.tenancy.scope import SiteDB
from plugins.schema.names import is_lookup_name
from plugins.schema.tables import collections


def not_found(name: str) -> ApiError:
    """404 ``NOT_FOUND`` for a collection that is not live in the site."""
    return ApiError.not_found(f"No collection '{name}' in this site")


async def find_row(db: SiteDB, name: str, *, deleted: bool = False) -> Any:
    """The live row named ``name`` (or the most recently deleted one), or ``None``."""
    if not is_lookup_name(name):
        return None
    stmt = db.select(collections).where(collections.c.name == name)
    if deleted:
        stmt = stmt.where(collections.c.deleted_at.is_not(None)).order_by(collections.c.deleted_at.desc())
    else:
        stmt = stmt.where(collections.c.deleted_at.is_(None))
    return await db.one(stmt.limit(1))

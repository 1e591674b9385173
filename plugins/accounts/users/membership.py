"""A member's place in a site, as accounts changes it: the access plugin's membership writes,
plus the revocation of the person's personal API keys (docs/accounts.md#my-account).

A personal key (``/me/api-keys``) has an ``owner_id`` and acts with the role its owner held
when it was made, so it is deleted whenever that stops being true: the membership ends, its
role changes, or the person is suspended; deleting the identity deletes all of them (the
foreign key cascades). Authentication reads the key row on every request and no cache holds
its principal, so a deleted key is refused on the very next request. Site keys (``/api-keys``,
no owner) are the site's and outlive the person who made them."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete

from kernel.tenancy.scope import SiteDB
from plugins.access import api as access_api
from plugins.accounts.tables import api_keys


async def revoke_personal_keys(conn: Any, user_id: str, site_id: str | None = None) -> int:
    """Delete ``user_id``'s personal API keys in ``site_id``, or in every site when None (a
    suspension: the identity is global). Returns how many."""
    if site_id is None:
        # Deliberately across sites: the person's own keys, wherever they were made.
        return (await conn.execute(delete(api_keys).where(api_keys.c.owner_id == user_id))).rowcount
    db = SiteDB(site_id, conn)
    return (await db.execute(db.delete(api_keys).where(api_keys.c.owner_id == user_id))).rowcount


async def set_membership(conn: Any, site_id: str, user_id: str, role_id: str) -> None:
    """``access_api.set_membership``; a changed role revokes the member's personal keys there."""
    before = await access_api.set_membership(conn, site_id, user_id, role_id)
    if before is not None and before != role_id:
        await revoke_personal_keys(conn, user_id, site_id)


async def remove_membership(conn: Any, site_id: str, user_id: str) -> int:
    """``access_api.remove_membership``, with the person's personal keys of the site."""
    await revoke_personal_keys(conn, user_id, site_id)
    return await access_api.remove_membership(conn, site_id, user_id)

"""``GET /me/data-export``: one JSON document of the caller's personal data in the site.

Sections: ``profile``, ``memberships`` (this site's), ``sessions`` (redacted: no token or
hash), ``consents``, ``preferences``, ``restriction``, ``items`` (collections marked
``personalData``: items the user created, and items whose fields hold the user's id), and the
sections other plugins contribute through ``export_personal_data`` (pageviews: ``pageviews``,
the views attributed to the user that are still attributable). Audited ``data_exported`` with
the counts, never the content; rate limited (bucket ``privacy_export``).
"""

from __future__ import annotations

from typing import Any

from kernel.db.meta import iso, now_utc
from kernel.policy.audit import record as audit
from kernel.policy.privacy import personal_data_sections
from kernel.tenancy.scope import SiteDB
from plugins.access.api import membership
from plugins.accounts import api as accounts
from plugins.items import api as items
from plugins.privacy import consent
from plugins.settings.api import preferences_of

FORMAT = "svc.data-export/1"


async def build(ctx: Any) -> dict[str, Any]:
    # The subject's own right: an impersonating admin would read what the user holds in other
    # sites (sessions, global preferences) through it.
    user_id = consent.deciding_user(ctx.principal)
    site_id = ctx.require_site()
    kernel = ctx.kernel
    async with kernel.db.connect() as conn:
        db = SiteDB(site_id, conn)
        profile = await accounts.profile_of(conn, user_id)
        member = await membership(conn, site_id, user_id)
        sessions = await accounts.sessions_of(conn, user_id)
        preferences = await preferences_of(conn, user_id)
        consents = await consent.list_consents(db, user_id)
        restriction = await consent.get_restriction(db, user_id)
    document: dict[str, Any] = {
        "format": FORMAT, "siteId": site_id, "generatedAt": iso(now_utc()),
        "profile": profile,
        "memberships": [] if member is None else [{"siteId": site_id, "roleId": member["role_id"],
                                                   "createdAt": iso(member["created_at"])}],
        "sessions": sessions,
        "consents": consents,
        "preferences": preferences,
        "restriction": restriction,
        "items": await items.subject_items(ctx, user_id),
    }
    for name, value in (await personal_data_sections(kernel, site_id, user_id)).items():
        document.setdefault(name, value)
    async with ctx.unit_of_work() as uow:
        await audit(uow.conn, action="data_exported", site_id=site_id, principal=ctx.principal,
                    target_type="user", target_id=user_id,
                    details={"items": len(document["items"]), "sessions": len(sessions)},
                    ip=ctx.client_ip, request_id=ctx.request_id)
    return document

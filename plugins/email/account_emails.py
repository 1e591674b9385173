"""A site's own account emails: a template keyed ``account.<kind>`` replaces the built-in one.

The accounts plugin asks through its ``compose_account_email`` hook before it sends a
verification, password-reset, invitation or notice email. A site that has a template with that
key (``account.verification``, ``account.existing-account``, ``account.password-reset``,
``account.invitation``, ``account.added-to-site``) gets it rendered with ``{{siteName}}``,
``{{email}}`` and ``{{url}}``; otherwise the built-in text goes out. A template that cannot be
rendered for the values at hand also falls back (the accounts plugin logs it).
"""

from __future__ import annotations

from typing import Any

from kernel.mailer import OutgoingEmail
from kernel.tenancy.scope import SiteDB
from plugins.email import catalog, render
from plugins.email.tables import templates

KEYS = ("account.verification", "account.existing-account", "account.password-reset", "account.invitation",
        "account.added-to-site")


async def compose(kernel: Any, site_id: str, key: str, to: list[str], variables: dict[str, Any]) -> OutgoingEmail | None:
    """The site's version of account email ``key``, or None when it has none."""
    if key not in KEYS:
        return None
    async with kernel.db.engine.connect() as conn:
        db = SiteDB(site_id, conn)
        row = await db.one(db.select(templates).where(templates.c.key == key))
        if row is None:
            return None
        layout = await catalog.layout_html(db, row["layout_id"])
    rendered = await render.render_message_async(row["subject"], row["html"], row["text"], layout, variables)
    return OutgoingEmail(to=list(to), subject=rendered.subject, html=rendered.html, text=rendered.text)

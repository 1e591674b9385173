"""Who is making a request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Principal:
    """The resolved identity of a request.

    ``kind`` is ``anonymous``, ``user``, ``api_key`` or ``external``. ``admin_access`` is true
    when the principal has admin access in the request's site (role or attached policy);
    the instance admin is an admin of every site.
    """

    kind: str = "anonymous"
    user_id: str | None = None
    site_id: str | None = None
    role_id: str | None = None
    is_instance_admin: bool = False
    admin_access: bool = False
    api_key_id: str | None = None
    impersonator_id: str | None = None
    email: str | None = None
    claims: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def is_authenticated(self) -> bool:
        return self.kind != "anonymous"

    @property
    def is_admin(self) -> bool:
        """Admin in the current site (the spec's "admin" and "site-admin")."""
        return self.is_instance_admin or self.admin_access

    def summary(self) -> dict[str, Any]:
        """A JSON-safe description for events and audit records (no secrets, no claims)."""
        return {
            "kind": self.kind,
            "userId": self.user_id,
            "siteId": self.site_id,
            "roleId": self.role_id,
            "apiKeyId": self.api_key_id,
        }


ANONYMOUS = Principal()


@dataclass(frozen=True)
class TicketGrant:
    """What a redeemed ticket stands for (the ``authenticate_ticket`` hook): the site it was
    minted in and the principal it acts as."""

    site_id: str
    principal: Principal

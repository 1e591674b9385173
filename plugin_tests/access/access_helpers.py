"""Helpers of the access tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from plugins.access import api

API = "/api/v1"
PASSWORD = "member-password-1"


@dataclass
class Member:
    """A user with a membership in ``site`` and a site-bound login token."""

    user_id: str
    email: str
    site: str
    token: str

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}", "X-Svc-Site": self.site}


async def role_id_of(svc_app: Any, site: str, role: str) -> str:
    """``role`` is a built-in key (admin, public, subscriber) or already a role id."""
    async with svc_app.kernel.db.connect() as conn:
        row = await api.role_by_system_key(conn, site, role)
    return row["id"] if row else role


class Calls:
    """``await calls.ok("post", "/roles", json=..., status=201)``: the call must answer
    ``status``; returns the ``data`` of the answer (None for 204)."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    async def raw(self, method: str, path: str, headers: dict[str, str] | None = None, **kw: Any) -> Any:
        return await self.client.request(method.upper(), API + path, headers=self.headers if headers is None else headers, **kw)

    async def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        resp = await self.raw(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        return None if status == 204 else resp.json()["data"]

    async def fail(self, method: str, path: str, status: int, code: str | None = None,
                   path_: list[str] | None = None, **kw: Any) -> dict[str, Any]:
        resp = await self.raw(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        error = resp.json()["errors"][0]
        if code:
            assert error["code"] == code, error
        if path_ is not None:
            assert error.get("path") == path_, error
        return error


async def audit_actions(svc_app: Any, site: str) -> list[tuple[str, str | None]]:
    """(action, target id) of the site's audit records, oldest first."""
    from kernel.audit import list_entries

    async with svc_app.kernel.db.connect() as conn:
        entries, _ = await list_entries(conn, site, limit=500)
    return [(e["action"], e["target"]["id"]) for e in reversed(entries)]

"""Helpers of the items tests (imported by conftest.py and the test modules)."""

from __future__ import annotations

from typing import Any

API = "/api/v1"
PASSWORD = "member-password-1"


class Calls:
    """HTTP calls with fixed headers. ``ok`` asserts the status and returns ``data`` (the whole
    body with ``full=True``); ``err`` asserts an error answer and returns its first entry."""

    def __init__(self, client: Any, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    async def call(self, method: str, path: str, **kw: Any) -> Any:
        headers = {**self.headers, **kw.pop("headers", {})}
        return await self.client.request(method.upper(), API + path, headers=headers, **kw)

    async def ok(self, method: str, path: str, status: int = 200, full: bool = False, **kw: Any) -> Any:
        resp = await self.call(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        if status == 204:
            assert resp.content == b""
            assert "content-type" not in resp.headers
            return None
        return resp.json() if full else resp.json()["data"]

    async def err(self, method: str, path: str, status: int, code: str | None = None,
                  path_is: list[str] | None = None, **kw: Any) -> dict[str, Any]:
        resp = await self.call(method, path, **kw)
        assert resp.status_code == status, f"{method} {path}: {resp.status_code} {resp.text}"
        error = resp.json()["errors"][0]
        if code is not None:
            assert error["code"] == code, error
        if path_is is not None:
            assert error.get("path") == path_is, error
        return error

    async def collection(self, name: str, fields: dict[str, Any] | None = None, **body: Any) -> dict[str, Any]:
        """Create a collection, then its ``fields`` (``name: type`` or ``name: {type, ...}``)."""
        created = await self.ok("post", "/collections", status=201, json={"name": name, **body})
        for field, spec in (fields or {}).items():
            spec = {"type": spec} if isinstance(spec, str) else spec
            await self.ok("post", f"/fields/{name}", status=201, json={"field": field, **spec})
        return created

    async def relation(self, **body: Any) -> dict[str, Any]:
        return await self.ok("post", "/relations", status=201, json=body)

    async def create(self, collection: str, body: Any, status: int = 201) -> Any:
        return await self.ok("post", f"/items/{collection}", status=status, json=body)

    async def get(self, collection: str, item_id: str, **kw: Any) -> Any:
        return await self.ok("get", f"/items/{collection}/{item_id}", **kw)

    async def list(self, collection: str, **params: Any) -> Any:
        return await self.ok("get", f"/items/{collection}", full=True, params=params)


class Recorder:
    """Collects bus events: ``recorder.events`` is a list of ``(event, payload, ctx)``."""

    def __init__(self) -> None:
        self.events: list[tuple[str, Any, Any]] = []

    def __call__(self, event: str, payload: Any, ctx: Any) -> None:
        self.events.append((event, payload, ctx))

    def named(self, event: str) -> list[Any]:
        return [p for e, p, _ in self.events if e == event]

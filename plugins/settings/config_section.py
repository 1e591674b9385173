"""The ``settings`` section of the config manifest (the schema plugin's ``config_sections`` hook).

An entry is ``{ key, value }``. Secret keys are never exported; on import they may be given
(write-only, as through ``PUT /settings/:key``) and, since the export never shows them, they
always count as ``create`` and are never deleted by the replace modes.
"""

from __future__ import annotations

from typing import Any

from kernel import ApiError
from plugins.settings import keys, service, store


class SettingsSection:
    name = "settings"
    key = "key"

    def __init__(self, kernel: Any) -> None:
        self.kernel = kernel

    async def export(self, db: Any) -> list[dict[str, Any]]:
        return [{"key": k, "value": v} for k, v in await service.exportable(self.kernel, db)]

    def check(self, entry: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(entry, dict):
            raise ApiError.validation("A settings entry is an object { key, value }")
        unknown = sorted(set(entry) - {"key", "value"})
        if unknown:
            raise ApiError.validation(f"Unknown field '{unknown[0]}'", path=[unknown[0]])
        key = keys.check_key(entry.get("key"), ["key"])
        if entry.get("value") is None:
            raise ApiError.validation(f"Setting '{key}' needs a value", path=["value"])
        reg = keys.registry(self.kernel)
        try:
            value = keys.check_value(reg, key, entry["value"], service.max_bytes(self.kernel))
        except ApiError as exc:
            raise ApiError(exc.status, exc.code, exc.message, path=["value"]) from None
        return {"key": key, "value": value}

    async def put(self, uow: Any, entry: dict[str, Any]) -> None:
        reg = keys.registry(self.kernel)
        await store.write(self.kernel, uow, reg, {entry["key"]: entry["value"]}, action="settings.import")

    async def delete(self, uow: Any, key: str) -> None:
        reg = keys.registry(self.kernel)
        await store.write(self.kernel, uow, reg, {key: None}, action="settings.import")

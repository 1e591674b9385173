"""The upload policy: ``{ maxBytes, allowedMimeTypes[], allowedExtensions[], catalogue[] }``.

Each of ``maxBytes`` and ``allowedMimeTypes`` resolves on its own, first found wins:

1. the site's setting ``upload_policy`` (the settings plugin stores it; files declares and
   validates it; ``PUT /uploads/config`` or ``PUT /settings/upload_policy`` write it), when it
   sets that key;
2. the environment, read once at boot: ``FILE_UPLOAD_MAX_BYTES``,
   ``FILE_UPLOAD_ALLOWED_MIME_TYPES`` (comma list of catalogue types);
3. the defaults: 25 MiB, and every type of the catalogue (``catalogue.py``).

``allowedExtensions`` follows from the allowed types. A site may not raise ``maxBytes`` above
5 GiB, nor allow a type outside the catalogue (svc only accepts what it can verify).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel import ApiError
from plugins.files.uploads.catalogue import BY_MIME, CATALOGUE, HARD_MAX_BYTES, extensions_for
from plugins.settings.api import SettingKey, get_setting, put_setting

BODY_KEYS = frozenset({"maxBytes", "allowedMimeTypes"})


@dataclass(frozen=True)
class UploadPolicy:
    """The effective policy of one site."""

    max_bytes: int
    allowed: tuple[str, ...]

    def allows(self, mime: str) -> bool:
        return mime in self.allowed

    def to_dict(self) -> dict[str, Any]:
        return {"maxBytes": self.max_bytes, "allowedMimeTypes": list(self.allowed),
                "allowedExtensions": extensions_for(self.allowed), "catalogue": [t.to_dict() for t in CATALOGUE]}


def parse_mime_list(raw: str) -> tuple[str, ...]:
    """``FILE_UPLOAD_ALLOWED_MIME_TYPES``: a comma list of catalogue types, at least one."""
    values = tuple(dict.fromkeys(v.strip().lower() for v in raw.split(",") if v.strip()))
    unknown = [v for v in values if v not in BY_MIME]
    if unknown:
        raise ValueError(f"{unknown[0]!r} is not in the catalogue ({', '.join(BY_MIME)})")
    if not values:
        raise ValueError("name at least one MIME type")
    return values


def parse_max_bytes(raw: str) -> int:
    value = int(raw.strip())
    if not 1 <= value <= HARD_MAX_BYTES:
        raise ValueError(f"must be 1 to {HARD_MAX_BYTES}")
    return value


def validate_site_policy(value: Any) -> dict[str, Any]:
    """A site's ``upload_policy`` value, normalised: ``{maxBytes?, allowedMimeTypes?}``;
    ``ValueError`` naming the problem (the settings plugin's validator contract)."""
    if not isinstance(value, dict):
        raise ValueError("upload_policy is an object { maxBytes?, allowedMimeTypes? }")
    unknown = sorted(set(value) - BODY_KEYS)
    if unknown:
        raise ValueError(f"unknown key '{unknown[0]}' (the policy takes maxBytes and allowedMimeTypes)")
    out: dict[str, Any] = {}
    if value.get("maxBytes") is not None:
        size = value["maxBytes"]
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= HARD_MAX_BYTES:
            raise ValueError(f"maxBytes is an integer from 1 to {HARD_MAX_BYTES}")
        out["maxBytes"] = size
    if value.get("allowedMimeTypes") is not None:
        types = value["allowedMimeTypes"]
        if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
            raise ValueError("allowedMimeTypes is a list of MIME types")
        out["allowedMimeTypes"] = list(parse_mime_list(",".join(types)))
    return out


def effective(kernel: Any, site_value: dict[str, Any] | None) -> UploadPolicy:
    """The policy from a site's stored value (or None) over the environment and defaults."""
    site_value = site_value or {}
    settings = kernel.settings
    return UploadPolicy(
        max_bytes=int(site_value.get("maxBytes") or settings.get("file_upload_max_bytes")),
        allowed=tuple(site_value.get("allowedMimeTypes") or settings.get("file_upload_allowed_mime_types")),
    )


SETTING_KEY = "upload_policy"


def setting_key() -> SettingKey:
    """The site setting files owns (``register_setting_keys``)."""
    return SettingKey(SETTING_KEY, validate_site_policy, type="object", description=(
        "The site's upload policy: { maxBytes?, allowedMimeTypes? }; a key left out falls back to "
        "FILE_UPLOAD_*, then the defaults (docs/files.md)."))


async def resolve(ctx: Any) -> UploadPolicy:
    """The effective policy of the request's site."""
    value = await get_setting(ctx.kernel, ctx.require_site(), SETTING_KEY)
    return effective(ctx.kernel, value if isinstance(value, dict) else None)


async def update(ctx: Any, body: dict[str, Any]) -> UploadPolicy:
    """``PUT /uploads/config``: replace the site's ``maxBytes`` and ``allowedMimeTypes`` (a key
    left out or null falls back to the environment, then the default)."""
    try:
        value = validate_site_policy(body)
    except ValueError as exc:
        raise ApiError.validation(str(exc), path=["body"]) from None
    stored = await put_setting(ctx, SETTING_KEY, value or None)
    return effective(ctx.kernel, stored)

"""The upload policy: ``{ maxBytes, allowedMimeTypes[], allowedExtensions[], catalogue[] }``.

Each of ``maxBytes`` and ``allowedMimeTypes`` resolves on its own, first found wins:

1. the site's ``upload_policy`` (``PUT /uploads/config``), when it sets that key;
2. the environment, read once at boot: ``FILE_UPLOAD_MAX_BYTES``,
   ``FILE_UPLOAD_ALLOWED_MIME_TYPES`` (comma list of catalogue types);
3. the defaults: 25 MiB, and every type of the catalogue (``catalogue.py``).

``allowedExtensions`` follows from the allowed types. A site may not raise ``maxBytes`` above
5 GiB, nor allow a type outside the catalogue (svc only accepts what it can verify).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernel import ApiError, audit
from kernel.db.meta import now_utc
from plugins.files.catalogue import BY_MIME, CATALOGUE, HARD_MAX_BYTES, extensions_for
from plugins.files.tables import upload_policies

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


async def stored(db: Any) -> dict[str, Any] | None:
    """The site's own policy value (``db``: a site-scoped ``SiteDB``), or None."""
    row = await db.one(db.select(upload_policies))
    return dict(row["policy"]) if row is not None else None


async def resolve(ctx: Any) -> UploadPolicy:
    """The effective policy of the request's site."""
    async with ctx.reader() as db:
        return effective(ctx.kernel, await stored(db))


async def update(ctx: Any, body: dict[str, Any]) -> UploadPolicy:
    """``PUT /uploads/config``: replace the site's ``maxBytes`` and ``allowedMimeTypes`` (a key
    left out or null falls back to the environment, then the default)."""
    try:
        value = validate_site_policy(body)
    except ValueError as exc:
        raise ApiError.validation(str(exc), path=["body"]) from None
    async with ctx.unit_of_work() as uow:
        db = uow.db
        if await db.one(db.select(upload_policies)) is None:
            await db.insert(upload_policies, {"policy": value, "updated_at": now_utc()})
        else:
            await db.execute(db.update(upload_policies).values(policy=value, updated_at=now_utc()))
        await audit.record(uow.conn, action="uploads.config.update", site_id=uow.site_id, principal=ctx.principal,
                           details={"keys": sorted(value)})
    return effective(ctx.kernel, value)

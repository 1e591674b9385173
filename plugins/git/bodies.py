"""Checking the bodies of the integration routes (400 ``VALIDATION_FAILED`` with a ``path``)."""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from kernel.http.media import reject_unknown
from plugins.git.providers import PROVIDERS

AUTH_METHODS = ("pat", "app")
STATUSES = ("active", "paused")
SYNC_KEYS = frozenset({"preview"})
CREATE_KEYS = frozenset({"provider", "repoFullName", "displayName", "authMethod", "token", "installationId",
                         "syncConfig", "sync_config"})
PATCH_KEYS = frozenset({"displayName", "token", "status", "syncConfig", "sync_config", "installationId"})
_SEGMENT = r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}"
REPO = {"github": re.compile(rf"^{_SEGMENT}/{_SEGMENT}$"),
        "gitlab": re.compile(rf"^{_SEGMENT}(/{_SEGMENT}){{1,9}}$")}
MAX_TOKEN = 1000


def invalid(message: str, path: list[str | int]) -> ApiError:
    return ApiError.validation(message, path=path)


def _text(body: dict[str, Any], key: str, limit: int) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value.strip():
        raise invalid(f"'{key}' must be a non-empty string", [key])
    if len(value) > limit or any(ord(c) < 32 or c == "\x7f" for c in value):
        raise invalid(f"'{key}' must be at most {limit} characters without control characters", [key])
    return value.strip()


def token(value: Any) -> str | None:
    """A token as sent (None clears it on PATCH): printable, no whitespace, at most 1,000 characters
    (it goes into an Authorization header)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_TOKEN or \
            any(ord(c) < 33 or ord(c) > 126 for c in value):
        raise invalid(f"'token' must be 1 to {MAX_TOKEN} printable ASCII characters without spaces", ["token"])
    return value


def installation_id(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return str(value)
    if isinstance(value, str) and value.isascii() and value.isdigit() and 0 < len(value) <= 20:
        return value
    raise invalid("'installationId' must be a positive integer", ["installationId"])


def sync_config(body: dict[str, Any], current: dict[str, Any] | None = None) -> dict[str, Any] | None:
    key = "syncConfig" if "syncConfig" in body else "sync_config" if "sync_config" in body else None
    if key is None:
        return None
    value = body[key]
    if not isinstance(value, dict):
        raise invalid(f"'{key}' must be an object", [key])
    unknown = sorted(k for k in value if k not in SYNC_KEYS)
    if unknown:
        raise invalid(f"Unknown field '{unknown[0]}'", [key, unknown[0]])
    out = dict(current or {"preview": False})
    if "preview" in value:
        if not isinstance(value["preview"], bool):
            raise invalid("'preview' must be a boolean", [key, "preview"])
        out["preview"] = value["preview"]
    return out


def parse_create(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object", ["body"])
    reject_unknown(body, CREATE_KEYS)
    provider = body.get("provider")
    if provider not in PROVIDERS:
        raise invalid(f"'provider' must be one of {', '.join(PROVIDERS)}", ["provider"])
    repo = _text(body, "repoFullName", 200)
    if not REPO[provider].match(repo) or any(part in (".", "..") or part.endswith((".git", "."))
                                            for part in repo.split("/")):
        raise invalid("'repoFullName' must name a repository as owner/name" +
                      (" (groups allowed)" if provider == "gitlab" else ""), ["repoFullName"])
    method = body.get("authMethod")
    if method not in AUTH_METHODS:
        raise invalid(f"'authMethod' must be one of {', '.join(AUTH_METHODS)}", ["authMethod"])
    installation = installation_id(body.get("installationId"))
    if method == "app" and installation is None:
        raise invalid("'installationId' is required with authMethod 'app'", ["installationId"])
    return {"provider": provider, "repo_full_name": repo, "display_name": _text(body, "displayName", 100),
            "auth_method": method, "token": token(body.get("token")), "installation_id": installation,
            "sync_config": sync_config(body) or {"preview": False}}


def parse_patch(body: Any, current: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object", ["body"])
    reject_unknown(body, PATCH_KEYS)
    out: dict[str, Any] = {}
    if "displayName" in body:
        out["display_name"] = _text(body, "displayName", 100)
    if "token" in body:
        out["token"] = token(body["token"])
    if "installationId" in body:
        out["installation_id"] = installation_id(body["installationId"])
        if out["installation_id"] is None and current["auth_method"] == "app":
            raise invalid("'installationId' is required with authMethod 'app'", ["installationId"])
    if "status" in body:
        if body["status"] not in STATUSES:
            raise invalid(f"'status' must be one of {', '.join(STATUSES)}", ["status"])
        out["status"] = body["status"]
    config = sync_config(body, dict(current["sync_config"] or {}))
    if config is not None:
        out["sync_config"] = config
    return out

"""The declared setting keys (``register_setting_keys``) and the checks every value passes."""

from __future__ import annotations

import re
from typing import Any

from kernel import ApiError
from kernel.base.jsoncodec import dumps

KEY_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
# Literal paths beside /settings/{key}: these names would be unreachable there.
RESERVED = frozenset({"export", "apply", "keys"})
TYPES = ("string", "integer", "number", "boolean", "object", "array", "json")


class Registry:
    """Declared keys: exact ones, and prefixes (``menu.``) matched longest first."""

    def __init__(self, declared: list[Any]) -> None:
        self.exact: dict[str, Any] = {}
        self.prefixes: list[tuple[str, Any]] = []
        for spec in declared:
            if spec.key.endswith("."):
                self.prefixes.append((spec.key, spec))
            else:
                self.exact.setdefault(spec.key, spec)
        self.prefixes.sort(key=lambda pair: -len(pair[0]))

    def owner(self, key: str) -> Any:
        """The ``SettingKey`` that owns ``key``, or ``None`` for an undeclared key."""
        spec = self.exact.get(key)
        if spec is not None:
            return spec
        for prefix, spec in self.prefixes:
            if key.startswith(prefix) and len(key) > len(prefix):
                return spec
        return None

    def is_public(self, key: str) -> bool:
        spec = self.owner(key)
        return bool(spec is not None and spec.public)

    def is_secret(self, key: str) -> bool:
        spec = self.owner(key)
        return bool(spec is not None and spec.secret)


def described(reg: Registry) -> list[dict[str, Any]]:
    """``GET /settings/keys``: every declared key (a prefix ends in ``.``) with its type, by key."""
    specs = [*reg.exact.values(), *(spec for _prefix, spec in reg.prefixes)]
    return sorted(({"key": s.key, "prefix": s.key.endswith("."), "type": s.type if s.type in TYPES else "json",
                    "public": s.public, "secret": s.secret, "description": s.description} for s in specs),
                  key=lambda d: d["key"])


def registry(kernel: Any) -> Registry:
    """Every enabled plugin's declared keys (asked each time: cheap, and always current)."""
    hook = getattr(kernel.pm.hook, "register_setting_keys", None)
    declared: list[Any] = []
    if hook is not None:
        for group in hook(kernel=kernel):
            declared.extend(group or [])
    return Registry(declared)


def check_key(key: Any, path: list[Any] | None = None) -> str:
    """A well-formed setting key (``^[A-Za-z0-9_.-]{1,100}$``, docs/settings-and-site.md), else 400."""
    if not isinstance(key, str) or not KEY_PATTERN.match(key):
        raise ApiError.validation("A setting key must match ^[A-Za-z0-9_.-]{1,100}$", path=path or ["key"])
    if key in RESERVED:
        raise ApiError.validation(f"'{key}' is a reserved name, not a setting key", path=path or ["key"])
    return key


def check_value(reg: Registry, key: str, value: Any, max_bytes: int) -> Any:
    """The value to store for ``key``: validated by its owner when declared, and within the
    size cap either way. ``None`` (unset) is not validated."""
    if value is None:
        return None
    spec = reg.owner(key)
    if spec is not None:
        try:
            value = spec.validate(value)
        except ApiError:
            raise
        except (ValueError, TypeError) as exc:
            raise ApiError.validation(f"Setting '{key}': {exc}", path=[key], key=key) from exc
    size = len(dumps(value))
    if size > max_bytes:
        raise ApiError.validation(f"Setting '{key}' is {size} bytes of JSON; at most {max_bytes} are allowed",
                                  path=[key], key=key)
    return value

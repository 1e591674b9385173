"""OpenAPI shapes of delivery answers and the check of a menu setting's value."""

from __future__ import annotations

from typing import Any

ITEM: dict[str, Any] = {"type": "object", "additionalProperties": True}
SECTION: dict[str, Any] = {"type": "object", "additionalProperties": True, "properties": {
    "collection": {"type": "string"}, "item": {"type": "object", "additionalProperties": True}}}
PAGE: dict[str, Any] = {"type": "object", "additionalProperties": True, "required": ["id", "slug"], "properties": {
    "id": {"type": "string"}, "slug": {"type": "string"}, "sections": {"type": "array", "items": SECTION}}}
MENU: dict[str, Any] = {"oneOf": [{"type": "object", "additionalProperties": True}, {"type": "array", "items": {}}]}


def check_menu(value: Any) -> Any:
    """A menu is a JSON object or array (its items are the site's own business)."""
    if not isinstance(value, (dict, list)):
        raise ValueError("a menu must be a JSON object or array")
    return value

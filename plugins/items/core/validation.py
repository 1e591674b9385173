"""Checking an item body against its collection: keys, write policy, values, ids.

A body is checked in three passes so the answer is the most useful one: unknown keys
(400, all of them), then the write policy (403 ``field_policy`` at the first field the
principal may not write), then the values (400, every problem with its path). ``path``
starts with the item's index in a bulk body. A field the principal may neither write nor read
counts as unknown: its existence is as hidden as in the schema routes and GraphQL, so a write
cannot probe for it (a field it may read but not write is no secret: 403).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from plugins.items.core.records import SERVER_MAINTAINED, WRITABLE_STRUCTURAL
from plugins.items.errors import field_denied, validation_errors

# Client-chosen ids: URL-safe without escaping and short enough for the column (64).
ITEM_ID = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
STATUS = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
SORT_RANGE = (-(2**31), 2**31 - 1)
MAX_KEY_ECHO = 80

Problems = list[tuple[Sequence[str | int], str]]


def is_item_id(value: Any) -> bool:
    """Whether ``value`` could be an item id (anything else cannot exist: 404, not 400)."""
    return isinstance(value, str) and bool(ITEM_ID.match(value))


@dataclass
class Draft:
    """One checked body: the id (create only), structural values given, content values."""

    id: str | None = None
    status: str | None = None
    sort: int | None = None
    sort_given: bool = False
    data: dict[str, Any] = field(default_factory=dict)


def _echo(key: Any) -> str:
    text = str(key)
    return text if len(text) <= MAX_KEY_ECHO else text[:MAX_KEY_ECHO] + "..."


def unknown_keys(coll: Any, body: Any, prefix: list[Any], nested: Any = (),
                 hidden: frozenset[str] = frozenset()) -> Problems:
    """Keys that are neither content fields nor client-writable structural keys (``hidden``
    content fields count as unknown: ``undisclosed``)."""
    if not isinstance(body, dict):
        return [(prefix, "An item must be a JSON object")]
    problems: Problems = []
    for key in body:
        if key == "id" or key in WRITABLE_STRUCTURAL or (key in coll.fields and key not in hidden):
            continue
        if key in SERVER_MAINTAINED:
            problems.append(([*prefix, key], f"'{key}' is maintained by the server and cannot be written"))
        elif key in nested and key not in hidden:
            problems.append(([*prefix, key], f"'{key}' is a relational alias; write the holder field instead"))
        else:
            problems.append(([*prefix, _echo(key)], f"Unknown field '{_echo(key)}' in '{coll.name}'"))
    return problems


def undisclosed(coll: Any, writable: frozenset[str] | None, read: Any, nested: Any = ()) -> frozenset[str]:
    """The content fields and relational aliases (``nested``) of ``coll`` whose existence the
    principal may not learn: it may neither write them (``writable``; ``None``: every field) nor
    read them (``read``: its read ``Decision``; ``None``: nothing readable)."""
    if writable is None:
        return frozenset()
    return frozenset(n for n in (*coll.fields, *nested)
                     if n not in writable and (read is None or not read.field_allowed(n)))


def check_policy(body: dict[str, Any], writable: frozenset[str] | None, prefix: list[Any], action: str) -> None:
    """403 ``field_policy`` at the first key the principal may not write (``id`` is free)."""
    if writable is None:
        return
    for key in body:
        if key != "id" and key not in writable:
            raise field_denied(key, [*prefix, key], action)


def check_values(coll: Any, body: dict[str, Any], prefix: list[Any], mode: str,
                 current_id: str | None = None) -> tuple[Draft, Problems]:
    """The body's values checked and normalised. ``mode``: ``create`` and ``replace`` apply
    defaults and require the required fields; ``update`` checks only what is given."""
    draft = Draft()
    problems: Problems = []
    for key, value in body.items():
        here = [*prefix, key]
        if key == "id":
            if mode == "create":
                if value is not None and not is_item_id(value):
                    problems.append((here, "'id' must be 1 to 64 letters, digits, '_' or '-'"))
                else:
                    draft.id = value
            elif value != current_id:
                problems.append((here, "'id' cannot be changed"))
        elif key == "status":
            if not isinstance(value, str) or not STATUS.match(value):
                problems.append((here, "'status' must be 1 to 40 letters, digits, '_' or '-'"))
            else:
                draft.status = value
        elif key == "sort":
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or not SORT_RANGE[0] <= value <= SORT_RANGE[1]):
                problems.append((here, "'sort' must be a 32-bit integer or null"))
            else:
                draft.sort, draft.sort_given = value, True
        else:
            fdef = coll.fields[key]
            if value is None:
                if fdef.required:
                    problems.append((here, f"'{key}' is required"))
                draft.data[key] = None
                continue
            try:
                draft.data[key] = fdef.validate(value)
            except (ValueError, RecursionError) as exc:
                problems.append((here, f"'{key}': {str(exc) or 'invalid value'}"))
    if mode in ("create", "replace"):
        apply_defaults(coll, draft.data, prefix, problems)
    return draft, problems


def apply_defaults(coll: Any, data: dict[str, Any], prefix: list[Any], problems: Problems) -> None:
    """Fill absent fields from their defaults; report absent required fields."""
    for name, fdef in coll.fields.items():
        if name in data:
            continue
        if fdef.has_default and fdef.default is not None:
            data[name] = copy.deepcopy(fdef.default)  # options are shared, frozen: never hand them out
        elif fdef.required:
            problems.append(([*prefix, name], f"'{name}' is required"))


def check_bodies(coll: Any, bodies: list[Any], prefixes: list[list[Any]], *, mode: str,
                 writable: frozenset[str] | None, action: str, nested: Any = (),
                 current_id: str | None = None, read: Any = None) -> list[Draft]:
    """All three passes over one or many bodies; raises the first failing pass's error. ``read``:
    the principal's read ``Decision`` (fields it may neither write nor read are unknown)."""
    problems: Problems = []
    hidden = undisclosed(coll, writable, read, nested)
    for body, prefix in zip(bodies, prefixes, strict=True):
        problems.extend(unknown_keys(coll, body, prefix, nested, hidden))
    if problems:
        raise validation_errors(problems)
    for body, prefix in zip(bodies, prefixes, strict=True):
        check_policy(body, writable, prefix, action)
    drafts = []
    for body, prefix in zip(bodies, prefixes, strict=True):
        draft, found = check_values(coll, body, prefix, mode, current_id)
        drafts.append(draft)
        problems.extend(found)
    if problems:
        raise validation_errors(problems)
    return drafts

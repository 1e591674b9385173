"""The checked filter tree: what ``resolve_filter`` returns and what the compiler and the
reference evaluator both read. Values in it are already typed for their target.

- ``Condition(target, op, value)``: one operator on one target.
- ``Group("_and" | "_or", children)``; ``Const(True | False)`` for trivially decided nodes.
- ``Exists(link, child)``: some live, readable related item satisfies ``child`` (m2o, o2m, m2m).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Union

from plugins.schema.api import FieldDef

LIST_OPS = frozenset({"_in", "_nin", "_between"})  # comma-separated in bracket form
KEY_LIST_OPS = frozenset({"_has_any_keys", "_has_all_keys"})  # comma-separated, never coerced

# What a target's values are, and so which operators apply and how they compare:
#   number   integer, float, bigInteger, decimal, structural sort: numeric comparison
#   boolean  boolean: true/false
#   text     string-like types, structural id/status/userCreated/userUpdated: code-point text
#   temporal dateTime/date/time/timestamp: their normalised ISO text
#   instant  structural createdAt/updatedAt: timestamp columns
#   json     json/geometry fields and every path into them: JSON semantics, typed by the value
#   list     csv/files: JSON arrays of strings
CATEGORIES = ("number", "boolean", "text", "temporal", "instant", "json", "list")


@dataclass(frozen=True, slots=True)
class Target:
    """A structural column (``column`` set) or a content field (``field`` set), with ``path``
    the segments below a JSON field."""

    name: str
    category: str
    type: str
    column: str | None = None
    field: FieldDef | None = None
    path: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return ".".join((self.name, *self.path))


@dataclass(frozen=True, slots=True)
class Condition:
    target: Target
    op: str
    value: Any = None


@dataclass(frozen=True, slots=True)
class Group:
    op: str  # "_and" | "_or"
    children: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Const:
    value: bool


@dataclass(frozen=True, slots=True)
class Link:
    """One relation hop. ``holder`` is the field holding the reference: on this side for m2o
    (one id) and m2m (a list of ids), on the related side for o2m (one id pointing back).
    ``row_filter`` is the related collection's read condition for the principal."""

    kind: str
    collection: str
    collection_id: str
    holder: FieldDef
    row_filter: Node | None = None


@dataclass(frozen=True, slots=True)
class Exists:
    link: Link
    child: Node


Node = Union[Condition, Group, Const, Exists]  # noqa: UP007 (a runtime alias)

TRUE = Const(True)
FALSE = Const(False)


def all_of(parts: list[Node]) -> Node:
    """The conjunction of ``parts``, flattened and simplified."""
    return _combine("_and", parts)


def any_of(parts: list[Node]) -> Node:
    """The disjunction of ``parts``, flattened and simplified."""
    return _combine("_or", parts)


def _combine(op: str, parts: list[Node]) -> Node:
    unit, absorbing = (TRUE, FALSE) if op == "_and" else (FALSE, TRUE)
    flat: list[Node] = []
    for part in parts:
        if part == absorbing:
            return absorbing
        if part == unit:
            continue
        if isinstance(part, Group) and part.op == op:
            flat.extend(part.children)
        else:
            flat.append(part)
    if not flat:
        return unit
    return flat[0] if len(flat) == 1 else Group(op, tuple(flat))

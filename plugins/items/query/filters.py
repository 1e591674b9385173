"""The ``filter`` parameter: the filter rules (docs/decisions/items-query-semantics.md), the shape and
bound checks, and the
resolution against a collection's schema into the checked tree of ``ir``.

1. Bracket form ``filter[field][_op]=value``; logical groups take an index segment,
   ``filter[_and][0][field][_op]=value``.
2. Bracket values are coerced (``brackets.coerce_scalar``); ``_in``, ``_nin``, ``_between``
   split on commas, ``_has_any_keys``/``_has_all_keys`` split on commas without coercion (keys
   are strings), ``_has_key`` is never coerced, ``_json_contains`` reads a JSON object or array
   when the value is one, else a coerced scalar.
3. JSON form ``filter=<object>``; when both forms are present the JSON form wins.
4. Malformed JSON is 400 ``VALIDATION``; a malformed bracket key (unbalanced brackets, an empty
   segment, no operator at the end, an operator in the middle, a logical group without an index)
   is ignored. A well-formed key with a bad field name or operator is 400 ``VALIDATION_FAILED``.
5. A key may be a dotted path (segments of letters, digits and ``_``, at most 8).

Everything else is 400 ``VALIDATION_FAILED`` with ``path`` down to the bad node, starting
``["query", "filter", ...]``. The bounds (``limits``) are checked while walking, so a hostile
tree costs at most ``MAX_FILTER_NODES`` steps. The grammar itself (shapes, operators, operands,
bounds) is ``kernel.policy.filtergrammar``, shared with permission conditions; this module gives it
the list filter's bounds and, with a schema, resolves each key during the same walk.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from kernel.base.errors import ApiError
from kernel.policy.filtergrammar import OPERATORS, FilterGrammar
from plugins.items.query.ir import Node, all_of, any_of
from plugins.items.query.parse.brackets import MalformedJSON, OverBound, bracket_filter, load_json, split_key
from plugins.items.query.parse.limits import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_NODES,
    MAX_STRING,
    ROW_FILTER_DEPTH,
    ROW_FILTER_NODES,
    SEGMENT,
)
from plugins.items.query.resolve import CanRead, Resolver, RowFilterFor, Scope, wrap
from plugins.items.query.sql.operands import typed_condition
from plugins.schema.api import CollectionDef, SchemaSnapshot

__all__ = ["FILTER_PATH", "OPERATORS", "check_filter", "filter_from_pairs", "parse_json_filter", "resolve_filter"]
FILTER_PATH = ("query", "filter")


# ---------------------------------------------------------------------- the two forms
def filter_from_pairs(pairs: Iterable[tuple[str, str]], name: str = "filter",
                      path: Sequence[Any] = FILTER_PATH) -> dict[str, Any] | None:
    """The filter of a query string: the JSON form when given (and not blank), else the
    bracket keys ``name[...]``; checked for shape and bounds (not yet against a schema)."""
    json_text: str | None = None
    entries: list[tuple[list[str], str]] = []
    for key, value in pairs:
        if key == name:
            json_text = value
            continue
        split = split_key(key)
        if split is not None and split[0] == name and split[1]:
            entries.append((split[1], value))
    if json_text is not None and json_text.strip():
        return parse_json_filter(json_text, path)
    return check_filter(bracket_filter(entries, path), path)


def parse_json_filter(text: str, path: Sequence[Any] = FILTER_PATH) -> dict[str, Any] | None:
    """``filter=<JSON object>``: 400 ``VALIDATION`` when it is not JSON or not an object."""
    try:
        tree = load_json(text)
    except OverBound as exc:
        raise ApiError.validation(f"The filter is too large: {exc}", path=list(path)) from None
    except MalformedJSON as exc:
        raise ApiError(400, "VALIDATION", f"The filter is not valid JSON: {exc}", path=list(path)) from None
    if tree is None:
        return None
    if not isinstance(tree, dict):
        raise ApiError(400, "VALIDATION", "The filter must be a JSON object", path=list(path))
    return check_filter(tree, path)


# ---------------------------------------------------------------------- checking
def check_filter(tree: Any, path: Sequence[Any] = FILTER_PATH) -> dict[str, Any] | None:
    """``tree`` if its shape and bounds are valid (no schema needed), else 400. ``None`` and
    ``{}`` mean "no filter"."""
    return _Walker(path).check(tree)


def resolve_filter(tree: Any, snapshot: SchemaSnapshot, collection: CollectionDef | str, *,
                   can_read: CanRead | None = None, row_filter_for: RowFilterFor | None = None,
                   path: Sequence[Any] = FILTER_PATH, trusted: bool = False) -> Node | None:
    """The checked, typed tree of ``tree`` over ``collection`` (``None``: no filter).

    400 ``VALIDATION_FAILED`` for shapes, bounds, unknown fields and operands of the wrong
    type; 403 ``PERMISSION_DENIED`` (``field_policy``) for any field ``can_read`` refuses,
    through relations too. ``row_filter_for(collection)`` gives a related collection's read
    condition, ANDed into every relational match. ``trusted`` (a permission's own condition)
    raises the size bounds to what the access plugin accepts."""
    if tree is None or tree == {}:
        return None
    coll = snapshot.collection(collection) if isinstance(collection, str) else collection
    if coll is None:
        raise ApiError.not_found(f"No collection '{str(collection)[:64]}' in this site")
    walker = _Resolving(path, resolver(snapshot, can_read=can_read, row_filter_for=row_filter_for))
    if trusted:
        walker.max_nodes, walker.max_depth = ROW_FILTER_NODES, ROW_FILTER_DEPTH
    return walker.group(tree, [], 1, Scope(coll))


def resolver(snapshot: SchemaSnapshot, *, can_read: CanRead | None = None,
             row_filter_for: RowFilterFor | None = None) -> Resolver:
    """A ``Resolver`` whose related read conditions are resolved here (trusted bounds)."""
    return Resolver(snapshot, can_read=can_read, row_filter_for=row_filter_for,
                    resolve_condition=_trusted_condition if row_filter_for is not None else None)


def _trusted_condition(tree: Any, snapshot: SchemaSnapshot, collection: CollectionDef,
                       path: Sequence[Any]) -> Node | None:
    return resolve_filter(tree, snapshot, collection, path=path, trusted=True)


class _Walker(FilterGrammar):
    """The list filter's grammar and bounds (``limits``); checks only."""

    max_nodes = MAX_FILTER_NODES
    max_depth = MAX_FILTER_DEPTH
    max_string = MAX_STRING
    segment = SEGMENT


class _Resolving(_Walker):
    """The same walk over a collection's schema, building the checked, typed tree as it goes:
    ``scope`` is the collection (or JSON field) a key is resolved in."""

    def __init__(self, root: Sequence[Any], resolver: Resolver) -> None:
        super().__init__(root)
        self.resolver = resolver

    def nested(self, segments: list[str], value: dict[str, Any], path: list[Any], depth: int, scope: Scope) -> Node:
        inner, links = self.resolver.nested(scope, segments, [*self.root, *path])
        return wrap(links, self.group(value, path, depth, inner))

    def leaf(self, segments: list[str], operators: dict[str, Any], path: list[Any], scope: Scope) -> Node:
        target, links = self.resolver.target(scope, segments, [*self.root, *path])
        return wrap(links, all_of([typed_condition(target, op, operand, [*self.root, *path, op])
                                   for op, operand in operators.items()]))

    def logical(self, key: str, kids: list[Node]) -> Node:
        return (all_of if key == "_and" else any_of)(kids)

    def combine(self, parts: list[Node]) -> Node:
        return all_of(parts)

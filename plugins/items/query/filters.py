"""The ``filter`` parameter: api-spec.md's filter rules, the shape and bound checks, and the
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
tree costs at most ``MAX_FILTER_NODES`` steps.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from kernel.errors import ApiError
from plugins.items.query.brackets import MalformedJSON, OverBound, bracket_filter, load_json, split_key
from plugins.items.query.ir import LOGICAL, OPERATORS, Node, all_of, any_of
from plugins.items.query.limits import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_NODES,
    MAX_INT,
    MAX_LIST,
    MAX_PATH_SEGMENTS,
    MAX_STRING,
    ROW_FILTER_DEPTH,
    ROW_FILTER_NODES,
    SEGMENT,
)
from plugins.items.query.operands import typed_condition
from plugins.items.query.resolve import CanRead, Resolver, RowFilterFor, Scope, wrap
from plugins.schema.api import CollectionDef, SchemaSnapshot

_ORDER = frozenset({"_lt", "_lte", "_gt", "_gte"})
_STRINGS = frozenset({"_contains", "_icontains", "_starts_with", "_ends_with"})
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
    if tree is None or tree == {}:
        return None
    _Walker(path, None).group(tree, [], 1, None)
    return tree


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
    resolver = Resolver(snapshot, can_read=can_read, row_filter_for=row_filter_for)
    walker = _Walker(path, resolver)
    if trusted:
        walker.max_nodes, walker.max_depth = ROW_FILTER_NODES, ROW_FILTER_DEPTH
    return walker.group(tree, [], 1, Scope(coll))


class _Walker:
    """One walk over a tree: shapes and bounds always; with a resolver, the typed tree too."""

    def __init__(self, root: Sequence[Any], resolver: Resolver | None) -> None:
        self.root = list(root)
        self.resolver = resolver
        self.nodes = 0
        self.max_nodes = MAX_FILTER_NODES
        self.max_depth = MAX_FILTER_DEPTH

    def fail(self, message: str, path: list[Any]) -> ApiError:
        return ApiError.validation(message, path=[*self.root, *path])

    def count(self, path: list[Any], n: int = 1) -> None:
        self.nodes += n
        if self.nodes > self.max_nodes:
            raise self.fail(f"The filter is too large (more than {self.max_nodes} nodes)", path)

    def group(self, node: Any, path: list[Any], depth: int, scope: Scope | None) -> Any:
        """An object of fields (or dotted paths) and ``_and``/``_or`` lists."""
        if depth > self.max_depth:
            raise self.fail(f"The filter is nested deeper than {self.max_depth} levels", path)
        if not isinstance(node, dict) or not node:
            raise self.fail("A filter must be a non-empty object", path)
        parts: list[Any] = []  # checked nodes (None when walking without a schema)
        for key, value in node.items():
            here = [*path, key]
            self.count(here)
            if key in LOGICAL:
                if not isinstance(value, list) or not value:
                    raise self.fail(f"'{key}' takes a non-empty list of filters", here)
                if len(value) > MAX_LIST:
                    raise self.fail(f"'{key}' takes at most {MAX_LIST} filters", here)
                kids = [self.group(sub, [*here, i], depth + 1, scope) for i, sub in enumerate(value)]
                parts.append((all_of if key == "_and" else any_of)(kids) if scope is not None else None)
            elif key.startswith("_"):
                raise self.fail(f"'{key[:40]}' must follow a field name" if key in OPERATORS
                                else f"Unknown filter operator '{key[:40]}'", here)
            else:
                parts.append(self.field(key, value, here, depth + 1, scope))
        return all_of(parts) if scope is not None else None

    def field(self, key: str, value: Any, path: list[Any], depth: int, scope: Scope | None) -> Any:
        """The object under a key: operators, or an object of fields (relation or JSON path)."""
        segments = key.split(".")
        if len(segments) > MAX_PATH_SEGMENTS or not all(SEGMENT.fullmatch(s) for s in segments):
            raise self.fail(f"'{key[:80]}' is not a field name or a dotted path of at most {MAX_PATH_SEGMENTS} "
                            "segments of letters, digits and '_'", path)
        if depth > self.max_depth:
            raise self.fail(f"The filter is nested deeper than {self.max_depth} levels", path)
        if not isinstance(value, dict) or not value:
            raise self.fail("A field's filter must be a non-empty object of operators", path)
        operators = [k for k in value if k.startswith("_") and k not in LOGICAL]
        if operators and len(operators) != len(value):
            raise self.fail("A field's filter mixes operators and field names", path)
        resolver = self.resolver
        if not operators:
            if resolver is None or scope is None:
                return self.group(value, path, depth, None)
            inner, links = resolver.nested(scope, segments, [*self.root, *path])
            return wrap(links, self.group(value, path, depth, inner))
        for op, operand in value.items():
            here = [*path, op]
            self.count(here)
            if op not in OPERATORS:
                raise self.fail(f"Unknown filter operator '{op[:40]}'", here)
            self.operand(op, operand, here)
        if resolver is None or scope is None:
            return None
        target, links = resolver.target(scope, segments, [*self.root, *path])
        conditions = [typed_condition(target, op, operand, [*self.root, *path, op])
                      for op, operand in value.items()]
        return wrap(links, all_of(conditions))

    # ------------------------------------------------------------------ operand shapes
    def operand(self, op: str, value: Any, path: list[Any]) -> None:
        if op in ("_eq", "_neq"):
            self.scalar(value, path)
        elif op in _ORDER:
            if value is None or isinstance(value, bool):
                raise self.fail(f"'{op}' takes a number or a string", path)
            self.scalar(value, path)
        elif op in ("_in", "_nin"):
            self.scalar_list(value, path, f"'{op}' takes a list of values")
        elif op in ("_null", "_nnull"):
            if not isinstance(value, bool):
                raise self.fail(f"'{op}' takes true or false", path)
        elif op in _STRINGS:
            if value is None or isinstance(value, (list, dict)):
                raise self.fail(f"'{op}' takes a string", path)
            self.scalar(value, path)
        elif op == "_between":
            message = "'_between' takes a list of two numbers or strings"
            if not isinstance(value, list) or len(value) != 2 or any(v is None or isinstance(v, bool) for v in value):
                raise self.fail(message, path)
            self.scalar_list(value, path, message)
        elif op == "_json_contains":
            self.json_value(value, path, 0)
        elif op == "_has_key":
            if not isinstance(value, str):
                raise self.fail("'_has_key' takes a string", path)
            self.string(value, path)
        else:  # _has_any_keys, _has_all_keys
            message = f"'{op}' takes a non-empty list of strings"
            if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                raise self.fail(message, path)
            self.scalar_list(value, path, message)

    def scalar_list(self, value: Any, path: list[Any], message: str) -> None:
        if not isinstance(value, list):
            raise self.fail(message, path)
        if len(value) > MAX_LIST:
            raise self.fail(f"{message} (at most {MAX_LIST})", path)
        self.count(path, len(value))
        for i, item in enumerate(value):
            self.scalar(item, [*path, i])

    def scalar(self, value: Any, path: list[Any]) -> None:
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, str):
            self.string(value, path)
        elif isinstance(value, int):
            if abs(value) > MAX_INT:
                raise self.fail("Integers in filters must fit in 64 bits", path)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail("Numbers in filters must be finite", path)
        else:
            raise self.fail("Expected a string, number, boolean or null", path)

    def string(self, value: str, path: list[Any]) -> None:
        if len(value) > MAX_STRING:
            raise self.fail(f"Strings in filters are at most {MAX_STRING} characters", path)
        # NUL and lone surrogates cannot be bound as text on PostgreSQL.
        if "\x00" in value or not _encodable(value):
            raise self.fail("Strings in filters must be valid text without NUL characters", path)

    def json_value(self, value: Any, path: list[Any], depth: int) -> None:
        """Any JSON (``_json_contains``), bounded like the rest of the tree."""
        self.count(path)
        if depth > self.max_depth:
            raise self.fail(f"'_json_contains' is nested deeper than {self.max_depth} levels", path)
        if isinstance(value, dict):
            for key, item in value.items():
                self.string(key, path)
                self.json_value(item, [*path, key], depth + 1)
        elif isinstance(value, list):
            if len(value) > MAX_LIST:
                raise self.fail(f"Lists in filters have at most {MAX_LIST} elements", path)
            for i, item in enumerate(value):
                self.json_value(item, [*path, i], depth + 1)
        else:
            self.scalar(value, path)


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

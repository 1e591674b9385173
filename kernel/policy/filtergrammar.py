"""The filter-tree grammar shared by list filters (items) and permission conditions (access).

Both speak the same language (docs/decisions/items-query-semantics.md,
docs/decisions/access-conditions.md): a filter is a non-empty object whose keys are field
names or dotted paths, or ``_and``/``_or`` with a non-empty list of filters. Under a field
stands an object of operators (``OPERATORS``), or an object of fields again (a relation or a
JSON path), never a mix. ``FilterGrammar`` walks a tree once and checks those shapes, each
operator's operand and the bounds (depth, nodes, list and string sizes, 64-bit integers,
finite numbers, text PostgreSQL can store). A fault is 400 ``VALIDATION_FAILED`` with
``path`` down to the bad node. The bounds are checked during the walk, so a hostile tree
costs at most ``max_nodes`` steps.

Each side subclasses it with its own bounds and words (``subject``, ``noun``) and its extras:
the access plugin's ``$CURRENT_USER``-style variables, and the items plugin's resolution
against a schema, which builds its typed tree through ``nested``, ``leaf``, ``logical`` and
``combine`` while the grammar is checked.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

from kernel.base.errors import ApiError
from kernel.base.jsoncodec import encodable

OPERATORS = frozenset({
    "_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_in", "_nin", "_null", "_nnull", "_contains",
    "_icontains", "_starts_with", "_ends_with", "_between", "_json_contains", "_has_key",
    "_has_any_keys", "_has_all_keys",
})
LOGICAL = frozenset({"_and", "_or"})
ORDER_OPS = frozenset({"_lt", "_lte", "_gt", "_gte"})
STRING_OPS = frozenset({"_contains", "_icontains", "_starts_with", "_ends_with"})
MAX_DEPTH = 10  # each filter object and each field's operator object is a level
MAX_LIST = 1000  # elements of an operand list, and filters of an _and/_or list
MAX_PATH_SEGMENTS = 8  # the API's bound: a dotted path has at most 8 segments
MAX_INT = 2**63 - 1  # integers beyond 64 bits would fail in the database, not here


class FilterGrammar:
    """One walk over one tree. Subclasses set the class attributes below."""

    subject = "The filter"  # size faults: "<subject> is too large"
    noun = "filters"  # value faults: "Strings in <noun> are at most ..."
    segment = re.compile(r"[A-Za-z0-9_]{1,64}")  # one segment of a key (fullmatch)
    segment_rule = "segments of letters, digits and '_'"
    max_nodes = 500
    max_depth = MAX_DEPTH
    max_string = 10_000
    # Under a field, an object of fields (relation, JSON path) may group them with these;
    # a side without (``frozenset()``) reads them there as unknown operators.
    field_logic = LOGICAL

    def __init__(self, root: Sequence[Any] = ()) -> None:
        self.root = list(root)  # the path of the tree itself, prefixed to every fault's path
        self.nodes = 0

    def check(self, tree: Any) -> dict[str, Any] | None:
        """``tree`` if valid, else 400; ``None`` and ``{}`` mean "no filter"."""
        if tree is None or tree == {}:
            return None
        self.group(tree, [], 1)
        return tree

    def fail(self, message: str, path: list[Any]) -> ApiError:
        return ApiError.validation(message, path=[*self.root, *path])

    def count(self, path: list[Any], n: int = 1) -> None:
        self.nodes += n
        if self.nodes > self.max_nodes:
            raise self.fail(f"{self.subject} is too large (more than {self.max_nodes} nodes)", path)

    # ------------------------------------------------------------------ structure
    def group(self, node: Any, path: list[Any], depth: int, scope: Any = None) -> Any:
        """An object of fields (or dotted paths) and ``_and``/``_or`` lists. ``scope`` is the
        subclass's own context (items: the collection keys are resolved in)."""
        if depth > self.max_depth:
            raise self.fail(f"{self.subject} is nested deeper than {self.max_depth} levels", path)
        if not isinstance(node, dict) or not node:
            raise self.fail("A filter must be a non-empty object", path)
        parts = []
        for key, value in node.items():
            here = [*path, key]
            self.count(here)
            if key in LOGICAL:
                if not isinstance(value, list) or not value:
                    raise self.fail(f"'{key}' takes a non-empty list of filters", here)
                if len(value) > MAX_LIST:
                    raise self.fail(f"'{key}' takes at most {MAX_LIST} filters", here)
                kids = [self.group(sub, [*here, i], depth + 1, scope) for i, sub in enumerate(value)]
                parts.append(self.logical(key, kids))
            elif key.startswith("_"):
                raise self.fail(f"'{key[:40]}' must follow a field name" if key in OPERATORS
                                else f"Unknown filter operator '{key[:40]}'", here)
            else:
                parts.append(self.field(key, value, here, depth + 1, scope))
        return self.combine(parts)

    def field(self, key: str, value: Any, path: list[Any], depth: int, scope: Any) -> Any:
        """The object under a key: operators, or an object of fields (relation or JSON path)."""
        segments = key.split(".")
        if len(segments) > MAX_PATH_SEGMENTS or not all(self.segment.fullmatch(s) for s in segments):
            raise self.fail(f"'{key[:80]}' is not a field name or a dotted path of at most {MAX_PATH_SEGMENTS} "
                            f"{self.segment_rule}", path)
        if depth > self.max_depth:
            raise self.fail(f"{self.subject} is nested deeper than {self.max_depth} levels", path)
        if not isinstance(value, dict) or not value:
            raise self.fail("A field's filter must be a non-empty object of operators", path)
        operators = [k for k in value if k.startswith("_") and k not in self.field_logic]
        if operators and len(operators) != len(value):
            raise self.fail("A field's filter mixes operators and field names", path)
        if not operators:
            return self.nested(segments, value, path, depth, scope)
        for op, operand in value.items():
            here = [*path, op]
            self.count(here)
            if op not in OPERATORS:
                raise self.fail(f"Unknown filter operator '{op[:40]}'", here)
            self.operand(op, operand, here)
        return self.leaf(segments, value, path, scope)

    # What a subclass builds while walking (nothing here: the grammar only checks).
    def nested(self, segments: list[str], value: dict[str, Any], path: list[Any], depth: int, scope: Any) -> Any:
        """A key whose object holds fields: walk them as a filter."""
        return self.group(value, path, depth, scope)

    def leaf(self, segments: list[str], operators: dict[str, Any], path: list[Any], scope: Any) -> Any:
        """A key whose object holds checked operators."""
        return None

    def logical(self, key: str, kids: list[Any]) -> Any:
        """An ``_and``/``_or`` of checked filters."""
        return None

    def combine(self, parts: list[Any]) -> Any:
        """The checked keys of one filter object (ANDed)."""
        return None

    # ------------------------------------------------------------------ operands
    def operand(self, op: str, value: Any, path: list[Any]) -> None:
        if op in ("_eq", "_neq"):
            self.scalar(value, path)
        elif op in ORDER_OPS:
            if value is None or isinstance(value, bool):
                raise self.fail(f"'{op}' takes a number or a string", path)
            self.scalar(value, path)
        elif op in ("_in", "_nin"):
            self.scalar_list(value, path, f"'{op}' takes a list of values")
        elif op in ("_null", "_nnull"):
            if not isinstance(value, bool):
                raise self.fail(f"'{op}' takes true or false", path)
        elif op in STRING_OPS:
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
                raise self.fail(f"Integers in {self.noun} must fit in 64 bits", path)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail(f"Numbers in {self.noun} must be finite", path)
        else:
            raise self.fail("Expected a string, number, boolean or null", path)

    def string(self, value: str, path: list[Any]) -> None:
        if len(value) > self.max_string:
            raise self.fail(f"Strings in {self.noun} are at most {self.max_string} characters", path)
        # NUL and lone surrogates cannot be bound as text, nor stored in JSONB, on PostgreSQL.
        if "\x00" in value or not encodable(value):
            raise self.fail(f"Strings in {self.noun} must be valid text without NUL characters", path)

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
                raise self.fail(f"Lists in {self.noun} have at most {MAX_LIST} elements", path)
            for i, item in enumerate(value):
                self.json_value(item, [*path, i], depth + 1)
        else:
            self.scalar(value, path)

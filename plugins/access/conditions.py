"""Checking a permission rule before it is stored: ``fields`` and the ``conditions`` filter tree.

Conditions use the list-filter language of api-spec.md (same operators, dotted JSON paths)
plus the variables ``$CURRENT_USER``, ``$CURRENT_ROLE``, ``$CURRENT_ROLES`` and ``$NOW``,
which ``kernel.access`` substitutes per request. A rule is checked when it is written, so a
malformed tree can never reach the query compiler on a read, where it would fail every
request of everyone the policy applies to.
"""

from __future__ import annotations

import math
import re
from typing import Any

from kernel import ApiError

OPERATORS = frozenset({
    "_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_in", "_nin", "_null", "_nnull", "_contains",
    "_icontains", "_starts_with", "_ends_with", "_between", "_json_contains", "_has_key",
    "_has_any_keys", "_has_all_keys",
})
LOGICAL = frozenset({"_and", "_or"})
SCALAR_VARIABLES = frozenset({"$CURRENT_USER", "$CURRENT_ROLE", "$NOW"})
LIST_VARIABLES = frozenset({"$CURRENT_ROLES"})
MAX_DEPTH = 10
MAX_NODES = 1000
MAX_LIST = 1000
MAX_STRING = 1000
MAX_PATH_SEGMENTS = 8  # the spec's limit on dotted JSON paths
MAX_FIELDS = 500
MAX_INT = 2**63 - 1  # beyond this a comparison fails in the database, not here
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_SEGMENT = re.compile(FIELD_PATTERN)
# "$WORD" or "$WORD.path": shaped like a variable, so a typo must not pass as a literal.
_VARIABLE_LIKE = re.compile(r"^\$[A-Z][A-Z_]*(\..*)?$", re.DOTALL)

_STRING_OPS = frozenset({"_contains", "_icontains", "_starts_with", "_ends_with", "_has_key"})
_ORDER_OPS = frozenset({"_lt", "_lte", "_gt", "_gte"})


def validate_fields(value: Any) -> list[str]:
    """``fields``: field names, or ``["*"]`` for all (the default when absent)."""
    if value is None:
        return ["*"]
    if not isinstance(value, list) or len(value) > MAX_FIELDS:
        raise ApiError.validation(f"'fields' must be a list of at most {MAX_FIELDS} field names", path=["fields"])
    for i, name in enumerate(value):
        if name != "*" and (not isinstance(name, str) or not _SEGMENT.fullmatch(name)):
            raise ApiError.validation(f"'fields' items must be '*' or match {FIELD_PATTERN}", path=["fields", i])
    names = list(dict.fromkeys(value))
    return ["*"] if "*" in names else names


def validate_conditions(tree: Any) -> dict[str, Any] | None:
    """The checked tree (``None`` or ``{}``: the rule does not restrict rows)."""
    if tree is None or tree == {}:
        return None
    _Walker().group(tree, ["conditions"], 1)
    return tree


class _Walker:
    """One walk over a tree, counting nodes so a huge tree is refused, not stored."""

    def __init__(self) -> None:
        self.nodes = 0

    @staticmethod
    def fail(message: str, path: list[Any]) -> ApiError:
        return ApiError.validation(message, path=path)

    def count(self, path: list[Any]) -> None:
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise self.fail(f"'conditions' is too large (more than {MAX_NODES} nodes)", path)

    def group(self, node: Any, path: list[Any], depth: int) -> None:
        """An object whose keys are fields (or dotted paths) and ``_and``/``_or``."""
        if depth > MAX_DEPTH:
            raise self.fail(f"'conditions' is nested deeper than {MAX_DEPTH} levels", path)
        if not isinstance(node, dict) or not node:
            raise self.fail("A filter must be a non-empty object", path)
        for key, value in node.items():
            self.count(path)
            here = [*path, key]
            if key in LOGICAL:
                if not isinstance(value, list) or not value or len(value) > MAX_LIST:
                    raise self.fail(f"'{key}' takes a non-empty list of filters", here)
                for i, sub in enumerate(value):
                    self.group(sub, [*here, i], depth + 1)
            elif key.startswith("_"):
                raise self.fail(f"'{key}' must follow a field name" if key in OPERATORS
                                else f"Unknown filter operator '{key}'", here)
            else:
                self.field_path(key, here)
                self.field(value, here, depth + 1)

    def field_path(self, key: str, path: list[Any]) -> None:
        segments = key.split(".")
        if len(segments) > MAX_PATH_SEGMENTS or not all(_SEGMENT.fullmatch(s) for s in segments):
            raise self.fail(f"'{key[:80]}' is not a field name or a dotted path of at most "
                            f"{MAX_PATH_SEGMENTS} segments ({FIELD_PATTERN})", path)

    def field(self, node: Any, path: list[Any], depth: int) -> None:
        """The object under a field: operators, or (a relation) the related item's fields."""
        if depth > MAX_DEPTH:
            raise self.fail(f"'conditions' is nested deeper than {MAX_DEPTH} levels", path)
        if not isinstance(node, dict) or not node:
            raise self.fail("A field's filter must be a non-empty object of operators", path)
        operators = [k for k in node if k.startswith("_")]
        if not operators:
            self.group(node, path, depth)
            return
        if len(operators) != len(node):
            raise self.fail("A field's filter mixes operators and field names", path)
        for op, value in node.items():
            self.count(path)
            if op not in OPERATORS:
                raise self.fail(f"Unknown filter operator '{op}'", [*path, op])
            self.operand(op, value, [*path, op])

    def operand(self, op: str, value: Any, path: list[Any]) -> None:
        if op in ("_eq", "_neq"):
            self.scalar(value, path)
        elif op in _ORDER_OPS:
            if value is None or isinstance(value, bool):
                raise self.fail(f"'{op}' takes a number or a string", path)
            self.scalar(value, path)
        elif op in ("_in", "_nin"):
            if isinstance(value, str) and value in LIST_VARIABLES:
                return
            self.scalar_list(value, path, f"'{op}' takes a list of values or $CURRENT_ROLES")
        elif op in ("_null", "_nnull"):
            if not isinstance(value, bool):
                raise self.fail(f"'{op}' takes true or false", path)
        elif op in _STRING_OPS:
            if not isinstance(value, str):
                raise self.fail(f"'{op}' takes a string", path)
            self.string(value, path)
        elif op == "_between":
            if not isinstance(value, list) or len(value) != 2 or any(v is None or isinstance(v, bool) for v in value):
                raise self.fail("'_between' takes a list of two numbers or strings", path)
            self.scalar_list(value, path, "'_between' takes a list of two numbers or strings")
        elif op == "_json_contains":
            self.json_value(value, path, 0)
        else:  # _has_any_keys, _has_all_keys
            if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
                raise self.fail(f"'{op}' takes a non-empty list of strings", path)
            self.scalar_list(value, path, f"'{op}' takes a non-empty list of strings")

    def scalar_list(self, value: Any, path: list[Any], message: str) -> None:
        if not isinstance(value, list) or len(value) > MAX_LIST:
            raise self.fail(message, path)
        for i, item in enumerate(value):
            self.count(path)
            self.scalar(item, [*path, i])

    def scalar(self, value: Any, path: list[Any]) -> None:
        if value is None or isinstance(value, bool):
            return
        if isinstance(value, str):
            self.string(value, path)
        elif isinstance(value, int):
            if abs(value) > MAX_INT:
                raise self.fail("Integers in conditions must fit in 64 bits", path)
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise self.fail("Numbers in conditions must be finite", path)
        else:
            raise self.fail("Expected a string, number, boolean or null", path)

    def string(self, value: str, path: list[Any]) -> None:
        if len(value) > MAX_STRING:
            raise self.fail(f"Strings in conditions are at most {MAX_STRING} characters", path)
        # NUL and lone surrogates cannot be stored as JSON text on PostgreSQL.
        if "\x00" in value or not _encodable(value):
            raise self.fail("Strings in conditions must be valid text without NUL characters", path)
        if _VARIABLE_LIKE.fullmatch(value) and value not in SCALAR_VARIABLES:
            known = ", ".join(sorted(SCALAR_VARIABLES | LIST_VARIABLES))
            raise self.fail(f"Unknown variable '{value[:40]}' here; known: {known} ($CURRENT_ROLES "
                            "only as the value of _in/_nin)", path)

    def json_value(self, value: Any, path: list[Any], depth: int) -> None:
        """Any JSON for ``_json_contains``, bounded like the rest of the tree."""
        self.count(path)
        if depth > MAX_DEPTH:
            raise self.fail(f"'_json_contains' is nested deeper than {MAX_DEPTH} levels", path)
        if isinstance(value, dict):
            for key, item in value.items():
                self.string(key, path)
                self.json_value(item, [*path, key], depth + 1)
        elif isinstance(value, list):
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

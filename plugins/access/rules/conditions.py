"""Checking a permission rule before it is stored: ``fields`` and the ``conditions`` filter tree.

Conditions use the list-filter language of the items API (same operators, dotted JSON paths)
plus the variables ``$CURRENT_USER``, ``$CURRENT_ROLE``, ``$CURRENT_ROLES`` and ``$NOW``,
which ``kernel.access`` substitutes per request. A rule is checked when it is written, so a
malformed tree can never reach the query compiler on a read, where it would fail every
request of everyone the policy applies to. The grammar (shapes, operators, operands, bounds)
is ``kernel.policy.filtergrammar``, shared with list filters; this module adds the variables and a
stored rule's own bounds.
"""

from __future__ import annotations

import re
from typing import Any

from kernel import ApiError
from kernel.policy.filtergrammar import MAX_DEPTH as MAX_DEPTH
from kernel.policy.filtergrammar import STRING_OPS, FilterGrammar

SCALAR_VARIABLES = frozenset({"$CURRENT_USER", "$CURRENT_ROLE", "$NOW"})
LIST_VARIABLES = frozenset({"$CURRENT_ROLES"})
MAX_NODES = 1000
MAX_STRING = 1000
MAX_FIELDS = 500
FIELD_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
_SEGMENT = re.compile(FIELD_PATTERN)
# "$WORD" or "$WORD.path": shaped like a variable, so a typo must not pass as a literal.
_VARIABLE_LIKE = re.compile(r"^\$[A-Z][A-Z_]*(\..*)?$", re.DOTALL)


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
    return _Conditions(["conditions"]).check(tree)


class _Conditions(FilterGrammar):
    """The list-filter grammar with the variables, stricter text operands (a stored JSON tree
    is never coerced from query text) and the bounds of a stored rule."""

    subject = "'conditions'"
    noun = "conditions"
    segment = _SEGMENT
    segment_rule = f"segments ({FIELD_PATTERN})"
    max_nodes = MAX_NODES
    max_string = MAX_STRING
    field_logic = frozenset()  # a relational condition lists the related item's fields only

    def operand(self, op: str, value: Any, path: list[Any]) -> None:
        if op in ("_in", "_nin"):
            if isinstance(value, str) and value in LIST_VARIABLES:
                return
            if not isinstance(value, list):
                raise self.fail(f"'{op}' takes a list of values or $CURRENT_ROLES", path)
        elif op in STRING_OPS and not isinstance(value, str):
            raise self.fail(f"'{op}' takes a string", path)
        super().operand(op, value, path)

    def string(self, value: str, path: list[Any]) -> None:
        super().string(value, path)
        if _VARIABLE_LIKE.fullmatch(value) and value not in SCALAR_VARIABLES:
            known = ", ".join(sorted(SCALAR_VARIABLES | LIST_VARIABLES))
            raise self.fail(f"Unknown variable '{value[:40]}' here; known: {known} ($CURRENT_ROLES "
                            "only as the value of _in/_nin)", path)

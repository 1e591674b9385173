"""Guards on a document, in every environment: size, operations, depth, cost.

- Size: at most ``MAX_QUERY_CHARS`` characters and ``MAX_TOKENS`` lexical tokens (parser).
- Operations: at most ``MAX_OPERATIONS`` operation definitions in one document.
- Depth: at most ``MAX_DEPTH`` (12) nested fields (docs/graphql.md, Limits and guards).
- Cost: each field costs 1; a list field's subtree is multiplied by its literal
  ``limit``, ``first``, ``last`` or ``pageSize``, clamped to ``SVC_GQL_MAX_LIST_MULTIPLIER``; a
  variable or an absent argument counts ``SVC_GQL_DEFAULT_LIST_SIZE``; nested lists multiply.
  At most ``SVC_GQL_MAX_COST``. Every field node counts, so aliases and repeated fields add up
  (``{a: x b: x c: x}`` costs three times ``x``): alias amplification is bounded.

Depth and cost are validation rules (``ValidationRule``), so they run once per cached document.
Fragments are costed once each (memoised), so nested spreads cannot make the guard itself slow.
Introspection (``__schema``, ``__type``) is not costed: outside development it is refused anyway.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from graphql import (
    FieldNode,
    FragmentSpreadNode,
    GraphQLError,
    InlineFragmentNode,
    IntValueNode,
    OperationDefinitionNode,
    OperationType,
    ValidationRule,
    get_named_type,
    get_nullable_type,
    is_list_type,
    is_object_type,
)

MAX_DEPTH = 12
MAX_QUERY_CHARS = 20_000
MAX_TOKENS = 5_000
MAX_OPERATIONS = 10
LIST_ARGS = ("limit", "first", "last", "pageSize")
INTROSPECTION = frozenset({"__schema", "__type"})


@dataclass(frozen=True)
class Limits:
    max_cost: int = 1000
    default_list_size: int = 20
    max_list_multiplier: int = 100

    @classmethod
    def from_settings(cls, settings: Any) -> Limits:
        return cls(settings.get("gql_max_cost", 1000), settings.get("gql_default_list_size", 20),
                   settings.get("gql_max_list_multiplier", 100))


def guard_error(message: str, node: Any = None) -> GraphQLError:
    return GraphQLError(message, node, extensions={"code": "VALIDATION"})


class _Measure:
    """Depth and unit cost of selection sets, fragments memoised by name."""

    def __init__(self, context: Any, limits: Limits) -> None:
        self.context = context
        self.limits = limits
        self.schema = context.schema
        self.fragments: dict[tuple[str, str], tuple[int, int]] = {}
        self.in_progress: set[str] = set()

    def multiplier(self, node: FieldNode) -> int:
        for arg in node.arguments or ():
            if arg.name.value in LIST_ARGS:
                if isinstance(arg.value, IntValueNode):
                    return max(0, min(int(arg.value.value), self.limits.max_list_multiplier))
                return min(self.limits.default_list_size, self.limits.max_list_multiplier)
        return min(self.limits.default_list_size, self.limits.max_list_multiplier)

    def selection(self, parent: Any, selection_set: Any) -> tuple[int, int]:
        """``(depth, cost)`` of a selection set under the object type ``parent``."""
        depth = cost = 0
        if selection_set is None:
            return 0, 0
        for sel in selection_set.selections:
            if isinstance(sel, FieldNode):
                d, c = self.field(parent, sel)
            elif isinstance(sel, InlineFragmentNode):
                target = parent
                if sel.type_condition is not None:
                    target = self.schema.get_type(sel.type_condition.name.value) or parent
                d, c = self.selection(target, sel.selection_set)
            elif isinstance(sel, FragmentSpreadNode):
                d, c = self.spread(sel)
            else:
                continue
            depth, cost = max(depth, d), cost + c
        return depth, cost

    def spread(self, node: FragmentSpreadNode) -> tuple[int, int]:
        name = node.name.value
        fragment = self.context.get_fragment(name)
        if fragment is None or name in self.in_progress:  # unknown or cyclic: other rules report it
            return 0, 0
        key = (name, fragment.type_condition.name.value)
        if key not in self.fragments:
            self.in_progress.add(name)
            target = self.schema.get_type(fragment.type_condition.name.value)
            self.fragments[key] = self.selection(target, fragment.selection_set)
            self.in_progress.discard(name)
        return self.fragments[key]

    def field(self, parent: Any, node: FieldNode) -> tuple[int, int]:
        name = node.name.value
        if name in INTROSPECTION:
            return 0, 0
        definition = parent.fields.get(name) if is_object_type(parent) else None
        if definition is None:  # __typename, or unknown (FieldsOnCorrectTypeRule reports it)
            return 1, 1
        child = get_named_type(definition.type)
        if node.selection_set is None:
            return 1, 1
        depth, cost = self.selection(child, node.selection_set)
        if is_list_type(get_nullable_type(definition.type)):
            cost *= self.multiplier(node)
        return depth + 1, cost + 1


@lru_cache(maxsize=64)
def cost_rule(limits: Limits) -> type[ValidationRule]:
    """The depth-and-cost validation rule for ``limits`` (one class per distinct limits)."""

    class DepthAndCostRule(ValidationRule):
        def enter_document(self, node: Any, *_: Any) -> None:
            operations = [d for d in node.definitions if isinstance(d, OperationDefinitionNode)]
            if len(operations) > MAX_OPERATIONS:
                self.report_error(guard_error(f"A document may hold at most {MAX_OPERATIONS} operations"))

        def enter_operation_definition(self, node: OperationDefinitionNode, *_: Any) -> Any:
            schema = self.context.schema
            root = {OperationType.QUERY: schema.query_type, OperationType.MUTATION: schema.mutation_type,
                    OperationType.SUBSCRIPTION: schema.subscription_type}.get(node.operation)
            if root is None:
                return self.SKIP
            depth, cost = _Measure(self.context, limits).selection(root, node.selection_set)
            if depth > MAX_DEPTH:
                self.report_error(guard_error(f"Query exceeds the maximum depth of {MAX_DEPTH}", node))
            elif cost > limits.max_cost:
                self.report_error(guard_error(f"Query exceeds the maximum cost of {limits.max_cost}", node))
            return self.SKIP

    return DepthAndCostRule



def measure(schema: Any, document: Any, limits: Limits) -> list[tuple[int, int]]:
    """``(depth, cost)`` of each operation of ``document``, as the guard computes them (tests,
    benchmarks)."""
    from graphql import TypeInfo
    from graphql.validation import ValidationContext

    context = ValidationContext(schema, document, TypeInfo(schema), lambda _error: None)
    roots = {OperationType.QUERY: schema.query_type, OperationType.MUTATION: schema.mutation_type,
             OperationType.SUBSCRIPTION: schema.subscription_type}
    return [_Measure(context, limits).selection(roots[d.operation], d.selection_set)
            for d in document.definitions if isinstance(d, OperationDefinitionNode)]

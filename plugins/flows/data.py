"""The data a run passes between steps, and how it is rendered, judged, bounded and redacted.

A run's data is ``{"$trigger": input, "$last": previous output, "<nodeId>": output, ...}``.

- Templates: a string option is a display template (``plugins.utils`` renderer, jinja2's
  sandbox): ``"Hello {{ $trigger.body.name }}"``. A string that is exactly one reference
  (``"{{ $trigger.body }}"``) keeps the value's type (an object stays an object).
- ``condition`` filters use the items filter language over the data:
  ``{"$trigger": {"body": {"count": {"_gt": 2}}}}``.
- Redaction: values under keys naming a password, token, secret, authorization, cookie or
  API key are masked in every stored input and output, and a NUL or lone surrogate in a stored
  string becomes U+FFFD (PostgreSQL's JSONB holds neither).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from kernel.base.errors import ApiError
from kernel.base.jsoncodec import encodable
from kernel.policy.filtergrammar import FilterGrammar
from plugins.flows.api import StepFailed
from plugins.utils.api import OutputTooLarge, TemplateRefused, render_template

MASK = "**********"
SENSITIVE = re.compile(r"passw(or)?d|token|secret|authori[sz]ation|cookie|api[-_]?key|credential|private[-_]?key",
                       re.IGNORECASE)
_REFERENCE = re.compile(r"^\{\{\s*(\$?[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_$-]+)*)\s*\}\}$")
_DOLLAR = re.compile(r"\$([A-Za-z_])")
_BLOCK = re.compile(r"\{\{(.*?)\}\}", re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _storable(text: str) -> str:
    """``text`` as PostgreSQL's JSONB can keep it: a NUL or a lone surrogate (a webhook's body,
    an upstream answer, ``$decodeUrlComponent("%00")``) becomes U+FFFD. A run record is a log:
    refusing the write would leave the run ``running`` for ever."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text if encodable(text) else _SURROGATE.sub("\ufffd", text)


def redact(value: Any, depth: int = 0) -> Any:
    """``value`` as a run record keeps it: sensitive keys' values masked, every string and key
    storable (``_storable``), deeply; past 32 levels, elided."""
    if depth > 32:
        return "…"
    if isinstance(value, str):
        return _storable(value)
    if isinstance(value, dict):
        return {(_storable(k) if isinstance(k, str) else k):
                MASK if isinstance(k, str) and SENSITIVE.search(k) else redact(v, depth + 1)
                for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v, depth + 1) for v in value]
    return value


def json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON; a value that is not JSON fails the step."""
    try:
        return len(orjson.dumps(value, default=str))
    except (TypeError, orjson.JSONEncodeError) as exc:
        raise StepFailed(f"the output is not JSON: {exc}", code="OUTPUT_INVALID") from exc


def template_context(data: dict[str, Any]) -> dict[str, Any]:
    """The names a template sees: ``$trigger`` as ``trigger``, node ids as themselves."""
    return {(k[1:] if k.startswith("$") else k): v for k, v in data.items()}


def lookup(data: dict[str, Any], path: str) -> Any:
    """The value at a dotted ``path`` (``$trigger.body.name``), None when absent."""
    current: Any = data
    first, _, rest = path.partition(".")
    if first not in data and first.startswith("$") and first[1:] in data:
        path = first[1:] + ("." + rest if rest else "")  # '$node.x': a step's output by node id
    for part in path.split("."):
        if isinstance(current, dict):
            current = current.get(part)
        elif isinstance(current, list) and part.isdigit() and int(part) < len(current):
            current = current[int(part)]
        else:
            return None
    return current


def render_value(value: Any, data: dict[str, Any], context: dict[str, Any] | None = None) -> Any:
    """``value`` with every string rendered as a template against ``data`` (deeply)."""
    if isinstance(value, str):
        if "{{" not in value:
            return value
        whole = _REFERENCE.match(value)
        if whole:
            return lookup(data, whole.group(1))
        # jinja names cannot start with '$': '{{ $trigger.x }}' is read as '{{ trigger.x }}'.
        source = _BLOCK.sub(lambda m: "{{" + _DOLLAR.sub(r"\1", m.group(1)) + "}}", value)
        try:
            return render_template(source, context if context is not None else template_context(data), escape=False)
        except (TemplateRefused, OutputTooLarge) as exc:
            raise StepFailed(f"template: {exc}", code="TEMPLATE_FAILED") from exc
    if isinstance(value, dict):
        ctx = context if context is not None else template_context(data)
        return {k: render_value(v, data, ctx) for k, v in value.items()}
    if isinstance(value, list):
        ctx = context if context is not None else template_context(data)
        return [render_value(v, data, ctx) for v in value]
    return value


def template_faults(value: Any, path: list[Any], depth: int = 0) -> tuple[list[Any], str] | None:
    """The first string in ``value`` that is not a valid display template: ``(path, reason)``."""
    if depth > 32:
        return None
    if isinstance(value, str):
        if "{{" not in value and "{%" not in value and "{#" not in value:
            return None
        if _REFERENCE.match(value):
            return None
        source = _BLOCK.sub(lambda m: "{{" + _DOLLAR.sub(r"\1", m.group(1)) + "}}", value)
        try:
            render_template(source, {}, escape=False)  # parses and checks; bounded
        except TemplateRefused as exc:
            return path, str(exc)
        except OutputTooLarge:
            return None
        return None
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, kid in items:
        found = template_faults(kid, [*path, key], depth + 1)
        if found:
            return found
    return None


# ---------------------------------------------------------------------- condition filters

class ConditionGrammar(FilterGrammar):
    """A ``condition`` filter: the items grammar, with keys that may start with ``$``."""

    subject = "The condition"
    segment = re.compile(r"\$?[A-Za-z0-9_-]{1,64}")
    segment_rule = "segments of letters, digits, '_', '-' (the first may start with '$')"
    max_nodes = 200


SUPPORTED = frozenset({"_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_in", "_nin", "_null", "_nnull", "_between",
                       "_contains", "_icontains", "_starts_with", "_ends_with", "_has_key"})


def check_condition(tree: Any, root: list[Any]) -> None:
    """400 ``VALIDATION_FAILED`` (at ``root`` + the fault) unless ``tree`` is a valid filter
    whose operators the in-memory evaluator supports."""
    if not isinstance(tree, dict) or not tree:
        raise ApiError.validation("'filter' must be a non-empty object", path=root)
    ConditionGrammar(root).check(tree)
    stack: list[tuple[Any, list[Any]]] = [(tree, list(root))]
    while stack:
        node, path = stack.pop()
        if isinstance(node, list):
            stack.extend((kid, [*path, i]) for i, kid in enumerate(node))
        elif isinstance(node, dict):
            for key, value in node.items():
                if key.startswith("_") and key not in ("_and", "_or") and key not in SUPPORTED:
                    raise ApiError.validation(f"The operator {key} is not supported in a flow condition",
                                              path=[*path, key])
                if key.startswith("_") and key not in ("_and", "_or"):
                    continue
                stack.append((value, [*path, key]))


def _compare(op: str, actual: Any, operand: Any) -> bool:
    def ordered(fn: Any) -> bool:
        try:
            return actual is not None and bool(fn(actual, operand))
        except TypeError:
            return False

    if op == "_eq":
        return actual == operand
    if op == "_neq":
        return actual != operand
    if op == "_lt":
        return ordered(lambda a, b: a < b)
    if op == "_lte":
        return ordered(lambda a, b: a <= b)
    if op == "_gt":
        return ordered(lambda a, b: a > b)
    if op == "_gte":
        return ordered(lambda a, b: a >= b)
    if op == "_in":
        return isinstance(operand, list) and actual in operand
    if op == "_nin":
        return isinstance(operand, list) and actual not in operand
    if op == "_null":
        return (actual is None) == bool(operand)
    if op == "_nnull":
        return (actual is not None) == bool(operand)
    if op == "_between":
        return isinstance(operand, list) and len(operand) == 2 and ordered(lambda a, b: b[0] <= a <= b[1])
    if op in ("_contains", "_icontains", "_starts_with", "_ends_with"):
        if isinstance(actual, list) and op == "_contains":
            return operand in actual
        if not isinstance(actual, str) or not isinstance(operand, str):
            return False
        if op == "_icontains":
            return operand.lower() in actual.lower()
        if op == "_contains":
            return operand in actual
        return actual.startswith(operand) if op == "_starts_with" else actual.endswith(operand)
    if op == "_has_key":
        return isinstance(actual, dict) and operand in actual
    raise StepFailed(f"the operator {op} is not supported in a condition", code="CONDITION_UNSUPPORTED")


def matches(tree: dict[str, Any], data: Any) -> bool:
    """Whether ``data`` satisfies the (checked) filter ``tree``."""
    for key, value in tree.items():
        if key == "_and":
            if not all(matches(kid, data) for kid in value):
                return False
        elif key == "_or":
            if not any(matches(kid, data) for kid in value):
                return False
        else:
            actual = lookup(data, key) if isinstance(data, dict) else None
            if isinstance(value, dict) and value and all(k.startswith("_") and k not in ("_and", "_or")
                                                         for k in value):
                if not all(_compare(op, actual, operand) for op, operand in value.items()):
                    return False
            elif isinstance(value, dict):
                if not matches(value, actual if isinstance(actual, dict) else {}):
                    return False
            else:
                return False
    return True

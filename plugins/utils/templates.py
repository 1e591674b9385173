"""Display templates: ``{{title}} by {{author.name}}``, rendered without running any code.

jinja2's sandbox alone still runs loops and calls, so a template is parsed first and refused
unless it is text and output expressions made of variables, attribute and item access,
constants and a few filters. Rendering is then linear in the template; a work budget bounds
what filters and output may cost, so a large ``data`` cannot be multiplied into gigabytes.
"""

from __future__ import annotations

import contextvars
import json
from collections.abc import Iterable
from dataclasses import dataclass
from operator import methodcaller
from typing import Any

from jinja2 import ChainableUndefined, nodes
from jinja2.exceptions import TemplateError, TemplateSyntaxError
from jinja2.filters import do_default, do_first, do_join, do_last, do_truncate
from jinja2.runtime import EvalContext
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import pass_environment, pass_eval_context
from markupsafe import soft_str

MAX_TEMPLATE_CHARS = 10_000
MAX_OUTPUT_CHARS = 1 << 20  # 1 MiB of text
WORK_BUDGET_CHARS = 8 * MAX_OUTPUT_CHARS  # characters filters and output may produce in one render
ELEMENT_COST = 8  # walking one list element or object key costs like this many characters


class TemplateRefused(ValueError):
    """The template is not a display template (a statement, a call, an unknown filter...)."""


class OutputTooLarge(ValueError):
    """Rendering would produce more than the output or work budget allows."""


@dataclass
class _Budget:
    left: int

    def spend(self, chars: int) -> None:
        self.left -= chars
        if self.left < 0:
            raise OutputTooLarge(f"the template needs more work than one render may do ({WORK_BUDGET_CHARS} "
                                 "characters of filter results and output)")


_BUDGET: contextvars.ContextVar[_Budget] = contextvars.ContextVar("svc_template_budget")


def _spend(chars: int) -> None:
    _BUDGET.get().spend(chars)


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    text = soft_str(value)  # a dict or list: pay for having walked it
    _spend(len(text))
    return text


def _text_filter(transform: Any) -> Any:
    def apply(value: Any) -> str:
        result = transform(_as_text(value))
        _spend(len(result))
        return result

    return apply


def _lookup(env: Any, item: Any, attribute: str | int) -> Any:
    for part in str(attribute).split("."):
        item = env.getitem(item, int(part) if part.isdigit() else part)
    return item


@pass_eval_context
def _join(eval_ctx: EvalContext, value: Any, d: str = "", attribute: str | int | None = None) -> str:
    # Paid for before joining: a long separator over a long list is the one multiplying filter.
    if isinstance(value, (str, list, dict)):
        _spend(ELEMENT_COST * len(value))
    items = list(value) if isinstance(value, Iterable) else []
    if attribute is not None:
        items = [_lookup(eval_ctx.environment, item, attribute) for item in items]
    separator = _as_text(d)
    _spend(len(separator) * max(len(items) - 1, 0))
    texts = [_as_text(item) for item in items]
    _spend(sum(len(t) for t in texts))
    return do_join(eval_ctx, texts, separator)


@pass_environment
def _truncate(env: Any, s: Any, length: int = 255, killwords: bool = False, end: str = "...",
              leeway: int | None = None) -> str:
    result = do_truncate(env, _as_text(s), length, killwords, _as_text(end), leeway)
    _spend(len(result))
    return result


def _display(value: Any) -> Any:
    """How a value prints: null as nothing, booleans, objects and arrays as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return value


def _length(value: Any) -> int:
    try:
        return len(value)
    except TypeError:
        return 0


FILTERS: dict[str, Any] = {
    # By method name, not str.upper: Markup's own methods keep an escaped value escaped once.
    "upper": _text_filter(methodcaller("upper")),
    "lower": _text_filter(methodcaller("lower")),
    "title": _text_filter(methodcaller("title")),
    "capitalize": _text_filter(methodcaller("capitalize")),
    "trim": _text_filter(methodcaller("strip")),
    "default": do_default,
    "d": do_default,
    "join": _join,
    "length": _length,
    "count": _length,
    "truncate": _truncate,
    "first": do_first,
    "last": do_last,
}

# Nodes a display template may contain; everything else (statements, calls, operators, tests,
# comprehensions) is refused before rendering.
_ALLOWED_NODES = (nodes.Template, nodes.Output, nodes.TemplateData, nodes.Name, nodes.Const, nodes.Getattr,
                  nodes.Getitem, nodes.Slice, nodes.Filter, nodes.Keyword, nodes.Neg, nodes.Pos)
_DESCRIBE = {
    nodes.Call: "function and method calls are not allowed",
    nodes.Test: "tests ('is ...') are not allowed",
    nodes.CondExpr: "conditional expressions are not allowed",
    nodes.Concat: "the '~' operator is not allowed",
    nodes.BinExpr: "operators are not allowed",
    nodes.Compare: "comparisons are not allowed",
}


class DisplayEnvironment(SandboxedEnvironment):
    """A sandbox where ``a.b`` and ``a[b]`` read JSON data only, never Python attributes."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, dict) and attribute in obj:
            return obj[attribute]
        return self.undefined(obj=obj, name=attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        if isinstance(obj, dict):
            key = argument if isinstance(argument, str) else str(argument)
            if key in obj:
                return obj[key]
        elif isinstance(obj, (list, str)) and isinstance(argument, (int, slice)) and not isinstance(argument, bool):
            try:
                found = obj[argument]
            except (IndexError, ValueError, TypeError):
                found = None
            else:
                if isinstance(argument, slice):  # a slice copies: charge it like output
                    _spend(len(found))
                return found
        return self.undefined(obj=obj, name=argument if isinstance(argument, str) else None)


def _environment(escape: bool) -> DisplayEnvironment:
    env = DisplayEnvironment(autoescape=escape, undefined=ChainableUndefined, finalize=_display)
    env.optimized = False  # the optimizer would run filters at compile time, outside the budget
    env.filters = dict(FILTERS)
    env.tests = {}
    env.globals = {}
    return env


def _refuse(node: nodes.Node, reason: str) -> TemplateRefused:
    line = getattr(node, "lineno", None)
    return TemplateRefused(f"{reason} (line {line})" if line else reason)


def check_template(tree: nodes.Template) -> None:
    """Raise ``TemplateRefused`` unless ``tree`` is text and display expressions only."""
    stack: list[nodes.Node] = [tree]
    while stack:  # iterative: a deeply nested expression must not exhaust the Python stack here
        node = stack.pop()
        if isinstance(node, nodes.Stmt) and not isinstance(node, nodes.Output):
            raise _refuse(node, f"statements ('{{% {type(node).__name__.lower()} %}}') are not allowed; "
                                "only '{{ expression }}' output is")
        if not isinstance(node, _ALLOWED_NODES):
            reason = next((why for kind, why in _DESCRIBE.items() if isinstance(node, kind)),
                          f"'{type(node).__name__}' expressions are not allowed")
            raise _refuse(node, reason)
        if isinstance(node, nodes.Filter):
            if node.name not in FILTERS:
                raise _refuse(node, f"unknown filter '{node.name}'; allowed: {', '.join(sorted(FILTERS))}")
            if node.dyn_args is not None or node.dyn_kwargs is not None:
                raise _refuse(node, "'*args' and '**kwargs' are not allowed in filter arguments")
        if isinstance(node, nodes.Getattr) and node.attr.startswith("__"):
            raise _refuse(node, f"attribute '{node.attr}' is not allowed")
        if isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) \
                and isinstance(node.arg.value, str) and node.arg.value.startswith("__"):
            raise _refuse(node, f"key '{node.arg.value}' is not allowed")
        if isinstance(node, nodes.Name) and node.name == "self":
            raise _refuse(node, "'self' is reserved")
        if isinstance(node, (nodes.Neg, nodes.Pos)) and not isinstance(node.node, nodes.Const):
            raise _refuse(node, "operators are not allowed")
        stack.extend(node.iter_child_nodes())


def render_template(source: str, data: dict[str, Any], escape: bool = True, *,
                    max_template_chars: int = MAX_TEMPLATE_CHARS) -> str:
    """Render a display template with ``data``; missing variables render as empty text.

    Raises ``TemplateRefused`` for anything but a display template (syntax errors included) and
    ``OutputTooLarge`` past ``MAX_OUTPUT_CHARS`` of output or the work budget. Synchronous and
    bounded; the caller may run it in a thread. ``max_template_chars`` caps the source (email
    templates are longer than display templates).
    """
    if len(source) > max_template_chars:
        raise TemplateRefused(f"the template is longer than {max_template_chars} characters")
    env = _environment(escape)
    try:
        tree = env.parse(source)
        check_template(tree)
        template = env.from_string(tree)
    except TemplateSyntaxError as exc:
        raise TemplateRefused(f"syntax error: {exc.message} (line {exc.lineno})") from exc
    except RecursionError as exc:
        raise TemplateRefused("the template is nested too deeply") from exc
    except (TemplateError, SyntaxError, MemoryError) as exc:
        raise TemplateRefused(f"the template cannot be compiled: {exc}") from exc
    token = _BUDGET.set(_Budget(WORK_BUDGET_CHARS))
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(data):
            size += len(chunk)
            if size > MAX_OUTPUT_CHARS:
                raise OutputTooLarge(f"the output is longer than {MAX_OUTPUT_CHARS} characters")
            _spend(len(chunk))
            parts.append(chunk)
        return "".join(parts)
    except (OutputTooLarge, TemplateRefused):
        raise
    except RecursionError as exc:
        raise TemplateRefused("the template is nested too deeply") from exc
    except Exception as exc:  # noqa: BLE001 - a filter given the wrong kind of value, e.g. truncate('a')
        raise TemplateRefused(f"the template cannot be rendered with this data: {exc}"[:300]) from exc
    finally:
        _BUDGET.reset(token)

"""What other plugins and extensions may import from flows (declare ``requires = ("flows",)``,
or mark the hook implementation ``optionalhook=True``).

- ``Operation``: one operation a flow node can name (``register_flow_operations``).
- ``Option``: one option's declared type (``Operation(options={name: Option(...)})``): what
  ``GET /flows/operations`` lists, what the studio builds its form from, and what an active
  flow's step options are checked against on save.
- ``OperationContext``: what an operation's ``run(ctx, options)`` gets.
- ``OptionError``: raised by ``validate(options)`` for a bad option (answered 400
  ``VALIDATION_FAILED`` with the option's path and the node's ``nodeId``).
- ``StepFailed``: raised by ``run`` for a failure the run record should explain
  (``retryable=True`` when trying again may succeed; the runner retries only operations
  that declare ``retry_safe``).
- ``Branch``: what a branching operation (``condition``) returns: its output and which
  outgoing edges (``when: "true"`` or ``"false"``) the run follows.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

KEY = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
OPTION_TYPES = ("string", "number", "boolean", "enum", "json", "template", "collection", "field")
_TEXTUAL = ("string", "template", "collection", "field")


class OptionError(ValueError):
    """A bad option of a node: ``option`` names it (a key, or a list of keys and indexes)."""

    def __init__(self, option: str | list[str | int], message: str) -> None:
        super().__init__(message)
        self.option = [option] if isinstance(option, str) else list(option)


class StepFailed(Exception):
    """An operation's failure, with a short ``code`` for the run record."""

    def __init__(self, message: str, *, code: str = "STEP_FAILED", retryable: bool = False,
                 output: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.retryable = retryable
        self.output = output


@dataclass(frozen=True)
class Branch:
    """A branching operation's answer: ``output`` and whether the ``true`` edges are taken."""

    output: Any
    passed: bool


@dataclass
class OperationContext:
    """One step's world: the kernel, the site, the run's principal (every item call is
    checked against it), ``cause`` (``flow-run:<run id>``, for writes), ``data`` (``$trigger``,
    ``$last`` and each earlier step's output by node id) and the run's ``deadline``
    (``time.monotonic()`` seconds)."""

    kernel: Any
    site_id: str
    flow_id: str
    run_id: str
    node_id: str
    principal: Any
    data: dict[str, Any]
    deadline: float
    cause: str = ""
    extras: dict[str, Any] = field(default_factory=dict)

    def items_context(self) -> Any:
        """The items API's ``ctx`` acting as the run's principal."""
        from plugins.items import api as items

        return items.context(self.kernel, self.site_id, self.principal, f"flow-run:{self.run_id}")


@dataclass(frozen=True)
class Option:
    """One option of an operation, typed.

    - ``type``: ``string`` (plain text), ``template`` (text rendered with the run's data),
      ``number``, ``boolean``, ``enum`` (one of ``choices``), ``json`` (any JSON value),
      ``collection`` (a collection's name) or ``field`` (a field's name; ``collection_option``
      names the sibling option holding its collection, for the studio's picker).
    - ``required``: an active flow's step must give it.
    - ``default``: what the operation uses when the option is left out (shown, not stored).
    - ``many``: one value or a list of them (``mail``'s ``to``).
    - ``also``: other types a value may have (an item ``key``: a template, or a number).
    - ``label`` and ``description``: what the studio's form shows.

    A string in a typed option that holds ``{{`` is a template: it passes any type's check and is
    rendered at run time (options named in the operation's ``raw`` excepted).
    """

    type: str = "json"
    required: bool = False
    default: Any = None
    choices: tuple[Any, ...] = ()
    label: str = ""
    description: str = ""
    many: bool = False
    collection_option: str | None = None
    also: tuple[str, ...] = ()
    declared: bool = True  # False: made from a free-text hint (an operation not yet typed)

    def __post_init__(self) -> None:
        if self.type not in OPTION_TYPES:
            raise ValueError(f"an option's type is one of {', '.join(OPTION_TYPES)}, got {self.type!r}")
        object.__setattr__(self, "choices", tuple(self.choices or ()))
        object.__setattr__(self, "also", tuple(self.also or ()))
        if any(other not in OPTION_TYPES or other == "enum" for other in self.also):
            raise ValueError(f"an option's other types are among {', '.join(OPTION_TYPES)} (not enum)")
        if self.type == "enum" and not self.choices:
            raise ValueError("an enum option needs its choices")
        if self.default is not None and self.check(self.default) is not None:
            raise ValueError(f"an option's default {self.default!r} is not of its type ({self.type})")

    @classmethod
    def of(cls, value: Any) -> Option:
        """An ``Option`` from what ``options`` may hold: an ``Option``, its ``describe()`` mapping
        (an extension's, across the runner), or a free-text hint (untyped: any JSON)."""
        if isinstance(value, Option):
            return value
        if isinstance(value, str):
            return cls("json", description=value, declared=False)
        if isinstance(value, dict):
            fields = {"collectionOption": "collection_option"}
            known = {"type", "required", "default", "choices", "label", "description", "many",
                     "collection_option", "also", "declared"}
            mapped = {fields.get(k, k): v for k, v in value.items()}
            unknown = set(mapped) - known
            if unknown:
                raise ValueError(f"unknown option settings: {', '.join(sorted(unknown))}")
            return cls(**mapped)
        raise TypeError(f"an option is an Option, a mapping or a hint, got {type(value).__name__}")

    def check(self, value: Any) -> str | None:
        """What is wrong with ``value`` for this option, or None."""
        if self.many and isinstance(value, list):
            if not 0 < len(value) <= 50:
                return "a list of 1 to 50 values"
            for item in value:
                wrong = self._one(item)
                if wrong:
                    return f"a list of {wrong.removeprefix('a ').removeprefix('an ')}"
            return None
        return self._one(value)

    def _one(self, value: Any) -> str | None:
        if isinstance(value, str) and "{{" in value:
            return None
        wrong = [self._as(kind, value) for kind in (self.type, *self.also)]
        return None if None in wrong else " or ".join(str(w) for w in wrong)

    def _as(self, kind: str, value: Any) -> str | None:
        if kind == "json":
            return None
        if kind in _TEXTUAL:
            return None if isinstance(value, str) else "a string"
        if kind == "number":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            return None if ok else "a number"
        if kind == "boolean":
            return None if isinstance(value, bool) else "true or false"
        return None if value in self.choices else f"one of {', '.join(map(str, self.choices))}"

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "required": self.required, "default": self.default,
                               "choices": list(self.choices), "label": self.label,
                               "description": self.description, "many": self.many}
        if self.collection_option:
            out["collectionOption"] = self.collection_option
        if self.also:
            out["also"] = list(self.also)
        if not self.declared:
            out["declared"] = False
        return out


@dataclass(frozen=True)
class Operation:
    """An operation flows can run.

    - ``key``: what a node's ``operation`` names (lowercase letters, digits, ``-``).
    - ``run(ctx, options)``: async; returns the step's output (JSON values) or a ``Branch``;
      raises ``StepFailed`` (or ``ApiError``, recorded with its code) to fail the run.
    - ``options``: ``{name: Option(...)}`` (or ``Option.describe()`` mappings, or a free-text
      hint, which is untyped), listed by ``GET /flows/operations`` and checked when an active
      flow is saved: a missing required option, an unknown one (when every option is typed) or
      a value of the wrong type is a 400 ``VALIDATION_FAILED`` naming the step and option.
    - ``validate(options)``: checks a node's options when an active flow is saved; raises
      ``OptionError``.
    - ``raw``: options not rendered as templates before ``run`` (expressions, filters).
    - ``retry_safe``: a ``StepFailed(retryable=True)`` may be tried again (reads, GETs).
    - ``branches``: the node may have ``when: "false"`` edges (it returns ``Branch``).
    """

    key: str
    run: Callable[[OperationContext, dict[str, Any]], Awaitable[Any]]
    options: dict[str, Any] = field(default_factory=dict)
    validate: Callable[[dict[str, Any]], None] | None = None
    raw: tuple[str, ...] = ()
    retry_safe: bool = False
    branches: bool = False
    description: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.key, str) or not KEY.match(self.key):
            raise ValueError(f"flow operation key must match {KEY.pattern}, got {self.key!r}")
        if not callable(self.run):
            raise TypeError(f"flow operation {self.key!r}: run must be callable")
        try:
            typed = {str(name): Option.of(value) for name, value in dict(self.options or {}).items()}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"flow operation {self.key!r}: {exc}") from exc
        object.__setattr__(self, "options", typed)

    @property
    def typed(self) -> bool:
        """Every option is declared with a type (so an option not named is unknown)."""
        return all(o.declared for o in self.options.values())

    def check_options(self, options: dict[str, Any]) -> None:
        """Raise ``OptionError`` for an unknown option (when typed), a missing required one, or
        a value of the wrong type; the operation's own ``validate`` runs after."""
        if self.typed:
            for name in options:
                if name not in self.options:
                    allowed = ", ".join(self.options) or "none"
                    raise OptionError(name, f"Unknown option '{name}' (allowed: {allowed})")
        for name, option in self.options.items():
            value = options.get(name)
            if value is None:
                if option.required:
                    raise OptionError(name, f"'{name}' is required")
                continue
            wrong = option.check(value)
            if wrong:
                raise OptionError(name, f"'{name}' must be {wrong}")

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "options": {k: o.description or o.label for k, o in self.options.items()},
                "optionSchema": {k: o.describe() for k, o in self.options.items()},
                "description": self.description, "retrySafe": self.retry_safe, "branches": self.branches}


__all__ = ["Branch", "Operation", "OperationContext", "Option", "OptionError", "StepFailed"]

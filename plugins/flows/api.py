"""What other plugins and extensions may import from flows (declare ``requires = ("flows",)``,
or mark the hook implementation ``optionalhook=True``).

- ``Operation``: one operation a flow node can name (``register_flow_operations``).
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
class Operation:
    """An operation flows can run.

    - ``key``: what a node's ``operation`` names (lowercase letters, digits, ``-``).
    - ``run(ctx, options)``: async; returns the step's output (JSON values) or a ``Branch``;
      raises ``StepFailed`` (or ``ApiError``, recorded with its code) to fail the run.
    - ``options``: hints ``{name: description}`` listed by ``GET /flows/operations``.
    - ``validate(options)``: checks a node's options when an active flow is saved; raises
      ``OptionError``.
    - ``raw``: options not rendered as templates before ``run`` (expressions, filters).
    - ``retry_safe``: a ``StepFailed(retryable=True)`` may be tried again (reads, GETs).
    - ``branches``: the node may have ``when: "false"`` edges (it returns ``Branch``).
    """

    key: str
    run: Callable[[OperationContext, dict[str, Any]], Awaitable[Any]]
    options: dict[str, str] = field(default_factory=dict)
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

    def describe(self) -> dict[str, Any]:
        return {"key": self.key, "options": dict(self.options), "description": self.description,
                "retrySafe": self.retry_safe, "branches": self.branches}


__all__ = ["Branch", "Operation", "OperationContext", "OptionError", "StepFailed"]

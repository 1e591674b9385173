"""The child side of a JSONata evaluation: a script run in a process of its own, killed on timeout.

``jsonata_runner`` starts it as ``python -I <this file> <timeout ms> <max result chars>`` with
an empty environment, writes ``{expression, data}`` as JSON to its stdin and reads one JSON
outcome from its stdout. It imports nothing of svc, so it needs no configuration and holds no
secret.
"""

from __future__ import annotations

import json
import math
import resource
import sys
from typing import Any

import jsonata
from jsonata.utils import Utils

MEMORY_LIMIT_BYTES = 512 * 1024 * 1024  # address space of one evaluation
STACK_DEPTH = 500  # the library's own eval-depth bound (D1011)


def _limit_resources(timeout_ms: int) -> None:
    # The parent kills the child at the deadline; the CPU limit is the backstop should the parent
    # die first, and the address-space limit turns a huge allocation into a MemoryError.
    cpu_seconds = math.ceil(timeout_ms / 1000) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = MEMORY_LIMIT_BYTES if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT_BYTES, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def to_json(value: Any) -> Any:
    """The library's result as plain JSON values (its sequences are list subclasses that
    ``json`` would misread; functions have no JSON form and become null)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("the result holds a number JSON cannot carry")
        return value
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, Utils.NullValue):
        return None
    return None


def _jsonata_error(exc: Exception) -> tuple[str | None, str, int | None]:
    code = getattr(exc, "error", None)
    position = getattr(exc, "location", None)
    message = str(exc).strip() or type(exc).__name__
    return (code if isinstance(code, str) else None, message[:500],
            position if isinstance(position, int) and position >= 0 else None)


def evaluate(expression: str, data: Any, timeout_ms: int, max_result_chars: int) -> tuple[Any, ...]:
    """Compile and evaluate; the outcome as a tuple whose first item names its kind: ``ok`` (with
    the result as JSON text), ``syntax``, ``evaluation``, ``timeout``, ``depth``, ``memory`` or
    ``too_large`` (with the library's code, a message and a position)."""
    try:
        compiled = jsonata.Jsonata(expression, timeout=timeout_ms, stack=STACK_DEPTH)
    except RecursionError:
        return ("syntax", None, "the expression is nested too deeply", None)
    except Exception as exc:  # noqa: BLE001 - every compile failure is the expression's fault
        return ("syntax", *_jsonata_error(exc))
    try:
        result = compiled.evaluate(data)
        text = json.dumps(to_json(result), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except RecursionError:
        return ("depth", None, "the evaluation recursed too deeply", None)
    except MemoryError:
        return ("memory", None, "the evaluation needed more memory than allowed", None)
    except Exception as exc:  # noqa: BLE001 - a runtime error of the expression (type, undefined...)
        code, message, position = _jsonata_error(exc)
        if code == "D1012":
            return ("timeout", code, message, position)
        if code == "D1011":
            return ("depth", code, message, position)
        return ("evaluation", code, message, position)
    if len(text) > max_result_chars:
        return ("too_large", None, f"the result is longer than {max_result_chars} characters", None)
    return ("ok", text)


def main() -> None:
    """Script entry point: limit resources, read the job from stdin, write the outcome to stdout."""
    timeout_ms, max_result_chars = int(sys.argv[1]), int(sys.argv[2])
    _limit_resources(timeout_ms)
    # Ready (interpreter up, jsonata imported, limits set): the parent's deadline starts now, so a
    # slow start on a busy machine does not eat the evaluation's time.
    sys.stdout.write("\n")
    sys.stdout.flush()
    try:
        job = json.loads(sys.stdin.buffer.read())
        outcome = evaluate(job["expression"], job.get("data"), timeout_ms, max_result_chars)
    except MemoryError:
        outcome = ("memory", None, "the evaluation needed more memory than allowed", None)
    if outcome[0] == "ok":  # the result is JSON text already: embed it, do not encode it twice
        sys.stdout.write('["ok",' + outcome[1] + "]")
    else:
        sys.stdout.write(json.dumps(outcome))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""What other plugins may import from utils (declare ``requires = ("utils",)``).

- ``render_template(source, data, escape=True)``: a display template (``{{title}}``) rendered
  in jinja2's sandbox with no code, bounded in output (``TemplateRefused``, ``OutputTooLarge``).
- ``JsonataRunner(timeout_ms, max_result_chars)``: JSONata evaluated in a killed-at-deadline
  child process, the runner of ``POST /utils/jsonata/test``; ``await runner.evaluate(expr, data)``
  answers the result or raises ``ApiError`` 400 (syntax, runtime, limits) or 503.
"""

from __future__ import annotations

from plugins.utils.jsonata_runner import MAX_EXPRESSION_CHARS, JsonataRunner
from plugins.utils.templates import OutputTooLarge, TemplateRefused, render_template

__all__ = ["MAX_EXPRESSION_CHARS", "JsonataRunner", "OutputTooLarge", "TemplateRefused", "render_template"]

"""What other plugins may import from utils (declare ``requires = ("utils",)``).

``render_template`` is the sandboxed display-template renderer behind ``/utils/render-template``:
text and ``{{ expression }}`` output only (no statements, calls or operators), JSON data only
(never Python attributes), autoescape on request, bounded in work and output size.
"""

from plugins.utils.templates import (
    MAX_OUTPUT_CHARS,
    OutputTooLarge,
    TemplateRefused,
    render_template,
)

__all__ = ["MAX_OUTPUT_CHARS", "OutputTooLarge", "TemplateRefused", "render_template"]

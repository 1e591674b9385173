"""Rendering an email: sandboxed templates, the layout around the body, nh3, a derived text part.

Placeholders (``{{ name }}``, ``{{ order.total }}``) go through utils' display-template renderer:
jinja2's sandbox, no statements, calls or operators, JSON data only (never Python attributes),
bounded in work and output. The html part is rendered with autoescape, then the layout is
rendered around it (``{{content}}`` receives the body as markup), and the result is sanitised
with nh3, so neither a variable nor the site admin's own HTML can ship script to recipients.
Strapi's lodash-template RCE (CVE-2023-22621) is the failure this module exists to avoid.
"""

from __future__ import annotations

import asyncio
import html as html_lib
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import nh3
from markupsafe import Markup

from kernel import ApiError
from plugins.utils.api import OutputTooLarge, TemplateRefused, render_template

MAX_SOURCE_CHARS = 100_000
CONTENT_SLOT = re.compile(r"\{\{\s*content\s*\}\}")
# Characters that end a header line somewhere (SMTP, MIME folding, or a lenient client).
HEADER_BREAKS = re.compile(r"[\r\n\x00\x0b\x0c\x85\u2028\u2029]")

_CSS = {
    "background", "background-color", "border", "border-bottom", "border-collapse", "border-color",
    "border-left", "border-radius", "border-right", "border-spacing", "border-style", "border-top",
    "border-width", "color", "display", "font", "font-family", "font-size", "font-style", "font-weight",
    "height", "letter-spacing", "line-height", "margin", "margin-bottom", "margin-left", "margin-right",
    "margin-top", "max-width", "min-width", "padding", "padding-bottom", "padding-left", "padding-right",
    "padding-top", "text-align", "text-decoration", "text-transform", "vertical-align", "white-space", "width",
}
_ATTRIBUTES: dict[str, set[str]] = {k: set(v) for k, v in nh3.ALLOWED_ATTRIBUTES.items()}
_ATTRIBUTES["*"] = {"style", "class", "dir", "lang", "title"}
for _tag in ("table", "td", "th", "tr", "tbody", "thead"):
    _ATTRIBUTES.setdefault(_tag, set()).update({"align", "valign", "width", "height", "bgcolor", "border",
                                                 "cellpadding", "cellspacing", "role"})
_CLEANER = nh3.Cleaner(
    attributes=_ATTRIBUTES,
    filter_style_properties=_CSS,
    url_schemes={"http", "https", "mailto", "tel"},
    clean_content_tags={"script", "style", "title", "head"},
)


def sanitise_html(markup: str) -> str:
    """HTML a mail client may show: no script, event handlers, forms, frames or javascript: links."""
    return _CLEANER.clean(markup)


def _refused(exc: Exception, path: list[str]) -> ApiError:
    return ApiError.validation(f"The template cannot be used: {exc}", path=path)


def render_part(source: str, variables: dict[str, Any], *, escape: bool, path: list[str]) -> str:
    """One part rendered in the sandbox; 400 ``VALIDATION_FAILED`` (with ``path``) when refused."""
    try:
        return render_template(source, variables, escape=escape, max_template_chars=MAX_SOURCE_CHARS)
    except (TemplateRefused, OutputTooLarge) as exc:
        raise _refused(exc, path) from exc


def check_source(source: str, path: list[str]) -> None:
    """400 unless ``source`` is a template the renderer accepts (checked when it is saved)."""
    render_part(source, {}, escape=True, path=path)


def check_layout(source: str) -> None:
    """400 unless a layout is a valid template with a ``{{content}}`` slot."""
    if not CONTENT_SLOT.search(source):
        raise ApiError.validation("A layout's html must contain {{content}}", path=["html"])
    check_source(source, ["html"])


def check_header_text(value: str, path: list[str]) -> str:
    """``value`` when it can go into a header: no line breaks of any kind (header injection)."""
    if HEADER_BREAKS.search(value):
        raise ApiError.validation("Line breaks are not allowed in a header value", path=path)
    return value


class _TextExtractor(HTMLParser):
    """The readable text of an HTML part: block elements become lines, links show their URL."""

    BLOCKS = {"p", "div", "br", "tr", "li", "h1", "h2", "h3", "h4", "h5", "h6", "table", "hr", "blockquote"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self._href: list[str | None] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self.BLOCKS:
            self.parts.append("\n")
        if tag == "li":
            self.parts.append("- ")
        if tag == "a":
            self._href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href:
            href = self._href.pop()
            if href and not href.startswith("#"):
                self.parts.append(f" ({href})")
        if tag in self.BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        self.parts.append(re.sub(r"\s+", " ", data))


def html_to_text(markup: str) -> str:
    """A text part derived from sanitised html (for clients and filters that read text)."""
    parser = _TextExtractor()
    parser.feed(markup)
    parser.close()
    lines = [" ".join(line.split()) for line in "".join(parser.parts).splitlines()]
    text, blank = [], False
    for line in lines:
        if line:
            text.append(line)
            blank = False
        elif not blank and text:
            text.append("")
            blank = True
    return "\n".join(text).strip() + "\n"


@dataclass
class Rendered:
    """A message's parts after rendering: what preview answers and what is sent."""

    subject: str
    html: str | None
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"subject": self.subject, "html": self.html, "text": self.text}


def render_message(subject: str, html: str | None, text: str | None, layout: str | None,
                   variables: dict[str, Any]) -> Rendered:
    """Render subject, html (inside ``layout``) and text; derive the text part from html if absent."""
    # A variable that brings a line break into the subject is refused like a literal one.
    rendered_subject = check_header_text(render_part(subject, variables, escape=False, path=["subject"]),
                                         ["subject"])
    rendered_subject = " ".join(rendered_subject.split())
    if not rendered_subject:
        raise ApiError.validation("The subject renders empty", path=["subject"])
    body_html = None
    if html is not None:
        body_html = render_part(html, variables, escape=True, path=["html"])
        if layout is not None:
            body_html = render_part(layout, {**variables, "content": Markup(body_html)}, escape=True,
                                    path=["layout"])
        body_html = sanitise_html(body_html)
    if text is not None:
        body_text = render_part(text, variables, escape=False, path=["text"])
    else:
        body_text = html_to_text(body_html or "")
    return Rendered(rendered_subject[:998], body_html, body_text)


async def render_message_async(subject: str, html: str | None, text: str | None, layout: str | None,
                               variables: dict[str, Any]) -> Rendered:
    """``render_message`` in a worker thread: bounded, but up to a work budget of several MiB
    of text, which must not hold the event loop."""
    return await asyncio.to_thread(render_message, subject, html, text, layout, variables)


def escape_url(url: str) -> str:
    return html_lib.escape(url, quote=True)

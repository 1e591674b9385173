"""Active content in SVG: parsed with defusedxml, then every element and attribute walked.

Refused (``FILE_ACTIVE_CONTENT``): a DTD or any entity (defusedxml forbids them, so no XXE and
no billion laughs), processing instructions (``xml-stylesheet``), ``script``, ``foreignObject``
and the other elements that embed documents or run handlers, any ``on*`` event-handler
attribute, a ``javascript:`` (or ``vbscript:``, ``data:`` other than a raster image) URL in any
attribute, an ``href`` to anything but a fragment of the same document, and CSS that imports
or references outside resources (``@import``, ``url(...)`` other than ``#fragment``,
``image-set(``, ``image(``, ``src(``, ``expression(``), in ``<style>`` and in every attribute
(presentation attributes such as ``fill`` take ``url(...)``), read after CSS comments and escapes
are decoded; and ``xml:base``. Regular expressions only look inside attribute values and style text the
parser has already separated, never at the raw document.
"""

from __future__ import annotations

import re
from xml.etree.ElementTree import Element

import defusedxml.ElementTree as safe_xml
from defusedxml import DefusedXmlException

from plugins.files.errors import refuse

MAX_SVG_BYTES = 5 * 1024 * 1024
FORBIDDEN_ELEMENTS = frozenset({
    "script", "foreignobject", "iframe", "embed", "object", "handler", "listener", "audio", "video",
    "frame", "frameset", "applet", "meta", "link", "base",
})
HREF_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "xlink:href"})
# Inside an attribute value, once whitespace and control characters are gone (browsers skip them).
_SCHEME = re.compile(r"^(javascript|vbscript|livescript|data):", re.IGNORECASE)
_RASTER_DATA = re.compile(r"^data:image/(png|jpeg|gif|webp|avif);", re.IGNORECASE)
_CSS_URL = re.compile(r"url\s*\(\s*['\"]?\s*([^'\")\s]*)", re.IGNORECASE)
_CSS_ACTIVE = re.compile(r"@import|expression\s*\(|behavior\s*:|-moz-binding|javascript:|image-set\s*\(|"
                         r"(?<![\w-])image\s*\(|(?<![\w-])src\s*\(", re.IGNORECASE)
_CSS_COMMENT = re.compile(r"/\*.*?(\*/|$)", re.DOTALL)
_CSS_ESCAPE = re.compile(r"\\(?:([0-9a-fA-F]{1,6})[ \t\r\n\f]?|(.))", re.DOTALL)
XML_BASE = "{http://www.w3.org/XML/1998/namespace}base"
_BLANKS = re.compile(r"[\x00-\x20\x7f]+")


def _local(name: str) -> str:
    """``{namespace}tag`` -> ``tag``, lower-cased."""
    return name.rsplit("}", 1)[-1].lower()


def _attribute_name(name: str) -> str:
    if name.startswith("{http://www.w3.org/1999/xlink}"):
        return "xlink:" + _local(name)
    return _local(name)


def _unescape_css(text: str) -> str:
    """``text`` as a CSS parser reads it: comments gone, escapes (``\\75 rl(``, ``@\\69mport``)
    decoded, so a hidden ``url(`` or ``@import`` is seen."""
    def one(match: re.Match[str]) -> str:
        if match.group(1) is not None:
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else "\ufffd"
        return match.group(2)

    return _CSS_ESCAPE.sub(one, _CSS_COMMENT.sub("", text))


def _check_css(text: str, where: str) -> None:
    text = _unescape_css(text)
    if _CSS_ACTIVE.search(text):
        raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's CSS in {where} imports or runs code", reason="css")
    for target in _CSS_URL.findall(text):
        if target and not target.startswith("#") and not _RASTER_DATA.match(target):
            raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's CSS in {where} references an outside resource",
                         reason="external_reference")


def _check_value(name: str, value: str, element: str) -> None:
    compact = _BLANKS.sub("", value)
    if _SCHEME.match(compact) and not _RASTER_DATA.match(compact):
        raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{element} {name}> holds a script or data URL",
                     reason="javascript_url")
    if "javascript:" in compact.lower():
        raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{element} {name}> holds a javascript: URL",
                     reason="javascript_url")
    if name in HREF_ATTRIBUTES and compact and not compact.startswith("#") and not _RASTER_DATA.match(compact):
        raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{element} {name}> references an outside resource",
                     reason="external_reference")
    # Any attribute may be CSS (style, and presentation attributes such as fill, filter, mask,
    # clip-path, marker-* take url(...)): every value is read as CSS too.
    _check_css(value, f"<{element} {name}>")


def check_svg(data: bytes) -> None:
    """Refuse an SVG with active content (see the module docstring); return when it is inert."""
    if len(data) > MAX_SVG_BYTES:
        raise refuse("FILE_TOO_LARGE", f"An SVG is at most {MAX_SVG_BYTES} bytes")
    if b"<?xml-stylesheet" in data.lower():
        raise refuse("FILE_ACTIVE_CONTENT", "The SVG links a stylesheet", reason="processing_instruction")
    try:
        root = safe_xml.fromstring(data, forbid_dtd=True, forbid_entities=True, forbid_external=True)
    except DefusedXmlException:
        raise refuse("FILE_ACTIVE_CONTENT", "The SVG declares a DTD or XML entities", reason="xml_entities") from None
    except Exception:  # noqa: BLE001 - any parse error: not a well-formed SVG document
        raise refuse("FILE_CONTENT_MISMATCH", "The bytes are not a well-formed SVG document") from None
    if not isinstance(root, Element) or _local(root.tag) != "svg":
        raise refuse("FILE_CONTENT_MISMATCH", "The document's root element is not <svg>")
    for element in root.iter():
        if not isinstance(element.tag, str):
            raise refuse("FILE_ACTIVE_CONTENT", "The SVG holds a processing instruction", reason="processing_instruction")
        tag = _local(element.tag)
        if tag in FORBIDDEN_ELEMENTS:
            raise refuse("FILE_ACTIVE_CONTENT", f"The SVG holds a <{tag}> element", reason=tag)
        for raw_name, value in element.attrib.items():
            if raw_name == XML_BASE:
                raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{tag}> sets xml:base (a base for outside references)",
                             reason="external_reference")
            name = _attribute_name(raw_name)
            if name.startswith("on"):
                raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{tag}> has an event handler ({name})",
                             reason="event_handler")
            _check_value(name, value, tag)
        if tag == "style" and element.text:
            _check_css(element.text, "<style>")
        # set/animate can write an href or an event attribute at run time.
        if tag in ("set", "animate") and _local(element.attrib.get("attributeName", "")).startswith(("on", "href")):
            raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{tag}> animates an href or a handler",
                         reason="animation")
        if tag in ("set", "animate") and element.attrib.get("attributeName", "").lower() in ("xlink:href",):
            raise refuse("FILE_ACTIVE_CONTENT", f"The SVG's <{tag}> animates an href", reason="animation")

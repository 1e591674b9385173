"""Checks of every site configuration key (docs/settings-and-site.md, Site configuration; its theme
tokens). Pure functions: each takes the body's value and returns what to store, or raises
``ApiError`` 400 naming the key. An empty string (or null) clears a nullable key."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

from kernel import ApiError

APPEARANCES = ("auto", "light", "dark")
SAVE_ACTIONS = ("stay", "return", "create_new")
DEFAULTS = {"defaultAppearance": "auto", "defaultSaveAction": "stay"}
# The theme tokens: the shadcn/ui colour names, each with its -foreground where shadcn/ui has one.
THEME_TOKENS = frozenset({
    "background", "foreground", "card", "card-foreground", "popover", "popover-foreground",
    "primary", "primary-foreground", "secondary", "secondary-foreground", "muted", "muted-foreground",
    "accent", "accent-foreground", "destructive", "destructive-foreground", "border", "input", "ring",
})
HSL = re.compile(r"^(\d{1,3}(?:\.\d+)?) (\d{1,3}(?:\.\d+)?)% (\d{1,3}(?:\.\d+)?)%$")
LANGUAGE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,3}$")
HOST_LABEL = re.compile(r"^(?!-)[a-z0-9-]{1,63}(?<!-)$")
BRAND_COLOR = re.compile(r"^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
CUSTOM_CSS_MAX = 65_536
TEXT_MAX = {"displayTitle": 200, "descriptor": 1000}


def _bad(key: str, message: str, *path: Any) -> ApiError:
    return ApiError.validation(f"'{key}' {message}", path=[key, *path])


def _cleared(value: Any) -> bool:
    return value is None or value == ""


def name(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > 200:
        raise _bad("name", "must be a non-empty string of at most 200 characters")
    return value.strip()


def text(key: str, value: Any) -> str | None:
    if _cleared(value):
        return None
    if not isinstance(value, str) or len(value) > TEXT_MAX[key]:
        raise _bad(key, f"must be a string of at most {TEXT_MAX[key]} characters")
    return value


def http_url(key: str, value: Any, *path: Any) -> str | None:
    """An absolute http(s) URL (no credentials in it), or None to clear."""
    if _cleared(value):
        return None
    if not isinstance(value, str) or len(value) > 2048:
        raise _bad(key, "must be an http(s) URL of at most 2048 characters", *path)
    try:
        parts = urlsplit(value.strip())
        parts.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise _bad(key, "must be an http(s) URL", *path) from exc
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.username is not None:
        raise _bad(key, "must be an http(s) URL", *path)
    return value.strip()


def domain(value: Any) -> str | None:
    """A bare host name (``blog.example.com``), lower-cased; no scheme, port or path."""
    if _cleared(value):
        return None
    if not isinstance(value, str):
        raise _bad("domain", "must be a host name such as blog.example.com")
    host = value.strip().lower().rstrip(".")
    labels = host.split(".")
    if len(host) > 253 or len(labels) < 2 or not all(HOST_LABEL.match(label) for label in labels) \
            or labels[-1].isdigit():
        raise _bad("domain", "must be a host name such as blog.example.com (no scheme, port or path)")
    return host


def language(value: Any) -> str | None:
    if _cleared(value):
        return None
    if not isinstance(value, str) or not LANGUAGE.match(value):
        raise _bad("defaultLanguage", "must be a language tag such as en or en-US")
    return value


def choice(key: str, value: Any, allowed: tuple[str, ...]) -> str | None:
    if _cleared(value):
        return None
    if value not in allowed:
        raise _bad(key, f"must be one of {', '.join(allowed)}")
    return value


def branding(value: Any) -> dict[str, Any] | None:
    """``{ logoUrl, faviconUrl, brandColor }``: http(s) URLs and a hex colour, each optional."""
    if _cleared(value):
        return None
    if not isinstance(value, dict):
        raise _bad("branding", "must be an object { logoUrl, faviconUrl, brandColor }")
    out: dict[str, Any] = {}
    for field, given in value.items():
        if field in ("logoUrl", "faviconUrl"):
            url = http_url("branding", given, field)
            if url is not None:
                out[field] = url
        elif field == "brandColor":
            if _cleared(given):
                continue
            if not isinstance(given, str) or not BRAND_COLOR.match(given):
                raise _bad("branding", "brandColor must be a hex colour such as #1a2b3c", field)
            out[field] = given
        else:
            raise _bad("branding", f"has an unknown field '{field}'", field)
    return out or None


def hsl(value: Any) -> bool:
    match = HSL.match(value) if isinstance(value, str) else None
    if match is None:
        return False
    h, s, lightness = (float(g) for g in match.groups())
    return h <= 360 and s <= 100 and lightness <= 100


def theme_overrides(value: Any) -> dict[str, Any] | None:
    """``{ light, dark }``: maps of the theme tokens to ``'H S% L%'``."""
    if _cleared(value):
        return None
    if not isinstance(value, dict):
        raise _bad("themeOverrides", "must be an object { light, dark }")
    out: dict[str, dict[str, str]] = {}
    for mode, tokens in value.items():
        if mode not in ("light", "dark"):
            raise _bad("themeOverrides", f"has an unknown mode '{mode}' (light or dark)", mode)
        if tokens is None:
            continue
        if not isinstance(tokens, dict):
            raise _bad("themeOverrides", "must map tokens to 'H S% L%' values", mode)
        for token, colour in tokens.items():
            if token not in THEME_TOKENS:
                raise _bad("themeOverrides", f"'{token}' is not a theme token", mode, token)
            if not hsl(colour):
                raise _bad("themeOverrides", f"{mode}.{token} must be 'H S% L%' (H 0-360, S and L 0-100)",
                           mode, token)
        if tokens:
            out[mode] = dict(tokens)
    return out or None


_CSS_COMMENT = re.compile(r"/\*.*?(\*/|$)", re.S)
_CSS_ESCAPE = re.compile(r"\\([0-9a-fA-F]{1,6})\s?|\\(.)", re.S)
_IMPORT = re.compile(r"@import\s*(?:url\(\s*)?(['\"]?)([^'\")\s;]*)", re.I)


def _unescaped(css: str) -> str:
    def one(match: re.Match[str]) -> str:
        if match.group(1):
            code = int(match.group(1), 16)
            return chr(code) if 0 < code <= 0x10FFFF else "\ufffd"
        return match.group(2)

    return _CSS_ESCAPE.sub(one, _CSS_COMMENT.sub(" ", css))


def custom_css(value: Any) -> str | None:
    """CSS put inside the studio's ``<style>``: capped, and unable to leave the style context
    (no ``</`` nor ``<!--``) or pull remote code (``@import`` of anything but a relative
    path, ``expression(``, ``javascript:``), after comments and CSS escapes are undone."""
    if _cleared(value):
        return None
    if not isinstance(value, str):
        raise _bad("customCss", "must be a string")
    if len(value.encode()) > CUSTOM_CSS_MAX:
        raise _bad("customCss", f"is larger than {CUSTOM_CSS_MAX} bytes")
    if "\x00" in value:
        raise _bad("customCss", "must not contain NUL characters")
    raw = value.lower()
    if "</" in raw or "<!--" in raw:
        raise _bad("customCss", "must not contain '</' or '<!--' (it cannot close its style element)")
    plain = _unescaped(value).lower()
    if "</" in plain or "<!--" in plain:
        raise _bad("customCss", "must not contain '</' or '<!--', even escaped")
    for match in _IMPORT.finditer(plain):
        target = match.group(2)
        if not target or ":" in target or target.startswith(("//", "\\\\")):
            raise _bad("customCss", "may @import relative paths only, never a remote URL")
    if "expression(" in plain or "javascript:" in plain or "vbscript:" in plain:
        raise _bad("customCss", "must not contain expression() or script URLs")
    return value


def check(key: str, value: Any) -> Any:
    """The value to store for one key of a ``PATCH /site`` body."""
    if key == "name":
        return name(value)
    if key in TEXT_MAX:
        return text(key, value)
    if key == "siteUrl":
        return http_url(key, value)
    if key == "domain":
        return domain(value)
    if key == "defaultLanguage":
        return language(value)
    if key == "defaultAppearance":
        return choice(key, value, APPEARANCES)
    if key == "defaultSaveAction":
        return choice(key, value, SAVE_ACTIONS)
    if key == "branding":
        return branding(value)
    if key == "themeOverrides":
        return theme_overrides(value)
    if key == "customCss":
        return custom_css(value)
    raise ApiError.validation(f"Unknown field '{key}'", path=[key])


KEYS = ("name", "displayTitle", "siteUrl", "descriptor", "domain", "defaultLanguage", "defaultAppearance",
        "defaultSaveAction", "branding", "themeOverrides", "customCss")

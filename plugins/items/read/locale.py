"""Translations: stored on the item, applied server-side by ``X-Svc-Locale``.

An item's translations live in its content field ``translations`` (type ``json``) as
``{ "<language code>": { "<field>": <value> } }``: written and read like any field, kept in
revisions and versions with the rest of the content, covered by the field policy. Writes are
checked (``check_translations``, from the write filters): codes shaped like BCP 47 tags,
known content fields, values valid for the field. A read with a locale replaces each readable
field by its translation: the exact tag first (``de-AT``), then its language (``de``); a
field without a translation keeps main's value. See docs/decisions/items-translations.md.
"""

from __future__ import annotations

import re
from typing import Any

from kernel.base.errors import ApiError
from plugins.items.errors import validation_errors

FIELD = "translations"
LOCALE = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8}){0,3}$")
MAX_LOCALES = 200


def normalise(code: str) -> str:
    """``de_AT`` and ``DE-at`` are ``de-at``: tags compare case-insensitively."""
    return code.replace("_", "-").lower()


def parse_locale(raw: Any, path: list[str] | None = None) -> str | None:
    """The ``X-Svc-Locale`` header (or, with ``path``, a ``locale`` parameter of server code):
    ``None`` when absent or empty, 400 when malformed."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    value = raw.strip() if isinstance(raw, str) else ""
    if not LOCALE.match(value):
        name = "X-Svc-Locale" if path is None else "'locale'"
        raise ApiError.validation(f"{name} must be a language code such as 'de' or 'pt-BR'",
                                  path=path or ["headers", "X-Svc-Locale"])
    return normalise(value)


def translations_field(coll: Any) -> Any:
    """The collection's ``translations`` field when it follows the convention (type json)."""
    fdef = coll.fields.get(FIELD)
    return fdef if fdef is not None and fdef.type == "json" else None


def check_translations(coll: Any, value: Any) -> None:
    """400 ``VALIDATION_FAILED`` (every problem, with its path) for a malformed translations value."""
    if value is None or translations_field(coll) is None:
        return
    if not isinstance(value, dict):
        raise validation_errors([([FIELD], "'translations' must be an object of language code -> fields")])
    if len(value) > MAX_LOCALES:
        raise validation_errors([([FIELD], f"'translations' holds at most {MAX_LOCALES} languages")])
    problems: list[tuple[list[Any], str]] = []
    for code, fields in value.items():
        where = [FIELD, str(code)[:40]]
        if not isinstance(code, str) or not LOCALE.match(code):
            problems.append((where, f"'{str(code)[:40]}' is not a language code"))
        elif not isinstance(fields, dict):
            problems.append((where, "A language's translations must be an object of field -> value"))
        else:
            problems.extend(_field_problems(coll, where, fields))
    if problems:
        raise validation_errors(problems)


def _field_problems(coll: Any, where: list[Any], fields: dict[str, Any]) -> list[tuple[list[Any], str]]:
    problems: list[tuple[list[Any], str]] = []
    for name, value in fields.items():
        fdef = coll.fields.get(name)
        if fdef is None or name == FIELD:
            problems.append(([*where, str(name)[:80]], f"'{str(name)[:80]}' is not a translatable field"))
        elif value is not None:
            try:
                fdef.validate(value)
            except (ValueError, RecursionError) as exc:
                problems.append(([*where, name], f"'{name}': {str(exc) or 'invalid value'}"))
    return problems


def pick(translations: Any, locale: str) -> dict[str, Any]:
    """The translations for ``locale``: the exact tag, else its language, else nothing."""
    if not isinstance(translations, dict):
        return {}
    by_code = {normalise(k): v for k, v in translations.items() if isinstance(k, str)}
    for code in (locale, locale.split("-", 1)[0]):
        found = by_code.get(code)
        if isinstance(found, dict):
            return found
    return {}


def localise(coll: Any, item: dict[str, Any], translations: Any, locale: str, visible: Any) -> None:
    """Replace ``item``'s visible fields by their translations, in place. A stored value that
    no longer fits the field (its type changed since) is skipped, never served."""
    for name, value in pick(translations, locale).items():
        fdef = coll.fields.get(name)
        if fdef is None or name == FIELD or not visible(name):
            continue
        try:
            item[name] = None if value is None else fdef.validate(value)
        except (ValueError, RecursionError):
            continue

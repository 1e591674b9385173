"""OpenAPI schemas of the settings plugin's routes."""

ANY = {}
SETTINGS_MAP = {"type": "object", "additionalProperties": True}
SETTING = {"type": "object", "required": ["key", "value"],
           "properties": {"key": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$"}, "value": ANY}}
SETTING_KEY = {"type": "object", "required": ["key", "prefix", "type", "public", "secret", "description"],
               "properties": {"key": {"type": "string"}, "prefix": {"type": "boolean"},
                              "type": {"enum": ["string", "integer", "number", "boolean", "object", "array", "json"]},
                              "public": {"type": "boolean"}, "secret": {"type": "boolean"},
                              "description": {"type": "string"}}}
PUT_BODY = {"type": "object", "required": ["value"], "properties": {"value": ANY}, "additionalProperties": False}
BUNDLE = {"type": "object", "required": ["settings"],
          "properties": {"version": {"type": "string", "enum": ["svc.settings@v1"]},
                         "exportedAt": {"type": "string"}, "settings": SETTINGS_MAP},
          "additionalProperties": False}
APPLIED = {"type": "object", "properties": {"applied": {"type": "array", "items": {"type": "string"}},
                                            "removed": {"type": "array", "items": {"type": "string"}}}}

_TEXT = {"type": ["string", "null"]}
_OBJ = {"type": ["object", "null"], "additionalProperties": True}
SITE = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "displayTitle": _TEXT, "siteUrl": _TEXT,
        "descriptor": _TEXT, "domain": _TEXT, "defaultLanguage": _TEXT,
        "defaultAppearance": {"type": "string", "enum": ["auto", "light", "dark"]},
        "defaultSaveAction": {"type": "string", "enum": ["stay", "return", "create_new"]},
        "branding": _OBJ, "themeOverrides": _OBJ, "customCss": _TEXT, "createdAt": {"type": "string"},
    },
}
SITE_PATCH = {
    "type": "object",
    "properties": {k: v for k, v in SITE["properties"].items() if k not in ("id", "createdAt")},
    "additionalProperties": False,
}
PREFERENCES = {"type": "object", "additionalProperties": True,
               "properties": {"saveAction": {"type": ["string", "null"], "enum": ["stay", "return", "create_new", None]}}}
_PRESET_FIELDS = {
    "layout": _TEXT, "layoutQuery": _OBJ, "layoutOptions": _OBJ, "filter": _OBJ, "search": _TEXT,
    "bookmark": _TEXT, "icon": _TEXT, "color": _TEXT,
}
PRESET = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "collection": {"type": "string"}, "userId": _TEXT, "roleId": _TEXT,
                   "sourceScope": {"type": "string", "enum": ["user", "role", "global"]}, **_PRESET_FIELDS},
}
PRESET_BODY = {
    "type": "object", "required": ["collection"],
    "properties": {"collection": {"type": "string"}, "userId": _TEXT, "roleId": _TEXT, **_PRESET_FIELDS},
    "additionalProperties": False,
}
PRESET_PATCH = {"type": "object", "properties": dict(_PRESET_FIELDS), "additionalProperties": False}

_LANG = {"type": "string", "pattern": "^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,8}){0,3}$"}
TM_ENTRY = {
    "type": "object",
    "properties": {"id": {"type": "string"}, "sourceLang": _LANG, "targetLang": _LANG, "sourceText": {"type": "string"},
                   "targetText": {"type": "string"}, "quality": {"type": ["number", "null"]}, "context": _TEXT,
                   "source": {"type": "string"}, "score": {"type": "number"}},
}
TM_BODY = {
    "type": "object", "required": ["sourceLang", "targetLang", "sourceText", "targetText"],
    "properties": {"sourceLang": _LANG, "targetLang": _LANG, "sourceText": {"type": "string", "minLength": 1},
                   "targetText": {"type": "string", "minLength": 1},
                   "quality": {"type": ["number", "null"], "minimum": 0, "maximum": 100}, "context": _TEXT,
                   "source": {"type": "string", "minLength": 1, "maxLength": 64}},
    "additionalProperties": False,
}
TM_PATCH = {"type": "object", "properties": {k: v for k, v in TM_BODY["properties"].items()
                                             if k in ("targetText", "quality", "context", "source")},
            "additionalProperties": False}
LOOKUP_BODY = {
    "type": "object", "required": ["query", "sourceLang", "targetLang"],
    "properties": {"query": {"type": "string", "minLength": 1}, "sourceLang": _LANG, "targetLang": _LANG,
                   "threshold": {"type": "number", "minimum": 0, "maximum": 100}},
    "additionalProperties": False,
}
LOOKUP = {"type": "object", "properties": {"match": {"oneOf": [TM_ENTRY, {"type": "null"}]}}}
TRANSLATE_BODY = {
    "type": "object", "required": ["text", "from", "to"],
    "properties": {"text": {"type": "string", "minLength": 1}, "from": _LANG, "to": _LANG,
                   "threshold": {"type": "number", "minimum": 0, "maximum": 100}, "store": {"type": "boolean"}},
    "additionalProperties": False,
}
TRANSLATION = {
    "type": "object",
    "properties": {"text": {"type": "string"}, "translation": _TEXT,
                   "step": {"type": "string", "enum": ["memory", "glossary", "provider", "none"]},
                   "glossary": {"type": "array", "items": {
                       "type": "object", "required": ["term", "translation"],
                       "properties": {"term": {"type": "string"}, "translation": {"type": "string"}}}}, "stored": {"type": "boolean"}, "message": {"type": "string"}},
}
TERM = {"type": "object", "properties": {"id": {"type": "string"}, "sourceLang": _LANG, "targetLang": _LANG,
                                         "term": {"type": "string"}, "translation": {"type": "string"}}}
TERM_BODY = {"type": "object", "required": ["sourceLang", "targetLang", "term", "translation"],
             "properties": {"sourceLang": _LANG, "targetLang": _LANG, "term": {"type": "string", "minLength": 1},
                            "translation": {"type": "string", "minLength": 1}},
             "additionalProperties": False}


def upserting(operations: dict) -> dict:
    """A POST that creates (201) or updates (200) the same record: both answers documented."""
    responses = operations["post"]["responses"]
    responses["200"] = {**responses["201"], "description": "Updated the existing record"}
    return operations

"""OpenAPI schemas of the settings plugin's routes."""

ANY = {}
SETTINGS_MAP = {"type": "object", "additionalProperties": True}
SETTING = {"type": "object", "required": ["key", "value"],
           "properties": {"key": {"type": "string", "pattern": "^[A-Za-z0-9_.-]{1,100}$"}, "value": ANY}}
PUT_BODY = {"type": "object", "required": ["value"], "properties": {"value": ANY}, "additionalProperties": False}
BUNDLE = {"type": "object", "required": ["settings"],
          "properties": {"version": {"type": "string", "enum": ["svc.settings@v1"]},
                         "exportedAt": {"type": "string"}, "settings": SETTINGS_MAP},
          "additionalProperties": False}
APPLIED = {"type": "object", "properties": {"applied": {"type": "array", "items": {"type": "string"}},
                                            "removed": {"type": "array", "items": {"type": "string"}}}}

_TEXT = {"type": ["string", "null"]}
_OBJ = {"type": ["object", "null"]}
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

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

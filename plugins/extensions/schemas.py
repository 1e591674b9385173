"""OpenAPI schemas of ``/extensions``."""

EXTENSION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"}, "name": {"type": "string"}, "version": {"type": "string"},
        "publisher": {"type": "string"}, "description": {"type": ["string", "null"]},
        "isOfficial": {"type": "boolean"},
        "signature": {"type": "object", "properties": {"state": {"enum": ["verified", "unverified"]},
                                                      "sha256": {"type": "string"}}},
        "status": {"enum": ["installed", "blocked"]}, "statusReason": {"type": ["string", "null"]},
        "requestedCapabilities": {"type": "array", "items": {"type": "string"}},
        "installedAt": {"type": "string", "format": "date-time"},
        "site": {"type": "object", "properties": {
            "enabled": {"type": "boolean"}, "grantedCapabilities": {"type": "array", "items": {"type": "string"}},
            "failures": {"type": "integer"}, "disabledReason": {"type": ["string", "null"]},
            # -- govern43: what the instance admin offers the site
            "available": {"type": "boolean"},
            "maxCapabilities": {"type": "array", "items": {"type": "string"}}}},
    },
}
UPLOAD_BODY = {
    "type": "object", "required": ["bundle", "signature"],
    "properties": {"bundle": {"type": "string", "format": "binary"},
                   "signature": {"type": "string", "description": "base64 detached Ed25519 signature"}},
}
CAPABILITIES_BODY = {
    "type": "object", "required": ["capabilities"], "additionalProperties": False,
    "properties": {"capabilities": {"type": "array", "items": {"type": "string"}}},
}
AVAILABILITY_BODY = {  # -- govern43
    "type": "object", "required": ["available"], "additionalProperties": False,
    "properties": {"available": {"type": "boolean"},
                   "maxCapabilities": {"type": "array", "items": {"type": "string"},
                                       "description": "The most a site admin may grant (each one the manifest "
                                                      "asks for); kept when left out"}},
}
UI_ENTRY = {
    "type": "object",
    "properties": {"extension": {"type": "string"}, "version": {"type": "string"}, "id": {"type": "string"},
                   "type": {"type": "string"}, "label": {"type": "string"}, "icon": {"type": "string"},
                   # -- ext_ui: a panel with a script: where the studio frames it, and its grants
                   "source": {"type": "string"}, "src": {"type": "string"},
                   "grantedCapabilities": {"type": "array", "items": {"type": "string"}}},
}
KEY = {
    "type": "object",
    "properties": {"id": {"type": ["string", "null"]}, "publisher": {"type": "string"},
                   "publicKey": {"type": "string"}, "status": {"enum": ["trusted", "official", "revoked"]},
                   "source": {"enum": ["stored", "environment"]}, "updatedAt": {"type": ["string", "null"]}},
}
KEY_BODY = {
    "type": "object", "required": ["publisher", "publicKey", "status"], "additionalProperties": False,
    "properties": {"publisher": {"type": "string"}, "publicKey": {"type": "string"},
                   "status": {"enum": ["trusted", "official", "revoked"]}},
}

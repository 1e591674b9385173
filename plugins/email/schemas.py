"""OpenAPI schemas of the email routes (shapes only; the services check the values)."""

OBJ = {"type": "object", "additionalProperties": True}
LAYOUT_BODY = {"type": "object", "required": ["name", "html"],
               "properties": {"name": {"type": "string"}, "html": {"type": "string"}}}
LAYOUT = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                           "html": {"type": "string"}}}
TEMPLATE_BODY = {"type": "object", "required": ["key", "name", "subject"],
                 "properties": {"key": {"type": "string"}, "name": {"type": "string"},
                                "subject": {"type": "string"}, "html": {"type": "string"},
                                "text": {"type": "string"}, "layoutId": {"type": ["string", "null"]}}}
TEMPLATE = {"type": "object", "properties": {**TEMPLATE_BODY["properties"], "id": {"type": "string"}}}
PREVIEW_BODY = {"type": "object", "properties": {"variables": {"type": "object", "additionalProperties": True}}}
PREVIEW = {"type": "object", "properties": {"subject": {"type": "string"}, "html": {"type": ["string", "null"]},
                                            "text": {"type": "string"}}}
SOURCE_PREVIEW_BODY = {"type": "object", "required": ["subject"], "properties": {
    "subject": {"type": "string"}, "html": {"type": ["string", "null"]}, "text": {"type": ["string", "null"]},
    "layoutId": {"type": ["string", "null"]}, "layout": {"type": ["string", "null"]},
    "variables": {"type": "object", "additionalProperties": True}}}
SEND_BODY = {"type": "object", "required": ["to"], "properties": {
    "to": {"type": "array", "items": {"type": "string"}}, "cc": {"type": "array", "items": {"type": "string"}},
    "replyTo": {"type": "string"}, "variables": {"type": "object", "additionalProperties": True}, "templateKey": {"type": "string"},
    "inline": {"type": "object", "properties": {"subject": {"type": "string"}, "html": {"type": "string"},
                                                "text": {"type": "string"}}},
    "category": {"type": "string", "enum": ["transactional", "marketing"]},
    # -- govern43: a scheduled send (always queued as a batch, its jobs due then)
    "sendAt": {"type": "string", "format": "date-time"}}}
SEND = {"type": "object", "properties": {k: {"type": "integer"} for k in ("queued", "sent", "failed", "suppressed", "withoutConsent")}}
BATCH = {"type": "object", "properties": {  # -- govern43
    "id": {"type": "string"}, "category": {"type": "string"}, "subject": {"type": ["string", "null"]},
    **{k: {"type": "integer"} for k in ("total", "sent", "failed", "skipped", "pending")},
    "status": {"enum": ["scheduled", "sending", "done", "cancelled"]},
    "sendAt": {"type": ["string", "null"], "format": "date-time"},
    "cancelledAt": {"type": ["string", "null"], "format": "date-time"},  # -- more43
    "createdBy": {"type": ["string", "null"]}, "createdAt": {"type": "string", "format": "date-time"}}}
TEST_BODY = {"type": "object", "required": ["to"], "properties": {"to": {"type": "string"}}}
SUPPRESSION_BODY = {"type": "object", "required": ["email"],
                    "properties": {"email": {"type": "string"}, "reason": {"type": "string"}}}
SUPPRESSION = {"type": "object", "properties": {"email": {"type": "string"}, "reason": {"type": ["string", "null"]},
                                                "source": {"type": "string"}, "createdAt": {"type": "string"}}}

HTML = {"text/html": {"schema": {"type": "string"}}}
TOKEN_PARAM = {"name": "token", "in": "query", "required": False, "schema": {"type": "string"}}


def html_operation(summary: str) -> dict:
    """An operation answering an HTML page: 200, or 400 for a link that is not valid."""
    return {"summary": summary, "parameters": [TOKEN_PARAM], "responses": {
        "200": {"description": summary, "content": HTML},
        "400": {"description": "The link is not valid (an HTML page)", "content": HTML}}}

SMTP_PROPS: dict[str, object] = {"host": {"type": "string", "maxLength": 253}, "port": {"type": "integer", "minimum": 1,
                                                                                   "maximum": 65535},
                              "username": {"type": ["string", "null"]}, "tls": {"type": "string",
                                                                                "enum": ["none", "starttls", "tls"]},
                              "from": {"type": ["string", "null"]}}
SMTP_BODY: dict[str, object] = {"type": "object", "required": ["host"], "additionalProperties": False,
                             "properties": {**SMTP_PROPS, "password": {"type": ["string", "null"], "writeOnly": True}}}
SMTP: dict[str, object] = {"type": ["object", "null"], "properties": {
    **SMTP_PROPS, "hasPassword": {"type": "boolean"}, "updatedAt": {"type": "string"}}}

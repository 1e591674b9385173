"""OpenAPI pieces of files, assets, media, presets and the upload policy."""

from __future__ import annotations

from typing import Any

from kernel import ops

FILE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "key", "type", "filesize"],
    "properties": {
        "id": {"type": "string"},
        "key": {"type": "string", "description": "The file name (unique in the site)"},
        "title": {"type": ["string", "null"]},
        "description": {"type": ["string", "null"]},
        "type": {"type": "string"},
        "filesize": {"type": "integer"},
        "width": {"type": ["integer", "null"]},
        "height": {"type": ["integer", "null"]},
        "checksum": {"type": "string", "description": "SHA-256 of the bytes (hex)"},
        "folder": {"type": ["string", "null"]},
        "tags": {"type": "array", "items": {"type": "string"}},
        "folderId": {"type": ["string", "null"], "description": "The folder the file is in (/folders)"},
        "focalPoint": {
            "type": ["object", "null"],
            "required": ["x", "y"],
            "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}},
            "description": "The point a cover crop keeps (pixels of the original)",
        },
        "uploadedBy": {"type": ["string", "null"]},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
    },
}
META_BODY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "title": {"type": ["string", "null"], "maxLength": 255},
        "description": {"type": ["string", "null"], "maxLength": 4000},
        "folder": {"type": ["string", "null"], "maxLength": 255},
        "tags": {
            "type": "array",
            "items": {"type": "string", "minLength": 1, "maxLength": 100},
            "maxItems": 50,
        },
    },
}
META_PATCH_BODY = {
    **META_BODY,
    "properties": {
        **META_BODY["properties"],
        "folderId": {"type": ["string", "null"]},
        "focalPoint": {
            "type": ["object", "null"],
            "required": ["x", "y"],
            "additionalProperties": False,
            "properties": {"x": {"type": "integer", "minimum": 0}, "y": {"type": "integer", "minimum": 0}},
        },
    },
}
REGISTER_BODY = {
    "type": "object",
    "required": ["key"],
    "additionalProperties": False,
    "properties": {"key": {"type": "string"}, **META_BODY["properties"]},
}
UPLOAD_URL_BODY = {
    "type": "object",
    "required": ["filename", "contentType"],
    "additionalProperties": False,
    "properties": {"filename": {"type": "string"}, "contentType": {"type": "string"}},
}
UPLOAD_URL = {
    "type": "object",
    "required": ["url", "key", "expiresAt"],
    "properties": {"url": {"type": "string"}, "key": {"type": "string"}, "expiresAt": {"type": "string"}},
}
IMPORT_BODY = {
    "type": "object",
    "required": ["url"],
    "additionalProperties": False,
    "properties": {"url": {"type": "string"}, "data": META_BODY},
}
FOLDER = {
    "type": "object",
    "required": ["id", "name", "parent"],
    "properties": {
        "id": {"type": "string"},
        "name": {"type": "string"},
        "parent": {"type": ["string", "null"]},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
    },
}
FOLDER_BODY = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "minLength": 1, "maxLength": 255},
        "parent": {"type": ["string", "null"]},
    },
}
FOLDER_PATCH = {**FOLDER_BODY, "required": []}
PRESET = {
    "type": "object",
    "required": ["id", "key", "name", "dsl"],
    "properties": {
        "id": {"type": "string"},
        "key": {"type": "string"},
        "name": {"type": "string"},
        "dsl": {"type": "string"},
        "createdAt": {"type": "string"},
        "updatedAt": {"type": "string"},
    },
}
PRESET_BODY = {
    "type": "object",
    "required": ["key", "name", "dsl"],
    "additionalProperties": False,
    "properties": {
        "key": {"type": "string", "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$"},
        "name": {"type": "string", "maxLength": 255},
        "dsl": {"type": "string", "maxLength": 1000},
    },
}
PRESET_PATCH = {**PRESET_BODY, "required": []}
POLICY = {
    "type": "object",
    "required": ["maxBytes", "allowedMimeTypes", "allowedExtensions", "catalogue"],
    "properties": {
        "maxBytes": {"type": "integer"},
        "allowedMimeTypes": {"type": "array", "items": {"type": "string"}},
        "allowedExtensions": {"type": "array", "items": {"type": "string"}},
        "catalogue": {"type": "array", "items": {"type": "object", "additionalProperties": True}},
    },
}
POLICY_BODY = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "maxBytes": {"type": ["integer", "null"], "minimum": 1},
        "allowedMimeTypes": {"type": ["array", "null"], "items": {"type": "string"}},
    },
}
TRANSFORM_PARAMS = [
    {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
    for name, schema, text in (
        ("width", {"type": "integer", "minimum": 1, "maximum": 5000}, "Width in pixels"),
        ("height", {"type": "integer", "minimum": 1, "maximum": 5000}, "Height in pixels"),
        ("fit", {"type": "string", "enum": ["cover", "contain", "inside", "outside"]}, "How to fit the box"),
        ("format", {"type": "string", "enum": ["jpeg", "png", "webp", "avif"]}, "Output format"),
        ("quality", {"type": "integer", "minimum": 1, "maximum": 100}, "Output quality"),
        ("focal", {"type": "string"}, "x,y in the original's pixels: the point a cover crop keeps"),
        ("preset", {"type": "string"}, "Key of a saved transform preset"),
    )
]


def binary_upload(summary: str, status: int) -> dict[str, Any]:
    """An operation whose body is the file's raw bytes (``Content-Type``: its MIME type). The
    document declares the body binary (``application/octet-stream``) so that a generated client
    sends bytes; any ``Content-Type`` is accepted, and the upload guard decides on it."""
    op = ops(put=(summary, None, FILE, status))["put"]
    op["requestBody"] = {
        "required": True,
        "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}},
    }
    op["description"] = (
        "The request body is the file's raw bytes and `Content-Type` its declared MIME type "
        "(any type; `application/octet-stream` when unknown); the upload guard checks both "
        "(docs/files.md). 200 when the name existed and the caller may replace it."
    )
    op["x-svc-raw-body"] = True
    return op


RANGE_PARAMS = [
    {
        "name": "Range",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "One byte range (bytes=a-b, bytes=a-, bytes=-n): 206; several ranges get the whole 200",
    },
    {
        "name": "If-Range",
        "in": "header",
        "required": False,
        "schema": {"type": "string"},
        "description": "The ETag the range is of; another one gets the whole 200",
    },
]


def binary_answer(summary: str) -> dict[str, Any]:
    binary = {"*/*": {"schema": {"type": "string", "format": "binary"}}}
    return {
        "summary": summary,
        "parameters": [*TRANSFORM_PARAMS, *RANGE_PARAMS],
        "responses": {
            "200": {"description": summary, "content": binary},
            "206": {"description": "One byte range (Range), with Content-Range", "content": binary},
            "302": {"description": "Redirect to the derivative (/media with transform parameters)"},
            "304": {"description": "Not modified (If-None-Match)"},
            "416": {
                "description": "RANGE_NOT_SATISFIABLE: the range starts at or after the end "
                "(Content-Range: bytes */SIZE)",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
            },
        },
    }

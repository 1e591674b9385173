"""OpenAPI shapes of /ai and /mcp."""

from __future__ import annotations

from typing import Any

_OBJ: dict[str, Any] = {"type": "object", "additionalProperties": True}
_STR = {"type": "string"}
_NSTR = {"type": ["string", "null"]}
CHAT_BODY = {"type": "object", "required": ["message"], "additionalProperties": False, "properties": {
    "message": {"type": "string", "minLength": 1, "maxLength": 4000}, "conversationId": _STR,
    "stream": {"type": "boolean", "description": "Answer as Server-Sent Events (also: Accept: text/event-stream)"},
    "context": {"type": "object", "additionalProperties": False, "description": "What the user is looking at",
                "properties": {"collection": {"type": "string", "maxLength": 64},
                               "item": {"type": "string", "maxLength": 64}}}}}
CHAT = {"type": "object", "properties": {
    "status": {"type": "string", "enum": ["executed", "pending_approval", "answered"]}, "data": {},
    "approvalId": _STR, "message": _NSTR, "code": _STR, "skill": _STR, "conversationId": _STR}}
APPROVAL = {"type": "object", "properties": {
    "id": _STR, "status": {"type": "string", "enum": ["pending", "approved", "rejected", "failed", "expired",
                                                      "retrying", "running"]},
    "skill": _STR, "arguments": _OBJ, "message": _STR, "conversationId": _NSTR, "requestedBy": _NSTR,
    "decidedBy": _NSTR, "result": {}, "error": {"type": ["object", "null"], "additionalProperties": True},
    "attempts": {"type": "integer"}, "idempotencyKey": _STR, "createdAt": _STR,
    "expiresAt": _STR, "decidedAt": _NSTR}}
DECIDE_BODY = {"type": "object", "required": ["decision"], "additionalProperties": False, "properties": {
    "decision": {"type": "string", "enum": ["approved", "rejected"]}}}
CONVERSATION = {"type": "object", "properties": {"id": _STR, "title": _STR, "createdAt": _STR, "updatedAt": _STR}}
MESSAGE = {"type": "object", "properties": {
    "id": _STR, "role": {"type": "string", "enum": ["user", "assistant", "tool"]}, "content": _NSTR,
    "skill": _NSTR, "arguments": {}, "result": {}, "raw": {}, "approvalId": _NSTR, "createdAt": _STR}}
SKILL = {"type": "object", "properties": {"name": _STR, "description": _STR, "parameters": _OBJ,
                                          "dangerous": {"type": "boolean"}, "capability": _STR}}
JSONRPC = {"type": "object", "description": "A JSON-RPC 2.0 message (MCP Streamable HTTP)", "properties": {
    "jsonrpc": {"type": "string", "enum": ["2.0"]}, "id": {}, "method": _STR, "params": _OBJ}}
_RPC_ANSWER = {"type": "object", "description": "A JSON-RPC 2.0 result or error", "required": ["jsonrpc"],
               "properties": {"jsonrpc": {"type": "string", "enum": ["2.0"]}, "id": {}, "result": _OBJ,
                              "error": _OBJ}}
_RPC_OR_ERROR = {"anyOf": [_RPC_ANSWER, {"$ref": "#/components/schemas/Error"}]}


def mcp_operations() -> dict[str, Any]:
    """``/mcp``'s operations: its answers are JSON-RPC messages, not ``{ data }``; a refusal before
    the SDK (auth, Origin, site) is the usual error envelope."""
    def answer(description: str, schema: Any = _RPC_OR_ERROR) -> dict[str, Any]:
        return {"description": description, "content": {"application/json": {"schema": schema}}}

    post = {"summary": "MCP Streamable HTTP (JSON-RPC 2.0); initialize answers Mcp-Session-Id",
            "requestBody": {"required": True, "content": {"application/json": {"schema": JSONRPC}}},
            "responses": {"200": answer("A JSON-RPC answer", _RPC_ANSWER),
                          "202": {"description": "A notification or response was accepted"},
                          "400": answer("Framing error, unsupported protocol version or missing session"),
                          "404": answer("Unknown session (or another principal's)"),
                          "406": answer("The Accept header lacks application/json and text/event-stream"),
                          "413": answer("The body is too large"),
                          "415": answer("The body is not application/json")}}
    delete = {"summary": "End the MCP session named by Mcp-Session-Id",
              "responses": {"204": {"description": "Ended"}}}
    return {"post": post, "delete": delete}
STATUS_PARAM = {"name": "status", "in": "query", "required": False, "schema": {
    "type": "string", "enum": ["pending", "approved", "rejected", "failed", "expired", "retrying", "running",
                               "all"]}}

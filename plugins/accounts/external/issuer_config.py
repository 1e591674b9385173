"""The trusted-issuer configuration: its shape, defaults, validation and OpenAPI schema.

Pure functions (no database, no HTTP): ``normalise_config`` turns a request body (or a
PATCH merged onto the stored config) into the canonical config, or raises 422
``VALIDATION_FAILED`` with the ``path`` of the first bad input. Checks that need the site's
roles (``roleId``, ``defaultRoleId``) live in ``issuers.py``.
"""

from __future__ import annotations

import re
from typing import Any

from kernel.auth.tokens import ISSUER as INTERNAL_ISSUER
from kernel.base import outbound
from kernel.base.errors import ApiError

# Asymmetric only: an HMAC algorithm would need a shared secret, and accepting one beside
# public keys is what makes algorithm-confusion attacks possible.
ALLOWED_ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
SYSTEM_KEYS = ("admin", "public", "subscriber")
MAX_CLOCK_SKEW = 300  # seconds (docs/decisions/external-issuers.md)
DEFAULT_CLOCK_SKEW = 60
CLAIM_DEFAULTS = {"email": "email", "roles": "roles", "siteId": "siteId", "externalId": "sub"}

FIELDS = frozenset({"issuer", "jwksUri", "discoveryUrl", "audience", "algorithms", "claimMapping",
                    "roleMapping", "defaultRoleId", "jitProvisioning", "clockSkewSeconds", "enabled",
                    "clientId", "clientSecret", "scopes"})
# Keys PATCH may clear with null; the others are required or have defaults.
CLEARABLE = frozenset({"jwksUri", "discoveryUrl", "defaultRoleId", "clientId", "clientSecret", "scopes"})
# In a PATCH, null on a mapping puts it back to its default.
NULLABLE_IN_PATCH = CLEARABLE | {"claimMapping", "roleMapping"}
MAX_TEXT = 500
MAX_URL = 2000
MAX_AUDIENCES = 20
MAX_ROLE_MAPPINGS = 200
MAX_SCOPES = 20
# RFC 6749 section 3.3: a scope token is printable ASCII without space, '"' or '\\'.
_SCOPE = re.compile(r"^[\x21\x23-\x5b\x5d-\x7e]{1,100}$")
# Control characters never belong in these strings; NUL would also break PostgreSQL text.
CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def _fail(message: str, *path: str | int) -> ApiError:
    return ApiError.validation(message, path=list(path), status=422)


def _text(value: Any, *path: str | int, max_length: int = MAX_TEXT) -> str:
    """A non-empty string without control characters, at most ``max_length`` long."""
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"'{path[-1]}' must be a non-empty string", *path)
    if len(value) > max_length:
        raise _fail(f"'{path[-1]}' is longer than {max_length} characters", *path)
    if CONTROL_CHARS.search(value):
        raise _fail(f"'{path[-1]}' contains control characters", *path)
    return value


def check_url(value: Any, name: str) -> str:
    """An absolute http(s) URL by the outbound rule (docs/operations.md#outbound-requests) (``kernel.base.outbound.check_url``: a
    host, no credentials, never the unspecified address); 422 at ``name``. The address it
    resolves to is checked when the keys are fetched (``jwks.py``)."""
    return outbound.check_url(_text(value, name, max_length=MAX_URL), path=[name], status=422)


def _audience(value: Any) -> str | list[str]:
    if isinstance(value, str):
        return _text(value, "audience")
    if not isinstance(value, list) or not value:
        raise _fail("'audience' must be a string or a non-empty list of strings", "audience")
    if len(value) > MAX_AUDIENCES:
        raise _fail(f"'audience' lists more than {MAX_AUDIENCES} values", "audience")
    return [_text(v, "audience", i) for i, v in enumerate(value)]


def _algorithms(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise _fail("'algorithms' must be a non-empty list", "algorithms")
    out: list[str] = []
    for i, alg in enumerate(value):
        if alg not in ALLOWED_ALGORITHMS:
            raise _fail(f"'algorithms' may hold only asymmetric algorithms ({', '.join(ALLOWED_ALGORITHMS)})",
                        "algorithms", i)
        if alg not in out:
            out.append(alg)
    return out


def _claim_mapping(value: Any) -> dict[str, str]:
    if value is None:
        return dict(CLAIM_DEFAULTS)
    if not isinstance(value, dict):
        raise _fail("'claimMapping' must be an object", "claimMapping")
    for key in value:
        if key not in CLAIM_DEFAULTS:
            raise _fail(f"Unknown claim mapping '{key}' (use {', '.join(CLAIM_DEFAULTS)})", "claimMapping", key)
    return {key: _text(value[key], "claimMapping", key, max_length=200) if value.get(key) is not None else default
            for key, default in CLAIM_DEFAULTS.items()}


def _role_mapping(value: Any) -> dict[str, dict[str, str]]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail("'roleMapping' must be an object", "roleMapping")
    if len(value) > MAX_ROLE_MAPPINGS:
        raise _fail(f"'roleMapping' has more than {MAX_ROLE_MAPPINGS} entries", "roleMapping")
    out: dict[str, dict[str, str]] = {}
    for claim_role, target in value.items():
        _text(claim_role, "roleMapping", claim_role, max_length=200)
        if not isinstance(target, dict) or len(target) != 1 or not {"roleId", "systemKey"} & set(target):
            raise _fail("A role mapping is exactly one of { roleId } or { systemKey }", "roleMapping", claim_role)
        if "systemKey" in target:
            if target["systemKey"] not in SYSTEM_KEYS:
                raise _fail(f"'systemKey' must be one of {', '.join(SYSTEM_KEYS)}",
                            "roleMapping", claim_role, "systemKey")
            out[claim_role] = {"systemKey": target["systemKey"]}
        else:
            out[claim_role] = {"roleId": _text(target["roleId"], "roleMapping", claim_role, "roleId", max_length=36)}
    return out


def _scopes(value: Any) -> list[str] | None:
    """Scopes asked for besides ``openid email profile`` (OpenID Connect login)."""
    if value is None:
        return None
    if not isinstance(value, list) or len(value) > MAX_SCOPES:
        raise _fail(f"'scopes' must be a list of at most {MAX_SCOPES} scope names", "scopes")
    out: list[str] = []
    for i, scope in enumerate(value):
        if not isinstance(scope, str) or not _SCOPE.match(scope):
            raise _fail("A scope is 1 to 100 printable characters without spaces, quotes or backslashes",
                        "scopes", i)
        if scope not in out:
            out.append(scope)
    return out


def _flag(body: dict[str, Any], name: str, default: bool) -> bool:
    value = body.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise _fail(f"'{name}' must be a boolean", name)
    return value


def _skew(value: Any) -> int:
    if value is None:
        return DEFAULT_CLOCK_SKEW
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # JSON Schema counts 5.0 as an integer; so do we
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_CLOCK_SKEW:
        raise _fail(f"'clockSkewSeconds' must be an integer from 0 to {MAX_CLOCK_SKEW}", "clockSkewSeconds")
    return value


def check_create_body(body: Any) -> dict[str, Any]:
    """A create body: an object of known fields, none of them null (leave a field out instead)."""
    if not isinstance(body, dict):
        raise _fail("The body must be a JSON object", "body")
    for key, value in body.items():
        if key not in FIELDS:
            raise _fail(f"Unknown field '{key}'", key)
        if value is None:
            raise _fail(f"'{key}' cannot be null; leave it out instead", key)
    return body


def normalise_config(body: Any) -> dict[str, Any]:
    """The canonical issuer config of ``body`` (defaults filled in), or 422 with a ``path``.

    ``body`` is a create body or a PATCH merged onto the stored config, where a null means
    "cleared" (optional keys) or "back to the default" (mappings).
    """
    if not isinstance(body, dict):
        raise _fail("The body must be a JSON object", "body")
    for key in body:
        if key not in FIELDS:
            raise _fail(f"Unknown field '{key}'", key)
    if body.get("issuer") is None:
        raise _fail("'issuer' is required", "issuer")
    issuer = _text(body["issuer"], "issuer")
    if issuer == INTERNAL_ISSUER:
        raise _fail(f"'{INTERNAL_ISSUER}' is this service's own issuer and cannot be trusted as external", "issuer")
    jwks_uri, discovery = body.get("jwksUri"), body.get("discoveryUrl")
    if jwks_uri is None and discovery is None:
        raise _fail("Give one of 'jwksUri' or 'discoveryUrl'", "jwksUri")
    if jwks_uri is not None and discovery is not None:
        raise _fail("Give only one of 'jwksUri' or 'discoveryUrl'", "discoveryUrl")
    if body.get("audience") is None:
        raise _fail("'audience' is required", "audience")
    if body.get("algorithms") is None:
        raise _fail("'algorithms' is required", "algorithms")
    default_role = body.get("defaultRoleId")
    client_id = body.get("clientId")
    if client_id is not None and discovery is None:
        raise _fail("Login with 'clientId' needs 'discoveryUrl' (the authorization and token endpoints "
                    "come from the discovery document)", "clientId")
    return {
        "issuer": issuer,
        "jwksUri": check_url(jwks_uri, "jwksUri") if jwks_uri is not None else None,
        "discoveryUrl": check_url(discovery, "discoveryUrl") if discovery is not None else None,
        "audience": _audience(body["audience"]),
        "algorithms": _algorithms(body["algorithms"]),
        "claimMapping": _claim_mapping(body.get("claimMapping")),
        "roleMapping": _role_mapping(body.get("roleMapping")),
        "defaultRoleId": _text(default_role, "defaultRoleId", max_length=36) if default_role is not None else None,
        "jitProvisioning": _flag(body, "jitProvisioning", False),
        "clockSkewSeconds": _skew(body.get("clockSkewSeconds")),
        "enabled": _flag(body, "enabled", True),
        "clientId": _text(client_id, "clientId") if client_id is not None else None,
        # Write-only: issuers.py seals it (kernel.secrets) and never stores or answers it plain.
        "clientSecret": _text(body["clientSecret"], "clientSecret") if body.get("clientSecret") is not None else None,
        "scopes": _scopes(body.get("scopes")),
    }


def merge_patch(current: dict[str, Any], patch: Any) -> dict[str, Any]:
    """``current`` with ``patch``'s top-level keys replacing its own (null clears optional keys);
    nested objects (``claimMapping``, ``roleMapping``) are replaced whole, not deep-merged."""
    if not isinstance(patch, dict):
        raise _fail("The body must be a JSON object", "body")
    merged = dict(current)
    for key, value in patch.items():
        if key not in FIELDS:
            raise _fail(f"Unknown field '{key}'", key)
        if value is None and key not in NULLABLE_IN_PATCH:
            raise _fail(f"'{key}' cannot be null", key)
        merged[key] = value
    # Switching the key source with PATCH { discoveryUrl } alone must not fail as "both given".
    if patch.get("discoveryUrl") is not None and "jwksUri" not in patch:
        merged["jwksUri"] = None
    if patch.get("jwksUri") is not None and "discoveryUrl" not in patch:
        merged["discoveryUrl"] = None
    return merged


# ---------------------------------------------------------------------------------- OpenAPI

_URL = {"type": "string", "pattern": "^https?://[^\\s]+$", "maxLength": MAX_URL}
_NAME = {"type": "string", "minLength": 1, "maxLength": 200}
_ROLE_TARGET = {"oneOf": [
    {"type": "object", "required": ["roleId"], "additionalProperties": False,
     "properties": {"roleId": {"type": "string", "minLength": 1, "maxLength": 36}}},
    {"type": "object", "required": ["systemKey"], "additionalProperties": False,
     "properties": {"systemKey": {"type": "string", "enum": list(SYSTEM_KEYS)}}},
]}
_PROPERTIES: dict[str, Any] = {
    "issuer": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
    "jwksUri": _URL,
    "discoveryUrl": _URL,
    "audience": {"oneOf": [{"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
                           {"type": "array", "minItems": 1, "maxItems": MAX_AUDIENCES,
                            "items": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT}}]},
    "algorithms": {"type": "array", "minItems": 1, "items": {"type": "string", "enum": list(ALLOWED_ALGORITHMS)}},
    "claimMapping": {"type": "object", "additionalProperties": False,
                     "properties": {k: _NAME for k in CLAIM_DEFAULTS}},
    "roleMapping": {"type": "object", "maxProperties": MAX_ROLE_MAPPINGS, "additionalProperties": _ROLE_TARGET},
    "defaultRoleId": {"type": "string", "minLength": 1, "maxLength": 36},
    "jitProvisioning": {"type": "boolean"},
    "clockSkewSeconds": {"type": "integer", "minimum": 0, "maximum": MAX_CLOCK_SKEW},
    "enabled": {"type": "boolean"},
    "clientId": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT},
    "clientSecret": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT, "writeOnly": True},
    "scopes": {"type": "array", "maxItems": MAX_SCOPES,
               "items": {"type": "string", "pattern": "^[\\x21\\x23-\\x5b\\x5d-\\x7e]{1,100}$"}},
}
CREATE_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False, "properties": _PROPERTIES,
    "required": ["issuer", "audience", "algorithms"],
    "oneOf": [{"required": ["jwksUri"], "not": {"required": ["discoveryUrl"]}},
              {"required": ["discoveryUrl"], "not": {"required": ["jwksUri"]}}],
}
PATCH_SCHEMA: dict[str, Any] = {
    "type": "object", "additionalProperties": False,
    "properties": {**_PROPERTIES, **{k: {"oneOf": [_PROPERTIES[k], {"type": "null"}]} for k in sorted(NULLABLE_IN_PATCH)}},
}
RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["id", "issuer", "audience", "algorithms", "claimMapping", "roleMapping", "jitProvisioning",
                 "clockSkewSeconds", "enabled", "createdAt", "updatedAt"],
    "properties": {
        **{k: v for k, v in _PROPERTIES.items() if k != "clientSecret"}, "id": {"type": "string"},
        "jwksUri": {"type": ["string", "null"]}, "discoveryUrl": {"type": ["string", "null"]},
        "defaultRoleId": {"type": ["string", "null"]},
        "clientId": {"type": ["string", "null"]}, "hasClientSecret": {"type": "boolean"},
        "scopes": {"type": ["array", "null"], "items": {"type": "string"}},
        "claimMapping": {"type": "object", "additionalProperties": {"type": "string"}},
        "roleMapping": {"type": "object", "additionalProperties": True},
        "createdAt": {"type": "string"}, "updatedAt": {"type": "string"},
    },
}

"""Pipeline bodies: the checked columns of a create or patch body, the credentials of each
target and the ``targetPath`` template.

Every refusal is 400 ``VALIDATION_ERROR`` (the API's code for a store-sync body or
credential shape that does not match the target) with the ``path`` of the offending key; a body
that is not JSON at all is the kernel's 400 ``VALIDATION_FAILED`` (docs/errors.md).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from kernel import ApiError
from kernel.base import extras
from kernel.base.outbound import Policy, check_url

CODE = "VALIDATION_ERROR"
TARGETS = ("docstore", "rtdb")
STATUSES = ("active", "paused")
MAX_COLLECTIONS = 50
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.:@/-]{0,99}$")
COLLECTION = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")  # the schema plugin's collection names
PROJECT_ID = re.compile(r"^[a-z][a-z0-9-]{4,28}[a-z0-9]$")  # a Google Cloud project id
EMAIL = re.compile(r"^[^@\s]{1,200}@[^@\s]{1,200}$")
# A targetPath segment: letters, digits, '_' and '-', and the placeholders.
SEGMENT = re.compile(r"^(?:[A-Za-z0-9_-]|\{collection\}|\{id\})+$")
MAX_PATH, MAX_SEGMENTS = 300, 16
DEFAULT_TOKEN_URI = "https://oauth2.googleapis.com/token"
MAX_KEY = 16_384
MAX_SECRET = 512
BODY_KEYS = frozenset({"name", "target", "credentials", "projectId", "collections", "targetPath", "syncOnCreate",
                       "syncOnUpdate", "syncOnDelete", "role", "status"})
FLAGS = {"syncOnCreate": "sync_on_create", "syncOnUpdate": "sync_on_update", "syncOnDelete": "sync_on_delete"}


def invalid(message: str, path: list[str | int]) -> ApiError:
    return ApiError(400, CODE, message, path=path)


def _checked_url(value: Any, path: list[str | int], rule: Policy) -> str:
    """An outbound URL the site admin gives (the outbound rule, docs/operations.md#outbound-requests; ``kernel.base.outbound.policy``:
    loopback, private and link-local addresses only inside ``SVC_OUTBOUND_ALLOW_NETWORKS``), as
    400 VALIDATION_ERROR."""
    try:
        return check_url(value, path=path, policy=rule)
    except ApiError as exc:
        raise invalid(exc.message, path) from None


# ----------------------------------------------------------------------------- credentials


def docstore_credentials(value: Any, rule: Policy) -> dict[str, Any]:
    """A service-account object (docs/store-sync.md: ``project_id``, ``client_email``,
    ``private_key``; extra keys such as ``type`` and ``private_key_id`` are allowed and kept)."""
    where: list[str | int] = ["credentials"]
    if not isinstance(value, dict):
        raise invalid("'credentials' of a docstore pipeline is a service-account object", where)
    project = value.get("project_id")
    if not isinstance(project, str) or not PROJECT_ID.fullmatch(project):
        raise invalid("'project_id' is a Google Cloud project id (6 to 30 lower-case letters, digits, '-')",
                      [*where, "project_id"])
    email = value.get("client_email")
    if not isinstance(email, str) or not EMAIL.fullmatch(email):
        raise invalid("'client_email' is the service account's email address", [*where, "client_email"])
    key = value.get("private_key")
    if not isinstance(key, str) or not 0 < len(key) <= MAX_KEY:
        raise invalid("'private_key' is the service account's PEM private key", [*where, "private_key"])
    key_id = value.get("private_key_id")
    if key_id is not None and (not isinstance(key_id, str) or not 0 < len(key_id) <= 100):
        raise invalid("'private_key_id' is a string of at most 100 characters", [*where, "private_key_id"])
    extras.require_for_request("store-sync", "A docstore pipeline (its service account)")
    from google.auth import crypt

    try:
        crypt.RSASigner.from_service_account_info({"private_key": key})
    except (ValueError, TypeError, IndexError):
        raise invalid("'private_key' is not an RSA private key in PEM form", [*where, "private_key"]) from None
    token_uri = value.get("token_uri", DEFAULT_TOKEN_URI)
    token_uri = _checked_url(token_uri, [*where, "token_uri"], rule)
    for name, extra in value.items():
        if not isinstance(name, str) or len(name) > 100 or not isinstance(extra, (str, int, bool, type(None))) or \
                (isinstance(extra, str) and len(extra) > 2048):
            raise invalid("A service-account object holds short strings only", [*where, str(name)[:100]])
    return {**value, "token_uri": token_uri}


def rtdb_credentials(value: Any, rule: Policy) -> dict[str, Any]:
    """``{ databaseUrl, secret }``: the database's root URL (no query or fragment) and a
    database secret or token sent as ``auth=``."""
    where: list[str | int] = ["credentials"]
    if not isinstance(value, dict):
        raise invalid("'credentials' of an rtdb pipeline is { databaseUrl, secret }", where)
    unknown = sorted(set(value) - {"databaseUrl", "secret"})
    if unknown:
        raise invalid(f"Unknown credential '{unknown[0]}' for rtdb", [*where, unknown[0]])
    url = _checked_url(value.get("databaseUrl"), [*where, "databaseUrl"], rule)
    parts = urlsplit(url)
    if parts.query or parts.fragment or url.endswith("?") or url.endswith("#"):
        raise invalid("'databaseUrl' is the database's root URL, without query or fragment", [*where, "databaseUrl"])
    secret = value.get("secret")
    if not isinstance(secret, str) or not 0 < len(secret) <= MAX_SECRET or any(ord(c) < 33 for c in secret):
        raise invalid(f"'secret' is a string of 1 to {MAX_SECRET} characters without spaces", [*where, "secret"])
    return {"databaseUrl": url.rstrip("/"), "secret": secret}


def credentials_for(target: str, value: Any, rule: Policy) -> dict[str, Any]:
    return docstore_credentials(value, rule) if target == "docstore" else rtdb_credentials(value, rule)


# ----------------------------------------------------------------------------- targetPath


@dataclass(frozen=True)
class TargetPath:
    """A checked ``targetPath``: ``expand(collection, item_id)`` is the path of one item's
    document (docstore) or node (rtdb). Without ``{id}`` the item id is appended as the last
    segment."""

    template: str

    def expand(self, collection: str, item_id: str) -> str:
        path = self.template.replace("{collection}", collection)
        if "{id}" in path:
            return path.replace("{id}", item_id)
        return f"{path}/{item_id}"


def target_path(value: Any, target: str, collections: list[str]) -> TargetPath:
    """The template, checked: ``/``-separated segments of letters, digits, ``_``, ``-`` and the
    placeholders ``{collection}`` and ``{id}`` (at most once, in the last segment); with more than
    one collection it names ``{collection}`` (or two collections would write over each other);
    a docstore path ends at a document (an even number of segments, the id included)."""
    where: list[str | int] = ["targetPath"]
    if not isinstance(value, str) or not 0 < len(value) <= MAX_PATH:
        raise invalid(f"'targetPath' is a template of 1 to {MAX_PATH} characters", where)
    segments = value.split("/")
    if len(segments) > MAX_SEGMENTS or not all(SEGMENT.fullmatch(s) for s in segments):
        raise invalid("'targetPath' is '/'-separated segments of letters, digits, '_', '-', "
                      "'{collection}' and '{id}' (no empty segment, no other placeholder)", where)
    if value.count("{id}") > 1 or ("{id}" in value and "{id}" not in segments[-1]):
        raise invalid("'{id}' appears at most once, in the last segment of 'targetPath'", where)
    if len(collections) > 1 and "{collection}" not in value:
        raise invalid("'targetPath' must contain '{collection}' when the pipeline syncs several collections", where)
    length = len(segments) + (0 if "{id}" in value else 1)
    if target == "docstore" and length % 2:
        raise invalid("A docstore 'targetPath' names a document: collection/document pairs, so an even number "
                      "of segments counting the item id", where)
    return TargetPath(value)


# ----------------------------------------------------------------------------- the body


def _collections(value: Any) -> list[str]:
    where: list[str | int] = ["collections"]
    if not isinstance(value, list) or not 0 < len(value) <= MAX_COLLECTIONS:
        raise invalid(f"'collections' is an array of 1 to {MAX_COLLECTIONS} collection names", where)
    out: list[str] = []
    for index, name in enumerate(value):
        if not isinstance(name, str) or not COLLECTION.fullmatch(name):
            raise invalid("A collection name is a letter then letters, digits or '_'", [*where, index])
        if name not in out:
            out.append(name)
    return out


def parse(body: Any, *, creating: bool, current: Any = None) -> dict[str, Any]:
    """The checked values of a create body, or of a patch body over the row ``current``:
    column names as keys; ``credentials`` (unsealed, checked against the target) and ``role``
    (unresolved) as given. The outbound policy is applied by the caller (``credentials_for``)."""
    if not isinstance(body, dict):
        raise invalid("The body is a JSON object", ["body"])
    unknown = sorted(k for k in body if k not in BODY_KEYS)
    if unknown:
        raise invalid(f"Unknown field '{unknown[0]}'", [unknown[0]])
    out: dict[str, Any] = {}
    if creating or "name" in body:
        name = body.get("name")
        if not isinstance(name, str) or not NAME.fullmatch(name):
            raise invalid("'name' is 1 to 100 characters: letters, digits, space and _ . : @ / -", ["name"])
        out["name"] = name
    if creating:
        if body.get("target") not in TARGETS:
            raise invalid("'target' is 'docstore' or 'rtdb'", ["target"])
        out["target"] = body["target"]
        if "credentials" not in body:
            raise invalid("'credentials' are required", ["credentials"])
    elif "target" in body and body["target"] != current["target"]:
        raise invalid("'target' cannot change; create another pipeline", ["target"])
    if "projectId" in body:
        project = body["projectId"]
        if project is not None and (not isinstance(project, str) or not PROJECT_ID.fullmatch(project)):
            raise invalid("'projectId' is a Google Cloud project id (6 to 30 lower-case letters, digits, '-')",
                          ["projectId"])
        out["project_id"] = project
    if creating or "collections" in body:
        out["collections"] = _collections(body.get("collections"))
    if "targetPath" in body:
        out["target_path"] = body["targetPath"]
    elif creating:
        out["target_path"] = "{collection}"
    for key, column in FLAGS.items():
        if key in body:
            if not isinstance(body[key], bool):
                raise invalid(f"'{key}' is a boolean", [key])
            out[column] = body[key]
        elif creating:
            out[column] = True
    if "role" in body:
        if not isinstance(body["role"], str) or not 0 < len(body["role"]) <= 36:
            raise invalid("'role' is a role id of this site, or 'public', 'subscriber' or 'admin'", ["role"])
        out["role"] = body["role"]
    if "status" in body:
        if creating:
            raise invalid("A pipeline starts active; pause it with PATCH { status }", ["status"])
        if body["status"] not in STATUSES:
            raise invalid("'status' is 'active' or 'paused'", ["status"])
        out["status"] = body["status"]
    target = out.get("target") or current["target"]
    collections = out.get("collections") or list(current["collections"])
    if "target_path" in out or "collections" in out:
        target_path(out.get("target_path", current["target_path"] if current is not None else None), target,
                    collections)
    if "credentials" in body:
        out["credentials"] = body["credentials"]
    return out

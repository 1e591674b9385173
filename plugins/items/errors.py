"""The error codes the items plugin raises, and constructors that keep call sites short."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kernel.base.errors import ApiError, ErrorDetail

ERROR_CODES: dict[str, tuple[int, str]] = {
    "DEPENDENT_RECORDS_EXIST": (409, "A delete is blocked by a restrict relation; extensions.dependents "
                                     "lists the referencing records."),
    "FIELD_REQUIRED": (409, "resolve-dependents set_null on a required field."),
    "INVALID_TARGET": (422, "resolve-dependents reassign to a missing, invisible or invalid item."),
}
MAX_DETAILS = 50


def record_not_found(collection: str, item_id: str) -> ApiError:
    """404 ``RECORD_NOT_FOUND``: the item does not exist, is deleted, or is not visible."""
    return ApiError(404, "RECORD_NOT_FOUND", f"No item '{item_id[:64]}' in '{collection}'")


def collection_not_found(name: str) -> ApiError:
    """404 ``NOT_FOUND``: no live collection of that name (the schema plugin's answer too)."""
    return ApiError.not_found(f"No collection '{name[:64]}' in this site")


def field_denied(field: str, path: Sequence[str | int], action: str) -> ApiError:
    """403 ``PERMISSION_DENIED`` with ``extensions.reason = "field_policy"``."""
    return ApiError(403, "PERMISSION_DENIED", f"You may not {action} the field '{field}'", path=list(path),
                    extensions={"reason": "field_policy", "field": field})


def action_denied(collection: str, action: str) -> ApiError:
    """403 ``PERMISSION_DENIED``: no rule grants ``action`` on the collection."""
    return ApiError.forbidden(f"You do not have permission to {action} items of '{collection}'",
                              reason="no_permission")


def validation_errors(details: list[tuple[Sequence[str | int], str]]) -> ApiError:
    """One 400 ``VALIDATION_FAILED`` carrying every problem found (at most ``MAX_DETAILS``)."""
    first_path, first_message = details[0]
    more = [ErrorDetail("VALIDATION_FAILED", message, list(path), None)
            for path, message in details[1:MAX_DETAILS]]
    return ApiError(400, "VALIDATION_FAILED", first_message, path=list(first_path), more=more)


def conflict(message: str, path: Sequence[str | int], **ext: Any) -> ApiError:
    """409 ``CONFLICT`` (duplicate id, unique value) pointing at the input."""
    return ApiError(409, "CONFLICT", message, path=list(path), extensions=ext or None)


def dependents_exist(dependents: list[dict[str, Any]]) -> ApiError:
    """409 ``DEPENDENT_RECORDS_EXIST`` with the blocking references."""
    total = sum(d["count"] for d in dependents)
    return ApiError(409, "DEPENDENT_RECORDS_EXIST",
                    f"{total} record(s) still reference this item through a restrict relation",
                    extensions={"dependents": dependents})

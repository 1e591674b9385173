"""Hook implementations of the editorial plugin (its table of contents)."""

from __future__ import annotations

from typing import Any

from kernel import Route, hookimpl, ops
from plugins.editorial import gate, routes, service

name = "editorial"
requires = ("access", "accounts", "items", "schema")

REVIEW: dict[str, Any] = {"type": "object", "required": ["id", "collection", "itemId", "state"], "properties": {
    "id": {"type": "string"}, "collection": {"type": "string"}, "itemId": {"type": "string"},
    "state": {"type": "string", "enum": ["in_review", "approved", "rejected", "superseded"]},
    "reviewerId": {"type": "string"}, "submittedBy": {"type": ["string", "null"]},
    "authorId": {"type": ["string", "null"]}, "reason": {"type": ["string", "null"]},
    "createdAt": {"type": "string"}, "decidedAt": {"type": ["string", "null"]},
    "decidedBy": {"type": ["string", "null"]}}}
STATE: dict[str, Any] = {"type": "string", "enum": ["draft", "in_review", "approved", "rejected"]}
ITEM_STATE: dict[str, Any] = {
    "type": "object", "required": ["collection", "itemId", "state", "review", "transitions"], "properties": {
        "collection": {"type": "string"}, "itemId": {"type": "string"}, "state": STATE,
        "review": {"oneOf": [REVIEW, {"type": "null"}]},
        "transitions": {"type": "array", "items": {"type": "string",
                                                   "enum": ["submit-review", "approve", "reject"]}}}}
ITEM_STATES: dict[str, Any] = {"type": "object", "required": ["itemId", "state"], "properties": {
    "itemId": {"type": "string"}, "state": STATE}}
REVIEWER: dict[str, Any] = {"type": "object", "required": ["id", "email"], "properties": {
    "id": {"type": "string"}, "email": {"type": "string"}, "firstName": {"type": ["string", "null"]},
    "lastName": {"type": ["string", "null"]}}}


def _query(operation: dict[str, Any], *params: tuple[str, bool, dict[str, Any]]) -> dict[str, Any]:
    operation["get"]["parameters"] = [{"name": name, "in": "query", "required": required, "schema": schema}
                                      for name, required, schema in params]
    return operation


@hookimpl
def register_error_codes() -> dict[str, tuple[int, str]]:
    return {"EDITORIAL_GATE_REQUIRED": (409, "An item of an editorial collection must be approved before it is "
                                              "published, and stays as approved while published.")}


@hookimpl
def register_event_handlers(bus: Any, kernel: Any) -> None:
    """The gate: every write of an item, whatever its path, passes these filters."""
    bus.on_filter("items.create", gate.editorial_gate)
    bus.on_filter("items.update", gate.editorial_gate)


@hookimpl
def register_routes(kernel: Any) -> list[Route]:
    listing = _query(ops(get=("Review requests, newest first (query status, assignee)", None, [REVIEW], 200)),
                     ("status", False, {"type": "string", "enum": ["in_review", "approved", "rejected", "superseded"]}),
                     ("assignee", False, {"type": "string"}), ("page", False, {"type": "integer", "minimum": 1}),
                     ("limit", False, {"type": "integer", "minimum": 1, "maximum": 200}))
    text = {"type": "string"}
    one = "/editorial/{collection}/{id}"
    member = service.require_member  # the caller before the body: studio members only
    return [
        Route("/editorial/reviews", routes.ReviewsResource(), auth="bearer", caller=member, openapi=listing),
        # What a client shows of the workflow (reads.py): an item's state and the caller's
        # transitions, the states of a page of items, the reviewers a submitter may name.
        Route(one, routes.ItemStateResource(), auth="bearer", caller=member, openapi=ops(
            get=("An item's editorial state, its latest review and the transitions the caller may take",
                 None, ITEM_STATE, 200))),
        Route("/editorial/states", routes.StatesResource(), auth="bearer", caller=member, openapi=_query(ops(
            get=("The editorial states of up to 100 items the caller can see", None, [ITEM_STATES], 200)),
            ("collection", True, text), ("ids", True, text))),
        Route("/editorial/reviewers", routes.ReviewersResource(), auth="bearer", caller=member, openapi=_query(ops(
            get=("The members a submitter may name as reviewer of the collection's items", None, [REVIEWER], 200)),
            ("collection", True, text), ("item", False, text))),
        Route(one + "/submit-review", routes.SubmitResource(), auth="bearer", caller=member, openapi=ops(
            post=("Submit a draft item for review", {"type": "object", "required": ["reviewerId"], "properties": {
                "reviewerId": {"type": "string"}}}, REVIEW, 200))),
        Route(one + "/approve", routes.ApproveResource(), auth="bearer", caller=member, openapi=ops(
            post=("Approve an item in review", None, REVIEW, 200))),
        Route(one + "/reject", routes.RejectResource(), auth="bearer", caller=member, openapi=ops(
            post=("Reject an item in review", {"type": "object", "required": ["reason"], "properties": {
                "reason": {"type": "string"}}}, REVIEW, 200))),
    ]


@hookimpl
def register_erasure_targets(kernel: Any) -> list[Any]:
    """``editorialReviews``: a review's reason quoting the subject is cleared (the decision stays)."""
    from kernel.policy.privacy import ErasureTarget, holding
    from plugins.editorial.tables import reviews

    async def erase(uow: Any, subject: Any) -> int:
        done = await uow.db.execute(uow.db.update(reviews).where(holding([reviews.c.reason], subject)).values(reason=None))
        return int(done.rowcount or 0)

    return [ErasureTarget("editorialReviews", erase, "Review reasons quoting the subject are cleared.")]

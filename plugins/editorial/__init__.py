"""editorial: the review workflow of collections with ``meta.editorialWorkflow``, and its gate.

Owns ``svc_editorial_states`` (each item's state: draft, in_review, approved, rejected) and
``svc_editorial_reviews`` (review requests, each with its ``state``). Routes (site required,
bearer; members of the site): ``GET /editorial/reviews`` (``status``, ``assignee``) and
``POST /editorial/{collection}/{id}/submit-review|approve|reject`` (``service.py``); every
transition is audited as ``editorial_transition`` (``workflow.py``). What clients read to show
the workflow (``reads.py``): ``GET /editorial/{collection}/{id}`` (state, latest review, the
caller's transitions), ``GET /editorial/states`` and ``GET /editorial/reviewers``.

The gate (``gate.py``) is a filter on ``items.create`` and ``items.update``: an item of such a
collection becomes published only when approved, whatever path writes it (PATCH, a release,
GraphQL, flows, MCP), and an edit after review returns it to draft.

Hooks: register_routes, register_event_handlers, register_error_codes
(EDITORIAL_GATE_REQUIRED).
"""

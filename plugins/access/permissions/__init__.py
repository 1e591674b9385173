"""Effective permissions: the caller's own (``GET /permissions/me``) and the check debugger, with their
routes."""

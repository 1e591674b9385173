"""Holes found in the security review of the regulated plugin (each test failed before its fix)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("param", ["collection", "itemId", "actorId"])
async def test_a_nul_in_a_field_access_log_filter_is_400_not_a_500(calls, param):
    """PostgreSQL refuses NUL in text (was 500 INTERNAL on PostgreSQL)."""
    await calls.err("get", "/admin/field-access-log", 400, "VALIDATION_FAILED", path_is=["query", param],
                    params={param: "a\x00b"})

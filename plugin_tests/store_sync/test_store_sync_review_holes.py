"""Holes found in the security review of store-sync (each test failed before its fix)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize("method,path", [("get", "/store-sync/pipelines/a%00b"),
                                         ("get", "/store-sync/pipelines/a%00b/log"),
                                         ("post", "/store-sync/pipelines/a%00b/backfill"),
                                         ("delete", "/store-sync/pipelines/a%00b")])
async def test_a_nul_in_a_pipeline_id_is_not_found_not_a_500(calls, method, path):
    """PostgreSQL refuses NUL in text: such an id names nothing (was 500 INTERNAL on PostgreSQL)."""
    await calls.err(method, path, 404, "RECORD_NOT_FOUND")

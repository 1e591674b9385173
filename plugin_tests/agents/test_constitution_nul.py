"""A constitution draft keeps its rules as sent, so it refuses what no database can store: a NUL
character in any string of its rules or its note is 400 at its path, never a 500 (PostgreSQL
keeps NUL in neither text nor JSONB)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.mark.parametrize(("body", "path"), [
    ({"rules": [{"rule": "max_length", "field": "t", "max": 3, "collection": "a\x00b"}]}, ["rules", "0", "collection"]),
    ({"rules": [{"rule": "deny_collection", "collection": "x", "n\x00": 1}]}, ["rules", "0", "n\x00"]),
    ({"rules": [], "note": "before\x00after"}, ["note"]),
])
async def test_a_nul_anywhere_in_a_draft_is_400_at_its_path(shared_site, body, path):
    error = await shared_site.calls.err("post", "/agent/constitution", 400, "VALIDATION_FAILED", json=body)
    assert error["path"] == path
    drafts = await shared_site.calls.ok("get", "/agent/constitution")
    assert all("\x00" not in str(d) for d in drafts)

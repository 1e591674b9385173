"""A file's ``description`` (docs/files.md#files): free text beside the title, set by
``PATCH /files/:id`` and ``POST /files/import``'s ``data``, validated, announced in the
``files.update`` event's fields, and out of reach from another site."""

from __future__ import annotations

import pytest

from kernel.testing import shared as testing_shared

from .conftest import FILES_ENV
from .corpus import gradient_jpeg, uploaded

# Every test writes and reads in a site of its own: they share the module's app (the files tests'
# settings, local storage: storage is not the subject), each in a new site of it
# (kernel/testing/shared.py).
shared_site = testing_shared.shared_site_started_with(env=FILES_ENV)
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_a_description_is_set_changed_and_cleared(calls):
    shot = await uploaded(calls, "beach.jpg", gradient_jpeg((20, 10)))
    assert shot["description"] is None
    text = "Low tide at dawn.\nTaken from the pier."
    changed = await calls.ok("patch", f"/files/{shot['id']}", json={"description": text, "title": "Beach"})
    assert (changed["description"], changed["title"]) == (text, "Beach")
    assert (await calls.ok("get", f"/files/{shot['id']}"))["description"] == text
    listed = await calls.ok("get", "/files")
    assert [f["description"] for f in listed if f["id"] == shot["id"]] == [text]
    cleared = await calls.ok("patch", f"/files/{shot['id']}", json={"description": None})
    assert cleared["description"] is None and cleared["title"] == "Beach"


@pytest.mark.parametrize("bad", [5, "x" * 4001, "bell\x07", ["a"]])
async def test_a_bad_description_is_refused_at_its_path(calls, bad):
    shot = await uploaded(calls, "pier.jpg", gradient_jpeg((20, 10)))
    refused = await calls.call("patch", f"/files/{shot['id']}", json={"description": bad})
    error = refused.json()["errors"][0]
    assert (refused.status_code, error["code"], error["path"]) == (400, "VALIDATION_FAILED", ["description"])
    assert (await calls.ok("get", f"/files/{shot['id']}"))["description"] is None


async def test_another_site_cannot_read_or_change_a_description(calls, calls_b):
    shot = await uploaded(calls, "dune.jpg", gradient_jpeg((20, 10)))
    await calls.ok("patch", f"/files/{shot['id']}", json={"description": "Site A's words"})
    for method, body in (("get", None), ("patch", {"description": "overwritten"})):
        refused = await calls_b.call(method, f"/files/{shot['id']}", json=body)
        assert (refused.status_code, refused.json()["errors"][0]["code"]) == (404, "RECORD_NOT_FOUND"), method
    assert (await calls.ok("get", f"/files/{shot['id']}"))["description"] == "Site A's words"

"""Conditional updates (docs/items.md, "Conditional updates"): ``GET /items/:c/:id`` answers an
ETag, ``PATCH``/``PUT`` with ``If-Match`` apply only while it is current (412
``PRECONDITION_FAILED`` with the current tag else), a malformed header is a 400, a member whose
mask hides fields gets a tag a hidden change leaves alone, and another site's tag opens nothing."""

from __future__ import annotations

import asyncio
import re

import pytest
import pytest_asyncio

from kernel.testing import Calls

pytestmark = pytest.mark.asyncio(loop_scope="module")
TAG = re.compile(r'^"[0-9a-f]{24}"$')


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def notes(shared_site) -> Calls:
    calls = await shared_site.new_site("cond")
    await calls.collection("notes", {"title": "string", "body": "text"})
    await calls.create("notes", [{"id": "n1", "title": "one"}, {"id": "n2", "title": "two"}])
    return calls


async def _tag(calls: Calls, item_id: str, **kw) -> str:
    resp = await calls.call("get", f"/items/notes/{item_id}", **kw)
    assert resp.status_code == 200, resp.text
    assert TAG.match(resp.headers["etag"]), resp.headers.get("etag")
    return resp.headers["etag"]


async def _refused(
    calls: Calls, item_id: str, if_match: str, status: int = 412, method: str = "patch"
) -> dict:
    """The write with ``If-Match: if_match`` fails (412 PRECONDITION_FAILED, or 400) at the header."""
    code = "PRECONDITION_FAILED" if status == 412 else "VALIDATION_FAILED"
    return await calls.err(
        method,
        f"/items/notes/{item_id}",
        status,
        code,
        path_is=["headers", "If-Match"],
        json={"title": "refused"},
        headers={"If-Match": if_match},
    )


async def test_if_match_applies_a_current_tag_and_refuses_a_stale_one(notes):
    first = await _tag(notes, "n1")
    assert await _tag(notes, "n1") == first  # stable while nothing is written
    assert await _tag(notes, "n1", params={"fields": "title"}) == first  # not from the shown fields
    resp = await notes.call("patch", "/items/notes/n1", json={"title": "mine"}, headers={"If-Match": first})
    assert resp.status_code == 200 and resp.json()["data"]["title"] == "mine"
    second = resp.headers["etag"]
    assert TAG.match(second) and second != first and await _tag(notes, "n1") == second
    # Someone who read before that write: 412 with the current tag, nothing written.
    error = await _refused(notes, "n1", first)
    assert error["extensions"]["etag"] == second
    assert (await notes.get("notes", "n1"))["title"] == "mine"
    # PUT too; a list of tags matches when one does; a weak tag never matches; "*" always does.
    await _refused(notes, "n1", first, method="put")
    await _refused(notes, "n1", f"W/{second}")
    resp = await notes.call(
        "put", "/items/notes/n1", json={"title": "replaced"}, headers={"If-Match": f'"0000", {second}'}
    )
    assert resp.status_code == 200 and resp.json()["data"]["title"] == "replaced"
    resp = await notes.call("patch", "/items/notes/n1", json={"body": "any"}, headers={"If-Match": "*"})
    assert resp.status_code == 200 and resp.headers["etag"] not in (first, second)
    # Without If-Match the write is unconditional, as before.
    await notes.ok("patch", "/items/notes/n1", json={"title": "plain"})
    assert (await notes.get("notes", "n1"))["title"] == "plain"


@pytest.mark.parametrize("header", ["abc", '"a",', '"a" "b"', "W/", '"' + "a" * 3000 + '"'])
async def test_a_malformed_if_match_is_a_400(notes, header):
    await _refused(notes, "n2", header, status=400)
    assert (await notes.get("notes", "n2"))["title"] == "two"


async def test_two_writers_with_one_tag_one_wins(notes):
    await notes.create("notes", {"id": "race", "title": "start"})
    tag = await _tag(notes, "race")
    answers = await asyncio.gather(
        *[
            notes.call("patch", "/items/notes/race", json={"title": f"writer {i}"}, headers={"If-Match": tag})
            for i in range(2)
        ]
    )
    assert sorted(a.status_code for a in answers) == [200, 412]
    winner = next(a for a in answers if a.status_code == 200).json()["data"]["title"]
    assert (await notes.get("notes", "race"))["title"] == winner


async def test_a_masked_members_tag_ignores_fields_it_cannot_read(shared_site, notes):
    """The tag of a member whose mask hides fields is keyed by what it reads: a write to a hidden
    field (``body``, or ``updatedAt`` through any write) must not change it, or the tag would say
    that something it may not read changed. Its If-Match works with that tag, chained too."""
    site = notes.headers["X-Svc-Site"]
    from kernel.testing import new_member

    made = await new_member(shared_site.app, site, "subscriber")
    await notes.grant(
        [
            {"collection": "notes", "action": "read", "fields": ["title"]},
            {"collection": "notes", "action": "update", "fields": ["title"]},
        ],
        {"userId": made.id},
    )
    shared_site.app.kernel.access.invalidate(site)
    member = Calls(shared_site.app.client, made.headers)
    shown = await member.get("notes", "n2")
    assert "updatedAt" not in shown and "body" not in shown
    tag = await _tag(member, "n2")
    admin_tag = await _tag(notes, "n2")
    await notes.ok("patch", "/items/notes/n2", json={"body": "a hidden change"})
    assert await _tag(notes, "n2") != admin_tag  # the admin reads body: its tag moves
    assert await _tag(member, "n2") == tag  # the member's does not: nothing it reads changed
    # A request for fewer fields, or If-None-Match, gives the member the same tag: the tag is the
    # item's as the member reads it, not the answer's.
    assert await _tag(member, "n2", params={"fields": "id"}) == tag
    resp = await member.call(
        "patch", "/items/notes/n2", json={"title": "by member"}, headers={"If-Match": tag}
    )
    assert resp.status_code == 200 and resp.headers["etag"] == await _tag(member, "n2")
    chained = resp.headers["etag"]
    error = await _refused(member, "n2", tag)
    assert error["extensions"]["etag"] == chained
    await notes.ok("patch", "/items/notes/n2", json={"title": "by admin"})  # a change it can read
    assert await _tag(member, "n2") != chained
    await _refused(member, "n2", chained)


async def test_another_sites_tag_touches_nothing(shared_site, notes):
    other = await shared_site.new_site("condb")
    await other.collection("notes", {"title": "string"})
    await other.create("notes", {"id": "n2", "title": "B's own"})
    tag_a = await _tag(notes, "n2")
    # Site B has its own n2: A's tag is not B's, and B never reaches A's item.
    await _refused(other, "n2", tag_a)
    await other.err(
        "patch", "/items/notes/n1", 404, "RECORD_NOT_FOUND", json={"title": "x"}, headers={"If-Match": "*"}
    )
    await other.err("get", "/items/notes/n1", 404, "RECORD_NOT_FOUND")
    assert (await notes.get("notes", "n1"))["title"] == "plain"
    assert await _tag(notes, "n2") == tag_a


async def test_graphql_update_honours_if_match(notes):
    await notes.create("notes", {"id": "gq", "title": "graph"})
    tag = await _tag(notes, "gq")
    mutation = 'mutation($tag: String) { update_notes(id: "gq", data: {title: "by graphql"}, ifMatch: $tag) { id title } }'

    async def run(variables: dict) -> dict:
        resp = await notes.call("post", "/graphql", json={"query": mutation, "variables": variables})
        assert resp.status_code == 200, resp.text
        return resp.json()

    done = await run({"tag": tag})
    assert done["data"]["update_notes"]["title"] == "by graphql", done
    stale = await run({"tag": tag})
    [error] = stale["errors"]
    current = await _tag(notes, "gq")
    assert error["extensions"]["reason"] == "PRECONDITION_FAILED" and error["extensions"]["status"] == 412
    assert error["extensions"]["etag"] == current != tag
    malformed = await run({"tag": "not-a-tag"})
    assert malformed["errors"][0]["extensions"]["code"] == "VALIDATION"
    assert (await notes.get("notes", "gq"))["title"] == "by graphql"
    # Without ifMatch, unconditional as before.
    assert (await run({}))["data"]["update_notes"]["title"] == "by graphql"
    assert await _tag(notes, "gq") != current


async def test_a_conditional_write_that_takes_the_item_out_of_sight_still_lands(shared_site, notes):
    """A masked member's conditional update may move the row out of its read rule: the write
    lands and answers a tag (the last write's), not a 404 that would roll it back."""
    site = notes.headers["X-Svc-Site"]
    from kernel.testing import new_member

    await notes.create("notes", {"id": "n9", "title": "visible"})
    made = await new_member(shared_site.app, site, "subscriber")
    await notes.grant(
        [
            {"collection": "notes", "action": "read", "fields": ["title"], "conditions": {"title": {"_eq": "visible"}}},
            {"collection": "notes", "action": "update", "fields": ["title"]},
        ],
        {"userId": made.id},
    )
    shared_site.app.kernel.access.invalidate(site)
    member = Calls(shared_site.app.client, made.headers)
    tag = await _tag(member, "n9")
    resp = await member.call("patch", "/items/notes/n9", json={"title": "hidden now"}, headers={"If-Match": tag})
    assert resp.status_code == 200, resp.text
    assert TAG.match(resp.headers["etag"])
    assert (await notes.get("notes", "n9"))["title"] == "hidden now"

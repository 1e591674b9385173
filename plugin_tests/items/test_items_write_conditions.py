"""The written row must satisfy the create/update rule's condition, before the write and after
it, on every path that writes items (the class of Directus CVE-2026-129239), and ownership
cannot be handed over. Each test checks that the refused write left nothing behind."""

from __future__ import annotations

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

READ = {"collection": "notes", "action": "read"}
MINE = {"category": {"_eq": "mine"}}


async def _notes(calls: Calls, **body) -> None:
    await calls.collection("notes", {"category": "string", "title": "string", "owner": "string",
                                     "due": "dateTime"}, **body)


async def policy(calls: Calls, rules: list[dict], user_id: str) -> None:
    """Another policy with ``rules`` attached to the user (access.changed drops the cache)."""
    made = await calls.ok("post", "/policies", status=201, json={"name": f"extra-{len(rules)}-{user_id[:8]}"})
    for rule in rules:
        await calls.ok("post", f"/policies/{made['id']}/permissions", status=201, json=rule)
    await calls.ok("post", f"/policies/{made['id']}/attach", status=201, json={"userId": user_id})


def _row_policy(err: dict) -> None:
    assert err["extensions"]["reason"] == "row_policy", err


async def test_patch_and_put_cannot_move_a_row_out_of_the_update_rule(calls: Calls, member):
    await _notes(calls)
    await calls.create("notes", [{"id": "a", "category": "mine", "title": "t"}, {"id": "b", "category": "theirs"}])
    user, _ = await member([READ, {"collection": "notes", "action": "update", "conditions": MINE}])
    _row_policy(await user.err("patch", "/items/notes/a", 403, "PERMISSION_DENIED", json={"category": "theirs"}))
    _row_policy(await user.err("put", "/items/notes/a", 403, "PERMISSION_DENIED",
                               json={"category": "theirs", "title": "t"}))
    _row_policy(await user.err("patch", "/items/notes/a", 403, "PERMISSION_DENIED", json={"category": None}))
    assert (await calls.get("notes", "a"))["category"] == "mine"
    # Inside the rule, before and after: allowed; a row outside it stays out of reach.
    assert (await user.ok("patch", "/items/notes/a", json={"title": "changed"}))["title"] == "changed"
    assert (await user.ok("put", "/items/notes/a", json={"category": "mine", "title": "put"}))["title"] == "put"
    await user.err("patch", "/items/notes/b", 404, "RECORD_NOT_FOUND", json={"category": "mine"})
    assert (await calls.get("notes", "b"))["category"] == "theirs"


async def test_create_must_satisfy_the_create_rule(calls: Calls, member):
    await _notes(calls)
    user, _ = await member([READ, {"collection": "notes", "action": "create", "conditions": MINE}])
    _row_policy(await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"category": "theirs"}))
    _row_policy(await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"title": "no category"}))
    err = await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", ["1"],
                         json=[{"id": "ok1", "category": "mine"}, {"id": "bad", "category": "theirs"}])
    _row_policy(err)
    assert (await calls.list("notes"))["data"] == []  # the bulk create rolled back as a whole
    assert (await user.create("notes", {"id": "c", "category": "mine"}))["category"] == "mine"
    created = await user.create("notes", [{"id": "d", "category": "mine"}, {"id": "e", "category": "mine"}])
    assert [i["id"] for i in created] == ["d", "e"]


async def test_ownership_cannot_be_handed_over(calls: Calls, member):
    await _notes(calls)
    owned = [{"collection": "notes", "action": a, "conditions": {"owner": {"_eq": "$CURRENT_USER"}}}
             for a in ("read", "update", "create")]
    user, user_id = await member(owned)
    _, other_id = await member([])
    mine = await user.create("notes", {"id": "m", "owner": user_id, "title": "mine"})
    assert mine["owner"] == user_id
    # Creating a row owned by someone else is refused too.
    _row_policy(await user.err("post", "/items/notes", 403, "PERMISSION_DENIED", json={"owner": other_id}))
    _row_policy(await user.err("patch", "/items/notes/m", 403, "PERMISSION_DENIED", json={"owner": other_id}))
    _row_policy(await user.err("put", "/items/notes/m", 403, "PERMISSION_DENIED", json={"owner": other_id}))
    assert (await calls.get("notes", "m"))["owner"] == user_id
    assert (await user.ok("patch", "/items/notes/m", json={"title": "still mine"}))["title"] == "still mine"


async def test_variables_and_relational_conditions_after_the_write(calls: Calls, member):
    await _notes(calls)
    await calls.collection("squads", {"name": "string"})
    await calls.ok("post", "/fields/notes", status=201, json={"field": "team", "type": "string"})
    await calls.relation(type="m2o", collection="notes", field="team", relatedCollection="squads")
    await calls.create("squads", [{"id": "red", "name": "red"}, {"id": "blue", "name": "blue"}])
    await calls.create("notes", [{"id": "r", "team": "red", "due": "2020-01-01T00:00:00Z"}])
    user, _ = await member([READ, {"collection": "notes", "action": "update",
                                   "conditions": {"team": {"name": {"_eq": "red"}}}}])
    _row_policy(await user.err("patch", "/items/notes/r", 403, "PERMISSION_DENIED", json={"team": "blue"}))
    assert (await user.ok("patch", "/items/notes/r", json={"title": "x"}))["title"] == "x"
    timed, _ = await member([READ, {"collection": "notes", "action": "update", "conditions": {"due": {"_lte": "$NOW"}}}])
    _row_policy(await timed.err("patch", "/items/notes/r", 403, "PERMISSION_DENIED",
                                json={"due": "2999-01-01T00:00:00Z"}))
    assert (await timed.ok("patch", "/items/notes/r", json={"due": "2021-01-01T00:00:00Z"}))["due"].startswith("2021")
    assert (await calls.get("notes", "r"))["team"] == "red"


async def test_singleton_upsert(calls: Calls, member):
    await _notes(calls, singleton=True)
    user, _ = await member([READ, *({"collection": "notes", "action": a, "conditions": MINE}
                                    for a in ("create", "update"))])
    _row_policy(await user.err("patch", "/items/notes", 403, "PERMISSION_DENIED", json={"category": "theirs"}))
    assert (await calls.ok("get", "/items/notes"))["id"] is None  # the first write was refused: nothing made
    assert (await user.ok("patch", "/items/notes", json={"category": "mine"}))["category"] == "mine"
    _row_policy(await user.err("patch", "/items/notes", 403, "PERMISSION_DENIED", json={"category": "theirs"}))
    assert (await calls.ok("get", "/items/notes"))["category"] == "mine"


async def test_revert_and_promote(calls: Calls, member):
    await _notes(calls, versioning=True)
    await calls.create("notes", {"id": "a", "category": "theirs", "title": "one"})
    await calls.ok("patch", "/items/notes/a", json={"category": "mine"})
    revisions = await calls.ok("get", "/items/notes/a/revisions")
    first = revisions[-1]
    editor, _ = await member([READ, {"collection": "notes", "action": "update", "conditions": MINE}])
    _row_policy(await editor.err("post", "/items/notes/a/revert", 403, "PERMISSION_DENIED",
                                 json={"revisionId": first["id"]}))
    await editor.ok("post", "/items/notes/a/versions", status=201, json={"key": "v"})
    await editor.ok("patch", "/items/notes/a/versions/v", json={"data": {"category": "theirs"}})
    _row_policy(await editor.err("post", "/items/notes/a/versions/v/promote", 403, "PERMISSION_DENIED"))
    assert (await calls.get("notes", "a"))["category"] == "mine"
    assert len(await calls.ok("get", "/items/notes/a/revisions")) == len(revisions)  # no revision written


async def test_resolve_dependents_reassign_and_set_null(calls: Calls, member):
    await calls.collection("authors", {"name": "string"})
    await calls.collection("posts", {"author": "string"})
    rel = (await calls.relation(type="m2o", collection="posts", field="author", relatedCollection="authors"))["id"]
    await calls.create("authors", [{"id": "ann"}, {"id": "bob"}])
    await calls.create("posts", [{"id": "p1", "author": "ann"}])
    user, _ = await member([{"collection": c, "action": "read"} for c in ("authors", "posts")]
                           + [{"collection": "posts", "action": "update", "conditions": {"author": {"_eq": "ann"}}}])
    path = "/items/authors/ann/resolve-dependents"
    for body in ({"action": "reassign", "relation": rel, "newTargetId": "bob"}, {"action": "set_null", "relation": rel}):
        _row_policy(await user.err("post", path, 403, "PERMISSION_DENIED", json=body))
    assert (await calls.get("posts", "p1"))["author"] == "ann"


async def test_a_filter_handler_cannot_carry_the_row_out(calls: Calls, member, svc_app):
    """The check reads the row as stored, after the bus filters: a handler's change counts too."""
    await _notes(calls)
    await calls.create("notes", {"id": "a", "category": "mine"})

    def move(event, payload, ctx):
        if payload.get("after", {}).get("title") == "move me":
            return {**payload, "after": {**payload["after"], "category": "theirs"}}
        return None

    off = svc_app.kernel.bus.on_filter("notes.items.update", move)
    try:
        user, _ = await member([READ, {"collection": "notes", "action": "update", "conditions": MINE}])
        _row_policy(await user.err("patch", "/items/notes/a", 403, "PERMISSION_DENIED", json={"title": "move me"}))
        assert (await calls.get("notes", "a"))["category"] == "mine"
    finally:
        off()


async def test_several_policies_or_their_conditions(calls: Calls, member):
    """Two update rules (mine, team): a row may move between them, not out of both."""
    await _notes(calls)
    await calls.create("notes", {"id": "a", "category": "mine"})
    user, user_id = await member([READ, {"collection": "notes", "action": "update", "conditions": MINE}])
    await policy(calls, [{"collection": "notes", "action": "update", "conditions": {"category": {"_eq": "team"}}}],
                 user_id)
    assert (await user.ok("patch", "/items/notes/a", json={"category": "team"}))["category"] == "team"
    _row_policy(await user.err("patch", "/items/notes/a", 403, "PERMISSION_DENIED", json={"category": "x"}))


async def test_a_conditional_update_reads_its_row_once_before_the_write(calls: Calls, member, monkeypatch):
    from kernel.tenancy import scope

    await _notes(calls)
    await calls.create("notes", [{"id": "a", "category": "mine", "title": "t"}])
    user, _ = await member([READ, {"collection": "notes", "action": "update", "conditions": MINE}])
    await user.ok("patch", "/items/notes/a", json={"title": "warm"})  # caches filled
    statements: list[str] = []
    real = scope.SiteDB.execute

    async def counted(self, stmt, args=None):
        statements.append(str(stmt))
        return await real(self, stmt, args)

    monkeypatch.setattr(scope.SiteDB, "execute", counted)
    assert (await user.ok("patch", "/items/notes/a", json={"title": "changed"}))["title"] == "changed"
    conditional = [s for s in statements if s.lstrip().upper().startswith("SELECT")
                   and "FROM svc_items" in s and "category" in s]
    # The row with its rule's match (before the write), then the written row's match (after it).
    assert len(conditional) == 2, statements
    assert all("svc_g0" in s for s in conditional)

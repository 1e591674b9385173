"""``$CURRENT_USER``, ``$CURRENT_ROLE``, ``$CURRENT_ROLES`` and ``$NOW`` in list filters, resolved
as in permission conditions (``kernel.policy.access.substitute_variables``; docs/access.md#variables-in-list-filters):
for a member, an anonymous caller (``$CURRENT_USER`` is null) and an API key, in the bracket and
JSON forms, in ``deep`` filters, and never served from a plan cached for someone else."""

from __future__ import annotations

import datetime as dt
import json

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

READ = {"collection": "notes", "action": "read", "fields": ["*"]}


def _iso(delta: dt.timedelta) -> str:
    return (dt.datetime.now(dt.UTC) + delta).isoformat().replace("+00:00", "Z")


async def _notes(calls: Calls, owners: dict[str, str | None]) -> dict[str, str]:
    """One note per title: its owner, and a due date an hour ago ("past...") or in an hour."""
    await calls.collection("notes", {"title": "string", "owner": "string", "due": "timestamp"})
    ids = {}
    for title, owner in owners.items():
        due = _iso(dt.timedelta(hours=-1 if title.startswith("past") else 1))
        ids[title] = (await calls.create("notes", {"title": title, "owner": owner, "due": due}))["id"]
    return ids


async def _titles(calls: Calls, **params: str) -> list[str]:
    page = await calls.ok("get", "/items/notes", params={**params, "sort": "title"})
    return [item["title"] for item in page]


async def test_variables_for_a_member_anonymous_and_an_api_key(svc_app, calls, site, member, make_member):
    user, user_id = await member([READ])
    other, other_id = await member([READ])
    await _notes(calls, {"past-mine": user_id, "soon-mine": user_id, "past-theirs": other_id, "past-nobody": None})
    mine_brackets = {"filter[owner][_eq]": "$CURRENT_USER"}
    mine_json = {"filter": json.dumps({"owner": {"_eq": "$CURRENT_USER"}})}
    for params in (mine_brackets, mine_json):
        assert await _titles(user, **params) == ["past-mine", "soon-mine"]
        assert await _titles(other, **params) == ["past-theirs"]  # the same query text, another user
    # $NOW, in both forms and combined; a due date an hour ago is before it, one in an hour after.
    assert await _titles(user, **{"filter[due][_lt]": "$NOW"}) == ["past-mine", "past-nobody", "past-theirs"]
    assert await _titles(user, filter=json.dumps({"_and": [{"owner": {"_eq": "$CURRENT_USER"}},
                                                            {"due": {"_gte": "$NOW"}}]})) == ["soon-mine"]
    # GraphQL's filter is the same language, bound the same way.
    resp = await user.call("post", "/graphql", json={
        "query": '{ notes(filter: {owner: {_eq: "$CURRENT_USER"}, due: {_lt: "$NOW"}}) { title } }'})
    assert resp.status_code == 200 and resp.json() == {"data": {"notes": [{"title": "past-mine"}]}}, resp.text
    # The total counts the same rows.
    page = await user.ok("get", "/items/notes", full=True, params=mine_brackets)
    assert page["meta"]["total"] == 2

    # Anonymous (the public role): $CURRENT_USER is null, so it matches the notes without an owner
    # exactly as `_null` does, and $NOW still works.
    roles = await calls.ok("get", "/roles")
    public = next(r for r in roles if r["systemKey"] == "public")
    await calls.grant([READ], {"roleId": public["id"]})
    anonymous = Calls(svc_app.client, {"X-Svc-Site": site})
    assert await _titles(anonymous, **mine_brackets) == await _titles(anonymous, **{"filter[owner][_null]": "true"})
    assert await _titles(anonymous, **mine_brackets) == ["past-nobody"]
    assert await _titles(anonymous, **{"filter[due][_gt]": "$NOW"}) == ["soon-mine"]

    # An API key acts with its role and no user: $CURRENT_USER is null, $CURRENT_ROLE its role.
    role = await calls.ok("post", "/roles", status=201, json={"name": "Bots"})
    await calls.grant([READ], {"roleId": role["id"]})
    key = await calls.ok("post", "/api-keys", status=201, json={"name": "bot", "roleId": role["id"]})
    bot = Calls(svc_app.client, {"Authorization": f"Bearer {key['key']}", "X-Svc-Site": site})
    assert await _titles(bot, **mine_brackets) == ["past-nobody"]
    assert await _titles(bot, **{"filter[due][_lte]": "$NOW"}) == ["past-mine", "past-nobody", "past-theirs"]
    nobody = (await calls.list("notes", **{"filter[title][_eq]": "past-nobody"}))["data"][0]["id"]
    await calls.ok("patch", f"/items/notes/{nobody}", json={"owner": role["id"]})
    assert await _titles(bot, **{"filter[owner][_eq]": "$CURRENT_ROLE"}) == ["past-nobody"]
    assert await _titles(bot, filter=json.dumps({"owner": {"_in": ["$CURRENT_ROLES"]}})) == ["past-nobody"]


async def test_admins_share_no_plan_and_deep_filters_bind_too(svc_app, calls, site, make_member):
    """Admins share cached read plans; ``$CURRENT_USER`` is bound before the plan is looked up,
    so two admins asking the same text get their own rows. ``deep`` filters bind as well."""
    admin = await make_member(site, "admin")
    me = await calls.ok("get", "/auth/me")
    await calls.collection("boards", {"name": "string"})
    await _notes(calls, {"past-admin": admin.id, "past-root": me["id"]})
    await calls.field("notes", "board", "string")
    await calls.relation(type="m2o", collection="notes", field="board", relatedCollection="boards",
                         relatedField="notes")
    board = await calls.create("boards", {"id": "b1", "name": "b"})
    for note in (await calls.list("notes"))["data"]:
        await calls.ok("patch", f"/items/notes/{note['id']}", json={"board": board["id"]})
    second = Calls(svc_app.client, admin.headers)
    params = {"filter[owner][_eq]": "$CURRENT_USER"}
    assert await _titles(calls, **params) == ["past-root"]
    assert await _titles(second, **params) == ["past-admin"]
    assert await _titles(calls, **params) == ["past-root"]
    deep = {"fields": "name,notes.title", "deep": json.dumps({"notes": {"_filter": {"owner": {"_eq": "$CURRENT_USER"}}}})}
    for who, title in ((calls, "past-root"), (second, "past-admin")):
        boards = await who.ok("get", "/items/boards", params=deep)
        assert [n["title"] for n in boards[0]["notes"]] == [title]

"""Field grants stay paired with their own rule's condition (the class of Directus
CVE-2025-27089): P1 grants ``title`` where ``category = 'draft'``, P2 grants ``body`` where
``flag = 'mine'``. On a row matching only P1, ``title`` and never ``body``: for writes, for every
read path, and no predicate (filter, sort, aggregate, groupBy, search, deep) on a field that is
hidden on some rows the caller sees."""

from __future__ import annotations

from typing import Any

from kernel.testing import Calls
from kernel.testing import shared as testing_shared

# The tests share the module's app, each in a new site of its own (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site

DRAFT = {"category": {"_eq": "draft"}}
MINE = {"flag": {"_eq": "mine"}}
ROWS = [{"id": "d", "category": "draft", "flag": "no", "title": "tee one", "body": "zebra"},
        {"id": "m", "category": "x", "flag": "mine", "title": "tee two", "body": "giraffe"},
        {"id": "b", "category": "draft", "flag": "mine", "title": "tee three", "body": "okapi"},
        {"id": "n", "category": "x", "flag": "no", "title": "tee four", "body": "lemur"}]


async def _docs(calls: Calls) -> None:
    await calls.collection("docs", {"category": "string", "flag": "string", "title": "string", "body": "text"})
    await calls.create("docs", ROWS)


async def _paired(member: Any, action: str = "read", shared: tuple[str, ...] = ("category", "flag")) -> Calls:
    """A member with two rules of ``action`` on docs: P1 (title) where draft, P2 (body) where mine."""
    rules = [{"collection": "docs", "action": action, "fields": [*shared, "title"], "conditions": DRAFT},
             {"collection": "docs", "action": action, "fields": [*shared, "body"], "conditions": MINE}]
    user, _ = await member(rules)
    return user


def _denied(err: dict[str, Any], field: str) -> None:
    assert (err["extensions"]["reason"], err["extensions"]["field"]) == ("field_policy", field), err


async def test_updates_are_paired(calls: Calls, member):
    await _docs(calls)
    user, _ = await member([
        {"collection": "docs", "action": "read"},
        {"collection": "docs", "action": "update", "fields": ["title"], "conditions": DRAFT},
        {"collection": "docs", "action": "update", "fields": ["body"], "conditions": MINE},
    ])
    assert (await user.ok("patch", "/items/docs/d", json={"title": "new"}))["title"] == "new"
    _denied(await user.err("patch", "/items/docs/d", 403, "PERMISSION_DENIED", ["body"], json={"body": "x"}), "body")
    _denied(await user.err("patch", "/items/docs/m", 403, "PERMISSION_DENIED", ["title"], json={"title": "x"}),
            "title")
    assert (await user.ok("patch", "/items/docs/m", json={"body": "new"}))["body"] == "new"
    both = await user.ok("patch", "/items/docs/b", json={"title": "T", "body": "B"})
    assert (both["title"], both["body"]) == ("T", "B")
    await user.err("patch", "/items/docs/n", 404, "RECORD_NOT_FOUND", json={"title": "x"})
    # The refused writes changed nothing.
    assert (await calls.get("docs", "d"))["body"] == "zebra" and (await calls.get("docs", "m"))["title"] == "tee two"


async def test_creates_are_paired(calls: Calls, member):
    await _docs(calls)
    user, _ = await member([
        {"collection": "docs", "action": "read"},
        {"collection": "docs", "action": "create", "fields": ["category", "title"], "conditions": DRAFT},
        {"collection": "docs", "action": "create", "fields": ["flag", "body"], "conditions": MINE},
    ])
    assert (await user.create("docs", {"category": "draft", "title": "t"}))["title"] == "t"
    _denied(await user.err("post", "/items/docs", 403, "PERMISSION_DENIED", ["body"],
                           json={"category": "draft", "body": "b"}), "body")
    assert (await calls.list("docs", filter='{"body":{"_eq":"b"}}'))["data"] == []


async def test_reads_show_each_row_what_its_rules_grant(calls: Calls, member):
    await _docs(calls)
    user = await _paired(member)
    listed = {i["id"]: i for i in (await user.list("docs", sort="id"))["data"]}
    assert listed == {
        "b": {"id": "b", "category": "draft", "flag": "mine", "title": "tee three", "body": "okapi"},
        "d": {"id": "d", "category": "draft", "flag": "no", "title": "tee one"},
        "m": {"id": "m", "category": "x", "flag": "mine", "body": "giraffe"},
    }
    assert await user.get("docs", "d") == listed["d"]
    assert await user.get("docs", "d", params={"fields": "body,flag"}) == {"id": "d", "flag": "no"}
    assert (await user.list("docs", fields="body", sort="id"))["data"] == [
        {"id": "b", "body": "okapi"}, {"id": "d"}, {"id": "m", "body": "giraffe"}]
    # Fields granted on every visible row may be filtered and sorted on.
    assert [i["id"] for i in (await user.list("docs", filter='{"flag":{"_eq":"no"}}'))["data"]] == ["d"]
    assert [i["id"] for i in (await user.list("docs", sort="-category,id"))["data"]] == ["m", "b", "d"]


async def test_no_predicate_oracle_on_a_field_hidden_on_some_rows(calls: Calls, member):
    await _docs(calls)
    user = await _paired(member)
    for params, field in ((({"filter": '{"body":{"_eq":"zebra"}}'}), "body"),
                          ({"filter": '{"_or":[{"title":{"_starts_with":"tee"}}]}'}, "title"),
                          ({"sort": "body"}, "body"),
                          ({"aggregate[max]": "title"}, "title"),
                          ({"groupBy": "body", "aggregate[count]": "*"}, "body")):
        _denied(await user.err("get", "/items/docs", 403, "PERMISSION_DENIED", params=params), field)
    # Search does not look into a field hidden on some rows: the word only in d's body is not found.
    found = await user.ok("get", "/search", full=True, params={"q": "zebra", "collection": "docs"})
    assert found["data"] == [] and found["meta"]["total"] == 0
    assert (await user.list("docs", **{"aggregate[count]": "*"}))["data"] == [{"count": 3}]


async def test_search_hits_nested_reads_and_history_are_masked_per_row(calls: Calls, member):
    await calls.collection("docs", {"category": "string", "flag": "string", "title": "string", "body": "text"},
                           versioning=True)
    await calls.create("docs", ROWS)
    await calls.collection("links", {"doc": "string"})
    await calls.relation(type="m2o", collection="links", field="doc", relatedCollection="docs")
    await calls.create("links", [{"id": "ld", "doc": "d"}, {"id": "lm", "doc": "m"}])
    await calls.ok("patch", "/items/docs/d", json={"body": "zebra two"})
    user, _ = await member([
        {"collection": "docs", "action": "read", "fields": ["category", "flag", "title"], "conditions": DRAFT},
        {"collection": "docs", "action": "read", "fields": ["category", "flag", "body"], "conditions": MINE},
        {"collection": "links", "action": "read"},
    ])
    nested = (await user.list("links", fields="id,doc.title,doc.body", sort="id"))["data"]
    assert nested == [{"id": "ld", "doc": {"id": "d", "title": "tee one"}},
                      {"id": "lm", "doc": {"id": "m", "body": "giraffe"}}]
    # "tee" is in title, which is hidden on m: searched only where granted everywhere, so
    # nothing here; a hit's item is masked per row (category is searched: "draft").
    hits = (await user.ok("get", "/search", params={"q": "draft", "collection": "docs"}))
    assert {h["id"]: h["item"] for h in hits} == {
        "d": {"id": "d", "category": "draft", "flag": "no", "title": "tee one"},
        "b": {"id": "b", "category": "draft", "flag": "mine", "title": "tee three", "body": "okapi"}}
    [latest, _] = await user.ok("get", "/items/docs/d/revisions")
    assert "body" not in latest["data"] and "body" not in (latest.get("delta") or {})


async def test_one_rule_or_equal_fields_stays_unpaired(calls: Calls, member, svc_app, site):
    """The common case asks nothing per row: one rule, or rules with the same fields (their
    conditions ORed) decide as before."""
    await _docs(calls)
    user, user_id = await member([
        {"collection": "docs", "action": "read", "fields": ["title"], "conditions": DRAFT},
        {"collection": "docs", "action": "read", "fields": ["title"], "conditions": MINE},
    ])
    snapshot = await svc_app.kernel.access.snapshot(_principal(user_id), site)
    decision = snapshot.decide("docs", "read")
    assert not decision.paired and decision.row_filter == {"_or": [DRAFT, MINE]}
    assert [i["id"] for i in (await user.list("docs", sort="title", filter='{"title":{"_nnull":true}}'))["data"]] \
        == ["d", "b", "m"]


def _principal(user_id: str) -> Any:
    from kernel.auth.principal import Principal

    return Principal(kind="user", user_id=user_id)

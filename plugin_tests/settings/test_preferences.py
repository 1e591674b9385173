"""``GET, PATCH /me/preferences``: a shallow-merged blob per user, the same in every site, whose
unset ``saveAction`` stays null in ``data`` and falls back to the site's ``defaultSaveAction`` in
``meta.saveAction``."""

from __future__ import annotations

from kernel.testing import shared as testing_shared

# Every test writes and reads in a site of its own: they share the module's app (conftest.py's
# ``shared_site``, with the settings tests' settings), each in a new site of it
# (kernel/testing/shared.py).
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site, site_b = testing_shared.site, testing_shared.site_b


async def test_merge_fallback_and_identity_global(calls, calls_b, site, site_b, make_member, svc_app):
    member = await make_member([site, site_b], "subscriber")
    me = {"headers": member.headers}
    body = await calls.ok("get", "/me/preferences", full=True, **me)
    assert body == {"data": {"saveAction": None}, "meta": {"saveAction": "stay", "saveActionSource": "site"}}
    data = await calls.ok("patch", "/me/preferences", json={"language": "de", "keybindings": {"save": "ctrl+s"}}, **me)
    assert data == {"language": "de", "keybindings": {"save": "ctrl+s"}, "saveAction": None}
    # Shallow: a top-level key is replaced whole; null removes one.
    data = await calls.ok("patch", "/me/preferences", json={"keybindings": {"open": "o"}, "language": None,
                                                            "saveAction": "return"}, **me)
    assert data == {"keybindings": {"open": "o"}, "saveAction": "return"}
    # The same blob in site B (another login there), with B's default when saveAction is unset.
    token_b = await svc_app.login(member.email, member.password, site=site_b)
    in_b = {"headers": {"Authorization": f"Bearer {token_b}", "X-Svc-Site": site_b}}
    assert await calls.ok("get", "/me/preferences", **in_b) == data
    await calls.ok("patch", "/me/preferences", json={"saveAction": None}, **me)
    await calls.ok("patch", "/site", json={"defaultSaveAction": "create_new"})
    await calls_b.ok("patch", "/site", json={"defaultSaveAction": "return"})
    body = await calls.ok("get", "/me/preferences", full=True, **me)
    assert body == {"data": {"keybindings": {"open": "o"}, "saveAction": None},
                    "meta": {"saveAction": "create_new", "saveActionSource": "site"}}
    in_b_body = await calls.ok("get", "/me/preferences", full=True, **in_b)
    assert in_b_body["data"]["saveAction"] is None and in_b_body["meta"]["saveAction"] == "return"
    # Another user's blob is its own.
    other = await make_member(site, "subscriber")
    assert await calls.ok("get", "/me/preferences", full=True, headers=other.headers) == {
        "data": {"saveAction": None}, "meta": {"saveAction": "create_new", "saveActionSource": "site"}}


async def test_reading_and_writing_back_does_not_pin_the_site_default(calls, site, make_member):
    member = await make_member(site, "subscriber")
    me = {"headers": member.headers}
    await calls.ok("patch", "/site", json={"defaultSaveAction": "return"})
    await calls.ok("patch", "/me/preferences", json={"language": "de"}, **me)
    read = await calls.ok("get", "/me/preferences", full=True, **me)
    assert read == {"data": {"language": "de", "saveAction": None},
                    "meta": {"saveAction": "return", "saveActionSource": "site"}}
    # A client writes back what it read (a language change on top): the default is not pinned...
    await calls.ok("patch", "/me/preferences", json={**read["data"], "language": "fr"}, **me)
    # ...so a later change of the site default still reaches the user.
    await calls.ok("patch", "/site", json={"defaultSaveAction": "create_new"})
    again = await calls.ok("get", "/me/preferences", full=True, **me)
    assert again == {"data": {"language": "fr", "saveAction": None},
                     "meta": {"saveAction": "create_new", "saveActionSource": "site"}}
    # The user's own choice is theirs, in data and in meta.
    mine = await calls.ok("patch", "/me/preferences", full=True, json={"saveAction": "stay"}, **me)
    assert mine == {"data": {"language": "fr", "saveAction": "stay"},
                    "meta": {"saveAction": "stay", "saveActionSource": "user"}}


async def test_bad_input(calls, site, make_member):
    member = await make_member(site, "subscriber")
    me = {"headers": member.headers}
    for action in ("close", 1, True, ""):
        await calls.err("patch", "/me/preferences", 400, "VALIDATION_FAILED", path_is=["saveAction"],
                        json={"saveAction": action, "language": "fr"}, **me)
    await calls.err("patch", "/me/preferences", 400, "VALIDATION_FAILED", json=[1], **me)
    await calls.err("patch", "/me/preferences", 400, "VALIDATION_FAILED", json={"": 1}, **me)
    await calls.err("patch", "/me/preferences", 400, "VALIDATION_FAILED", path_is=["body"],
                    json={"blob": "x" * 40_000}, **me)
    assert await calls.ok("get", "/me/preferences", **me) == {"saveAction": None}  # nothing written
    await calls.err("get", "/me/preferences", 401, "UNAUTHENTICATED", headers={"Authorization": ""})
    # An API key is no user: it has no preferences.
    key = (await calls.ok("post", "/api-keys", status=201, json={"name": "k"}))["key"]
    await calls.err("get", "/me/preferences", 403, "PERMISSION_DENIED", headers={"Authorization": f"Bearer {key}"})
    await calls.err("patch", "/me/preferences", 403, "PERMISSION_DENIED", json={"language": "de"},
                    headers={"Authorization": f"Bearer {key}"})

"""Layouts, templates, previews and suppressions on one shared app (no SMTP: degraded), a site
per test that writes: each validation branch of docs/email.md not shown elsewhere, PATCH rules,
the 500-per-site cap, paging and search bounds, the audit trail, and another site's rows."""

from __future__ import annotations

import pytest

from kernel.base.ids import uuid7
from kernel.db.meta import now_utc
from kernel.testing import Calls, new_member
from plugins.email.tables import layouts

SLOT = "<div>{{content}}</div>"
TEXT = {"key": "k", "name": "n", "subject": "s", "text": "t"}


async def _template(calls, **body):
    return await calls.ok("post", "/email/templates", 201, json={**TEXT, **body})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("name", "n" * 201),
        ("name", "  "),
        ("subject", "s" * 999),
        ("subject", 5),
        ("html", ""),
        ("text", ["t"]),
    ],
)
async def test_a_template_field_out_of_bounds_is_refused(shared_site, field, value):
    await shared_site.calls.err(
        "post", "/email/templates", 400, "VALIDATION_FAILED", path_is=[field], json={**TEXT, field: value}
    )


async def test_a_layout_name_over_200_characters_is_refused(shared_site):
    await shared_site.calls.err(
        "post",
        "/email/layouts",
        400,
        "VALIDATION_FAILED",
        path_is=["name"],
        json={"name": "n" * 201, "html": SLOT},
    )


async def test_a_layout_patch_keeps_what_it_does_not_name_and_keeps_the_slot(shared_site):
    calls = await shared_site.new_site("em")
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "Brand", "html": SLOT})
    renamed = await calls.ok("patch", f"/email/layouts/{layout['id']}", json={"name": "Brand 2"})
    assert (renamed["name"], renamed["html"]) == ("Brand 2", SLOT)
    await calls.err(
        "patch",
        f"/email/layouts/{layout['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["html"],
        json={"html": "<div>no slot</div>"},
    )
    await calls.err(
        "patch",
        f"/email/layouts/{layout['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["kind"],
        json={"kind": "x"},
    )
    assert await calls.ok("patch", f"/email/layouts/{layout['id']}", json={}) == renamed


async def test_a_template_detached_from_its_layout_frees_it(shared_site):
    calls = await shared_site.new_site("em")
    layout = await calls.ok("post", "/email/layouts", 201, json={"name": "Brand", "html": SLOT})
    template = await _template(calls, layoutId=layout["id"])
    await calls.err("delete", f"/email/layouts/{layout['id']}", 409, "CONFLICT")
    detached = await calls.ok("patch", f"/email/templates/{template['id']}", json={"layoutId": None})
    assert detached["layoutId"] is None
    await calls.ok("delete", f"/email/layouts/{layout['id']}", 204)
    assert await calls.ok("get", "/email/layouts", full=True) == {"data": [], "meta": {"total": 0}}


async def test_a_template_renamed_onto_another_key_is_409(shared_site):
    calls = await shared_site.new_site("em")
    await _template(calls, key="one")
    two = await _template(calls, key="two")
    await calls.err("patch", f"/email/templates/{two['id']}", 409, "CONFLICT", json={"key": "one"})
    same = await calls.ok("patch", f"/email/templates/{two['id']}", json={"key": "two", "name": "Two"})
    assert (same["key"], same["name"]) == ("two", "Two")
    moved = await calls.ok("patch", f"/email/templates/{two['id']}", json={"key": "three"})
    await calls.ok("post", "/email/templates/three/preview", json={})
    await calls.err("post", "/email/templates/two/preview", 404, "NOT_FOUND", json={})
    assert moved["id"] == two["id"]


async def test_a_template_keeps_one_part_at_least(shared_site):
    calls = await shared_site.new_site("em")
    both = await _template(calls, html="<p>h</p>")
    only_html = await calls.ok("patch", f"/email/templates/{both['id']}", json={"text": None})
    assert (only_html["html"], only_html["text"]) == ("<p>h</p>", None)
    await calls.err(
        "patch",
        f"/email/templates/{both['id']}",
        400,
        "VALIDATION_FAILED",
        path_is=["html"],
        json={"html": None},
    )


async def test_a_preview_derives_text_and_wraps_the_layout(shared_site):
    calls = await shared_site.new_site("em")
    layout = await calls.ok(
        "post",
        "/email/layouts",
        201,
        json={"name": "B", "html": '<div class="shell">{{content}}<p>Footer</p></div>'},
    )
    await calls.ok(
        "post",
        "/email/templates",
        201,
        json={
            "key": "ship",
            "name": "n",
            "subject": "Order {{ order.id }}",
            "layoutId": layout["id"],
            "html": '<p>Order <b>{{ order.id }}</b>. <a href="https://acme.example/o/{{ order.id }}">Track</a></p>',
        },
    )
    preview = await calls.ok(
        "post", "/email/templates/ship/preview", json={"variables": {"order": {"id": 42}}}
    )
    assert preview["subject"] == "Order 42"
    assert preview["html"].startswith('<div class="shell"><p>Order <b>42</b>') and "Footer" in preview["html"]
    assert "Order 42. Track (https://acme.example/o/42)" in preview["text"], preview["text"]


@pytest.mark.parametrize("key", ["UPPER", "a b", "k" * 101, "-lead"])
async def test_a_preview_of_a_key_no_template_can_have_is_404(shared_site, key):
    await shared_site.calls.err("post", f"/email/templates/{key}/preview", 404, "NOT_FOUND", json={})


async def test_a_preview_without_a_body_renders_without_variables(shared_site):
    calls = await shared_site.new_site("em")
    await _template(calls, key="plain", subject="Hello", text="Plain text")
    preview = await calls.ok("post", "/email/templates/plain/preview")
    assert (preview["subject"], preview["text"].strip(), preview["html"]) == ("Hello", "Plain text", None)


@pytest.mark.parametrize("path", ["/email/templates/" + "x" * 37, "/email/layouts/" + "x" * 37])
async def test_an_id_longer_than_any_id_is_404(shared_site, path):
    await shared_site.calls.err("patch", path, 404, "NOT_FOUND", json={"name": "n"})
    await shared_site.calls.err("delete", path, 404, "NOT_FOUND")


async def test_a_site_holds_at_most_500_layouts(shared_site):
    calls = await shared_site.new_site("em")
    site = calls.headers["X-Svc-Site"]
    async with shared_site.app.kernel.unit_of_work(site) as uow:
        now = now_utc()
        for i in range(500):
            await uow.db.insert(
                layouts, {"id": uuid7(), "name": f"l{i}", "html": SLOT, "created_at": now, "updated_at": now}
            )
    error = await calls.err(
        "post", "/email/layouts", 400, "VALIDATION_FAILED", json={"name": "one more", "html": SLOT}
    )
    assert "500" in error["message"]
    other = await shared_site.new_site("eo")
    await other.ok("post", "/email/layouts", 201, json={"name": "mine", "html": SLOT})


async def test_suppressions_page_with_a_total(shared_site):
    calls = await shared_site.new_site("em")
    for name in ("c", "a", "b"):
        await calls.ok(
            "post", "/email/suppressions", 201, json={"email": f"{name}@example.com", "reason": "asked"}
        )
    page = await calls.ok("get", "/email/suppressions", full=True, params={"limit": 2, "offset": 1})
    assert [s["email"] for s in page["data"]] == ["b@example.com", "c@example.com"]
    assert page["meta"]["total"] == 3
    assert page["data"][0] | {"createdAt": None} == {
        "email": "b@example.com",
        "reason": "asked",
        "source": "admin",
        "createdAt": None,
    }


async def test_a_suppression_search_is_literal_and_bounded(shared_site):
    calls = await shared_site.new_site("em")
    for email in ("a_b@example.com", "axb@example.com"):
        await calls.ok("post", "/email/suppressions", 201, json={"email": email})
    assert [s["email"] for s in await calls.ok("get", "/email/suppressions", params={"search": "a_b"})] == [
        "a_b@example.com"
    ]
    assert await calls.ok("get", "/email/suppressions", params={"search": "%"}) == []
    await calls.err(
        "get",
        "/email/suppressions",
        400,
        "VALIDATION_FAILED",
        path_is=["search"],
        params={"search": "s" * 321},
    )


async def test_a_suppression_is_lifted_whatever_the_case_of_the_path(shared_site):
    calls = await shared_site.new_site("em")
    await calls.ok("post", "/email/suppressions", 201, json={"email": "Ann <ann@example.com>"})
    await calls.ok("delete", "/email/suppressions/ANN@Example.COM", 204)
    await calls.err("delete", "/email/suppressions/ann@example.com", 404, "RECORD_NOT_FOUND")
    await calls.err("delete", "/email/suppressions/" + "a" * 321, 404, "RECORD_NOT_FOUND")


async def test_suppressing_is_audited_under_a_hash_not_the_address(shared_site):
    calls = await shared_site.new_site("em")
    await calls.ok("post", "/email/suppressions", 201, json={"email": "ann@example.com"})
    await calls.ok("delete", "/email/suppressions/ann@example.com", 204)
    audit = [
        a for a in await calls.ok("get", "/audit", params={"limit": 50}) if a["action"].startswith("email_")
    ]
    assert sorted(a["action"] for a in audit) == ["email_suppressed", "email_unsuppressed"]
    assert len({a["target"]["id"] for a in audit}) == 1 and all(
        a["target"]["type"] == "email_address" for a in audit
    )
    assert "ann@example.com" not in str(audit)


async def test_another_site_cannot_lift_or_see_a_suppression(shared_site):
    a, b = await shared_site.new_site("ea"), await shared_site.new_site("eb")
    await a.ok("post", "/email/suppressions", 201, json={"email": "ann@example.com"})
    await b.err("delete", "/email/suppressions/ann@example.com", 404, "RECORD_NOT_FOUND")
    assert await b.ok("get", "/email/suppressions", params={"search": "ann"}) == []
    # B may suppress the same address for itself.
    await b.ok("post", "/email/suppressions", 201, json={"email": "ann@example.com"})
    assert [s["email"] for s in await a.ok("get", "/email/suppressions")] == ["ann@example.com"]


async def test_another_site_cannot_preview_or_change_a_template(shared_site):
    a, b = await shared_site.new_site("ea"), await shared_site.new_site("eb")
    template = await _template(a, key="mine")
    await b.err("post", "/email/templates/mine/preview", 404, "NOT_FOUND", json={})
    await b.err("patch", f"/email/templates/{template['id']}", 404, "NOT_FOUND", json={"name": "theirs"})
    await b.err("delete", f"/email/templates/{template['id']}", 404, "NOT_FOUND")
    # The key is per site: B may use it too.
    await _template(b, key="mine")
    assert [t["name"] for t in await a.ok("get", "/email/templates")] == ["n"]


async def test_a_member_without_admin_access_cannot_change_the_catalog(shared_site):
    calls = await shared_site.new_site("em")
    template = await _template(calls)
    made = await new_member(shared_site.app, calls.headers["X-Svc-Site"], "subscriber")
    member = Calls(shared_site.app.client, made.headers)
    for method, path, body in (
        ("patch", f"/email/templates/{template['id']}", {"name": "x"}),
        ("delete", f"/email/templates/{template['id']}", None),
        ("post", "/email/templates/k/preview", {}),
        ("post", "/email/test", {"to": "a@example.com"}),
        ("delete", "/email/suppressions/a@example.com", None),
    ):
        await member.err(
            method, path, 403, "PERMISSION_DENIED", **({"json": body} if body is not None else {})
        )

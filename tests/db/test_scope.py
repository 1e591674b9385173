"""The site-scoped query helper refuses what it did not scope, and never crosses sites."""

from __future__ import annotations

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, bindparam, select

from kernel.tenancy.scope import SITE_PARAM, SiteDB, TenancyError

meta = MetaData()
notes = Table("test_notes", meta, Column("id", Integer, primary_key=True), Column("site_id", String),
              Column("body", String))
globals_ = Table("test_globals", meta, Column("id", Integer, primary_key=True))


@pytest.fixture
async def conn(svc_app):
    async with svc_app.kernel.db.begin() as conn:
        await conn.run_sync(meta.create_all)
        yield conn
        await conn.run_sync(meta.drop_all)


async def test_rows_are_stamped_and_reads_scoped(conn):
    a, b = SiteDB("a", conn), SiteDB("b", conn)
    await a.insert(notes, [{"body": "a1"}, {"body": "a2"}])
    await b.insert(notes, {"body": "b1"})
    assert [r["body"] for r in await a.all(a.select(notes).order_by(notes.c.body))] == ["a1", "a2"]
    assert [r["body"] for r in await b.all(b.select(notes))] == ["b1"]
    assert await b.execute(b.delete(notes).where(notes.c.body == "a1")) is not None
    assert len(await a.all(a.select(notes))) == 2


async def test_unscoped_statements_are_refused(conn):
    a = SiteDB("a", conn)
    with pytest.raises(TenancyError):
        await a.all(select(notes))
    with pytest.raises(TenancyError):
        await a.all(SiteDB("b", conn).select(notes))
    with pytest.raises(TenancyError):
        a.select(globals_)
    with pytest.raises(TenancyError):
        await a.insert(notes, {"body": "x", "site_id": "b"})


async def test_a_template_runs_for_the_site_that_runs_it_and_nowhere_else(conn):
    a, b = SiteDB("a", conn), SiteDB("b", conn)
    await a.insert(notes, [{"body": "same"}, {"body": "a2"}])
    await b.insert(notes, {"body": "same"})
    by_body = SiteDB.template(select(notes.c.site_id, notes.c.body).where(notes.c.body == bindparam("body")), notes)
    assert [tuple(r) for r in await a.run(by_body, {"body": "same"})] == [("a", "same")]
    assert [tuple(r) for r in await b.run(by_body, {"body": "same"})] == [("b", "same")]
    # a caller's own svc_site is overridden by the site that runs it
    assert [tuple(r) for r in await b.run(by_body, {"body": "same", SITE_PARAM: "a"})] == [("b", "same")]
    assert [tuple(r) for r in await b.run(by_body, {"body": "a2"})] == []
    with pytest.raises(TenancyError):  # a template is not a site's statement, nor the reverse
        await a.all(by_body)
    with pytest.raises(TenancyError):
        await a.run(a.select(notes))
    with pytest.raises(TenancyError):
        await a.run(select(notes))


async def test_arguments_bind_the_statement_never_its_site(conn):
    a, b = SiteDB("a", conn), SiteDB("b", conn)
    await a.insert(notes, [{"body": "same"}, {"body": "a2"}])
    await b.insert(notes, {"body": "same"})
    by_body = a.select(notes, notes.c.site_id, notes.c.body).where(notes.c.body == bindparam("arg_body"))
    assert [(r["site_id"], r["body"]) for r in await a.all(by_body, {"arg_body": "same"})] == [("a", "same")]
    assert [(r["site_id"], r["body"]) for r in await a.all(by_body, {"arg_body": "a2"})] == [("a", "a2")]
    compiled = by_body.compile()
    site_binds = [name for name in compiled.params if not name.startswith("arg_")]
    assert site_binds  # the site filter is a bound parameter too: an argument may not name it
    for name in site_binds:
        with pytest.raises(TenancyError):
            await a.all(by_body, {"arg_body": "same", name: "b"})
    with pytest.raises(TenancyError):  # arguments do not make another site's statement runnable
        await b.all(by_body, {"arg_body": "same"})

"""Each test's first app starts from the first start's rows, on either backend: the SQLite
template's copy, or PostgreSQL's tables emptied and those rows put back (kernel/testing); an app
with plugins or settings of its own runs its own first start on PostgreSQL, as before."""

from __future__ import annotations

import uuid

from sqlalchemy import func, inspect, select, text

from kernel.db import compiled
from kernel.testing import ADMIN_EMAIL, AppFactory, svc_test_database_url

# SQLite's full-text search keeps its own rows in its shadow tables from the migration on.
_SHADOW = ("svc_search_fts_",)


async def _rows(app) -> dict[str, int]:
    """Every table holding rows (but Alembic's and SQLite's FTS shadow tables): its row count."""
    async with app.kernel.db.connect() as conn:
        names = await conn.run_sync(lambda sync: inspect(sync).get_table_names())
        counts = {}
        for name in names:
            if name == "alembic_version" or name.startswith(_SHADOW):
                continue
            n = (await conn.execute(text(f'SELECT count(*) FROM "{name}"'))).scalar_one()
            if n:
                counts[name] = n
        await conn.rollback()
    return counts


async def _admins(app) -> list[str]:
    from plugins.accounts.tables import users

    async with app.kernel.db.connect() as conn:
        found = list((await conn.execute(select(users.c.email).where(users.c.is_instance_admin))).scalars())
        await conn.rollback()
    return found


FIRST_START = {"svc_sites": 1, "svc_users": 1, "svc_roles": 3}


async def test_a_default_app_starts_from_the_first_starts_rows_and_the_next_test_too(
    make_app, svc_template_db, tmp_path
):
    app = await make_app()
    assert await _rows(app) == FIRST_START
    assert await _admins(app) == [ADMIN_EMAIL]
    token = await app.login()
    await app.create_site({"Authorization": f"Bearer {token}"})
    assert (await _rows(app))["svc_sites"] == 2
    # The next test's factory, while this app still runs (its writes committed): the same rows
    # as the first start left them, none of this test's.
    nxt = AppFactory(svc_template_db, tmp_path / "next", f"svctest:{uuid.uuid4().hex[:12]}")
    try:
        again = await nxt()
        assert await _rows(again) == FIRST_START
        assert await _admins(again) == [ADMIN_EMAIL]
        await again.login()  # the admin's password is the harness's
    finally:
        await nxt.close()


async def test_an_app_with_settings_of_its_own_makes_its_own_first_start_on_postgresql(make_app):
    app = await make_app(env={"SVC_ADMIN_EMAIL": "boss@example.com"})
    assert set(await _rows(app)) == set(FIRST_START)
    # SQLite copies the template whatever the settings; PostgreSQL's first start uses the app's.
    assert await _admins(app) == (["boss@example.com"] if svc_test_database_url() else [ADMIN_EMAIL])


async def test_the_harness_engines_share_their_compiled_statements(make_app):
    shared = compiled.shared_cache()
    assert shared is not None
    first = await make_app()
    from plugins.accounts.tables import users

    stmt = select(func.count()).select_from(users).where(users.c.email == "nobody@example.com")
    async with first.kernel.db.connect() as conn:
        assert (await conn.execute(stmt)).scalar_one() == 0
    held = len(shared)
    second = await make_app()
    async with second.kernel.db.connect() as conn:
        assert (await conn.execute(stmt)).scalar_one() == 0
    assert len(shared) == held  # found, not compiled again
    assert (
        first.kernel.db.engine.sync_engine._compiled_cache
        is second.kernel.db.engine.sync_engine._compiled_cache
    )

"""What a config import costs the database: a bounded number of statements for a manifest of 20
fields (docs/performance.md, "Scale: 10,000 sites"), where it used to read the schema again for
every change and every filter of it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import event

from plugins.schema import api

COLLECTIONS = ["articles", "pages", "products", "events", "authors"]
FIELDS = [("title", "string"), ("body", "text"), ("views", "integer"), ("published", "boolean")]
MANIFEST = {"version": "svc.config@v1", "collections": [{"name": c} for c in COLLECTIONS],
            "fields": [{"collection": c, "field": f, "type": t} for c in COLLECTIONS for f, t in FIELDS]}
# The site's statements: 423 before November 2026 (the schema read again by every change and by
# the items and search filters of every field, the version bumped per change), 127 after, on
# SQLite and PostgreSQL (per change its row and audit record, the items plugin's look at the
# collection's items; per indexed field a count after commit). 254 (twice) fails.
MOST_STATEMENTS = 190


async def test_a_20_field_import_runs_a_bounded_number_of_statements(calls, svc_app, site):
    statements: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        # This site's statements only: the app's background work at startup reads other rows.
        if site in repr(parameters) or site in statement:
            statements.append(statement)

    engine = svc_app.kernel.db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    try:
        answer = await calls.ok("post", "/config/import", json=MANIFEST)
    finally:
        event.remove(engine, "before_cursor_execute", record)
    assert answer["valid"] is True and answer["applied"] == {"created": 25, "updated": 0, "deleted": 0}
    assert 25 <= len(statements) <= MOST_STATEMENTS, len(statements)  # at least one insert per change
    # One version bump for the whole import, and the schema it made is the manifest's.
    async with svc_app.kernel.db.connect() as conn:
        snap = await api.load_schema(conn, site)
    assert snap.version == 1
    assert {(c, f): fd.type for c in COLLECTIONS for f, fd in snap.collection(c).fields.items()} == {
        (c, f): t for c in COLLECTIONS for f, t in FIELDS}
    assert list(snap.collection("articles").fields) == [f for f, _ in FIELDS]

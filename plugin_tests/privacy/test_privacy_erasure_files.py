"""Issue 35, item 9: after an erasure the data dir holds the subject nowhere, read as raw bytes:
not in the database file, not as old page images in SQLite's write-ahead log, not in free pages
(``secure_delete``), not in the full-text index's segments, not in queued jobs or stored files.
A checkpoint a reader holds up is audited and retried by a job."""

from __future__ import annotations

import datetime as dt
import io
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from kernel.db import engine as db_engine
from kernel.testing import Calls

MARK = "Vexquorin Jaltrabe 5820"
ADDRESS = "vexquorin.jaltrabe@example.org"
WORDS = ("vexquorin", "jaltrabe")


def needles() -> list[bytes]:
    """The marker and its words (FTS5 stores words alone, lower-cased), the words' tails (FTS5
    writes a word after the first of a page as a suffix of the word before it), in UTF-8 and
    UTF-16 (both byte orders), lower-cased: they are matched against lower-cased bytes."""
    texts = [MARK.lower(), ADDRESS, *WORDS, *(w[-6:] for w in WORDS)]
    return sorted({t.encode(enc) for t in texts for enc in ("utf-8", "utf-16-le", "utf-16-be")})


def files_holding(data_dir: Path, wanted: list[bytes] | None = None) -> dict[str, list[bytes]]:
    """Every file under the data dir whose raw bytes hold one of the needles (``wanted``, else
    this module's; ignoring ASCII case)."""
    found = {}
    for path in sorted(data_dir.rglob("*")):
        if path.is_file():
            data = path.read_bytes().lower()
            hits = [n for n in (wanted or needles()) if n in data]
            if hits:
                found[str(path.relative_to(data_dir))] = hits
    return found


def _jpeg() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (32, 24), (20, 120, 30)).save(out, "JPEG")
    return out.getvalue()


async def _subject_everywhere(app) -> tuple[Calls, str]:
    """A site whose patient record holds the marker in an item, its revisions, a named version,
    a soft-deleted copy, the search index, a file's name and a queued mail; half of it folded
    into the database file, the rest still in the write-ahead log."""
    admin = {"Authorization": f"Bearer {await app.login()}"}
    calls = Calls(app.client, {**admin, "X-Svc-Site": await app.create_site(admin)})
    await calls.collection("patients", {"name": "string", "note": "text", "email": "string", "photos": "files"},
                           versioning=True, meta={"personalData": True})
    photo = await calls.ok("put", f"/files/upload/{WORDS[0]}-{WORDS[1]}.jpg", 201, content=_jpeg(),
                           headers={"Content-Type": "image/jpeg"})
    subject = await calls.create("patients", {"name": MARK, "note": f"about {MARK}", "email": ADDRESS,
                                              "photos": [photo["id"]]})
    gone = await calls.create("patients", {"name": MARK, "note": "soft-deleted copy", "email": ADDRESS})
    await calls.ok("delete", f"/items/patients/{gone['id']}", 204)
    await calls.create("patients", {"name": "Somebody Else", "note": "kept", "email": "else@example.org"})
    assert await app.kernel.db.checkpoint() is True  # the first half is in the database file now
    await calls.ok("patch", f"/items/patients/{subject['id']}", json={"note": f"seen {MARK} again"})
    await calls.ok("post", f"/items/patients/{subject['id']}/versions", 201, json={"key": "draft", "name": "Draft"})
    await calls.ok("patch", f"/items/patients/{subject['id']}/versions/draft", json={"data": {"note": f"{MARK} v2"}})
    await calls.ok("post", "/email/send", 202, json={"to": [ADDRESS, "keep@example.org"], "category": "marketing",
                                                      "inline": {"subject": "Hello", "text": "Hi"}})
    found = await calls.ok("get", "/search", full=True, params={"q": WORDS[1]})
    assert [r["id"] for r in found["data"]] == [subject["id"]]
    return calls, subject["id"]


async def _erase(calls: Calls) -> dict:
    req = await calls.ok("post", "/admin/erasure", 201,
                         json={"collection": "patients", "filter": {"email": {"_eq": ADDRESS}}, "reason": "Art. 17"})
    assert req["matched"] == 2
    return await calls.ok("post", f"/admin/erasure/{req['id']}/execute")


def _wal(app) -> Path:
    return db_engine.default_sqlite_path(app.kernel.settings.data_path).with_name("svc.sqlite3-wal")


@pytest.fixture
def mail_env(mailbox):
    return {"smtp_host": "127.0.0.1", "smtp_port": mailbox.port,
            "env": {"SVC_EMAIL_FROM": "News <news@example.com>", "SVC_EMAIL_QUEUE_THRESHOLD": "0"}}


async def test_after_an_erasure_no_file_of_the_data_dir_holds_the_subject(make_app, mail_env):
    app = await make_app(**mail_env)
    data_dir = app.kernel.settings.data_path
    calls, _ = await _subject_everywhere(app)
    before = files_holding(data_dir)
    if app.kernel.db.is_sqlite:  # the scan sees it, in the file and in the log
        assert {"svc.sqlite3", "svc.sqlite3-wal"} <= set(before), before
    done = await _erase(calls)
    assert done["status"] == "executed" and done["recordCount"] == 2
    assert files_holding(data_dir) == {}
    if app.kernel.db.is_sqlite:
        assert _wal(app).stat().st_size == 0  # truncated, not only copied back
        async with app.kernel.db.connect() as conn:  # what the pooled connections were told
            assert (await conn.execute(text("PRAGMA secure_delete"))).scalar() == 1
    assert await calls.ok("get", "/audit", params={"action": "erasure_checkpoint_deferred"}) == []
    # The site goes on working on the same file.
    kept = await calls.ok("get", "/items/patients", full=True)
    assert [i["name"] for i in kept["data"]] == ["Somebody Else"]


async def test_a_checkpoint_a_reader_holds_up_is_audited_and_retried(make_app, mail_env, run_due_jobs, monkeypatch):
    app = await make_app(**mail_env)
    if not app.kernel.db.is_sqlite:
        assert await app.kernel.db.checkpoint() is True  # PostgreSQL: nothing to fold (docs/privacy.md)
        return
    monkeypatch.setattr(db_engine, "CHECKPOINT_WAIT", 0.05)
    monkeypatch.setattr(db_engine, "CHECKPOINT_PAUSE", 0.01)
    data_dir = app.kernel.settings.data_path
    calls, _ = await _subject_everywhere(app)
    # A hot backup's reader (another process) on the snapshot before the erasure.
    reader = sqlite3.connect(db_engine.default_sqlite_path(data_dir), isolation_level=None)
    try:
        reader.execute("BEGIN")
        assert reader.execute("SELECT count(*) FROM svc_items").fetchone()[0] >= 3
        done = await _erase(calls)
        assert done["status"] == "executed"
        [entry] = await calls.ok("get", "/audit", params={"action": "erasure_checkpoint_deferred"})
        assert entry["target"] == {"type": "erasure", "id": done["id"]}
        assert "svc.sqlite3-wal" in files_holding(data_dir)  # what the retry is for
        # While the reader holds its snapshot the job fails, and is retried later.
        runs = [r for r in await run_due_jobs(app.kernel, _later(10), periodic=False) if r.name == "privacy.checkpoint"]
        assert [r.ok for r in runs] == [False]
    finally:
        reader.close()
    runs = [r for r in await run_due_jobs(app.kernel, _later(3600), periodic=False) if r.name == "privacy.checkpoint"]
    assert [r.ok for r in runs] == [True]
    assert files_holding(data_dir) == {}  # (the log holds the job's own finish since)


def _later(seconds: float) -> dt.datetime:
    return dt.datetime.now(dt.UTC) + dt.timedelta(seconds=seconds)


def test_every_sqlite_connection_sets_secure_delete(tmp_path):
    """Explicitly, whatever the build's default: a connection that starts with it off has it on."""
    conn = sqlite3.connect(tmp_path / "db.sqlite3")
    try:
        conn.execute("PRAGMA secure_delete=OFF")
        db_engine._sqlite_pragmas(conn, None)
        assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
        conn.execute("PRAGMA secure_delete=OFF")
        db_engine._sqlite_secure_delete(conn, None)  # the migrations' engine
        assert conn.execute("PRAGMA secure_delete").fetchone() == (1,)
    finally:
        conn.close()


"""The svc command, run as a user would: migrate, sites, plugins, serve.

Each command runs in a process of its own: forked from one process that has imported svc and its
plugins once (``kernel.testing.commands.SvcCommands``, ~0.2 s of CPU a command instead of ~1.4 s),
except where the cold start is what is checked (which modules a command imports) and ``svc serve``
with its signals, which run as plain subprocesses."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest

from kernel.db.engine import default_sqlite_path
from kernel.db.migrate import migration_paths, upgrade
from kernel.hooks.plugins import make_plugin_manager
from kernel.testing import disabled_with_dependents, free_port, svc_test_database_url, wait_until_answering
from kernel.testing.commands import SvcCommands


@pytest.fixture(scope="module")
def svc_commands():
    with SvcCommands() as commands:
        yield commands


@pytest.fixture
def run_svc(svc_commands):
    """``run_svc(*args, env=..., input=...)``: ``svc ARGS`` run to its exit, a ``CompletedProcess``."""
    return svc_commands.run


@pytest.fixture
def fresh_env(tmp_path):
    base = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    base.update(SVC_DATA_DIR=str(tmp_path / "data"), SVC_ADMIN_PASSWORD="cli-admin-pass", JWT_SECRET="x" * 40)
    # The CLI tests use their own SQLite file even in the PostgreSQL run: they create and list
    # sites, which must not leak into the shared test database of other tests.
    return base


@pytest.fixture(scope="module")
def migrated(tmp_path_factory) -> Path:
    """One SQLite database migrated in this process, copied into each test's data dir, so that a
    command does not spend its time running every plugin's migrations again."""
    path = tmp_path_factory.mktemp("cli-migrated") / "svc.sqlite3"
    upgrade(f"sqlite:///{path}", migration_paths(make_plugin_manager()[0]))
    return path


@pytest.fixture
def env(fresh_env, migrated):
    target = default_sqlite_path(Path(fresh_env["SVC_DATA_DIR"]))
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(migrated, target)
    return fresh_env


def test_migrate_is_idempotent_names_its_data_dir_and_alembic_stays_quiet(fresh_env, run_svc):
    """`svc migrate` on a new data dir migrates every branch and says so once; again, it finds
    nothing to do; `sites list` after it names the existing data dir and imports none of what it
    does not use (each import is paid by every `svc` process): not Alembic (nor Mako, Pygments),
    the database being at every head; not redis-py, no Redis being set; not httpx, graphql-core
    or jsonschema, nothing being sent, queried or checked. One migration from scratch for all of
    it (each costs seconds of CPU)."""
    env = fresh_env
    data = Path(env["SVC_DATA_DIR"]).resolve()
    first = run_svc("migrate", env=env)
    assert first.returncode == 0, first.stderr
    lines = first.stderr.splitlines()
    assert lines[0] == f"svc: data dir {data} (new)"
    assert [line for line in lines if "svc.migrate: migrated the database to" in line], first.stderr
    assert "alembic" not in first.stderr
    # Every branch's head, whatever the newest kernel revision is.
    from alembic.script import ScriptDirectory

    from kernel.db.migrate import alembic_config

    heads = ScriptDirectory.from_config(alembic_config(migration_paths(make_plugin_manager()[0]))).get_heads()
    assert first.stdout.startswith("database at ")
    applied = first.stdout.strip().removeprefix("database at ").split(", ")
    assert set(applied) <= set(heads) and any(h.startswith("kernel_") for h in applied)
    second = run_svc("migrate", env=env)
    assert second.returncode == 0 and second.stdout == first.stdout
    assert second.stderr.splitlines()[0] == f"svc: data dir {data} (existing)"
    assert "migrated the database" not in second.stderr
    probe = ("import sys\nfrom kernel.cli import main\nstatus = main(['sites', 'list'])\n"
             "lazy = {'alembic', 'mako', 'pygments', 'redis', 'httpx', 'graphql', 'jsonschema'}\n"
             "print('LOADED', sorted({m.split('.')[0] for m in sys.modules} & lazy))\nsys.exit(status)\n")
    listed = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60,
                            cwd=Path(__file__).resolve().parents[1])
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.splitlines()[0] == f"svc: data dir {data} (existing)"
    assert "alembic" not in listed.stderr and "migrated the database" not in listed.stderr
    assert [line.split("\t")[0] for line in listed.stdout.splitlines() if "\t" in line] == ["default"]
    assert listed.stdout.splitlines()[-1] == "LOADED []"


def test_sites_create_and_list(env, run_svc):
    created = run_svc("sites", "create", "blog", "--name", "My Blog", env=env)
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout.strip().splitlines()[-1])["id"] == "blog"
    listed = run_svc("sites", "list", env=env)
    ids = [line.split("\t")[0] for line in listed.stdout.splitlines() if "\t" in line]
    assert ids == ["blog", "default"]
    dup = run_svc("sites", "create", "blog", env=env)
    assert dup.returncode == 1 and "already exists" in dup.stderr
    bad = run_svc("sites", "create", "Bad Id", env=env)
    assert bad.returncode == 1


def test_plugins_list_shows_state_and_registrations(env, run_svc):
    out = run_svc("plugins", "list", "--json", env={**env, "SVC_PLUGINS_DISABLED": disabled_with_dependents("utils")})
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["utils"]["enabled"] is False
    assert rows["accounts"]["enabled"] and rows["accounts"]["essential"]
    assert "/api/v1/auth/login" in rows["accounts"]["routes"]
    assert "svc_users" in rows["accounts"]["tables"]
    assert rows["accounts"]["requires"] == ["access"]
    # the requirement graph (issue 38): git and ai require only what they cannot work without
    assert rows["access"]["floor"] == 0 and "accounts" in rows["access"]["requiredBy"] and rows["accounts"]["floor"] == 1
    assert rows["git"]["needs"] == ["access", "items", "schema"]
    assert not {"files", "releases", "agents"} & set(rows["ai"]["needs"])
    text = run_svc("plugins", "list", env=env)
    assert "accounts" in text.stdout and "enabled (essential)" in text.stdout


def test_disabling_an_essential_plugin_stops_the_start(env, run_svc):
    out = run_svc("plugins", "list", env={**env, "SVC_PLUGINS_DISABLED": "accounts"})
    assert out.returncode == 2
    assert "'accounts' is essential" in out.stderr


def test_bad_setting_stops_the_start(env, run_svc):
    out = run_svc("migrate", env={**env, "SVC_PORT": "not-a-port"})
    assert out.returncode == 2 and "SVC_PORT" in out.stderr


def test_plugins_list_graph_puts_each_plugin_above_what_it_requires():
    from kernel.cli import format_requirement_graph, with_requirement_graph

    def row(name, requires=(), enabled=True):
        return {"name": name, "enabled": enabled, "requires": list(requires)}

    rows = with_requirement_graph([row("access"), row("accounts", ["access"]), row("schema"),
                                   row("items", ["schema", "access"]), row("git", ["items"], enabled=False)])
    by = {r["name"]: r for r in rows}
    assert [by[n]["floor"] for n in ("access", "accounts", "schema", "items", "git")] == [0, 1, 0, 1, 2]
    assert by["git"]["needs"] == ["access", "items", "schema"] and by["access"]["requiredBy"] == ["accounts", "items"]
    assert format_requirement_graph(rows, width=60).splitlines() == [
        "Requirement graph: a plugin requires only plugins on lower floors.",
        "floor 0",
        "  access         required by accounts, items",
        "  schema         required by items",
        "floor 1",
        "  accounts       requires access",
        "  items          requires access, schema; required by git",
        "floor 2",
        "  git (disabled) requires items; needs in all access, items,",
        "      schema",
    ]


@pytest.mark.skipif(bool(svc_test_database_url()), reason="serve smoke test runs on the embedded default only")
def test_serve_answers_and_runs_jobs_in_process(env):
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        resp = wait_until_answering(proc, f"http://127.0.0.1:{port}/api/v1/openapi.json", timeout=30)
        assert resp.status_code == 200 and resp.json()["openapi"].startswith("3.1")
        login = httpx.post(f"http://127.0.0.1:{port}/api/v1/auth/login",
                           json={"email": "admin@example.com", "password": "cli-admin-pass"})
        assert login.status_code == 200
        assert (Path(env["SVC_DATA_DIR"]) / "queue.lock").exists()
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    assert proc.returncode == 0, proc.stdout.read() if proc.stdout else ""


def test_jobs_prints_the_queue_status(env, run_svc):
    as_json = run_svc("jobs", "--json", env=env)
    assert as_json.returncode == 0, as_json.stderr
    status = json.loads(as_json.stdout)
    assert status["totals"] == {"pending": 0, "due": 0, "running": 0, "failed": 0}
    assert status["recentFailures"] == [] and isinstance(status["jobs"], list)
    text = run_svc("jobs", env=env)
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0].split() == ["job", "kind", "schedule", "pending", "due", "running", "failed"]
    assert "recent failures: none" in text.stdout


def test_jobs_text_lists_counts_and_the_last_line_of_each_error():
    from kernel.cli import format_job_status

    status = {
        "jobs": [{"name": "notes.purge", "kind": "task", "schedule": None, "pending": 3, "due": 1, "running": 0,
                  "failed": 1},
                 {"name": "gone.job", "kind": None, "pending": 2, "due": 2, "running": 0, "failed": 0}],
        "totals": {"pending": 5, "due": 3, "running": 0, "failed": 1},
        "recentFailures": [{"id": "abc", "name": "notes.purge", "siteId": "s1", "attempts": 4,
                            "error": "Traceback...\nValueError: bad note", "failedAt": "2026-11-26T02:00:00Z"}],
    }
    lines = format_job_status(status).splitlines()
    assert lines[1].split() == ["notes.purge", "task", "-", "3", "1", "0", "1"]
    assert lines[2].split() == ["gone.job", "unknown", "-", "2", "2", "0", "0"]
    assert lines[3].split() == ["total", "5", "3", "0", "1"]
    assert lines[4] == "recent failures:"
    assert lines[5].split() == ["2026-11-26T02:00:00Z", "notes.purge", "site=s1", "attempts=4", "id=abc",
                                "ValueError:", "bad", "note"]


def test_help_and_version_load_neither_plugins_nor_sqlalchemy():
    # What makes `svc --help` answer at once: it imports no plugin, and not SQLAlchemy.
    probe = ("import contextlib, sys\nfrom kernel import cli\n"
             "for argv in (['--help'], ['--version'], ['sites', '--help'], ['serve', '--help']):\n"
             "    with contextlib.suppress(SystemExit):\n        cli.main(argv)\n"
             "print('LOADED', sorted({m.split('.')[0] for m in sys.modules} & {'plugins', 'sqlalchemy', 'falcon'}))\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "LOADED []"
    from kernel import __version__

    assert f"svc {__version__}" in out.stdout and "--workers WORKERS" in out.stdout
    # Every option of every built-in command says what it is for.
    from kernel.cli import build_parser

    parser, sub = build_parser()
    for name, command in sub.choices.items():
        parsers = [command, *(a for act in command._subparsers._group_actions for a in act.choices.values())] \
            if command._subparsers else [command]
        for each in parsers:
            for action in each._actions:
                if isinstance(action, argparse._SubParsersAction):  # its choices carry the help
                    continue
                assert action.help, f"svc {name}: {action.option_strings or action.dest} has no help text"


def test_read_only_commands_create_no_instance(fresh_env, run_svc):
    data = Path(fresh_env["SVC_DATA_DIR"])
    for args in (("sites", "list"), ("jobs",), ("users", "set-password", "admin@example.com")):
        out = run_svc(*args, env=fresh_env)
        assert out.returncode == 1, (args, out.stdout, out.stderr)
        assert f"no svc instance in {data}" in out.stderr, out.stderr
        assert "created instance admin" not in out.stdout + out.stderr
    assert not (data / "svc.sqlite3").exists()


def test_users_create_and_set_password_from_the_shell(env, run_svc):
    import sqlite3

    from argon2 import PasswordHasher

    def stored_hash(email: str) -> str:
        with sqlite3.connect(default_sqlite_path(Path(env["SVC_DATA_DIR"]))) as db:
            return db.execute("SELECT password_hash FROM svc_users WHERE email = ?", (email,)).fetchone()[0]

    made = run_svc("users", "create", "Ed@Example.com", "--site", "default", "--password-stdin",
                   input="first-password\n", env=env)
    assert made.returncode == 0, made.stderr
    assert made.stdout.startswith("created user ed@example.com (") and "password" not in made.stdout
    assert PasswordHasher().verify(stored_hash("ed@example.com"), "first-password")
    again = run_svc("users", "create", "ed@example.com", env=env)
    assert again.returncode == 1 and "already uses ed@example.com" in again.stderr

    reset = run_svc("users", "set-password", "ED@example.com", env=env)
    assert reset.returncode == 0, reset.stderr
    generated = reset.stdout.strip().rsplit("new password ", 1)[1]
    assert PasswordHasher().verify(stored_hash("ed@example.com"), generated)
    assert run_svc("users", "set-password", "nobody@example.com", env=env).returncode == 1
    unknown = run_svc("users", "create", "x@example.com", "--site", "nope", env=env)
    assert unknown.returncode == 1 and "Unknown site 'nope'" in unknown.stderr


def test_plugins_list_fits_a_terminal():
    from kernel.cli import format_plugin_rows

    rows = [{"name": "accounts", "enabled": True, "essential": True, "requires": ["access"],
             "description": "accounts: who people are and how they prove it. " * 4,
             "routes": [f"/api/v1/r{i}" for i in range(40)], "tables": ["svc_users"], "jobs": []}]
    short = format_plugin_rows(rows, routes=False, width=80).splitlines()
    assert max(len(line) for line in short) <= 80
    assert "    40 routes; 1 tables; requires access" in short
    listed = format_plugin_rows(rows, routes=True, width=80).splitlines()
    assert "    route /api/v1/r39" in listed and "    table svc_users" in listed


@pytest.mark.skipif(bool(svc_test_database_url()), reason="serve smoke test runs on the embedded default only")
def test_serve_dev_starts_private_with_a_key_json_lines_and_localhost_cors(fresh_env, tmp_path):
    """`svc serve --dev` on a new data dir, logging JSON: every line parses (uvicorn's too), the
    start line names the API URL and the data dir, a browser at http://localhost:3000 passes CORS,
    and the data dir (0700), its database and the generated encryption key (0600) are private."""
    from kernel.base.secrets import parse_key_entry

    data = Path(fresh_env["SVC_DATA_DIR"]).resolve()
    port = free_port()
    log = tmp_path / "serve.log"
    with log.open("w") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "kernel.cli", "serve", "--dev", "--port", str(port)],
                                env={**fresh_env, "SVC_LOG_FORMAT": "json"}, stdout=sink, stderr=subprocess.STDOUT)
    try:
        api = f"http://127.0.0.1:{port}/api/v1"
        wait_until_answering(proc, f"{api}/openapi.json", timeout=60)
        preflight = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type"}
        local = httpx.options(f"{api}/auth/login", headers={"Origin": "http://localhost:3000", **preflight})
        assert local.status_code == 204 and local.headers["access-control-allow-origin"] == "http://localhost:3000"
        other = httpx.options(f"{api}/auth/login", headers={"Origin": "http://example.com:3000", **preflight})
        assert other.status_code == 204 and "access-control-allow-origin" not in other.headers
    finally:
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
    text = log.read_text()
    assert code == 0, text
    records = [json.loads(line) for line in text.splitlines()]  # every line is one JSON object
    messages = [(r["logger"], r["message"]) for r in records]
    assert messages[0] == ("svc", f"data dir {data} (new)")
    assert ("svc", f"API at {api}, data dir {data}, SVC_ENV=development") in messages, messages
    assert [m for m in messages if m[0] == "svc" and m[1].startswith("SVC_ENV=development: ")], messages
    assert [m for m in messages if m[0] == "uvicorn.error" and m[1].startswith("Uvicorn running on")], messages
    assert not [m for m in messages if m[0].startswith("alembic")], messages
    assert {"time", "level", "logger", "message"} <= set(records[-1])
    key = data / "encryption_key"
    assert [m for m in messages if m[1].startswith(f"generated SVC_ENCRYPTION_KEY into {key} (0600)")], messages
    parse_key_entry(key.read_text())  # a valid SVC_ENCRYPTION_KEY value
    assert (data.stat().st_mode & 0o777) == 0o700
    for name in ("encryption_key", "svc.sqlite3", "queue.lock"):
        assert ((data / name).stat().st_mode & 0o777) == 0o600, name


def test_production_refuses_secrets_no_loaded_key_opens(env, run_svc):
    """A stored secret sealed with a key that is not loaded stops `svc serve` (exit 2) with the
    column and how to make a key: the embedded data dir lost its key file (a new one was
    generated), or a database named explicitly has no SVC_ENCRYPTION_KEY at all."""
    import sqlite3

    db = default_sqlite_path(Path(env["SVC_DATA_DIR"]))
    with sqlite3.connect(db) as conn:
        conn.execute("INSERT INTO svc_settings (site_id, key, sealed, updated_at) VALUES "
                     "('default', 'deploy.token', 'sv1.lost-key.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', "
                     "'2026-01-01 00:00:00')")
    port = str(free_port())
    lost = run_svc("serve", "--port", port, env=env)
    assert lost.returncode == 2, lost.stderr
    assert "stored secrets in svc_settings.sealed were sealed with an encryption key that is not loaded" in lost.stderr
    assert "set SVC_ENCRYPTION_KEY" in lost.stderr
    explicit = run_svc("serve", "--port", port, env={**env, "SVC_DATABASE_URL": f"sqlite:///{db}"})
    assert explicit.returncode == 2, explicit.stderr
    assert "svc_settings.sealed" in explicit.stderr and "base64.b64encode(os.urandom(32))" in explicit.stderr


def test_a_missing_extra_stops_the_start_naming_the_setting_and_the_install_line(fresh_env):
    """PostgreSQL and S3 are extras (kernel/base/extras.py): configured without them, the start stops
    (exit 2) naming the setting and the pip line, before any data dir is made. One process, the
    libraries made unimportable as in an install without the extras."""
    probe = textwrap.dedent("""
        import os, sys
        sys.modules["psycopg"] = sys.modules["boto3"] = None
        from kernel.cli import main
        os.environ["SVC_STORAGE"] = "s3://bucket"
        print("s3", main(["migrate"]), flush=True)
        del os.environ["SVC_STORAGE"]
        os.environ["SVC_DATABASE_URL"] = "postgresql://svc@127.0.0.1:1/svc"
        print("postgres", main(["migrate"]), flush=True)
    """)
    out = subprocess.run([sys.executable, "-c", probe], env=fresh_env, capture_output=True, text=True, timeout=60,
                         cwd=Path(__file__).resolve().parents[1])
    assert out.stdout.split("\n")[:2] == ["s3 2", "postgres 2"], (out.stdout, out.stderr)
    assert out.stderr.splitlines() == [
        "svc: SVC_STORAGE (S3) needs the 's3' extra, which is not installed: pip install 'svc-cms[s3]'",
        "svc: SVC_DATABASE_URL (PostgreSQL) needs the 'postgres' extra, which is not installed: "
        "pip install 'svc-cms[postgres]'",
    ]
    assert not Path(fresh_env["SVC_DATA_DIR"]).exists()

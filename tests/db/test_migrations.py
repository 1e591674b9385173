"""Migration revision ids, branch rules, the upgrade of databases stamped before the rename, and
the migrated schema against the ``tables.py`` modules.

Every branch's ids are ``<plugin>_NNNN_<slug>`` (the kernel's ``kernel_NNNN_<slug>``), numbered
1, 2, 3 ... along the branch, in a file of the same name; a branch is labelled with its plugin;
and no migration depends on a migration of an optional plugin (disabling that plugin would leave
the revision unresolvable).
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.engine import make_url

from kernel.db.engine import sync_url
from kernel.db.meta import metadata
from kernel.db.migrate import (
    alembic_config,
    at_heads,
    conventional_migrations,
    migration_paths,
    renamed_revisions,
    restamp_renamed,
    revision_graph,
    upgrade,
)
from kernel.hooks.plugins import (
    KERNEL_PLUGIN_MODULES,
    available_plugins,
    essential_plugins,
    make_plugin_manager,
)
from kernel.testing import svc_test_database_url

REVISION_ID = re.compile(r"^(?P<owner>[a-z][a-z0-9_]*?)_(?P<number>\d{4})_(?P<slug>[a-z0-9]+(?:_[a-z0-9]+)*)$")
MAX_ID = 32  # Alembic's alembic_version.version_num is a VARCHAR(32)


def _owners() -> dict[str, str]:
    """Migrations folder (``.../versions``) -> owner: ``kernel`` or the plugin's entry-point name."""
    owners: dict[str, str] = {}
    for modname in KERNEL_PLUGIN_MODULES:
        module = __import__(modname, fromlist=["_"])
        for folder in (conventional_migrations(module), getattr(module, "register_migrations", lambda: None)()):
            if folder:
                owners[str(Path(folder) / "versions")] = "kernel"
    for name, ep in available_plugins().items():
        module = ep.load()
        for folder in (conventional_migrations(module), getattr(module, "register_migrations", lambda: None)()):
            if folder:
                owners[str(Path(folder) / "versions")] = name
    return owners


OWNERS = _owners()


def _scripts():
    cfg = alembic_config(sorted(OWNERS))
    return list(ScriptDirectory.from_config(cfg).walk_revisions())


def _owner_of(script) -> str:
    return OWNERS[str(Path(script.path).resolve().parent)]


def test_every_branch_is_found():
    assert "kernel" in OWNERS.values()
    assert set(essential_plugins()) <= set(OWNERS.values())


def test_the_convention_finds_every_branch():
    """A plugin's ``migrations/`` folder beside its module is its branch, with no hook to write;
    a plugin object that is not a module (a test's temporary plugin) brings none."""
    pm, _ = make_plugin_manager()
    assert set(migration_paths(pm)) == set(OWNERS)
    assert sum(owner != "kernel" for owner in OWNERS.values()) >= 21
    assert conventional_migrations(object()) is None
    assert conventional_migrations(__import__("plugins.delivery.plugin", fromlist=["_"])) is None


def test_revision_ids_follow_the_naming_rule():
    scripts = _scripts()
    assert scripts
    by_id = {s.revision: s for s in scripts}
    for script in scripts:
        owner = _owner_of(script)
        match = REVISION_ID.match(script.revision)
        assert match and script.revision.startswith(owner + "_") and \
            re.fullmatch(r"\d{4}_[a-z0-9_]+", script.revision[len(owner) + 1:]), \
            f"{script.path}: revision {script.revision!r} must be {owner}_NNNN_<slug>"
        assert len(script.revision) <= MAX_ID, f"{script.revision!r} is longer than {MAX_ID} characters"
        assert Path(script.path).stem == script.revision, f"{script.path}: name the file {script.revision}.py"
        number = int(script.revision[len(owner) + 1:len(owner) + 5])
        downs = script._versioned_down_revisions
        if not downs:
            assert number == 1, f"{script.revision}: a branch starts at 0001"
            assert tuple(script.module.branch_labels or ()) == (owner,), f"{script.revision}: branch_labels = ({owner!r},)"
        else:
            assert len(downs) == 1, f"{script.revision}: one down_revision, in its own branch"
            down = by_id[downs[0]]
            assert _owner_of(down) == owner, f"{script.revision}: down_revision {down.revision} is another branch"
            down_number = int(down.revision[len(owner) + 1:len(owner) + 5])
            assert number == down_number + 1, f"{script.revision}: number it {down_number + 1:04d}"
            assert not script.module.branch_labels, f"{script.revision}: only a branch's first revision has a label"


def test_no_migration_depends_on_an_optional_plugin():
    scripts = _scripts()
    by_id = {s.revision: s for s in scripts}
    for script in scripts:
        owner = _owner_of(script)
        deps = script.dependencies
        for dep in (deps,) if isinstance(deps, str) else deps or ():
            target = by_id.get(dep)
            assert target is not None, f"{script.revision}: depends_on {dep!r} is not a revision id"
            target_owner = _owner_of(target)
            assert target_owner == "kernel" or target_owner in essential_plugins(), \
                f"{script.revision} ({owner}) depends on {dep}, a migration of the optional plugin {target_owner!r}"


def test_renamed_revisions_map_every_old_id():
    renamed = renamed_revisions(alembic_config(sorted(OWNERS)))
    assert renamed["k0001_sites"] == "kernel_0001_sites"
    assert renamed["k0002_audit"] == "kernel_0002_audit"
    assert renamed["a0002_sessions_keys_issuers"] == "accounts_0002_sessions"
    assert renamed["i0004_counts"] == "items_0004_counts"
    current = {s.revision for s in _scripts()}
    assert set(renamed.values()) <= current
    assert not set(renamed) & current


@pytest.fixture
def scratch_url(tmp_path):
    """An empty database: a SQLite file, or a new PostgreSQL database beside the test one."""
    base = svc_test_database_url()
    if not base:
        yield f"sqlite:///{tmp_path / 'stamped.sqlite3'}"
        return
    name = f"svc_mig_{uuid.uuid4().hex[:10]}"
    admin = create_engine(sync_url(base), isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(base).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _versions(url: str) -> set[str]:
    engine = create_engine(sync_url(url))
    try:
        with engine.connect() as conn:
            return {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}
    finally:
        engine.dispose()


@pytest.mark.svc_services  # its PostgreSQL leg: kept by the second pass (--svc-services-only)
def test_a_database_stamped_with_the_old_ids_upgrades(scratch_url):
    paths = sorted(OWNERS)
    cfg = alembic_config(paths)
    renamed = renamed_revisions(cfg)
    old_of = {new: old for old, new in renamed.items()}
    # The schema as it was before items' counts migration, stamped with the ids of that time.
    engine = create_engine(sync_url(scratch_url))
    try:
        with engine.begin() as conn:
            cfg.attributes["connection"] = conn
            command.upgrade(cfg, "items_0003_history")
            for rev in ("kernel_0002_audit", "accounts_0002_sessions", "access_0001_access", "schema_0001_schema"):
                command.upgrade(cfg, rev)
            stamped = {r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version"))}
            for rev in stamped:
                conn.execute(text("UPDATE alembic_version SET version_num = :old WHERE version_num = :new"),
                             {"old": old_of[rev], "new": rev})
            assert not inspect(conn).has_table("svc_item_counts")
    finally:
        engine.dispose()
    assert "i0003_history" in _versions(scratch_url) and "k0002_audit" in _versions(scratch_url)

    upgrade(scratch_url, paths)

    heads = {s.revision for s in ScriptDirectory.from_config(cfg).get_revisions("heads")}
    assert _versions(scratch_url) == heads
    engine = create_engine(sync_url(scratch_url))
    try:
        with engine.connect() as conn:
            assert inspect(conn).has_table("svc_item_counts")  # items_0004 ran after the rename
            assert restamp_renamed(conn, renamed) == []  # nothing old is left
    finally:
        engine.dispose()
    upgrade(scratch_url, paths)  # and a second run is a no-op
    assert _versions(scratch_url) == heads


# Where the migrated schema and the runtime tables (``kernel.db.meta.metadata``) knowingly part:
# what only a migration makes, per dialect. Anything else the two disagree on (a column, its
# type or nullability, an index, a key, a table) fails the test below.
_ITEMS_FKS = {  # the items plugin's runtime tables declare no foreign keys; its migrations make them
    ("remove_fk", table, f"fk_{table}_{column}")
    for table in ("svc_items", "svc_item_pins", "svc_item_revisions", "svc_item_versions", "svc_search")
    for column in ("site_id_svc_sites", "collection_id_svc_collections")
}
KNOWN_APART = {
    "sqlite": _ITEMS_FKS | {
        ("remove_column", "svc_search", "id"),  # the FTS5 rowid the search index joins on
        ("remove_index", "svc_search", "ux_svc_search_key"),
        *(("remove_table", f"svc_search_fts{part}") for part in ("", "_config", "_data", "_docsize", "_idx")),
    },
    "postgresql": _ITEMS_FKS | {
        ("remove_column", "svc_search", "tsv"),  # a generated tsvector
        ("remove_index", "svc_search", "ix_svc_search_tsv"),
        ("remove_index", "svc_items", "ix_svc_items_data_gin"),
        ("remove_index", "svc_events", "ix_svc_events_txid"),
    },
}


def _difference(entry) -> tuple[str, ...]:
    """An Alembic autogenerate difference as ``(kind, table, name)`` (``(kind, table)`` for a table)."""
    if isinstance(entry, list):  # modify_type, modify_nullable...: a list of one per column
        entry = entry[0]
    kind = entry[0]
    if kind.endswith("_table"):
        return kind, entry[1].name
    if kind.endswith(("_index", "_fk", "_constraint")):
        return kind, entry[1].table.name, entry[1].name
    if kind.endswith("_column"):
        return kind, entry[2], entry[3].name
    return kind, entry[2], entry[3]


@pytest.mark.svc_services  # its PostgreSQL leg: kept by the second pass (--svc-services-only)
def test_the_migrations_build_what_the_tables_declare(scratch_url):
    """Every branch upgraded on an empty database gives the tables, columns (types, nullability),
    indexes, keys and unique constraints that the ``tables.py`` modules declare: both build their
    standard columns with the same helpers of ``kernel.db.meta`` (``id_column``, ``site_column``,
    ``timestamps``), and this keeps the two from drifting apart."""
    assert len(metadata.tables) > 90  # every plugin's tables are loaded (by _owners above)
    upgrade(scratch_url, sorted(OWNERS))
    engine = create_engine(sync_url(scratch_url))
    try:
        with engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            found = {_difference(entry) for entry in compare_metadata(context, metadata)}
            dialect = conn.dialect.name
    finally:
        engine.dispose()
    assert found == KNOWN_APART[dialect]
def test_the_revision_graph_read_as_text_is_alembics():
    """``revision_graph`` (read without importing the files) has every revision Alembic loads, each
    needing what Alembic says it needs (``down_revision`` and ``depends_on``); ``at_heads`` holds
    for what Alembic stamps after ``upgrade heads`` and for no database one revision short."""
    graph = revision_graph(sorted(OWNERS))
    assert graph is not None
    scripts = _scripts()
    assert {r: set(n) for r, n in graph.items()} == {s.revision: set(s._all_down_revisions) for s in scripts}
    cfg = alembic_config(sorted(OWNERS))
    with create_engine("sqlite://").begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "heads")
        stamped = sorted(r[0] for r in conn.execute(text("SELECT version_num FROM alembic_version")))
    assert at_heads(graph, stamped)
    for rev in stamped:  # each stamped revision's own down_revision instead of it: that one is not run
        down = ScriptDirectory.from_config(cfg).get_revision(rev)._versioned_down_revisions
        short = [r for r in stamped if r != rev] + list(down)
        assert not at_heads(graph, short), rev
    assert not at_heads(graph, [])
    assert not at_heads(graph, [*stamped, "k0001_sites"])  # an old id: Alembic restamps it first


def test_a_revision_file_only_alembic_can_read_sends_the_check_to_alembic(tmp_path):
    def folder(name: str, *files: str) -> str:
        path = tmp_path / name
        path.mkdir()
        for i, text_ in enumerate(files):
            (path / f"r{i}.py").write_text(text_)
        return str(path)

    plain = 'revision = "a1"\ndown_revision = None\n', 'revision = "a2"\ndown_revision = "a1"\ndepends_on = ("a1",)\n'
    assert revision_graph([folder("plain", *plain)]) == {"a1": (), "a2": ("a1", "a1")}
    for name, body in {
        "computed": 'revision = "a" + "1"\ndown_revision = None\n',
        "twice": 'revision = "a1"\nrevision = "a9"\ndown_revision = None\n',
        "in_an_if": 'import os\nrevision = "a1"\nif os.environ.get("X"):\n    revision = "a9"\ndown_revision = None\n',
        "global": 'revision = "a1"\ndown_revision = None\ndef f():\n    global revision\n',
        "namespace": 'revision = "a1"\ndown_revision = None\nglobals()["revision"] = "a9"\n',
        "star": 'revision = "a1"\ndown_revision = None\nfrom os import *\n',
        "no_down": 'revision = "a1"\n',
        "missing_down": 'revision = "a1"\ndown_revision = "a0"\n',
        "missing_dependency": 'revision = "a1"\ndown_revision = None\ndepends_on = "zz"\n',
        "syntax": 'revision = "a1"\ndown_revision = None\ndef (\n',
    }.items():
        assert revision_graph([folder(name, body)]) is None, name
    twice = folder("dup_a", 'revision = "a1"\ndown_revision = None\n')
    assert revision_graph([twice, folder("dup_b", 'revision = "a1"\ndown_revision = None\n')]) is None
    circle = {"a1": ("a2",), "a2": ("a1",)}
    assert not at_heads(circle, ["a1", "a2"])


def test_a_database_one_revision_short_is_upgraded(tmp_path):
    """The text check finds the database short of a head, so Alembic runs the missing revision."""
    url = f"sqlite:///{tmp_path / 'short.sqlite3'}"
    paths = sorted(OWNERS)
    upgrade(url, paths)
    full = _versions(url)
    engine = create_engine(sync_url(url))
    try:
        with engine.begin() as conn:
            cfg = alembic_config(paths)
            cfg.attributes["connection"] = conn
            command.downgrade(cfg, "items@-1")
    finally:
        engine.dispose()
    assert _versions(url) != full
    upgrade(url, paths)
    assert _versions(url) == full

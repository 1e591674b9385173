"""``svc items drop-small-indexes``: the field indexes an earlier deployment made for collections
below ``SVC_ITEMS_INDEX_MIN_ITEMS`` go, bounded per run and idempotent; unique fields' indexes and
grown collections' stay, and reads answer the same without them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kernel.testing import Calls, svc_test_database_url
from kernel.testing.commands import SvcCommands
from plugins.items.upkeep.indexes import existing_indexes, index_name
from plugins.items.upkeep.small_indexes import drop_small_indexes, format_report
from plugins.schema.api import get_schema

ROOT = Path(__file__).resolve().parents[2]
FIELDS = {"views": "integer", "title": "string", "sku": {"type": "string", "options": {"unique": True}},
          "body": "text"}


async def _present(app: Any) -> set[str]:
    async with app.kernel.db.connect() as conn:
        return await existing_indexes(conn)


async def _earlier_deployment(make_app: Any) -> tuple[Any, Calls, dict[str, Any]]:
    """An app that made every field's index with the field (``SVC_ITEMS_INDEX_MIN_ITEMS=0``): site
    A's ``shop`` (2 items) and ``tags`` (none) are small at a threshold of 3, site B's ``shop`` (4)
    is not. Returns the app, A's calls, and the index names by role."""
    app = await make_app(env={"SVC_ITEMS_INDEX_MIN_ITEMS": "0"})
    admin = {"Authorization": f"Bearer {await app.login()}"}
    site_a, site_b = await app.create_site(admin), await app.create_site(admin)
    calls = Calls(app.client, {**admin, "X-Svc-Site": site_a})
    calls_b = Calls(app.client, {**admin, "X-Svc-Site": site_b})
    for c in (calls, calls_b):
        await c.collection("shop", FIELDS)
    await calls.collection("tags", {"label": "string"})
    await calls.create("shop", [{"views": n, "title": f"t{n}", "sku": f"s{n}"} for n in range(2)])
    await calls_b.create("shop", [{"views": n, "title": f"t{n}", "sku": f"s{n}"} for n in range(4)])
    shop, tags = (await get_schema(app.kernel, site_a)).collection("shop"), \
        (await get_schema(app.kernel, site_a)).collection("tags")
    grown = (await get_schema(app.kernel, site_b)).collection("shop")
    names = {
        "small": [index_name(shop.id, "title"), index_name(shop.id, "views"), index_name(tags.id, "label")],
        "unique": index_name(shop.id, "sku"),
        "grown": {index_name(grown.id, f) for f in ("views", "title", "sku")},
        "site": site_a,
    }
    present = await _present(app)
    assert set(names["small"]) | {names["unique"]} | names["grown"] <= present
    return app, calls, names


async def test_small_collections_lose_their_field_indexes_bounded_and_idempotent(make_app):
    app, calls, names = await _earlier_deployment(make_app)
    kernel = app.kernel
    looked = await drop_small_indexes(kernel, threshold=3, dry_run=True)
    assert [i["name"] for i in looked["indexes"]] == names["small"]  # by site, collection, field
    assert {i["outcome"] for i in looked["indexes"]} == {"wouldDrop"} and looked["found"] == 3
    assert [(i["collection"], i["field"], i["items"], i["siteId"]) for i in looked["indexes"]] == [
        ("shop", "title", 2, names["site"]), ("shop", "views", 2, names["site"]), ("tags", "label", 0, names["site"])]
    assert set(names["small"]) <= await _present(app)  # a dry run drops nothing
    assert "would drop" in format_report(looked)

    first = await drop_small_indexes(kernel, threshold=3, limit=2)
    assert (first["found"], first["dropped"], first["left"], first["failed"]) == (3, 2, 1, 0)
    present = await _present(app)
    assert not set(names["small"][:2]) & present and names["small"][2] in present
    assert "1 left: run again" in format_report(first)
    second = await drop_small_indexes(kernel, threshold=3, limit=2)
    assert (second["found"], second["dropped"], second["left"]) == (1, 1, 0)
    again = await drop_small_indexes(kernel, threshold=3)
    assert (again["found"], again["dropped"], again["indexes"]) == (0, 0, [])

    present = await _present(app)
    assert not set(names["small"]) & present
    assert names["unique"] in present and names["grown"] <= present  # unique and grown ones stay
    # The reads answer as before, through the (site_id, collection_id) index.
    found = await calls.ok("get", "/items/shop", params={"filter[views][_eq]": "1", "fields": "title"})
    assert [item["title"] for item in found] == ["t1"]
    await calls.err("post", "/items/shop", 409, "CONFLICT", json={"views": 9, "sku": "s1"})
    assert await drop_small_indexes(kernel, threshold=0) == {
        "threshold": 0, "found": 0, "limit": 500, "dryRun": False, "indexes": [], "dropped": 0, "wouldDrop": 0,
        "grown": 0, "failed": 0, "left": 0}


@pytest.fixture(scope="module")
def svc_commands():
    """Each ``svc`` command a process of its own, forked from one that imported svc once."""
    with SvcCommands(ROOT) as commands:
        yield commands


def _svc(*args: str, app: Any, svc_commands: SvcCommands) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SVC_")}
    env.update(SVC_ITEMS_INDEX_MIN_ITEMS="3", SVC_ADMIN_PASSWORD="cli-admin-pass", JWT_SECRET="x" * 40,
               SVC_DATA_DIR=str(app.kernel.settings.data_dir))
    if svc_test_database_url():
        env["SVC_DATABASE_URL"] = svc_test_database_url()
    return svc_commands.run("items", "drop-small-indexes", *args, env=env, timeout=120)


async def test_the_svc_command_lists_then_drops_them(make_app, svc_commands):
    app, _, names = await _earlier_deployment(make_app)
    looked = _svc("--dry-run", "--json", app=app, svc_commands=svc_commands)
    assert looked.returncode == 0, looked.stderr
    report = json.loads(looked.stdout)
    assert [i["name"] for i in report["indexes"]] == names["small"] and report["threshold"] == 3
    assert set(names["small"]) <= await _present(app)
    done = _svc(app=app, svc_commands=svc_commands)
    assert done.returncode == 0, done.stderr
    assert "dropped 3, kept 0 that grew meanwhile, failed 0; 0 left" in done.stdout
    present = await _present(app)
    assert not set(names["small"]) & present and names["unique"] in present and names["grown"] <= present
    refused = _svc("--limit", "0", app=app, svc_commands=svc_commands)
    assert refused.returncode == 2 and "--limit must be at least 1" in refused.stderr

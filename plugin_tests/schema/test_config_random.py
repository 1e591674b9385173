"""Random manifests applied through HTTP, one after another on the same site: whenever a dry run
says a manifest is valid, applying it succeeds (the planner's checks are the services' checks),
and the exported schema is then exactly what the manifest declared."""

from __future__ import annotations

import random

IMPORT = "/config/import"
COLLECTIONS = ["a", "b", "c"]
FIELDS = ["ref", "refs", "title", "back", "x"]
TYPES = ["uuid", "json", "string", "csv", "integer", "text"]


def _manifest(rng: random.Random) -> dict:
    colls = sorted(rng.sample(COLLECTIONS, rng.randint(0, 3)))
    fields = []
    for coll in colls + (["z"] if rng.random() < 0.05 else []):
        for name in sorted(rng.sample(FIELDS, rng.randint(0, 4))):
            entry = {"collection": coll, "field": name, "type": rng.choice(TYPES)}
            if rng.random() < 0.3:
                entry["required"] = True
            if rng.random() < 0.5:
                entry["sort"] = rng.randint(1, 9)
            fields.append(entry)
    relations = {}
    holders = {"m2o": {"uuid", "string", "integer"}, "m2m": {"json", "csv"}, "m2a": {"json"}}
    for _ in range(rng.randint(0, 4)):
        kind = rng.choice(["m2o", "o2m", "m2m", "m2a"])
        # Mostly a field that can hold the references (so the relation may fit), sometimes any.
        fitting = [f for f in fields if f["type"] in holders.get(kind, {"uuid", "string", "integer"})]
        pick = rng.choice(fitting) if fitting and rng.random() < 0.8 else {
            "collection": rng.choice(COLLECTIONS), "field": rng.choice(FIELDS)}
        target = rng.choice(COLLECTIONS)
        if kind == "o2m":
            rel = {"type": kind, "collection": target, "field": rng.choice(["posts", "items_of", "x"]),
                   "relatedCollection": pick["collection"], "relatedField": pick["field"]}
        else:
            rel = {"type": kind, "collection": pick["collection"], "field": pick["field"]}
            if kind == "m2a":
                rel["relatedCollections"] = sorted(rng.sample(COLLECTIONS, rng.randint(1, 2)))
            else:
                rel["relatedCollection"] = target
            if kind == "m2o" and rng.random() < 0.5:
                rel["relatedField"] = rng.choice(["posts", "back", "x", "children"])
        if rng.random() < 0.5:
            rel["onDelete"] = rng.choice(["restrict", "set null", "cascade"])
        relations[(rel["collection"], rel["field"])] = rel
    return {"version": "svc.config@v1", "collections": [{"name": c, "versioning": rng.random() < 0.5} for c in colls],
            "fields": fields, "relations": list(relations.values())}


async def test_valid_dry_runs_apply_and_export_what_was_declared(calls):
    rng = random.Random(20240611)
    applied = invalid = 0
    for _ in range(120):
        manifest = _manifest(rng)
        query = "?mode=replace-all&allowDestructive=true"
        dry = await calls.ok("post", IMPORT + query + "&dryRun=true", json=manifest)
        resp = await calls.call("post", IMPORT + query, json=manifest)
        if not dry["valid"]:
            invalid += 1
            assert resp.status_code == 422, resp.text
            continue
        assert resp.status_code == 200, (manifest, resp.text)
        applied += 1
        out = await calls.ok("get", "/config/export")
        assert [c["name"] for c in out["collections"]] == [c["name"] for c in manifest["collections"]]
        assert {(f["collection"], f["field"], f["type"], f["required"]) for f in out["fields"]} == \
            {(f["collection"], f["field"], f["type"], f.get("required", False)) for f in manifest["fields"]}
        assert {(r["collection"], r["field"], r["type"]) for r in out["relations"]} == \
            {(r["collection"], r["field"], r["type"]) for r in manifest["relations"]}
        again = await calls.ok("post", IMPORT + query, json=out)
        assert again["applied"] == {"created": 0, "updated": 0, "deleted": 0}
    assert applied > 20 and invalid > 5, (applied, invalid)

"""GraphQL schema builds and their memory (in process, no database).

Builds the GraphQL schema of a site of ``--collections`` collections x ``--fields`` fields (a mix
of the field types, an m2o from every collection to the next with its o2m alias) from an
in-memory schema snapshot, ``--builds`` times: median and p99 build time. Then holds
``--sites`` such schemas at once, each built from its own snapshot (another site id), and reports
the Python heap they take (tracemalloc) and the RSS growth. Usage:

    .venv/bin/python bench/graphql_schema_bench.py --collections 50 --fields 20 --builds 50 --sites 1000
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
import tracemalloc
from types import MappingProxyType

from loadclient import rss_bytes  # a sibling module of bench/

from plugins.graphql.schema import build
from plugins.schema.snapshot import CollectionDef, FieldDef, RelationDef, SchemaSnapshot

TYPES = ("string", "text", "integer", "float", "boolean", "dateTime", "json", "uuid", "decimal", "bigInteger")


def snapshot(site_id: str, n_collections: int, n_fields: int) -> SchemaSnapshot:
    colls, rels = {}, []
    for c in range(n_collections):
        name = f"c{c:03}"
        fields = {f"f{f:02}": FieldDef(name, f"f{f:02}", TYPES[f % len(TYPES)], sort=f) for f in range(n_fields - 1)}
        fields["parent"] = FieldDef(name, "parent", "string", sort=n_fields)
        colls[name] = CollectionDef(f"id-{site_id}-{c}", name, MappingProxyType({}), MappingProxyType(fields))
        rels.append(RelationDef(f"r{c}", "m2o", name, "parent", f"c{(c + 1) % n_collections:03}",
                                related_field=f"children_{c}"))
    return SchemaSnapshot(site_id, 1, MappingProxyType(colls), tuple(rels))


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--collections", type=int, default=50)
    p.add_argument("--fields", type=int, default=20)
    p.add_argument("--builds", type=int, default=50)
    p.add_argument("--sites", type=int, default=1000)
    args = p.parse_args()

    snap = snapshot("bench", args.collections, args.fields)
    times = []
    for _ in range(args.builds):
        t0 = time.perf_counter()
        graph = build(snap)
        times.append((time.perf_counter() - t0) * 1000)
    times.sort()
    types = len(graph.schema.type_map)
    print(f"build {args.collections}x{args.fields}: median {statistics.median(times):.1f} ms, "
          f"p99 {times[min(len(times) - 1, int(len(times) * 0.99))]:.1f} ms, {types} types")

    snaps = [snapshot(f"s{i}", args.collections, args.fields) for i in range(args.sites)]
    gc.collect()
    rss0 = rss_bytes() // 1024
    tracemalloc.start()
    t0 = time.perf_counter()
    held = [build(s) for s in snaps]
    elapsed = time.perf_counter() - t0
    gc.collect()
    heap, _peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"{len(held)} schemas held: {heap / 2**20:.1f} MiB heap ({heap / len(held) / 1024:.0f} KiB each), "
          f"RSS +{(rss_bytes() // 1024 - rss0) / 1024:.1f} MiB, built in {elapsed:.1f} s (under tracemalloc)")


if __name__ == "__main__":
    main()

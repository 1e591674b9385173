"""What the graphql plugin's hooks declare to the kernel: its site caches, the state key and
lease of its stream slots, the WebSocket subprotocol.

Kept apart from the modules that run GraphQL so that loading the plugin (every ``svc`` command
does) does not import graphql-core (~100 ms of CPU): ``routes`` imports those on the first
GraphQL request.
"""

from __future__ import annotations

from kernel import SiteCacheSpec

SCHEMA_CACHE = SiteCacheSpec(
    "graphql_schemas", max_entries=1_000, ttl=3600.0, invalidate_on=("schema.changed",),
    doc="GraphQL schemas per (site, schema version).")
DOCUMENT_CACHE = SiteCacheSpec(
    "graphql_documents", max_entries=4_096, ttl=3600.0, invalidate_on=("schema.changed",),
    doc="Parsed and validated GraphQL documents per (site, schema version, view, query text).")
VIEW_CACHE = SiteCacheSpec(
    "graphql_views", max_entries=1_000, ttl=3600.0, invalidate_on=("schema.changed",),
    doc="GraphQL schemas as members see them, per (site, schema version, read permissions).")

STREAMS = "graphql.streams"  # kernel.state: the slots of open streams (kernel.messaging.slots.ConnectionLimiter)
STREAM_LEASE = 30.0  # seconds a slot lives in Redis without renewal (a dead worker's go after it)

PROTOCOL = "graphql-transport-ws"

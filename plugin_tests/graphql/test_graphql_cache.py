"""The per-site schema is built once per schema version (single flight after a change), held in
the kernel's bounded site cache; documents are parsed and validated once per (site, schema
version, query text)."""

from __future__ import annotations

import asyncio

import pytest_asyncio

from kernel.testing import Calls
from kernel.testing import shared as testing_shared
from plugin_tests.graphql.conftest import gql, seed_blog
from plugins.graphql.service import BUILDS

# Every test writes and reads in a site of its own: they share the module's app, each in a new
# site of it (kernel/testing/shared.py).
svc_app, admin_headers, site = testing_shared.svc_app, testing_shared.admin_headers, testing_shared.site


@pytest_asyncio.fixture(loop_scope="module")  # graphql/conftest.py's, on the shared app's loop
async def blog(calls: Calls) -> Calls:
    await seed_blog(calls)
    return calls


async def test_schema_built_once_per_version(blog: Calls, svc_app, site: str):
    kernel = svc_app.kernel
    await gql(blog, "{ posts { id } }")
    builds = kernel.state[BUILDS]
    await gql(blog, "{ authors { id } }")
    assert kernel.state[BUILDS] == builds
    assert len(kernel.site_caches["graphql_schemas"].keys(site)) == 1
    await blog.field("posts", "subtitle", "string")
    # Ten requests at once after the change: one build, and every one sees the new field.
    bodies = await asyncio.gather(*(gql(blog, "{ posts(limit: 1) { subtitle } }") for _ in range(10)))
    assert all("errors" not in b for b in bodies), bodies[0]
    assert kernel.state[BUILDS] == builds + 1
    assert len(kernel.site_caches["graphql_schemas"].keys(site)) == 1


async def test_documents_cached_per_version_and_text(blog: Calls, svc_app, site: str):
    cache = svc_app.kernel.site_caches["graphql_documents"]
    await gql(blog, "{ posts { id } }")
    hits, entries = cache.hits, len(cache.keys(site))
    await gql(blog, "{ posts { id } }")
    assert cache.hits == hits + 1 and len(cache.keys(site)) == entries
    await gql(blog, "{ posts { title } }")
    assert len(cache.keys(site)) == entries + 1
    await blog.field("posts", "subtitle", "string")  # a new schema version drops the site's documents
    assert cache.keys(site) == []
    assert (await gql(blog, "{ posts { id } }"))["data"]["posts"]


async def test_schema_cache_is_bounded(blog: Calls, svc_app):
    cache = svc_app.kernel.site_caches["graphql_schemas"]
    assert cache.max_entries == 1_000
    assert svc_app.kernel.site_caches["graphql_documents"].max_entries == 4_096

"""Fixtures of store sync's tests: the local protocol servers and the app that points at them
(``store_sync_helpers.py`` holds the servers and helpers)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import pytest_asyncio

from .store_sync_helpers import FakeGoogle, FakeRtdb, env_for


@pytest.fixture
def google() -> Iterator[FakeGoogle]:
    server = FakeGoogle()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def rtdb() -> Iterator[FakeRtdb]:
    server = FakeRtdb()
    try:
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture
async def svc_app(make_app, google):
    return await make_app(env=env_for(google))



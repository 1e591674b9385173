"""Fixtures of the delivery tests (the seeded site and the query counter: ``delivery_seed``)."""

from __future__ import annotations

from typing import Any

import pytest
from delivery_seed import QueryCounter


@pytest.fixture
def count_queries(svc_app: Any) -> QueryCounter:
    return QueryCounter(svc_app)

"""The access routes against their OpenAPI operations, with schemathesis.

Positive cases must get a documented status with a body matching the declared schema;
negative cases (bodies and queries the schema forbids) must be refused with a 4xx, never
accepted and never a 500. Runs over the access plugin's operations only; the kernel's
tests/test_openapi.py runs every plugin's.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.python import asgi
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from kernel.app import create_app
from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, AppFactory

OPENAPI_PATH = "/api/v1/openapi.json"
MAX_EXAMPLES = 15
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _exercise(operation: Any, headers: dict[str, str], mode: GenerationMode, seen: list[tuple[str, int]]) -> None:
    @hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode, headers=headers))
    def run(case: Any) -> None:
        response = case.call()
        seen.append((operation.label, response.status_code))
        if mode is GenerationMode.NEGATIVE:
            case.validate_response(response, checks=[not_a_server_error])
            # A body the schema forbids, the server refuses (the schema is not looser than the
            # code). Not for queries: unknown query parameters are ignored, as clients expect.
            if not len(operation.query):
                assert 400 <= response.status_code < 500, (
                    f"invalid body answered {response.status_code}: {case.body!r}")
        else:
            case.validate_response(response, checks=CHECKS)

    run()


@pytest.fixture(autouse=True)
def _no_stray_lifespans() -> Any:
    yield
    asgi.shutdown_lifespans()


def test_access_operations_conform(svc_template_db: str, tmp_path: Path) -> None:
    factory = AppFactory(svc_template_db, tmp_path, f"svctest:{uuid.uuid4().hex[:12]}")
    data_dir = tmp_path / "schemathesis"
    settings = factory.settings(data_dir, rate_limit_auth=0)
    factory._prepare_database(data_dir, settings)
    app = create_app(settings)
    schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
    with asgi.get_client(app) as client:
        resp = client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
        token = resp.json()["data"]["token"]
        # Real objects for the fuzzer to find now and then, so not every case is a 404.
        headers = {"Authorization": f"Bearer {token}", "X-Svc-Site": "default"}
        client.post("/api/v1/roles", json={"name": "Fuzz role"}, headers=headers)
        client.post("/api/v1/teams", json={"name": "Fuzz team"}, headers=headers)
        client.post("/api/v1/policies", json={"name": "Fuzz policy"}, headers=headers)
    operations = [r.ok() for r in schema.get_all_operations()]
    operations = [o for o in operations if o.definition.raw.get("tags") == ["access"]
                  and not o.path.startswith("/api/v1/audit")]
    assert len(operations) >= 25
    failures: list[str] = []
    seen: list[tuple[str, int]] = []
    for operation in operations:
        modes = [GenerationMode.POSITIVE]
        if len(operation.body) or len(operation.query):
            modes.append(GenerationMode.NEGATIVE)
        for mode in modes:
            try:
                _exercise(operation, headers, mode, seen)
            except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect all, then report
                failures.append(f"{operation.label} [{mode.value}]: {exc}")
    assert not failures, "\n\n".join(failures)
    assert any(200 <= status < 300 for _, status in seen)
    assert not [s for s in seen if s[1] >= 500]

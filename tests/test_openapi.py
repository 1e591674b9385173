"""The OpenAPI document: its structure, and the API's behaviour against it (schemathesis).

The schemathesis run drives an app built by ``create_app`` through schemathesis's ASGI client,
which starts the app's lifespan on its own event loop (exactly what uvicorn does), so the
kernel's services live on the loop that serves the requests.
"""

from __future__ import annotations

import re
import time
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
from kernel.mailer import MemoryMailer
from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD, AppFactory

OPENAPI_PATH = "/api/v1/openapi.json"
# Examples per operation: the run grows with the API; at 10 + 5 it takes about 30 s for 100 operations.
MAX_EXAMPLES = {GenerationMode.POSITIVE: 10, GenerationMode.NEGATIVE: 5}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


async def test_document_structure(svc_app):
    resp = await svc_app.client.get(OPENAPI_PATH)
    assert resp.status_code == 200
    doc = resp.json()
    assert doc["openapi"] == "3.1.0"
    assert doc["info"]["title"] == "svc" and doc["info"]["version"]
    assert doc["components"]["schemas"]["Error"]["required"] == ["errors"]
    assert doc["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    schemes = doc["components"]["securitySchemes"]
    op_ids: list[str] = []
    for route in svc_app.kernel.routes:
        assert route.template in doc["paths"], f"{route.template} is missing from the document"
        item = doc["paths"][route.template]
        for method in route.methods():
            op = item.get(method.lower())
            assert op is not None, f"{method} {route.template} is missing from the document"
            default = op["responses"]["default"]["content"]["application/json"]["schema"]
            assert default == {"$ref": "#/components/schemas/Error"}
            assert any(code[0] == "2" for code in op["responses"]), f"{method} {route.template}: no 2xx"
            for requirement in op["security"]:
                assert set(requirement) <= set(schemes)
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", route.template))
            op_ids.append(op["operationId"])
    assert len(op_ids) == len(set(op_ids)), "operationId values must be unique"
    # Nothing in the document that no route serves.
    templates = {r.template for r in svc_app.kernel.routes}
    assert set(doc["paths"]) == templates


def test_document_is_valid_openapi_31(svc_template_db: str, tmp_path: Path) -> None:
    app = _build_app(svc_template_db, tmp_path)
    try:
        schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
        schema.validate()  # the OpenAPI 3.1 meta-schema
    finally:
        asgi.shutdown_lifespans()


def _build_app(template_db: str, tmp_path: Path) -> Any:
    factory = AppFactory(template_db, tmp_path, f"svctest:{uuid.uuid4().hex[:12]}")
    data_dir = tmp_path / "schemathesis"
    # No auth rate limit: the run sends more than 30 auth requests a minute, and a 429 tests nothing.
    settings = factory.settings(data_dir, rate_limit_auth=0)
    factory._prepare_database(data_dir, settings)  # a copy of the migrated template
    app = create_app(settings)
    # A deployment with email configured, so email flows run instead of answering a designed 503.
    app.kernel.mailer = MemoryMailer()
    return app


def _login(app: Any) -> str:
    with asgi.get_client(app) as client:
        resp = client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["token"]


def _exercise(operation: Any, headers: dict[str, str], mode: GenerationMode,
              calls: list[tuple[str, int]]) -> None:
    @hypothesis.settings(max_examples=MAX_EXAMPLES[mode], deadline=None, database=None, derandomize=True,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                         print_blob=True)
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode, headers=headers))
    def run(case: Any) -> None:
        response = case.call()
        calls.append((operation.label, response.status_code))
        if mode is GenerationMode.NEGATIVE:
            # Invalid input is answered by any documented 4xx; only a server error is a failure.
            case.validate_response(response, checks=[not_a_server_error])
        else:
            case.validate_response(response, checks=CHECKS)

    run()


# schemathesis's own strategies use `random`; hypothesis warns about it, and that is not ours to fix.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
def test_api_conforms_to_its_document(svc_template_db: str, tmp_path: Path) -> None:
    app = _build_app(svc_template_db, tmp_path)
    started = time.monotonic()
    try:
        schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
        headers = {"Authorization": f"Bearer {_login(app)}", "X-Svc-Site": "default"}
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 5, "the document lists too few operations to be a real run"
        calls: list[tuple[str, int]] = []
        failures: list[str] = []
        for operation in operations:
            # Invalid data needs something to break: a body or query parameters. Path parameters are
            # free strings and the headers are fixed, so other operations have no negative cases.
            negative = [GenerationMode.NEGATIVE] if len(operation.body) or len(operation.query) else []
            for mode in [GenerationMode.POSITIVE, *negative]:
                try:
                    _exercise(operation, headers, mode, calls)
                except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect all, then report
                    failures.append(f"{operation.label} [{mode.value}]: {exc}")
    finally:
        asgi.shutdown_lifespans()
    tested = {label for label, _ in calls}
    assert tested == {o.label for o in operations}, f"never exercised: {({o.label for o in operations}) - tested}"
    # Not vacuous: authenticated operations were really served, not all refused with 401.
    protected = {o.label for o in operations if o.definition.raw.get("x-svc-auth") != "public"}
    assert any(label in protected and 200 <= status < 300 for label, status in calls)
    assert not failures, "\n\n".join(failures)
    assert time.monotonic() - started < 120, "the schemathesis run is too slow for the suite"


@pytest.fixture(autouse=True)
def _no_stray_lifespans() -> Any:
    yield
    asgi.shutdown_lifespans()

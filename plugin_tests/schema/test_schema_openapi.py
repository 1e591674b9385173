"""The schema routes against their OpenAPI operations (schemathesis, admin credentials): no 5xx,
documented statuses, and answers that match the documented schemas. Path parameters are
fuzzed, and also pinned to names that exist, so the 2xx answers are checked too."""

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
PREFIXES = ("/api/v1/collections", "/api/v1/fields", "/api/v1/relations")
MAX_EXAMPLES = 10
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]


def _setup(app: Any) -> tuple[dict[str, str], dict[str, str]]:
    """Admin headers for the site ``default`` and path parameters that name real things."""
    with asgi.get_client(app) as client:
        resp = client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
        assert resp.status_code == 200, resp.text
        headers = {"Authorization": f"Bearer {resp.json()['data']['token']}", "X-Svc-Site": "default"}
        for body in ({"name": "articles"}, {"name": "authors"}):
            assert client.post("/api/v1/collections", json=body, headers=headers).status_code == 201
        for body in ({"field": "title", "type": "string"}, {"field": "author", "type": "uuid"}):
            assert client.post("/api/v1/fields/articles", json=body, headers=headers).status_code == 201
        rel = client.post("/api/v1/relations", headers=headers, json={
            "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
        assert rel.status_code == 201, rel.text
    params = {"name": "articles", "collection": "articles", "field": "title", "relation_id": rel.json()["data"]["id"]}
    return headers, params


def _exercise(operation: Any, mode: GenerationMode, checks: list[Any], **kw: Any) -> None:
    @hypothesis.settings(max_examples=MAX_EXAMPLES, deadline=None, database=None, derandomize=True,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                         print_blob=True)
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode, **kw))
    def run(case: Any) -> None:
        case.validate_response(case.call(), checks=checks)

    run()


def test_schema_routes_conform_to_their_document(svc_template_db: str, tmp_path: Path) -> None:
    factory = AppFactory(svc_template_db, tmp_path, f"svctest:{uuid.uuid4().hex[:12]}")
    data_dir = tmp_path / "fuzz"
    settings = factory.settings(data_dir)
    factory._prepare_database(data_dir, settings)
    app = create_app(settings)
    failures: list[str] = []
    try:
        schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
        headers, params = _setup(app)
        operations = [r.ok() for r in schema.get_all_operations() if r.ok().path.startswith(PREFIXES)]
        assert len(operations) == 20
        # Deletes last (relation, field, collection), so pinned names exist while the other
        # operations run; then restore, which needs the deleted collection.
        order = ["/relations/", "/fields/", "/collections/{name}", "/restore"]
        operations.sort(key=lambda op: 0 if op.method.upper() != "DELETE" and "restore" not in op.path else
                        1 + next(i for i, part in enumerate(order) if part in op.path))
        for operation in operations:
            pinned = {k: v for k, v in params.items() if "{" + k + "}" in operation.path}
            runs = [(GenerationMode.POSITIVE, CHECKS, {})]
            if pinned:
                runs.append((GenerationMode.POSITIVE, CHECKS, {"path_parameters": pinned}))
            if len(operation.body) or len(operation.query):
                runs.append((GenerationMode.NEGATIVE, [not_a_server_error], {"path_parameters": pinned}))
            for mode, checks, kw in runs:
                try:
                    _exercise(operation, mode, checks, headers=headers, **kw)
                except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect all, then report
                    failures.append(f"{operation.label} [{mode.value}, {kw}]: {exc}")
    finally:
        asgi.shutdown_lifespans()
    assert not failures, "\n\n".join(failures)


@pytest.fixture(autouse=True)
def _no_stray_lifespans() -> Any:
    yield
    asgi.shutdown_lifespans()

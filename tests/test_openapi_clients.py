"""The OpenAPI document as client generators read it (issue 44, point 7).

A generator trusts what the document says: an operation whose ``security`` is ``[]`` gets no
token, an upload without a ``requestBody`` gets no body, a bare ``{"type": "object"}`` or an
array without ``items`` becomes an untyped blob (or, for openapi-python-client, a warning and a
missing model). So: the document passes ``openapi-spec-validator``; every body and answer is
typed; public operations that read a token declare it optional; and a Python client generated
by ``openapi-python-client`` (once per session, warnings fatal) logs in, creates a collection,
a field and an item, and lists the items, through the shared app.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest
import pytest_asyncio
from openapi_spec_validator import OpenAPIV31SpecValidator

from kernel.testing import ADMIN_EMAIL, ADMIN_PASSWORD

# The document is built from the routes, the same on any database; the generated client's calls
# (login, a collection, a field, an item, a list) are those plugin_tests/schema and
# plugin_tests/items run on PostgreSQL too. So the PostgreSQL pass leaves this module out
# (docs/testing.md, "Two passes").
pytestmark = pytest.mark.svc_first_pass_only("the OpenAPI document does not depend on the database")

OPENAPI_PATH = "/api/v1/openapi.json"
PACKAGE = "svc_generated_client"
# The generator's own settings (its documented config file): the downloads answer the file's
# own type (``*/*``), which it reads as bytes; no formatter runs on the generated code.
GENERATOR_CONFIG = {"package_name_override": PACKAGE, "project_name_override": "svc-generated-client",
                    "content_type_overrides": {"*/*": "application/octet-stream"}, "post_hooks": []}
OPTIONAL_TOKEN = [{}, {"bearer": []}]
COMBINERS = ("$ref", "oneOf", "anyOf", "allOf", "const", "enum")


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def document(shared_site: Any) -> dict[str, Any]:
    resp = await shared_site.app.client.get(OPENAPI_PATH)
    assert resp.status_code == 200, resp.text
    return resp.json()


def untyped(schema: Any, where: str) -> list[str]:
    """Where ``schema`` holds an object that does not say what it holds (no ``properties``,
    ``additionalProperties`` or combiner) or an array without ``items``."""
    found: list[str] = []
    if isinstance(schema, list):
        for i, part in enumerate(schema):
            found += untyped(part, f"{where}[{i}]")
        return found
    if not isinstance(schema, dict):
        return found
    types = schema.get("type")
    types = types if isinstance(types, list) else [types]
    if "object" in types and not any(k in schema for k in ("properties", "additionalProperties", *COMBINERS)):
        found.append(f"{where}: an object without properties or additionalProperties")
    if "array" in types and not any(k in schema for k in ("items", "prefixItems", *COMBINERS)):
        found.append(f"{where}: an array without items")
    for key, value in schema.items():
        if key not in ("enum", "const", "example", "examples", "default", "required"):
            found += untyped(value, f"{where}/{key}")
    return found


def test_untyped_finds_what_it_looks_for() -> None:
    assert untyped({"type": "object"}, "#") == ["#: an object without properties or additionalProperties"]
    assert untyped({"type": ["array", "null"]}, "#") == ["#: an array without items"]
    assert untyped({"type": "object", "properties": {"a": {"type": "array"}}}, "#") == [
        "#/properties/a: an array without items"]
    assert untyped({"oneOf": [{"type": "object", "additionalProperties": True},
                              {"type": "array", "items": {}}]}, "#") == []


@pytest.mark.asyncio(loop_scope="module")
async def test_document_passes_the_openapi_31_validator(document: dict[str, Any]) -> None:
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
              for e in OpenAPIV31SpecValidator(document).iter_errors()]
    assert errors == []


@pytest.mark.asyncio(loop_scope="module")
async def test_every_body_and_answer_is_typed(document: dict[str, Any]) -> None:
    found = untyped(document["components"]["schemas"], "components/schemas")
    bodies = 0
    for path, item in document["paths"].items():
        for method, op in item.items():
            for media, content in op.get("requestBody", {}).get("content", {}).items():
                bodies += 1
                assert "schema" in content, f"{method} {path}: {media} body without a schema"
                found += untyped(content["schema"], f"{method} {path} body")
            for status, answer in op["responses"].items():
                for content in answer.get("content", {}).values():
                    found += untyped(content.get("schema"), f"{method} {path} {status}")
    assert bodies > 100  # not vacuous: the walk reached the bodies
    assert found == []


@pytest.mark.asyncio(loop_scope="module")
async def test_optional_tokens_and_raw_uploads_are_declared(shared_site: Any, document: dict[str, Any]) -> None:
    optional = closed = 0
    for route in shared_site.app.kernel.routes:
        for method in route.methods():
            op = document["paths"][route.documented][method.lower()]
            if route.auth_for(method) != "public" or "metricsToken" in json.dumps(op["security"]):
                continue
            # A public route that reads a token when sent: clients must be able to send it.
            expected = OPTIONAL_TOKEN if route.authenticate else []
            assert op["security"] == expected, f"{method} {route.documented}"
            optional, closed = optional + bool(route.authenticate), closed + (not route.authenticate)
    assert optional > 10 and closed > 3, (optional, closed)
    for path, method in (("/api/v1/files/upload/{key}", "put"), ("/api/v1/media/{key}", "post")):
        body = document["paths"][path][method]["requestBody"]
        assert body["content"] == {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
    assert "X-Svc-Site" in document["info"]["description"] and "Bearer" in document["info"]["description"]


@pytest.fixture(scope="module")
def generated_client(document: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The package openapi-python-client writes for the document, importable for this module."""
    base = tmp_path_factory.mktemp("generated-client")
    spec, config = base / "openapi.json", base / "config.json"
    spec.write_text(json.dumps(document))
    config.write_text(json.dumps(GENERATOR_CONFIG))
    out = base / "client"
    done = subprocess.run(
        [sys.executable, "-m", "openapi_python_client", "generate", "--path", str(spec), "--config", str(config),
         "--meta", "none", "--output-path", str(out / PACKAGE), "--fail-on-warning"],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, f"the generator refused the document:\n{done.stdout}\n{done.stderr}"
    sys.path.insert(0, str(out))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(out))
        for name in [n for n in sys.modules if n == PACKAGE or n.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _api(module: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.api.{module}")


@pytest.mark.asyncio(loop_scope="module")
async def test_a_generated_client_logs_in_creates_and_lists(shared_site: Any, generated_client: Any) -> None:
    site = (await shared_site.new_site()).headers["X-Svc-Site"]
    transport = httpx.ASGITransport(app=shared_site.app.app)
    client_mod = importlib.import_module(f"{PACKAGE}.client")
    models = importlib.import_module(f"{PACKAGE}.models")
    anonymous = client_mod.Client(base_url="http://testserver", httpx_args={"transport": transport})

    login = await _api("accounts.post_auth_login").asyncio_detailed(
        client=anonymous, body=models.PostAuthLoginPasswordLogin(email=ADMIN_EMAIL, password=ADMIN_PASSWORD))
    assert login.status_code == 200, login.content
    token = login.parsed.data.token
    client = client_mod.AuthenticatedClient(base_url="http://testserver", token=token,
                                            httpx_args={"transport": transport})

    made = await _api("schema.post_collections").asyncio_detailed(
        client=client, body=models.PostCollectionsBody(name="notes"), x_svc_site=site)
    assert made.status_code == 201, made.content
    assert made.parsed.data.name == "notes"
    field = await _api("schema.post_fields_collection").asyncio_detailed(
        "notes", client=client, body=models.PostFieldsCollectionBody.from_dict({"field": "title", "type": "string"}),
        x_svc_site=site)
    assert field.status_code == 201, field.content

    item = await _api("items.post_items_collection").asyncio_detailed(
        "notes", client=client, body=models.PostItemsCollectionBodyType0.from_dict({"title": "From a generated client"}),
        x_svc_site=site)
    assert item.status_code == 201, item.content
    listed = await _api("items.get_items_collection").asyncio_detailed("notes", client=client, x_svc_site=site)
    assert listed.status_code == 200, listed.content
    titles = [row.to_dict()["title"] for row in listed.parsed.data]
    assert titles == ["From a generated client"]

    # Without the token, the same list is refused in the error envelope the client knows.
    refused = await _api("items.get_items_collection").asyncio_detailed("notes", client=anonymous, x_svc_site=site)
    assert refused.status_code == 403, refused.content
    assert refused.parsed.errors[0].code == "PERMISSION_DENIED"

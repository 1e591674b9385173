"""The OpenAPI document: its structure, and the API's behaviour against it (schemathesis).

The schemathesis run drives an app built by ``create_app`` through schemathesis's ASGI client,
which starts the app's lifespan on its own event loop (exactly what uvicorn does), so the
kernel's services live on the loop that serves the requests.
"""

from __future__ import annotations

import asyncio
import os
import re
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
# The ``ci`` profile (scripts/test) runs half of them, every operation still called in each of its
# modes (docs/testing.md, "Suite time"); ``thorough`` (nightly) four times as many.
PROFILE_SCALE = {"ci": 0.5, "thorough": 4.0}


def _scaled(count: int) -> int:
    scale = PROFILE_SCALE.get(os.environ.get("SVC_HYPOTHESIS_PROFILE", ""), 1.0)
    return max(3, round(count * scale))


MAX_EXAMPLES = {GenerationMode.POSITIVE: _scaled(10), GenerationMode.NEGATIVE: _scaled(5)}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]

# This is the one schemathesis run of the suite: a plugin's extra demands on its own operations go
# here, not in a run of its own (each run costs an app and every operation's examples again).
# - schema: its operations run again with path parameters naming things that exist (made by
#   ``_seed``), so their 2xx answers are checked too; its deletes run last, then restore.
SCHEMA_PREFIXES = ("/api/v1/collections", "/api/v1/fields", "/api/v1/relations")
SCHEMA_DELETES_LAST = ["/relations/", "/fields/", "/collections/{name}", "/restore"]
# - access: more examples, and a body the schema forbids is refused with a 4xx (the schema is not
#   looser than the code; not for queries: unknown query parameters are ignored, as clients expect).
STRICT_BODY_TAG = "access"
STRICT_EXAMPLES = _scaled(15)
SHARDS = 3  # the run, split so that the workers share it (it is the suite's longest test)


DOCUMENT_ONLY = "the document is built from the routes, the same on any database"


@pytest.mark.svc_first_pass_only(DOCUMENT_ONLY)
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
        if not route.methods():  # a WebSocket-only route (/realtime): OpenAPI cannot describe it
            assert route.documented not in doc["paths"]
            continue
        assert route.documented in doc["paths"], f"{route.documented} is missing from the document"
        item = doc["paths"][route.documented]
        for method in route.methods():
            op = item.get(method.lower())
            assert op is not None, f"{method} {route.documented} is missing from the document"
            default = op["responses"]["default"]["content"]["application/json"]["schema"]
            assert default == {"$ref": "#/components/schemas/Error"}
            assert any(code[0] == "2" for code in op["responses"]), f"{method} {route.documented}: no 2xx"
            for requirement in op["security"]:
                assert set(requirement) <= set(schemes)
            declared = {p["name"] for p in op["parameters"] if p["in"] == "path"}
            assert declared == set(re.findall(r"{(\w+)}", route.documented))
            op_ids.append(op["operationId"])
    assert len(op_ids) == len(set(op_ids)), "operationId values must be unique"
    # Nothing in the document that no route serves.
    templates = {r.documented for r in svc_app.kernel.routes if r.methods()}
    assert set(doc["paths"]) == templates


@pytest.mark.svc_first_pass_only(DOCUMENT_ONLY)
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
    # Outbound: production's default (nothing opened), so a generated loopback URL is refused, not
    # fetched from whatever listens on this machine.
    settings = factory.settings(data_dir, rate_limit_auth=0, env={"SVC_OUTBOUND_ALLOW_NETWORKS": ""})
    # A copy of the migrated template (PostgreSQL: emptied tables, the app's own first start).
    asyncio.run(factory._prepare_database(data_dir, settings))
    app = create_app(settings)
    # A deployment with email configured, so email flows run instead of answering a designed 503.
    app.kernel.mailer = MemoryMailer()
    return app


def _login(app: Any) -> str:
    with asgi.get_client(app) as client:
        resp = client.post("/api/v1/auth/login", json={"email": ADMIN_EMAIL, "password": ADMIN_PASSWORD})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["token"]


def _seed(app: Any, headers: dict[str, str]) -> dict[str, str]:
    """Real objects for the fuzzer to find now and then (so not every case is a 404), and the
    schema operations' path parameters that name them."""
    with asgi.get_client(app) as client:
        for path, body in (("/api/v1/roles", {"name": "Fuzz role"}), ("/api/v1/teams", {"name": "Fuzz team"}),
                           ("/api/v1/policies", {"name": "Fuzz policy"}),
                           ("/api/v1/collections", {"name": "articles"}), ("/api/v1/collections", {"name": "authors"}),
                           ("/api/v1/fields/articles", {"field": "title", "type": "string"}),
                           ("/api/v1/fields/articles", {"field": "author", "type": "uuid"})):
            resp = client.post(path, json=body, headers=headers)
            assert resp.status_code == 201, resp.text
        rel = client.post("/api/v1/relations", headers=headers, json={
            "type": "m2o", "collection": "articles", "field": "author", "relatedCollection": "authors"})
        assert rel.status_code == 201, rel.text
    return {"name": "articles", "collection": "articles", "field": "title", "relation_id": rel.json()["data"]["id"]}


def _order(operation: Any) -> int:
    """The schema plugin's deletes (relation, field, collection) last, so pinned names exist while
    the other operations run; then restore, which needs the deleted collection. Signing out
    everywhere (``DELETE /me/sessions``) ends the run's own access token: after everything."""
    if operation.method.upper() == "DELETE" and operation.path == "/api/v1/me/sessions":
        return 1 + len(SCHEMA_DELETES_LAST)
    if not operation.path.startswith(SCHEMA_PREFIXES):
        return 0
    if operation.method.upper() != "DELETE" and "restore" not in operation.path:
        return 0
    return 1 + next(i for i, part in enumerate(SCHEMA_DELETES_LAST) if part in operation.path)


def _runs(operation: Any, pinned_names: dict[str, str]) -> list[tuple[GenerationMode, dict[str, Any]]]:
    """(mode, strategy arguments) for each run of ``operation``."""
    pinned = {k: v for k, v in pinned_names.items() if "{" + k + "}" in operation.path}
    pinned = pinned if operation.path.startswith(SCHEMA_PREFIXES) else {}
    runs: list[tuple[GenerationMode, dict[str, Any]]] = [(GenerationMode.POSITIVE, {})]
    if pinned:
        runs.append((GenerationMode.POSITIVE, {"path_parameters": pinned}))
    # Invalid data needs something to break: a body or query parameters. Path parameters are
    # free strings and the headers are fixed, so other operations have no negative cases; nor
    # has a raw upload's binary body (any bytes are a valid one), nor a body of any JSON value.
    breakable = [body for body in operation.body
                 if body.media_type != "application/octet-stream" and body.is_negatable]
    if breakable or len(operation.query):
        runs.append((GenerationMode.NEGATIVE, {"path_parameters": pinned} if pinned else {}))
    return runs


def _strict(operation: Any) -> bool:
    return (operation.definition.raw.get("tags") == [STRICT_BODY_TAG]
            and not operation.path.startswith("/api/v1/audit"))


def _calling(app: Any) -> asgi.ASGIClient:
    """One in-process client for a whole run (``with`` it: that starts the app's lifespan), instead of
    the one per call that ``case.call()`` makes. It keeps no state between calls: ``_call`` empties its cookie
    jar after each, as a fresh client's would be, and it reads no proxy or netrc settings from the
    environment (``trust_env``), which an in-process call never uses."""
    client = asgi.get_client(app)
    client.trust_env = False
    return client


def _call(case: Any, client: asgi.ASGIClient) -> Any:
    client.adapter.max_stream_events = case.operation.schema.config.max_stream_events_for(operation=case.operation)
    try:
        return case.call(session=client)
    finally:
        client.cookies.clear()


def _exercise(operation: Any, headers: dict[str, str], mode: GenerationMode, client: asgi.ASGIClient,
              calls: list[tuple[str, int]], **strategy: Any) -> None:
    strict = _strict(operation)
    examples = STRICT_EXAMPLES if strict else MAX_EXAMPLES[mode]

    @hypothesis.settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                         phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
                         print_blob=True)
    @hypothesis.given(case=operation.as_strategy(generation_mode=mode, headers=headers, **strategy))
    def run(case: Any) -> None:
        response = _call(case, client)
        calls.append((operation.label, response.status_code))
        if mode is GenerationMode.NEGATIVE:
            # Invalid input is answered by any documented 4xx; only a server error is a failure.
            case.validate_response(response, checks=[not_a_server_error])
            if strict and not len(operation.query):
                assert 400 <= response.status_code < 500, (
                    f"invalid body answered {response.status_code}: {case.body!r}")
        else:
            case.validate_response(response, checks=CHECKS)

    run()


# schemathesis's own strategies use `random`; hypothesis warns about it, and that is not ours to fix.
@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@pytest.mark.parametrize("shard", range(SHARDS))
def test_api_conforms_to_its_document(svc_template_db: str, tmp_path: Path, shard: int) -> None:
    """Every ``SHARDS``-th operation from ``shard`` on (the shards together: every operation once),
    so that pytest-xdist spreads the run over its workers."""
    app = _build_app(svc_template_db, tmp_path)
    try:
        schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
        headers = {"Authorization": f"Bearer {_login(app)}", "X-Svc-Site": "default"}
        pinned_names = _seed(app, headers)
        everything = sorted((result.ok() for result in schema.get_all_operations()), key=_order)
        assert len(everything) >= 5, "the document lists too few operations to be a real run"
        assert len([o for o in everything if o.path.startswith(SCHEMA_PREFIXES)]) == 20
        assert len([o for o in everything if _strict(o)]) >= 25
        operations = everything[shard::SHARDS]
        calls: list[tuple[str, int]] = []
        failures: list[str] = []
        with _calling(app) as client:
            for operation in operations:
                for mode, strategy in _runs(operation, pinned_names):
                    try:
                        _exercise(operation, headers, mode, client, calls, **strategy)
                    except (Exception, BaseExceptionGroup) as exc:  # noqa: BLE001 - collect all, then report
                        failures.append(f"{operation.label} [{mode.value}, {strategy}]: {exc}")
    finally:
        asgi.shutdown_lifespans()
    tested = {label for label, _ in calls}
    assert tested == {o.label for o in operations}, f"never exercised: {({o.label for o in operations}) - tested}"
    # Not vacuous: authenticated operations were really served, not all refused with 401.
    protected = {o.label for o in operations if o.definition.raw.get("x-svc-auth") != "public"}
    assert any(label in protected and 200 <= status < 300 for label, status in calls)
    assert any(label in {o.label for o in operations if _strict(o)} and 200 <= status < 300
               for label, status in calls)
    assert not failures, "\n\n".join(failures)


@pytest.fixture(autouse=True)
def _no_stray_lifespans() -> Any:
    yield
    asgi.shutdown_lifespans()


# --- Callers without rights (issue 39): anonymous, and a member whose role grants nothing --------
# Each calls the operations its auth level admits (x-svc-auth): anonymous the public ones, the member
# those and the ones any member may call (bearer). An operation above that level refuses both by the
# level alone, before its route runs, which tests/http/test_auth_before_body.py (401) and the
# cross-tenant sweep (a subscriber of site B, 403) check for every operation. Inputs come from the
# run's seed (not derandomized: they vary, and scripts/test prints the seed that replays them); about
# 300 calls in all. Both callers are in site B; site A (``default``) holds the objects ``_seed``
# made and an item carrying a token of its own.
NO_RIGHTS = {"anonymous": ({"public"}, 2), "member without rights": ({"public", "bearer"}, 1)}
A_TOKEN = "a-only-9f3c1e"


def _site_b_with_a_member_of_no_rights(app: Any, admin: dict[str, str]) -> tuple[str, str, set[str]]:
    """Site B, a member of it whose role has no policy, a token of that member; and the ids of A's
    objects, which no answer to a caller of B may hold."""
    site_b = f"fuzz-b-{uuid.uuid4().hex[:6]}"
    email, password = f"nobody-{uuid.uuid4().hex[:8]}@example.com", "Member-pass-123456"
    with asgi.get_client(app) as client:
        item = client.post("/api/v1/items/articles", headers=admin, json={"title": A_TOKEN})
        assert item.status_code == 201, item.text
        a_ids = {item.json()["data"]["id"]}
        for path in ("/api/v1/roles", "/api/v1/teams", "/api/v1/policies", "/api/v1/relations"):
            listed = client.get(path, headers=admin)
            assert listed.status_code == 200, listed.text
            a_ids |= {str(row["id"]) for row in listed.json()["data"]}
        assert client.post("/api/v1/sites", headers=admin, json={"id": site_b}).status_code == 201
        in_b = {**admin, "X-Svc-Site": site_b}
        role = client.post("/api/v1/roles", headers=in_b, json={"name": "No rights"})
        assert role.status_code == 201, role.text
        user = client.post("/api/v1/users", headers=in_b,
                           json={"email": email, "password": password, "roleId": role.json()["data"]["id"]})
        assert user.status_code == 201, user.text
        login = client.post("/api/v1/auth/login", headers={"X-Svc-Site": site_b},
                            json={"email": email, "password": password})
        assert login.status_code == 200, login.text
    # Ids too short to be told from chance text (a built-in role's small integer id) are left out.
    return site_b, login.json()["data"]["token"], {one for one in a_ids if len(one) >= 8}


ERROR_REF = {"$ref": "#/components/schemas/Error"}


def _declares_another_shape(operation: Any, status: int, media: str) -> bool:
    """True when the document gives this answer a shape of its own rather than the error envelope:
    an HTML page (email unsubscribe) or a JSON-RPC error (/mcp); the admin run checks that shape."""
    responses = operation.definition.raw.get("responses", {})
    declared = (responses.get(str(status)) or {}).get("content", {})
    return media in declared and declared[media].get("schema") != ERROR_REF


def _no_rights_problem(operation: Any, response: Any, a_ids: set[str]) -> str | None:
    """What is wrong with an answer to a caller without rights in site B, or None. An error is in
    the envelope unless its operation declares another shape for that status."""
    if response.status_code >= 500:
        return f"answered {response.status_code}"
    text = response.text
    leaked = sorted(one for one in a_ids | {A_TOKEN} if one in text)
    if leaked:
        return f"answered {response.status_code} holding site A's {leaked}"
    media = (response.headers.get("content-type") or [""])[0].split(";", 1)[0].strip()  # name -> values
    if response.status_code >= 400 and _declares_another_shape(operation, response.status_code, media):
        return None
    if response.status_code >= 400:
        try:
            errors = response.json()["errors"]
        except (ValueError, KeyError, TypeError):
            return f"answered {response.status_code} outside the error envelope: {text[:200]!r}"
        if not (isinstance(errors, list) and errors and all(
                isinstance(e, dict) and isinstance(e.get("code"), str) and isinstance(e.get("message"), str)
                for e in errors)):
            return f"answered {response.status_code} with malformed errors: {text[:200]!r}"
    return None


def _call_without_rights(operation: Any, headers: dict[str, str], examples: int, client: asgi.ASGIClient,
                         a_ids: set[str], statuses: dict[str, list[int]], problems: list[str]) -> None:
    @hypothesis.settings(max_examples=examples, deadline=None, database=None,
                         phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @hypothesis.given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE, headers=headers))
    def run(case: Any) -> None:
        response = _call(case, client)
        statuses.setdefault(operation.label, []).append(response.status_code)
        problem = _no_rights_problem(operation, response, a_ids)
        if problem:
            problems.append(f"{operation.label} {case.path_parameters or ''}: {problem}")

    run()


@pytest.mark.filterwarnings("ignore::hypothesis.errors.HypothesisDeprecationWarning")
@pytest.mark.parametrize("caller", ["anonymous", "member without rights"])
def test_callers_without_rights_get_the_envelope_and_nothing_of_another_site(
        svc_template_db: str, tmp_path: Path, caller: str) -> None:
    levels, examples = NO_RIGHTS[caller]
    app = _build_app(svc_template_db, tmp_path)
    problems: list[str] = []
    statuses: dict[str, list[int]] = {}
    try:
        schema = schemathesis.openapi.from_asgi(OPENAPI_PATH, app)
        admin = {"Authorization": f"Bearer {_login(app)}", "X-Svc-Site": "default"}
        _seed(app, admin)
        site_b, member_token, a_ids = _site_b_with_a_member_of_no_rights(app, admin)
        headers = {"X-Svc-Site": site_b}
        if caller != "anonymous":
            headers["Authorization"] = f"Bearer {member_token}"
        operations = [o for o in (result.ok() for result in schema.get_all_operations())
                      if o.definition.raw.get("x-svc-auth") in levels]
        assert len(operations) >= 40, "the document admits too few operations to this caller"
        with _calling(app) as client:
            for operation in operations:
                _call_without_rights(operation, headers, examples, client, a_ids, statuses, problems)
    finally:
        asgi.shutdown_lifespans()
    assert set(statuses) == {o.label for o in operations}, "some operations were never called"
    assert not problems, "\n".join(problems)
    # Not vacuous: routes really ran for this caller in site B (answers, and refusals by permission).
    answered = [status for seen in statuses.values() for status in seen]
    assert any(200 <= status < 300 for status in answered), statuses
    if caller != "anonymous":
        assert answered.count(403) >= 10, statuses

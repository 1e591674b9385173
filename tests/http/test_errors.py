"""Every error is the spec's envelope: Falcon's own, malformed bodies, limits and crashes."""

from __future__ import annotations

from typing import Any

import pytest

from kernel import ApiError, Route, hookimpl
from kernel.storage import StorageFull


def assert_envelope(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    assert resp.headers["content-type"].startswith("application/json")
    body = resp.json()
    assert set(body) == {"errors"}
    err = body["errors"][0]
    assert err["code"] == code
    assert isinstance(err["message"], str) and err["message"]
    assert err["extensions"]["code"] == code
    return err


class Boom:
    async def on_get(self, req: Any, resp: Any) -> None:
        raise RuntimeError("secret-internal-detail")

    async def on_post(self, req: Any, resp: Any) -> None:
        raise ApiError(409, "CONFLICT", "taken", path=["name"], extensions={"reason": "dup"})

    async def on_put(self, req: Any, resp: Any) -> None:
        raise StorageFull("local:/srv/secret-storage-path has no room: No space left on device")


class DatabaseGone:
    """Reads from a PostgreSQL that is not there (a closed local port): a real driver error."""

    async def on_get(self, req: Any, resp: Any) -> None:
        from sqlalchemy import text
        from sqlalchemy.ext.asyncio import create_async_engine

        from kernel.testing import free_port

        engine = create_async_engine(f"postgresql+psycopg://svc@127.0.0.1:{free_port()}/gone")
        try:
            async with engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        finally:
            await engine.dispose()


class CrashPlugin:
    name = "crash"

    @hookimpl
    def register_routes(self, kernel: Any) -> list[Route]:
        return [Route("/test/boom", Boom(), site="none", auth="public"),
                Route("/test/dbgone", DatabaseGone(), site="none", auth="public")]


@pytest.fixture
def client(shared_site: Any) -> Any:
    """The module's shared app: the tests taking ``client`` only send refused or read-only requests."""
    return shared_site.app.client


async def test_unknown_route_is_not_found(client):
    assert_envelope(await client.get("/api/v1/nope"), 404, "NOT_FOUND")
    assert_envelope(await client.get("/elsewhere"), 404, "NOT_FOUND")


async def test_wrong_method_is_method_not_allowed(client):
    err = assert_envelope(await client.put("/api/v1/auth/login"), 405, "METHOD_NOT_ALLOWED")
    assert "PUT" in err["message"]


async def test_malformed_json_is_validation_failed(client):
    resp = await client.post("/api/v1/auth/login", content=b"{not json",
                             headers={"Content-Type": "application/json"})
    err = assert_envelope(resp, 400, "VALIDATION_FAILED")
    assert err["path"] == ["body"]


@pytest.mark.parametrize(("headers", "body"), [
    ({}, {"data": {"name": "formed"}}),  # application/x-www-form-urlencoded, as curl -d sends
    ({}, {"files": {"name": (None, "formed")}}),  # multipart/form-data
    ({"Content-Type": "text/plain"}, {"content": b'{"name": "formed"}'}),  # JSON text, declared plain
    ({"Content-Type": "text/plain;charset=UTF-8"}, {"content": b'{"name": "formed"}'}),
    ({"Content-Type": "application/xml"}, {"content": b"<name>formed</name>"}),
])
async def test_a_body_that_is_not_json_is_415(shared_site, headers, body):
    calls = shared_site.calls
    resp = await calls.client.post("/api/v1/collections", headers={**calls.headers, **headers}, **body)
    err = assert_envelope(resp, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert "application/json" in err["message"] and resp.headers["accept-post"] == "application/json"
    await calls.err("get", "/collections/formed", 404, "NOT_FOUND")  # nothing was written
    # A PATCH says what it takes in Accept-Patch; a public route refuses as early.
    resp = await calls.client.patch("/api/v1/site", headers={**calls.headers, **headers}, **body)
    assert_envelope(resp, 415, "UNSUPPORTED_MEDIA_TYPE")
    assert resp.headers["accept-patch"] == "application/json"
    resp = await calls.client.post("/api/v1/auth/login", headers=headers, **body)
    assert_envelope(resp, 415, "UNSUPPORTED_MEDIA_TYPE")


async def test_json_bodies_are_read_with_any_json_type_or_none(shared_site):
    calls = await shared_site.new_site()  # it writes: a site of its own
    for i, content_type in enumerate(("application/json", "application/json; charset=utf-8", "Application/JSON",
                                      "application/merge-patch+json", None)):
        headers = {**calls.headers, **({"Content-Type": content_type} if content_type else {})}
        resp = await calls.client.post("/api/v1/collections", content=b'{"name": "c%d"}' % i, headers=headers)
        assert resp.status_code == 201, (content_type, resp.text)
        assert resp.json()["data"]["name"] == f"c{i}"
    # No body at all (Content-Length: 0) is not a body of another type: the route's own answer.
    resp = await calls.client.post("/api/v1/collections", headers={**calls.headers, "Content-Type": "text/plain"})
    assert assert_envelope(resp, 400, "VALIDATION_FAILED")["message"] == "A JSON body is required"


async def test_body_of_wrong_shape(client):
    assert_envelope(await client.post("/api/v1/auth/login", json=[1, 2]), 400, "VALIDATION_FAILED")


async def test_body_too_large_is_413(make_app):
    app = await make_app(max_body_bytes=1000)
    resp = await app.client.post("/api/v1/auth/login", content=b"x" * 5000,
                                 headers={"Content-Type": "application/json"})
    assert_envelope(resp, 413, "PAYLOAD_TOO_LARGE")


async def test_body_too_large_without_content_length(make_app):
    app = await make_app(max_body_bytes=1000)

    async def chunks():
        for _ in range(10):
            yield b'{"email": "' + b"a" * 200

    resp = await app.client.post("/api/v1/auth/login", content=chunks(),
                                 headers={"Content-Type": "application/json"})
    assert_envelope(resp, 413, "PAYLOAD_TOO_LARGE")


async def test_unexpected_exception_is_internal_without_trace(make_app, caplog):
    with_plugin = await make_app(plugins=["accounts", CrashPlugin()])
    resp = await with_plugin.client.get("/api/v1/test/boom", headers={"X-Request-Id": "req-123"})
    err = assert_envelope(resp, 500, "INTERNAL")
    assert "secret-internal-detail" not in resp.text
    assert "Traceback" not in resp.text
    assert err["extensions"]["requestId"] == "req-123"
    assert resp.headers["X-Request-Id"] == "req-123"
    assert any(r.exc_info and "secret-internal-detail" in str(r.exc_info[1]) for r in caplog.records)


async def test_an_unreachable_database_is_503_with_retry_after(make_app, caplog):
    app = await make_app(plugins=["accounts", CrashPlugin()])
    resp = await app.client.get("/api/v1/test/dbgone")
    err = assert_envelope(resp, 503, "SERVICE_UNAVAILABLE")
    assert err["extensions"] == {"dependency": "database", "code": "SERVICE_UNAVAILABLE"}
    assert resp.headers["Retry-After"] == "2"
    assert "127.0.0.1" not in resp.text  # the driver's message stays in the log
    assert not any(r.exc_info for r in caplog.records)  # a warning line, not a trace


def _raised_from(exc: BaseException, cause: BaseException) -> BaseException:
    try:
        raise exc from cause
    except BaseException as wrapped:  # noqa: BLE001 - building a chain
        return wrapped


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p, s, r: p.OperationalError("connection failed: Connection refused"), "database"),
    (lambda p, s, r: p.errors.AdminShutdown("terminating connection due to administrator command"), "database"),
    (lambda p, s, r: p.errors.CannotConnectNow("the database system is starting up"), "database"),
    (lambda p, s, r: p.errors.TooManyConnections("too many clients"), "database"),
    (lambda p, s, r: s.OperationalError("SELECT 1", {}, p.OperationalError("server closed the connection")),
     "database"),
    (lambda p, s, r: s.TimeoutError("QueuePool limit reached"), "database"),
    (lambda p, s, r: _raised_from(RuntimeError("wrapped"), p.OperationalError("refused")), "database"),
    (lambda p, s, r: r.ConnectionError("Error 111 connecting"), "redis"),
    (lambda p, s, r: r.TimeoutError("Timeout reading"), "redis"),
    (lambda p, s, r: s.ProgrammingError("SELECT x", {}, p.errors.UndefinedTable("no such table")), None),
    (lambda p, s, r: s.IntegrityError("INSERT", {}, p.errors.UniqueViolation("duplicate")), None),
    (lambda p, s, r: s.OperationalError("SELECT", {}, Exception("sqlite: no such column")), None),
    (lambda p, s, r: RuntimeError("a bug"), None),
    (lambda p, s, r: r.ResponseError("WRONGTYPE"), None),
])
def test_which_errors_mean_a_dependency_is_unavailable(make, expected):
    import psycopg
    import redis.exceptions
    import sqlalchemy.exc

    from kernel.db.unavailable import unavailable_dependency

    assert unavailable_dependency(make(psycopg, sqlalchemy.exc, redis.exceptions)) == expected
async def test_a_full_storage_is_507_without_its_path(make_app, caplog):
    app = await make_app(plugins=["accounts", CrashPlugin()])
    resp = await app.client.put("/api/v1/test/boom", headers={"X-Request-Id": "req-full"})
    err = assert_envelope(resp, 507, "INSUFFICIENT_STORAGE")
    assert "secret-storage-path" not in resp.text and err["extensions"]["requestId"] == "req-full"
    # The operator's log says where, as a warning without a trace.
    logged = [r for r in caplog.records if "secret-storage-path" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelname == "WARNING" and logged[0].exc_info is None


async def test_api_error_carries_path_and_extensions(make_app):
    app = await make_app(plugins=["accounts", CrashPlugin()])
    err = assert_envelope(await app.client.post("/api/v1/test/boom"), 409, "CONFLICT")
    assert err["path"] == ["name"]
    assert err["extensions"] == {"reason": "dup", "code": "CONFLICT"}


@pytest.mark.parametrize("version", ["2", "v1", "1.1", ""])
async def test_unsupported_api_version_is_rejected(client, version):
    resp = await client.get("/api/v1/openapi.json", headers={"X-Svc-API-Version": version})
    err = assert_envelope(resp, 400, "VALIDATION_FAILED")
    assert err["path"] == ["headers", "X-Svc-API-Version"]


async def test_api_version_one_is_accepted(client):
    resp = await client.get("/api/v1/openapi.json", headers={"X-Svc-API-Version": "1"})
    assert resp.status_code == 200


async def test_deeply_nested_body_is_a_client_error(client):
    body = b"[" * 200_000 + b"]" * 200_000
    resp = await client.post("/api/v1/auth/login", content=body, headers={"Content-Type": "application/json"})
    err = assert_envelope(resp, 400, "VALIDATION_FAILED")
    assert err["path"] == ["body"]

"""An S3 store with no room: the refusals that mean a spent quota or full disks become
``StorageFull`` (507 ``INSUFFICIENT_STORAGE``), like a full local disk; other refusals stay what
they were. moto cannot be made to answer them, so the store is a local HTTP server (the
``http_receiver`` fixture) answering the PutObject with the error document the named servers
send, after checking what boto3 sent it."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError

from kernel.storage import StorageFull
from kernel.storage.s3 import S3Storage
from tests.http.test_errors import assert_envelope

BUCKET = "svc-full"


@pytest.fixture
def aws_env(monkeypatch):
    """Dummy credentials; any real AWS configuration of the machine kept out."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent/aws-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws-credentials")
    for name in ("AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def store(http_receiver):
    """The receiver, speaking HTTP/1.1: boto3 sends a PutObject with ``Expect: 100-continue``,
    which only an HTTP/1.1 handler answers (an HTTP/1.0 one costs a 1 s wait per PUT)."""
    http_receiver.httpd.RequestHandlerClass.protocol_version = "HTTP/1.1"
    return http_receiver


def error_document(code: str, key: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>refused by the test store ({code})</Message><Key>{key}</Key>"
            f"<BucketName>{BUCKET}</BucketName><Resource>/{BUCKET}/{key}</Resource>"
            "<RequestId>4442587FB7D0A2F9</RequestId><HostId>svc-test</HostId></Error>").encode()


def refusing_store(receiver: Any, key: str, status: int, code: str, expected: bytes) -> list[bytes]:
    """Answer a PUT of ``key`` in ``BUCKET`` with ``code`` at ``status``, once it checked the
    request is a signed PutObject of ``expected``; returns the list of bodies received."""
    bodies: list[bytes] = []

    def answer(request: Any) -> tuple[int, bytes, dict[str, str]]:
        assert request.method == "PUT"
        assert request.headers["Authorization"].startswith("AWS4-HMAC-SHA256 Credential=testing/")
        bodies.append(request.body)
        assert request.body == expected, request.body[:100]
        return status, error_document(code, key), {"Content-Type": "application/xml"}

    receiver.respond(f"/{BUCKET}/{key}", answer)
    return bodies


@pytest.mark.parametrize(("status", "code"), [
    (507, "XMinioStorageFull"),  # MinIO, its drives below the free-space threshold
    (400, "XMinioAdminBucketQuotaExceeded"),  # MinIO, a hard bucket quota reached
    (403, "QuotaExceeded"),  # Ceph RGW (and services on it), a user or bucket quota
    (507, "InsufficientStorage"),
    (507, "SomeVendorFull"),  # any code at 507
])
@pytest.mark.parametrize("how", ["put", "put_file"])
async def test_no_room_on_s3_is_storage_full(aws_env, store, tmp_path, status, code, how):
    storage = S3Storage(BUCKET, "tenants", endpoint_url=store.url(""), region="us-east-1")
    data = b"no room for these bytes"
    bodies = refusing_store(store, "tenants/s1/files/a.txt", status, code, data)
    with pytest.raises(StorageFull) as raised:
        if how == "put":
            await storage.put("s1/files/a.txt", data, "text/plain")
        else:
            source = tmp_path / "a.txt"
            source.write_bytes(data)
            await storage.put_file("s1/files/a.txt", source, "text/plain", move=True)
            assert source.exists()  # not stored: the caller's file is still there
    assert len(bodies) >= 1  # the store got the bytes (boto3 may retry a 5xx)
    assert code in str(raised.value) and f"s3://{BUCKET}/tenants" in str(raised.value)  # for the log


@pytest.mark.parametrize(("status", "code"), [
    (400, "EntityTooLarge"),  # one object over the per-request limit: not a full store
    (403, "AccessDenied"),
    (400, "InvalidArgument"),
])
async def test_other_s3_refusals_are_not_storage_full(aws_env, store, status, code):
    storage = S3Storage(BUCKET, endpoint_url=store.url(""), region="us-east-1")
    refusing_store(store, "s1/files/a.txt", status, code, b"bytes")
    with pytest.raises(ClientError) as raised:
        await storage.put("s1/files/a.txt", b"bytes")
    assert raised.value.response["Error"]["Code"] == code
    assert not isinstance(raised.value, StorageFull)


async def test_an_upload_to_a_full_s3_store_is_507_without_its_details(aws_env, store, make_app, caplog):
    app = await make_app(env={"SVC_STORAGE": f"s3://{BUCKET}/deploy", "SVC_S3_ENDPOINT_URL": store.url("")})
    headers = {"Authorization": f"Bearer {await app.login()}"}
    site = await app.create_site(headers)
    data = b"hello, full store"
    refusing_store(store, f"deploy/{site}/*", 507, "XMinioStorageFull", data)  # any key of the site
    resp = await app.client.put("/api/v1/files/upload/note.txt", content=data,
                                headers={**headers, "X-Svc-Site": site, "Content-Type": "text/plain"})
    err = assert_envelope(resp, 507, "INSUFFICIENT_STORAGE")
    assert "XMinio" not in resp.text and BUCKET not in resp.text and "127.0.0.1" not in resp.text
    assert "requestId" in err["extensions"]
    puts = [r for r in store.received() if r.method == "PUT"]
    assert puts and all(r.path.startswith(f"/{BUCKET}/deploy/{site}/") for r in puts)
    logged = [r for r in caplog.records if "XMinioStorageFull" in r.getMessage()]
    assert len(logged) == 1 and logged[0].levelname == "WARNING" and logged[0].exc_info is None

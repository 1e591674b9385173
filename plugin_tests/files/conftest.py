"""Fixtures of the files tests: an app with a small upload cap, on local storage and on S3
(moto's server mode, a real S3 endpoint the test starts), and the upload surfaces as a client
reaches them (each returns the answer that decides the upload)."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import pytest_asyncio

from kernel.testing import S3_TEST_BUCKET
from kernel.testing import shared as testing_shared

CAP = 200_000
FILES_ENV = {"FILE_UPLOAD_MAX_BYTES": str(CAP), "SVC_OUTBOUND_ALLOW_NETWORKS": "127.0.0.1/32"}


def _storage_env(request) -> dict[str, str]:
    """The files tests' settings on ``request.param``'s storage (S3: a prefix of the bucket's own)."""
    env = dict(FILES_ENV)
    if request.param == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        env.update(SVC_STORAGE=f"s3://{S3_TEST_BUCKET}/t-{uuid.uuid4().hex}", SVC_S3_ENDPOINT_URL=endpoint)
    return env


@pytest_asyncio.fixture(params=["local", "s3"])
async def svc_app(request, make_app):
    """The app of the files tests, once per storage backend."""
    return await make_app(env=_storage_env(request))


@pytest.fixture(params=["local", "s3"])
def files_env(request) -> dict[str, str]:
    """The files tests' settings, once per storage backend: for a test of a module on a shared app
    that needs an app of its own (``testing_shared.own_app(make_app, env=files_env)``)."""
    return _storage_env(request)


def shared_site_on_each_storage():
    """A module's ``shared_site`` on the files tests' settings, once per storage backend (the
    ``[local]`` and ``[s3]`` of ``svc_app``): ``shared_site = shared_site_on_each_storage()`` with
    ``kernel.testing.shared``'s ``svc_app``, ``site``... gives each test a new site of the module's
    app on each storage (two apps for the module instead of two per test)."""
    return testing_shared.shared_site_started_with(
        lambda request: {"env": _storage_env(request)}, params=["local", "s3"]
    )


class Surfaces:
    """Every upload surface, for one site and one set of credentials."""

    NAMES = ("put", "media", "signed", "register", "import")

    def __init__(self, app: Any, site: str, headers: dict[str, str], receiver: Any = None) -> None:
        self.app, self.site, self.headers, self.receiver = app, site, headers, receiver

    @property
    def client(self) -> httpx.AsyncClient:
        return self.app.client

    async def upload(self, surface: str, name: str, mime: str, data: bytes) -> httpx.Response:
        return await getattr(self, f"via_{surface}")(name, mime, data)

    async def via_put(self, name: str, mime: str, data: bytes) -> httpx.Response:
        return await self.client.put(f"/api/v1/files/upload/{name}", content=data,
                                     headers={**self.headers, "Content-Type": mime})

    async def via_media(self, name: str, mime: str, data: bytes) -> httpx.Response:
        return await self.client.post(f"/api/v1/media/{name}", content=data,
                                      headers={**self.headers, "Content-Type": mime})

    async def upload_url(self, name: str, mime: str) -> httpx.Response:
        return await self.client.post("/api/v1/files/upload-url", json={"filename": name, "contentType": mime},
                                      headers=self.headers)

    async def via_signed(self, name: str, mime: str, data: bytes) -> httpx.Response:
        """The presigned flow with the bytes PUT to the signed URL (the guard runs there), then
        registered."""
        reserved = await self.upload_url(name, mime)
        if reserved.status_code != 201:
            return reserved
        url = reserved.json()["data"]["url"]
        if url.startswith("http://testserver/"):  # local storage: svc's own signed URL, guarded at the PUT
            put = await self.client.put(url, content=data, headers={"Content-Type": mime})
            if put.status_code != 204:
                return put
        else:  # S3: the store's own presigned URL; svc first sees the bytes at POST /files
            async with httpx.AsyncClient() as outside:
                put = await outside.put(url, content=data, headers={"Content-Type": mime})
            assert put.status_code == 200, put.text
        return await self.client.post("/api/v1/files", json={"key": reserved.json()["data"]["key"]},
                                      headers=self.headers)

    async def via_register(self, name: str, mime: str, data: bytes) -> httpx.Response:
        """The presigned flow with the bytes put straight into storage (as a client does on S3,
        where svc never sees them), then ``POST /files``: the guard runs on the stored object."""
        reserved = await self.upload_url(name, mime)
        if reserved.status_code != 201:
            return reserved
        token = reserved.json()["data"]["key"]
        await self.app.kernel.storage.put(f"{self.site}/uploads/{token}", data, mime)
        return await self.client.post("/api/v1/files", json={"key": token}, headers=self.headers)

    async def via_import(self, name: str, mime: str, data: bytes) -> httpx.Response:
        url = self.receiver.serve_raw(f"/{uuid.uuid4().hex[:8]}/{name}", data, content_type=mime)
        return await self.client.post("/api/v1/files/import", json={"url": url}, headers=self.headers)


@pytest.fixture
def surfaces(svc_app, site, site_headers, http_receiver) -> Surfaces:
    return Surfaces(svc_app, site, site_headers, http_receiver)


def error_code(resp: httpx.Response) -> str:
    return resp.json()["errors"][0]["code"]

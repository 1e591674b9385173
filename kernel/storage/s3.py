"""S3 storage (AWS or any S3-compatible store: MinIO, R2, moto).

Credentials come from boto3's usual chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``,
profiles, instance roles); they never appear in the storage URL. One client is created per
storage and shared by the worker threads that run the blocking boto3 calls (boto3 clients are
thread-safe).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from kernel.storage.base import (
    ObjectNotFound,
    Storage,
    StorageFull,
    check_range,
    validate_key,
    validate_prefix,
)

_NOT_FOUND_CODES = {"NoSuchKey", "404", "NotFound"}

# The refusals that mean "no room for these bytes", like ENOSPC or EDQUOT on a disk: a quota
# used up (Ceph RGW, and the S3 services built on it, answer QuotaExceeded with 403; MinIO's hard
# bucket quota XMinioAdminBucketQuotaExceeded with 400) or the store's disks full (MinIO's
# XMinioStorageFull, with HTTP 507, as a WebDAV-style store answers any code). Not EntityTooLarge:
# that is one request over the per-object limit (5 GB for a single PUT), a client's error with
# room left; nor AccessDenied, which some services also use for a spent quota, but which far more
# often means a policy or credentials fault the operator must see as such.
_NO_ROOM_CODES = frozenset({"QuotaExceeded", "XMinioAdminBucketQuotaExceeded", "XMinioStorageFull",
                            "InsufficientStorage"})
_INSUFFICIENT_STORAGE = 507


def _is_not_found(exc: ClientError) -> bool:
    return str(exc.response.get("Error", {}).get("Code")) in _NOT_FOUND_CODES


def _no_room(exc: BaseException) -> ClientError | None:
    """The ``ClientError`` in ``exc`` (or the one boto3's transfer raised it while handling:
    ``S3UploadFailedError`` keeps only its text) that says the store has no room, else None."""
    for candidate in (exc, exc.__cause__, exc.__context__):
        if isinstance(candidate, ClientError):
            code = str(candidate.response.get("Error", {}).get("Code"))
            status = candidate.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            if code in _NO_ROOM_CODES or status == _INSUFFICIENT_STORAGE:
                return candidate
    return None


class S3Storage(Storage):
    """Objects in ``bucket``, every key under ``prefix`` (a folder-like string, may be empty)."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        region: str | None = None,
    ) -> None:
        if not bucket:
            raise ValueError("S3Storage needs a bucket name")
        self.bucket = bucket
        prefix = prefix.strip("/")
        if prefix:
            validate_prefix(prefix)
        self.prefix = f"{prefix}/" if prefix else ""
        self.endpoint_url = endpoint_url or None
        config = Config(
            signature_version="s3v4",
            retries={"max_attempts": 3, "mode": "standard"},
            # S3-compatible servers on a custom endpoint (MinIO, moto, localhost) rarely
            # resolve bucket subdomains; path-style addressing works on all of them.
            s3={"addressing_style": "path" if self.endpoint_url else "auto"},
        )
        self._client: Any = boto3.client(
            "s3", endpoint_url=self.endpoint_url, region_name=region, config=config
        )

    def describe(self) -> str:
        where = f"s3://{self.bucket}/{self.prefix.rstrip('/')}".rstrip("/")
        return f"{where} ({self.endpoint_url})" if self.endpoint_url else where

    def _full(self, key: str) -> str:
        return self.prefix + validate_key(key)

    async def _call(self, method: str, **kwargs: Any) -> Any:
        return await asyncio.to_thread(getattr(self._client, method), **kwargs)

    async def _write(self, method: str, **kwargs: Any) -> None:
        """A call that stores bytes: a refusal for want of room is ``StorageFull`` (507 to the
        client, which never sees the store's code or bucket; the log does)."""
        try:
            await self._call(method, **kwargs)
        except Exception as exc:
            refusal = _no_room(exc)
            if refusal is None:
                raise
            error = refusal.response.get("Error", {})
            raise StorageFull(f"{self.describe()} has no room: {error.get('Code')} "
                              f"({error.get('Message') or 'no message'})") from exc

    async def put(self, key: str, data: bytes, content_type: str | None = None) -> None:
        """Store ``data`` under ``key`` (a single PUT, atomic on S3)."""
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self._full(key), "Body": bytes(data)}
        if content_type:
            kwargs["ContentType"] = content_type
        await self._write("put_object", **kwargs)

    async def put_file(self, key: str, path: str | os.PathLike[str], content_type: str | None = None, *,
                       move: bool = False) -> None:
        """Store the local file ``path`` under ``key`` through boto3's managed transfer
        (multipart above its threshold, read in parts, never whole in memory); ``move=True``
        deletes the local file afterwards."""
        extra = {"ContentType": content_type} if content_type else None
        await self._write("upload_file", Filename=os.fspath(path), Bucket=self.bucket, Key=self._full(key),
                          ExtraArgs=extra)
        if move:
            os.unlink(path)

    async def get(self, key: str) -> bytes:
        """The object's bytes; ``ObjectNotFound`` when there is none."""
        full = self._full(key)

        def read() -> bytes:
            try:
                response = self._client.get_object(Bucket=self.bucket, Key=full)
            except ClientError as exc:
                if _is_not_found(exc):
                    raise ObjectNotFound(key) from None
                raise
            with response["Body"] as body:
                data: bytes = body.read()
            return data

        return await asyncio.to_thread(read)

    async def iter_chunks(self, key: str, chunk_size: int = 1024 * 1024, *, start: int = 0,
                          length: int | None = None) -> AsyncIterator[bytes]:
        """The object's body (or ``length`` bytes of it from ``start``: one ranged GET, so S3
        sends only those) in chunks, each read in a worker thread (one GET, streamed)."""
        start, length = check_range(start, length)
        full = self._full(key)
        if length == 0:  # S3 cannot name an empty range: only say whether the object is there
            await self.size(key)
            return
        ranged = {"Range": f"bytes={start}-{'' if length is None else start + length - 1}"} \
            if start or length is not None else {}

        def open_body() -> Any:
            try:
                return self._client.get_object(Bucket=self.bucket, Key=full, **ranged)["Body"]
            except ClientError as exc:
                if _is_not_found(exc):
                    raise ObjectNotFound(key) from None
                if ranged and str(exc.response.get("Error", {}).get("Code")) == "InvalidRange":
                    return None  # a start at or past the end: nothing, as a slice gives
                raise

        body = await asyncio.to_thread(open_body)
        if body is None:
            return
        try:
            while chunk := await asyncio.to_thread(body.read, chunk_size):
                yield chunk
        finally:
            body.close()

    async def delete(self, key: str) -> None:
        """Remove the object; S3 deletes are idempotent already."""
        await self._call("delete_object", Bucket=self.bucket, Key=self._full(key))

    async def _head(self, key: str) -> dict[str, Any] | None:
        try:
            head: dict[str, Any] = await self._call("head_object", Bucket=self.bucket, Key=self._full(key))
            return head
        except ClientError as exc:
            if _is_not_found(exc):
                return None
            raise

    async def exists(self, key: str) -> bool:
        """Whether an object is stored under ``key`` (a HEAD request)."""
        return await self._head(key) is not None

    async def size(self, key: str) -> int:
        """The object's length in bytes."""
        head = await self._head(key)
        if head is None:
            raise ObjectNotFound(key)
        return int(head["ContentLength"])

    async def list(self, prefix: str = "") -> list[str]:
        """Every key starting with ``prefix``, sorted; pages through ListObjectsV2."""
        validate_prefix(prefix)
        full_prefix = self.prefix + prefix
        cut = len(self.prefix)

        def collect() -> list[str]:
            keys: list[str] = []
            paginator = self._client.get_paginator("list_objects_v2")
            for page in paginator.paginate(Bucket=self.bucket, Prefix=full_prefix):
                keys.extend(obj["Key"][cut:] for obj in page.get("Contents", ()))
            return sorted(keys)

        return await asyncio.to_thread(collect)

    async def presigned_put_url(
        self, key: str, expires: int = 900, content_type: str | None = None
    ) -> str | None:
        """A URL valid for ``expires`` seconds; a client PUTs the bytes to it directly.

        When ``content_type`` is given it is part of the signature, so the upload must send
        the same ``Content-Type`` header.
        """
        params: dict[str, Any] = {"Bucket": self.bucket, "Key": self._full(key)}
        if content_type:
            params["ContentType"] = content_type
        return await asyncio.to_thread(
            self._client.generate_presigned_url,
            "put_object",
            Params=params,
            ExpiresIn=int(expires),
            HttpMethod="PUT",
        )

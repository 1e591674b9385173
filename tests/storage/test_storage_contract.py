"""One contract, every storage backend: local files and S3 (moto's server mode as the peer).

Each test takes the parametrized ``storage`` fixture and runs once per backend; tests that
exercise one backend's own promises (the local root, S3 prefixes) sit at the end.
"""

from __future__ import annotations

import asyncio
import os
import urllib.request
import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernel.storage import (
    LocalStorage,
    ObjectNotFound,
    S3Storage,
    Storage,
    StorageError,
    make_storage,
)
from kernel.testing import S3_TEST_BUCKET as BUCKET


@pytest.fixture(params=["local", "s3"])
def storage(request, tmp_path) -> Storage:
    """Each backend, empty: a fresh root for local, a fresh prefix in the bucket for S3."""
    if request.param == "local":
        return LocalStorage(tmp_path / "files")
    endpoint = request.getfixturevalue("s3_endpoint")
    return S3Storage(BUCKET, prefix=f"t-{uuid.uuid4().hex}", endpoint_url=endpoint, region="us-east-1")


# -- the contract --------------------------------------------------------------------------


async def test_put_then_get_returns_the_bytes(storage):
    data = bytes(range(256)) * 1024
    await storage.put("site-1/files/blob.bin", data, "application/octet-stream")
    assert await storage.get("site-1/files/blob.bin") == data
    assert await storage.size("site-1/files/blob.bin") == len(data)
    assert await storage.exists("site-1/files/blob.bin")


async def test_put_file_stores_a_local_file(storage, tmp_path):
    source = tmp_path / "upload.bin"
    data = os.urandom(3 * 1024 * 1024 + 17)  # above one copy chunk (and moto takes it in one part)
    source.write_bytes(data)
    await storage.put_file("site-1/files/big.bin", source, "application/octet-stream")
    assert await storage.get("site-1/files/big.bin") == data
    assert source.read_bytes() == data  # the source is copied, not moved
    with pytest.raises(StorageError):
        await storage.put_file("../escape", source)
    # move=True: the object holds the bytes and the local file is gone (renamed, or copied and removed).
    await storage.put_file("site-1/files/moved.bin", source, move=True)
    assert await storage.get("site-1/files/moved.bin") == data and not source.exists()


async def test_iter_chunks_streams_the_object(storage):
    data = os.urandom(2 * 1024 * 1024 + 5)
    await storage.put("site-1/files/stream.bin", data)
    chunks = [c async for c in storage.iter_chunks("site-1/files/stream.bin", chunk_size=1024 * 1024)]
    assert b"".join(chunks) == data and max(len(c) for c in chunks) <= 1024 * 1024 and len(chunks) >= 3
    with pytest.raises(ObjectNotFound):
        [c async for c in storage.iter_chunks("site-1/files/missing.bin")]


async def test_iter_chunks_reads_a_range(storage):
    data = os.urandom(2 * 1024 * 1024 + 5)
    await storage.put("site-1/files/range.bin", data)

    async def read(**kw) -> list[bytes]:
        return [c async for c in storage.iter_chunks("site-1/files/range.bin", chunk_size=512 * 1024, **kw)]

    middle = await read(start=1000, length=1024 * 1024 + 3)
    assert b"".join(middle) == data[1000:1000 + 1024 * 1024 + 3]
    assert max(len(c) for c in middle) <= 512 * 1024 and len(middle) == 3
    assert b"".join(await read(start=len(data) - 7)) == data[-7:]  # to the end
    assert b"".join(await read(length=10)) == data[:10]
    assert b"".join(await read(start=len(data) - 1, length=1)) == data[-1:]
    # Clipped as a slice is: past the end is short, at or after the end is nothing.
    assert b"".join(await read(start=len(data) - 4, length=100)) == data[-4:]
    assert await read(start=len(data)) == [] and await read(start=len(data) + 50, length=3) == []
    assert await read(start=5, length=0) == []
    for bad in ({"start": -1}, {"length": -2}, {"start": 1.5}, {"start": True}):
        with pytest.raises(ValueError):
            await read(**bad)
    for kw in ({}, {"start": 3}, {"length": 0}, {"start": 2, "length": 2}):
        with pytest.raises(ObjectNotFound):
            [c async for c in storage.iter_chunks("site-1/files/missing.bin", **kw)]


async def test_s3_iter_chunks_asks_s3_for_the_range_only(s3_endpoint):
    """A range is one ranged GET: S3 sends the asked bytes, the whole object never crosses."""
    storage = S3Storage(BUCKET, prefix=f"t-{uuid.uuid4().hex}", endpoint_url=s3_endpoint, region="us-east-1")
    data = os.urandom(300_000)
    await storage.put("r/blob", data)
    sent: list[tuple[str | None, int]] = []

    def seen(http_response, parsed, model, **_):
        if model.name == "GetObject":
            sent.append((http_response.headers.get("content-range"), int(http_response.headers["content-length"])))

    storage._client.meta.events.register("after-call.s3.GetObject", seen)
    got = b"".join([c async for c in storage.iter_chunks("r/blob", start=100_000, length=1000)])
    assert got == data[100_000:101_000]
    assert sent == [(f"bytes 100000-100999/{len(data)}", 1000)]


async def test_put_replaces_an_existing_object(storage):
    await storage.put("a.txt", b"first")
    await storage.put("a.txt", b"second, longer")
    assert await storage.get("a.txt") == b"second, longer"
    assert await storage.size("a.txt") == len(b"second, longer")


async def test_empty_object(storage):
    await storage.put("empty", b"")
    assert await storage.get("empty") == b""
    assert await storage.size("empty") == 0
    assert await storage.exists("empty")


async def test_unicode_and_spaces_in_keys(storage):
    key = "site 1/Überschrift – été/naïve file.txt"
    await storage.put(key, b"x", "text/plain")
    assert await storage.get(key) == b"x"
    assert await storage.list("site 1/") == [key]


async def test_missing_object(storage):
    assert not await storage.exists("nope/missing.txt")
    with pytest.raises(ObjectNotFound):
        await storage.get("nope/missing.txt")
    with pytest.raises(ObjectNotFound):
        await storage.size("nope/missing.txt")


async def test_delete_is_idempotent(storage):
    await storage.put("d/x", b"1")
    await storage.delete("d/x")
    assert not await storage.exists("d/x")
    await storage.delete("d/x")
    await storage.delete("never/there")
    with pytest.raises(ObjectNotFound):
        await storage.get("d/x")


async def test_list_is_sorted_and_filtered_by_prefix(storage):
    keys = ["b/2.txt", "a/1.txt", "a/sub/3.txt", "ab.txt", "a/0.txt"]
    for key in keys:
        await storage.put(key, key.encode())
    assert await storage.list() == sorted(keys)
    assert await storage.list("a/") == ["a/0.txt", "a/1.txt", "a/sub/3.txt"]
    # A prefix is a plain string prefix, not a folder: 'a' also matches 'ab.txt'.
    assert await storage.list("a") == ["a/0.txt", "a/1.txt", "a/sub/3.txt", "ab.txt"]
    assert await storage.list("a/sub/") == ["a/sub/3.txt"]
    assert await storage.list("a/s") == ["a/sub/3.txt"]
    assert await storage.list("zzz/") == []
    await storage.delete("a/sub/3.txt")
    assert await storage.list("a/") == ["a/0.txt", "a/1.txt"]


async def test_list_of_empty_storage(storage):
    assert await storage.list() == []


async def test_concurrent_writes_leave_one_whole_object(storage):
    payloads = [bytes([i]) * 50_000 for i in range(8)]
    await asyncio.gather(*(storage.put("race.bin", p) for p in payloads))
    assert await storage.get("race.bin") in payloads


async def test_check_does_a_round_trip_and_cleans_up(storage):
    assert await storage.check() == "ok"
    assert await storage.list() == []


async def test_describe_names_the_backend(storage):
    text = storage.describe()
    assert text.startswith("local:") or text.startswith(f"s3://{BUCKET}/t-")
    assert "testing" not in text


BAD_KEYS = [
    "",
    "/absolute",
    "../escape",
    "a/../../escape",
    "a/..",
    "..",
    "a//b",
    "a/./b",
    "./a",
    "trailing/",
    "back\\slash",
    "nul\x00byte",
    "new\nline",
    ".svc-tmp/x",
    "k" * 1025,
]


@pytest.mark.parametrize("key", BAD_KEYS, ids=repr)
async def test_invalid_keys_are_refused(storage, key):
    for call in (
        lambda: storage.put(key, b"x"),
        lambda: storage.get(key),
        lambda: storage.delete(key),
        lambda: storage.exists(key),
        lambda: storage.size(key),
        lambda: storage.presigned_put_url(key),
    ):
        with pytest.raises(StorageError):
            await call()
    assert await storage.list() == []


async def test_storage_error_is_a_value_error(storage):
    with pytest.raises(ValueError):
        await storage.put("../x", b"x")


async def test_longest_key_is_accepted(storage):
    key = "/".join(["k" * 99] * 10) + "/" + "k" * 23
    assert len(key) == 1023
    key += "k"
    # 1024 characters with segments short enough for any file system (255 bytes each).
    await storage.put(key, b"x")
    assert await storage.get(key) == b"x"


@pytest.mark.parametrize("prefix", ["/abs", "../", "a/../", "a//", "x\\y", "n\x00"], ids=repr)
async def test_invalid_prefixes_are_refused(storage, prefix):
    with pytest.raises(StorageError):
        await storage.list(prefix)


async def test_presigned_put_url(storage):
    url = await storage.presigned_put_url("up/photo.jpg", expires=60, content_type="image/jpeg")
    if isinstance(storage, LocalStorage):
        assert url is None
        return
    assert url and url.startswith("http")

    def upload() -> int:
        req = urllib.request.Request(
            url, data=b"jpeg-bytes", method="PUT", headers={"Content-Type": "image/jpeg"}
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status

    assert await asyncio.to_thread(upload) == 200
    assert await storage.get("up/photo.jpg") == b"jpeg-bytes"


# -- local storage: the root is a wall -----------------------------------------------------


async def test_local_never_follows_a_symlink_out_of_the_root(tmp_path):
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_bytes(b"secret")
    root.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    store = LocalStorage(root)
    with pytest.raises(StorageError):
        await store.get("link/secret.txt")
    with pytest.raises(StorageError):
        await store.put("link/new.txt", b"x")
    with pytest.raises(StorageError):
        await store.delete("link/secret.txt")
    assert sorted(p.name for p in outside.iterdir()) == ["secret.txt"]
    assert (outside / "secret.txt").read_bytes() == b"secret"


async def test_local_writes_stay_inside_the_root_and_leave_no_temp_files(tmp_path):
    store = LocalStorage(tmp_path / "files")
    await store.put("a/b/c.txt", b"x")
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert files == [tmp_path / "files" / "a" / "b" / "c.txt"]
    assert await store.list() == ["a/b/c.txt"]


async def test_local_delete_prunes_empty_directories(tmp_path):
    store = LocalStorage(tmp_path / "files")
    await store.put("x/y/z.txt", b"1")
    await store.put("x/keep.txt", b"2")
    await store.delete("x/y/z.txt")
    assert not (tmp_path / "files" / "x" / "y").exists()
    assert (tmp_path / "files" / "x" / "keep.txt").exists()


async def test_local_file_and_directory_of_the_same_name_conflict(tmp_path):
    store = LocalStorage(tmp_path / "files")
    await store.put("a", b"file")
    with pytest.raises(StorageError):
        await store.put("a/b", b"nested")
    await store.put("c/d", b"nested")
    with pytest.raises(StorageError):
        await store.put("c", b"file")
    with pytest.raises(ObjectNotFound):
        await store.get("c")
    assert await store.list() == ["a", "c/d"]


# -- S3: the prefix is a wall --------------------------------------------------------------


async def test_s3_prefixes_keep_storages_apart(s3_endpoint):
    one = S3Storage(BUCKET, prefix=f"p-{uuid.uuid4().hex}/one", endpoint_url=s3_endpoint)
    two = S3Storage(BUCKET, prefix=f"{one.prefix.rstrip('/')}-two", endpoint_url=s3_endpoint)
    await one.put("k", b"1")
    await two.put("k", b"2")
    assert await one.list() == ["k"]
    assert await two.list() == ["k"]
    assert await one.get("k") == b"1"
    await one.delete("k")
    assert await two.get("k") == b"2"


# -- make_storage --------------------------------------------------------------------------


def _settings(storage: str, tmp_path: Path, endpoint: str = "") -> SimpleNamespace:
    return SimpleNamespace(storage=storage, s3_endpoint_url=endpoint, data_path=tmp_path)


def test_make_storage_defaults_to_files_in_the_data_dir(tmp_path):
    store = make_storage(_settings("", tmp_path))
    assert isinstance(store, LocalStorage)
    assert store.root == (tmp_path / "files").resolve()


def test_make_storage_file_url(tmp_path):
    store = make_storage(_settings(f"file://{tmp_path}/blobs", tmp_path))
    assert isinstance(store, LocalStorage)
    assert store.describe() == f"local:{tmp_path.resolve()}/blobs"


def test_make_storage_s3_url(tmp_path):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
        store = make_storage(_settings("s3://bucket/some/prefix/", tmp_path, "http://127.0.0.1:1"))
    assert isinstance(store, S3Storage)
    assert (store.bucket, store.prefix, store.endpoint_url) == (
        "bucket",
        "some/prefix/",
        "http://127.0.0.1:1",
    )
    assert store.describe() == "s3://bucket/some/prefix (http://127.0.0.1:1)"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://host/x",
        "file://relative/path",
        "file:relative",
        "s3://",
        "s3:///prefix-only",
        "s3://key:secret@bucket/x",
        "/just/a/path",
        "s3://bucket/../x",
    ],
)
def test_make_storage_refuses_bad_urls_naming_the_variable(tmp_path, url):
    with pytest.raises(ValueError, match="SVC_STORAGE") as info:
        make_storage(_settings(url, tmp_path))
    assert "secret" not in str(info.value)
    assert not os.path.exists(tmp_path / "files")

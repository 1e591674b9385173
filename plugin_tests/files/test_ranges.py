"""HTTP Range on ``/assets/{id}``, ``/assets/{site_id}/{id}`` and ``GET /media/{key}``
(docs/files.md#range-requests), on local storage and on S3: ``Accept-Ranges`` on every answer,
one range answered 206 with ``Content-Range`` and the exact ``Content-Length``, 416
``RANGE_NOT_SATISFIABLE`` with ``Content-Range: bytes */SIZE``, ``If-Range``, several ranges
answered whole, the same permissions and caching headers; a range of a transform is a range of
the derivative's bytes."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from kernel import ApiError
from kernel.testing import shared as testing_shared
from plugins.files.assets import ranges

from .conftest import shared_site_on_each_storage
from .corpus import gradient_jpeg, uploaded

# Every test uploads and reads in a site of its own: they share the module's app on each storage,
# each in a new site of it (kernel/testing/shared.py).
shared_site = shared_site_on_each_storage()
svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
site = testing_shared.site

API = "/api/v1"


def _pdf(size: int) -> bytes:
    """A PDF of exactly ``size`` bytes (the guard checks its magic number only)."""
    head, tail = b"%PDF-1.4\n%", b"\n%%EOF\n"
    body = bytes(32 + (i * 7919) % 90 for i in range(size - len(head) - len(tail)))
    return head + body + tail


PDF = _pdf(150_000)  # below the files tests' upload cap, above none: every range streams


def _headers(answer) -> dict[str, str | None]:
    return {
        name: answer.headers.get(name)
        for name in ("content-type", "cache-control", "etag", "content-disposition", "x-content-type-options")
    }


async def test_one_range_of_an_original_is_206_with_exact_bytes(svc_app, calls, site):
    client = svc_app.client
    record = await uploaded(calls, "report.pdf", PDF, "application/pdf")
    etag, size = f'"{record["checksum"]}"', len(PDF)
    urls = {
        "id": (f"{API}/assets/{record['id']}", calls.headers),
        "path": (f"{API}/assets/{site}/{record['id']}", calls.headers),
        "media": (f"{API}/media/report.pdf", calls.headers),
    }
    for name, (url, headers) in urls.items():
        whole = await client.get(url, headers=headers)
        assert whole.status_code == 200 and whole.content == PDF, name
        assert whole.headers["accept-ranges"] == "bytes" and whole.headers["etag"] == etag
        assert "content-range" not in whole.headers
        for spec, first, last in (
            ("bytes=0-99", 0, 99),
            ("bytes=1000-", 1000, size - 1),
            ("bytes=-500", size - 500, size - 1),
            ("bytes=149990-999999", 149_990, size - 1),
            ("bytes=-999999", 0, size - 1),
            ("bytes=7-7", 7, 7),
        ):
            part = await client.get(url, headers={**headers, "Range": spec})
            assert part.status_code == 206, (name, spec, part.text)
            assert part.headers["content-range"] == f"bytes {first}-{last}/{size}", (name, spec)
            assert part.headers["content-length"] == str(last - first + 1)
            assert part.content == PDF[first : last + 1], (name, spec)
            assert part.headers["accept-ranges"] == "bytes"
            assert _headers(part) == _headers(whole), (name, spec)  # same type, caching, ETag, nosniff
            # If-Range with the current ETag honours the range; an old, a weak one or a date gets it whole.
            kept = await client.get(url, headers={**headers, "Range": spec, "If-Range": etag})
            assert (kept.status_code, kept.content) == (206, PDF[first : last + 1])
        for stale in ('"0000"', f"W/{etag}", "Sat, 05 Dec 2026 00:00:00 GMT"):
            full = await client.get(url, headers={**headers, "Range": "bytes=0-9", "If-Range": stale})
            assert (full.status_code, full.content) == (200, PDF), (name, stale)
            assert "content-range" not in full.headers
        # Several ranges, another unit, a malformed or reversed range: the whole 200.
        for spec in ("bytes=0-9,20-29", "items=0-9", "bytes=abc", "bytes=9-3", "bytes=-"):
            full = await client.get(url, headers={**headers, "Range": spec})
            assert (full.status_code, full.content) == (200, PDF), (name, spec)
        # A range starting at or past the end: 416 in the error envelope, with the size.
        for spec in (f"bytes={size}-", f"bytes={size + 10}-{size + 20}", "bytes=-0"):
            refused = await client.get(url, headers={**headers, "Range": spec})
            assert refused.status_code == 416, (name, spec, refused.text)
            assert refused.json()["errors"][0]["code"] == "RANGE_NOT_SATISFIABLE"
            assert refused.headers["content-range"] == f"bytes */{size}"
            assert refused.headers["accept-ranges"] == "bytes"
        # If-None-Match still answers 304 first (a conditional before the range).
        cached = await client.get(url, headers={**headers, "Range": "bytes=0-9", "If-None-Match": etag})
        assert (cached.status_code, cached.content) == (304, b"")
        assert cached.headers["accept-ranges"] == "bytes"


async def test_ranges_keep_the_permissions_of_the_route(svc_app, calls, anon_calls, site):
    client = svc_app.client
    record = await uploaded(calls, "hidden.pdf", PDF, "application/pdf")
    for url, headers in (
        (f"{API}/assets/{record['id']}", anon_calls.headers),
        (f"{API}/assets/{site}/{record['id']}", {}),
        (f"{API}/media/hidden.pdf", anon_calls.headers),
    ):
        refused = await client.get(url, headers={**headers, "Range": "bytes=0-9"})
        assert refused.status_code == 403 and refused.json()["errors"][0]["code"] == "PERMISSION_DENIED", url
        assert "content-range" not in refused.headers and PDF[:10] not in refused.content
        # Even an unsatisfiable range says nothing of the size to a caller who may not read the file.
        blind = await client.get(url, headers={**headers, "Range": "bytes=999999999-"})
        assert blind.status_code == 403 and "content-range" not in blind.headers
    await calls.ok(
        "post", "/roles/public/permissions", status=201, json={"collection": "*", "action": "media:read"}
    )
    svc_app.kernel.access.invalidate(site)
    part = await client.get(f"{API}/assets/{site}/{record['id']}", headers={"Range": "bytes=10-19"})
    assert (part.status_code, part.content) == (206, PDF[10:20])
    assert part.headers["cache-control"] == "public, max-age=86400"


async def test_a_range_of_a_transform_is_a_range_of_the_derivative(svc_app, calls, site):
    client = svc_app.client
    photo = await uploaded(calls, "photo.jpg", gradient_jpeg((400, 200)))
    url, params = f"{API}/assets/{site}/{photo['id']}", {"width": 100, "format": "png"}
    whole = await client.get(url, params=params, headers=calls.headers)
    derivative = whole.content
    assert whole.status_code == 200 and Image.open(io.BytesIO(derivative)).size == (100, 50)
    assert whole.headers["accept-ranges"] == "bytes"
    assert whole.headers["etag"] != f'"{photo["checksum"]}"'  # the derivative's own ETag
    size = len(derivative)
    for spec, first, last in (
        ("bytes=0-15", 0, 15),
        ("bytes=-20", size - 20, size - 1),
        ("bytes=30-", 30, size - 1),
    ):
        part = await client.get(url, params=params, headers={**calls.headers, "Range": spec})
        assert part.status_code == 206, part.text
        assert part.headers["content-range"] == f"bytes {first}-{last}/{size}"
        assert part.content == derivative[first : last + 1] and part.headers["content-type"] == "image/png"
        assert part.headers["etag"] == whole.headers["etag"]
    # If-Range names the derivative's ETag; the original's is another representation: whole.
    kept = await client.get(
        url, params=params, headers={**calls.headers, "Range": "bytes=0-3", "If-Range": whole.headers["etag"]}
    )
    assert (kept.status_code, kept.content) == (206, derivative[:4])
    other = await client.get(
        url,
        params=params,
        headers={**calls.headers, "Range": "bytes=0-3", "If-Range": f'"{photo["checksum"]}"'},
    )
    assert (other.status_code, other.content) == (200, derivative)
    refused = await client.get(url, params=params, headers={**calls.headers, "Range": f"bytes={size}-"})
    assert refused.status_code == 416 and refused.headers["content-range"] == f"bytes */{size}"
    # /media with transform parameters redirects (302) before any range; it still says Accept-Ranges.
    moved = await client.get(
        f"{API}/media/photo.jpg", params=params, headers={**calls.headers, "Range": "bytes=0-3"}
    )
    assert moved.status_code == 302 and moved.headers["accept-ranges"] == "bytes"


def test_the_range_parser():
    etag = '"abc"'
    cases = {
        "bytes=0-0": (0, 0),
        "bytes=5-": (5, 9),
        "bytes=-3": (7, 9),
        "bytes=-30": (0, 9),
        "bytes=2-200": (2, 9),
        " BYTES = 1 - 2 ": (1, 2),
        "bytes=0-9,": None,
        "bytes=1-2, 4-5": None,
        "bytes=3-1": None,
        "bytes=x-": None,
        "bits=0-1": None,
        "": None,
        "bytes=-": None,
        "bytes=+1-2": None,
    }
    for header, expected in cases.items():
        assert ranges.wanted(header, None, etag, 10) == expected, header
    assert ranges.wanted("bytes=0-1", etag, etag, 10) == (0, 1)
    assert ranges.wanted("bytes=0-1", '"other"', etag, 10) is None
    for header in ("bytes=10-", "bytes=-0", "bytes=99999999999999999999999999-"):
        with pytest.raises(ApiError) as raised:
            ranges.wanted(header, None, etag, 10)
        assert (raised.value.status, raised.value.code, raised.value.headers) == (
            416,
            "RANGE_NOT_SATISFIABLE",
            {"Content-Range": "bytes */10"},
        ), header
    # Zero bytes (the upload guard refuses empty files; a derivative is never empty): a suffix
    # names the whole empty representation, a first position nothing.
    assert ranges.wanted("bytes=-5", None, etag, 0) is None
    with pytest.raises(ApiError) as raised:
        ranges.wanted("bytes=0-", None, etag, 0)
    assert raised.value.headers == {"Content-Range": "bytes */0"}

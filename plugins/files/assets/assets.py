"""What ``GET /assets/{id}`` and ``GET /media/{key}`` answer: the original or a derivative,
with its ETag (a ``304`` needs no storage read at all), type and disposition. Originals above
1 MiB are streamed from storage in chunks, never held whole, and so is one byte range of any
original (``ranges.wanted``); a range of a derivative is cut from its bytes.

``X-Content-Type-Options: nosniff`` is always sent; anything but a raster image is served as
an attachment (SVG included, with a sandboxing CSP besides), and ``/media`` serves everything
as an attachment.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import quote

from kernel import ApiError
from kernel.storage import ObjectNotFound
from plugins.files.assets import ranges, transforms
from plugins.files.errors import not_found
from plugins.files.service import derivatives_prefix
from plugins.files.tables import presets
from plugins.files.uploads.catalogue import BY_MIME

MEMORY = "files.derivative_memory"


STREAM_ABOVE = 1024 * 1024  # originals larger than this are streamed from storage, not read whole


@dataclass
class Asset:
    """One answer: ``body`` (or ``stream`` of ``length`` bytes) is None for a 304. ``span`` is
    ``(first, last, size)`` when the answer is one range of ``size`` bytes (206)."""

    body: bytes | None
    mime: str
    etag: str
    filename: str
    attachment: bool
    stream: AsyncIterator[bytes] | None = None
    length: int | None = None
    span: tuple[int, int, int] | None = None

    @property
    def not_modified(self) -> bool:
        return self.body is None and self.stream is None


async def _primed(chunks: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """``chunks`` with its first chunk read now (a missing object fails before the answer starts)."""
    first = await anext(chunks, b"")

    async def rest() -> AsyncIterator[bytes]:
        if first:
            yield first
        async for chunk in chunks:
            yield chunk

    return rest()


def is_raster(row: Any) -> bool:
    filetype = BY_MIME.get(row["type"])
    return filetype is not None and filetype.raster


def etag_matches(header: str | None, etag: str) -> bool:
    if not header:
        return False
    if header.strip() == "*":
        return True
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return etag in tags


def disposition(filename: str, attachment: bool) -> str:
    """``Content-Disposition`` with an ASCII fallback and the RFC 5987 UTF-8 name."""
    fallback = "".join(c if 32 <= ord(c) < 127 and c not in '"\\;' else "_" for c in filename) or "file"
    kind = "attachment" if attachment else "inline"
    return f"{kind}; filename=\"{fallback}\"; filename*=UTF-8''{quote(filename, safe='')}"


async def preset_dsl(ctx: Any, key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise ApiError.validation("'preset' is the key of a saved transform preset", path=["query", "preset"])
    async with ctx.reader() as db:
        row = await db.one(db.select(presets).where(presets.c.key == key))
    if row is None:
        raise ApiError.validation(f"No transform preset '{key[:64]}' in this site", path=["query", "preset"])
    return str(row["dsl"])


async def transform_of(ctx: Any, params: dict[str, Any]) -> transforms.Transform | None:
    """The transform a query string asks for, or None (400 for a bad parameter)."""
    if not transforms.requested(params):
        return None
    dsl = await preset_dsl(ctx, params["preset"]) if "preset" in params else None
    return transforms.parse(params, dsl)


async def answer(ctx: Any, row: Any, transform: transforms.Transform | None, if_none_match: str | None,
                 *, force_attachment: bool = False, range_header: str | None = None,
                 if_range: str | None = None) -> Asset:
    """The original (``transform`` None) or its derivative, cached in storage; one byte range of
    it for a ``Range`` header (``ranges.wanted``), read from storage alone for an original."""
    storage = ctx.kernel.storage
    raster = is_raster(row)
    if transform is None:
        etag = f'"{row["checksum"]}"'
        attachment = force_attachment or not raster
        if etag_matches(if_none_match, etag):
            return Asset(None, row["type"], etag, row["key"], attachment)
        span = ranges.wanted(range_header, if_range, etag, row["filesize"])
        try:
            if span is not None:
                first, last = span
                stream = await _primed(storage.iter_chunks(row["storage_key"], start=first, length=last - first + 1))
                return Asset(None, row["type"], etag, row["key"], attachment, stream, last - first + 1,
                             (first, last, row["filesize"]))
            if row["filesize"] > STREAM_ABOVE:
                stream = await _primed(storage.iter_chunks(row["storage_key"]))
                return Asset(None, row["type"], etag, row["key"], attachment, stream, row["filesize"])
            body = await storage.get(row["storage_key"])
        except ObjectNotFound:
            raise not_found() from None
        return Asset(body, row["type"], etag, row["key"], attachment)
    if not raster:
        raise ApiError.validation("Transforms apply to raster images only", path=["query"])
    transform = with_focal_point(transform, row)
    digest = transform.digest(row["checksum"], row["type"])
    etag = f'"{digest}"'
    fmt = transform.output_format(row["type"])
    mime = transforms.FORMATS[fmt][1]
    stem = row["key"].rsplit(".", 1)[0]
    name = f"{stem}.{'jpg' if fmt == 'jpeg' else fmt}"
    if etag_matches(if_none_match, etag):
        return Asset(None, mime, etag, name, force_attachment)
    key = f"{derivatives_prefix(row['site_id'], row['id'])}{digest}"
    memory = memory_cache(ctx.kernel)
    body = memory.get(key)
    if body is not None:
        return _ranged(Asset(body, mime, etag, name, force_attachment), range_header, if_range)
    try:
        body = await storage.get(key)
    except ObjectNotFound:
        try:
            original = await storage.get(row["storage_key"])
        except ObjectNotFound:
            raise not_found() from None
        body, mime = await transforms.render_bounded(ctx.kernel, original, transform, row["type"])
        await storage.put(key, body, mime)
    memory.put(key, body)
    return _ranged(Asset(body, mime, etag, name, force_attachment), range_header, if_range)


def _ranged(asset: Asset, range_header: str | None, if_range: str | None) -> Asset:
    """A derivative held in memory, or the asked range of it."""
    body = asset.body or b""
    span = ranges.wanted(range_header, if_range, asset.etag, len(body))
    if span is None:
        return asset
    first, last = span
    asset.span, asset.body = (first, last, len(body)), body[first:last + 1]
    return asset


def with_focal_point(transform: transforms.Transform, row: Any) -> transforms.Transform:
    """A cover crop without ``focal`` keeps the file's stored focal point. It joins the
    parameters, so the derivative's digest (its storage key and ETag) changes with the point."""
    if transform.focal is not None or transform.fit != "cover" or row.get("focal_x") is None:
        return transform
    return replace(transform, focal=(float(row["focal_x"]), float(row["focal_y"])))


class DerivativeMemory:
    """A per-process LRU of derivative bytes by storage key, bounded in bytes. Safe without
    invalidation: a key holds the file's checksum, so changed bytes have other keys, and the
    row (with the caller's permission) is always read first. Deleted files' entries age out."""

    def __init__(self, budget: int) -> None:
        self.budget, self.used = budget, 0
        self.entries: OrderedDict[str, bytes] = OrderedDict()

    def get(self, key: str) -> bytes | None:
        body = self.entries.get(key)
        if body is not None:
            self.entries.move_to_end(key)
        return body

    def put(self, key: str, body: bytes) -> None:
        if len(body) > self.budget // 8 or key in self.entries:
            return
        self.entries[key] = body
        self.used += len(body)
        while self.used > self.budget:
            _, old = self.entries.popitem(last=False)
            self.used -= len(old)


def memory_cache(kernel: Any) -> DerivativeMemory:
    cache = kernel.state.get(MEMORY)
    if cache is None:
        cache = kernel.state[MEMORY] = DerivativeMemory(int(kernel.settings.get("files_derivative_memory_mb")) << 20)
    return cache

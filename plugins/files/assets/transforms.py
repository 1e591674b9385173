"""Image transforms: parameters, their normal form, the derivative cache, and Pillow's work.

Parameters (docs/files.md, Assets and transforms): ``width``, ``height`` (1 to 5000), ``fit`` (``cover``
default,
``contain``, ``inside``, ``outside``), ``format`` (``jpeg``, ``png``, ``webp``, ``avif``;
default: the original's when it is one of those, else ``png``), ``quality`` (1 to 100, default
80), ``focal`` (``x,y`` in the original's pixels, clamped to the image: the point a ``cover``
crop keeps in view) and ``preset`` (a saved preset's ``dsl``; parameters given beside it win).
A bad parameter is 400 ``VALIDATION_FAILED`` naming it.

A derivative is cached in storage under ``<site>/derivatives/<file id>/<digest>``, the digest
of the file's checksum and the normal form, so a changed file never serves an old derivative
(and its derivatives are deleted when it changes or goes). Rendering runs in worker threads,
at most ``SVC_FILES_TRANSFORM_CONCURRENCY`` at once per process; input images above
``SVC_FILES_MAX_INPUT_PIXELS`` are refused (422 ``IMAGE_TOO_LARGE``) before their pixels are
decoded, and JPEGs are decoded at a reduced scale when the output is smaller (``draft``), so
ten large images at once hold at most that many decoded bitmaps.
"""

from __future__ import annotations

import asyncio
import hashlib
import io
import math
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from PIL import Image, ImageOps

from kernel import ApiError
from plugins.files.errors import refuse

PARAMS = ("width", "height", "fit", "format", "quality", "focal", "preset")
FITS = ("cover", "contain", "inside", "outside")
FORMATS = {"jpeg": ("JPEG", "image/jpeg"), "png": ("PNG", "image/png"), "webp": ("WEBP", "image/webp"),
           "avif": ("AVIF", "image/avif")}
FROM_MIME = {"image/jpeg": "jpeg", "image/png": "png", "image/webp": "webp", "image/avif": "avif"}
MAX_DIMENSION = 5000
DEFAULT_QUALITY = 80
SEMAPHORE = "files.transform_semaphore"


@dataclass(frozen=True)
class Transform:
    """A transform in normal form (``None``: not given)."""

    width: int | None = None
    height: int | None = None
    fit: str = "cover"
    format: str | None = None
    quality: int = DEFAULT_QUALITY
    focal: tuple[float, float] | None = None

    def canonical(self, source_mime: str) -> str:
        """The normal form as a query string (every default spelled out), for cache keys."""
        pairs = [("width", self.width or ""), ("height", self.height or ""), ("fit", self.fit),
                 ("format", self.output_format(source_mime)), ("quality", self.quality),
                 ("focal", "" if self.focal is None else f"{self.focal[0]:g},{self.focal[1]:g}")]
        return urlencode(pairs)

    def output_format(self, source_mime: str) -> str:
        return self.format or FROM_MIME.get(source_mime, "png")

    def digest(self, checksum: str, source_mime: str) -> str:
        return hashlib.sha256(f"{checksum}\n{self.canonical(source_mime)}".encode()).hexdigest()[:40]


def _bad(name: str, message: str) -> ApiError:
    return ApiError.validation(message, path=["query", name])


def _int(name: str, raw: str, low: int, high: int) -> int:
    try:
        value = int(raw.strip())
    except (TypeError, ValueError):
        raise _bad(name, f"'{name}' is an integer from {low} to {high}") from None
    if not low <= value <= high:
        raise _bad(name, f"'{name}' is an integer from {low} to {high}")
    return value


def requested(params: dict[str, Any]) -> bool:
    """Whether a query string asks for a transform at all."""
    return any(name in params for name in PARAMS)


def parse(params: dict[str, Any], preset_dsl: str | None = None) -> Transform:
    """The ``Transform`` of query parameters (unknown ones are ignored: cache busters), over a
    preset's ``dsl`` when given."""
    merged: dict[str, str] = {}
    if preset_dsl is not None:
        merged.update(parse_dsl(preset_dsl))
    for name in PARAMS:
        if name == "preset" or name not in params:
            continue
        value = params[name]
        if isinstance(value, list):
            raise _bad(name, f"'{name}' is given more than once")
        merged[name] = str(value)
    return _build(merged)


def parse_dsl(dsl: Any) -> dict[str, str]:
    """A preset's ``dsl`` (``width=64&height=64&format=png``) as parameters; 400 when it is not
    one (path ``dsl``)."""
    if not isinstance(dsl, str) or not dsl.strip() or len(dsl) > 1000:
        raise ApiError.validation("'dsl' is a query string of transform parameters", path=["dsl"])
    pairs = parse_qsl(dsl.strip().lstrip("?"), keep_blank_values=True, strict_parsing=False)
    out: dict[str, str] = {}
    for name, value in pairs:
        if name not in PARAMS or name == "preset":
            raise ApiError.validation(f"'{name[:40]}' is not a transform parameter (width, height, fit, format, "
                                      "quality, focal)", path=["dsl"])
        if name in out:
            raise ApiError.validation(f"'{name}' is given twice", path=["dsl"])
        out[name] = value
    if not out:
        raise ApiError.validation("'dsl' names no transform parameter", path=["dsl"])
    try:
        _build(out)
    except ApiError as exc:
        raise ApiError.validation(f"'dsl': {exc.message}", path=["dsl"]) from None
    return out


def _build(raw: dict[str, str]) -> Transform:
    width = _int("width", raw["width"], 1, MAX_DIMENSION) if raw.get("width") else None
    height = _int("height", raw["height"], 1, MAX_DIMENSION) if raw.get("height") else None
    fit = (raw.get("fit") or "cover").strip().lower()
    if fit not in FITS:
        raise _bad("fit", f"'fit' is one of {', '.join(FITS)}")
    fmt = (raw.get("format") or "").strip().lower() or None
    if fmt == "jpg":
        fmt = "jpeg"
    if fmt is not None and fmt not in FORMATS:
        raise _bad("format", f"'format' is one of {', '.join(FORMATS)}")
    quality = _int("quality", raw["quality"], 1, 100) if raw.get("quality") else DEFAULT_QUALITY
    focal = None
    if raw.get("focal"):
        parts = raw["focal"].split(",")
        try:
            x, y = (float(p) for p in parts)
        except ValueError:
            raise _bad("focal", "'focal' is two comma-separated numbers: x,y in the image's pixels") from None
        if not (math.isfinite(x) and math.isfinite(y)):
            raise _bad("focal", "'focal' takes finite numbers")
        focal = (x, y)
    return Transform(width, height, fit, fmt, quality, focal)


# ----------------------------------------------------------------------------- rendering


def _target(fit: str, src: tuple[int, int], want: tuple[int | None, int | None]) -> tuple[int, int]:
    """The scaled size before any crop."""
    w, h = src
    tw, th = want
    if tw is None and th is None:
        return w, h
    if tw is None:
        return max(1, round(w * th / h)), th  # type: ignore[operator]
    if th is None:
        return tw, max(1, round(h * tw / w))
    scale_w, scale_h = tw / w, th / h
    scale = max(scale_w, scale_h) if fit in ("cover", "outside") else min(scale_w, scale_h)
    return max(1, round(w * scale)), max(1, round(h * scale))


def render(data: bytes, transform: Transform, source_mime: str, max_pixels: int) -> tuple[bytes, str]:
    """The derivative's bytes and MIME type (blocking: run in a thread)."""
    try:
        image = Image.open(io.BytesIO(data))
        w, h = image.size
        if w * h > max_pixels:
            raise refuse("IMAGE_TOO_LARGE", f"The image has {w * h} pixels; transforms take at most {max_pixels}",
                         maxPixels=max_pixels)
        want = (transform.width, transform.height)
        swapped = image.getexif().get(0x0112, 1) in (5, 6, 7, 8)  # EXIF orientation turns it
        orig_w, orig_h = (h, w) if swapped else (w, h)
        if image.format == "JPEG" and (transform.width or transform.height):
            # Decode at the smallest DCT scale still at least the target size (much less memory).
            tw, th = _target(transform.fit, (orig_w, orig_h), want)
            image.draft("RGB", (th, tw) if swapped else (tw, th))
        image = ImageOps.exif_transpose(image)
        image.load()
    except ApiError:
        raise
    except (Image.DecompressionBombError, OSError, SyntaxError, ValueError) as exc:
        raise refuse("IMAGE_TOO_LARGE" if isinstance(exc, Image.DecompressionBombError) else "FILE_CONTENT_MISMATCH",
                     "The image cannot be transformed") from None
    pil_format, mime = FORMATS[transform.output_format(source_mime)]
    if image.mode not in ("RGB", "RGBA", "L", "LA"):
        image = image.convert("RGBA" if "transparency" in image.info or image.mode in ("P", "PA") else "RGB")
    tw, th = _target(transform.fit, (orig_w, orig_h), want)
    if (tw, th) != image.size:
        image = image.resize((tw, th), Image.Resampling.LANCZOS, reducing_gap=3.0)
    if transform.fit == "cover" and transform.width and transform.height and (tw, th) != want:
        cw, ch = transform.width, transform.height
        fx, fy = tw / 2, th / 2
        if transform.focal is not None:
            # The focal point is in the original's pixels: clamped inside it, then scaled.
            fx = min(max(transform.focal[0], 0.0), orig_w) * tw / orig_w
            fy = min(max(transform.focal[1], 0.0), orig_h) * th / orig_h
        left = int(min(max(fx - cw / 2, 0), tw - cw))
        top = int(min(max(fy - ch / 2, 0), th - ch))
        image = image.crop((left, top, left + cw, top + ch))
    elif transform.fit == "contain" and transform.width and transform.height and (tw, th) != want:
        # Letterboxed to the exact box: transparent where the format has alpha, else white.
        opaque = pil_format == "JPEG"
        canvas = Image.new("RGB" if opaque else "RGBA", want, (255, 255, 255) if opaque else (0, 0, 0, 0))
        canvas.paste(image, ((want[0] - tw) // 2, (want[1] - th) // 2))
        image = canvas
    if pil_format == "JPEG" and image.mode not in ("RGB", "L"):
        image = image.convert("RGB")
    out = io.BytesIO()
    options: dict[str, Any] = {}
    if pil_format in ("JPEG", "WEBP", "AVIF"):
        options["quality"] = transform.quality
    if pil_format == "WEBP":
        options["method"] = 4
    if pil_format == "AVIF":
        options["speed"] = 8
    # No exif=, icc_profile= or pnginfo: derivatives carry no metadata of the original.
    image.save(out, pil_format, **options)
    return out.getvalue(), mime


def semaphore(kernel: Any) -> asyncio.Semaphore:
    sem = kernel.state.get(SEMAPHORE)
    if sem is None:
        sem = kernel.state[SEMAPHORE] = asyncio.Semaphore(kernel.settings.get("files_transform_concurrency"))
    return sem


async def render_bounded(kernel: Any, data: bytes, transform: Transform, source_mime: str) -> tuple[bytes, str]:
    async with semaphore(kernel):
        return await asyncio.to_thread(render, data, transform, source_mime, kernel.settings.get("files_max_input_pixels"))

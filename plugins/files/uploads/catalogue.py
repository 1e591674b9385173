"""The file types svc knows how to verify: MIME type, extensions, family, and how to sniff them.

The upload policy's allowlist is a subset of this catalogue: a type is only accepted when svc
can check that the bytes are what the name and the declared type say. ``sniff`` names the
tokens (MIME types or extensions) of puremagic's candidates that confirm a type; text types
have no magic number and are checked as UTF-8 text instead; SVG is parsed (``svg.py``);
Office documents are zip containers whose parts are checked too (``checks.py``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class FileType:
    """One type of the catalogue."""

    mime: str
    extensions: tuple[str, ...]
    family: str  # image, document, audio, video
    sniff: tuple[str, ...] = ()
    raster: bool = False  # a bitmap Pillow reads and transforms
    text: bool = False  # UTF-8 text, no magic number
    svg: bool = False
    office: str = ""  # the zip part directory an Office Open XML document must hold

    def to_dict(self) -> dict[str, object]:
        return {"mimeType": self.mime, "extensions": list(self.extensions), "family": self.family}


_OOXML = "application/vnd.openxmlformats-officedocument."
CATALOGUE: tuple[FileType, ...] = (
    FileType("image/jpeg", (".jpg", ".jpeg"), "image", ("image/jpeg",), raster=True),
    FileType("image/png", (".png",), "image", ("image/png",), raster=True),
    FileType("image/gif", (".gif",), "image", ("image/gif",), raster=True),
    FileType("image/webp", (".webp",), "image", ("image/webp",), raster=True),
    FileType("image/avif", (".avif",), "image", ("image/avif", ".avif"), raster=True),
    FileType("image/svg+xml", (".svg",), "image", svg=True),
    FileType("application/pdf", (".pdf",), "document", ("application/pdf",)),
    FileType("text/plain", (".txt",), "document", text=True),
    FileType("text/csv", (".csv",), "document", text=True),
    FileType("text/markdown", (".md", ".markdown"), "document", text=True),
    FileType(_OOXML + "wordprocessingml.document", (".docx",), "document", (".docx",), office="word/"),
    FileType(_OOXML + "spreadsheetml.sheet", (".xlsx",), "document", (".xlsx",), office="xl/"),
    FileType(_OOXML + "presentationml.presentation", (".pptx",), "document", (".pptx",), office="ppt/"),
    FileType("audio/mpeg", (".mp3",), "audio", ("audio/mpeg", ".mp3", ".mpga")),
    FileType("audio/wav", (".wav",), "audio", (".wav", "audio/wave", "audio/x-wav")),
    FileType("audio/ogg", (".ogg", ".oga"), "audio", (".ogg", ".oga", "application/ogg")),
    FileType("video/mp4", (".mp4", ".m4v"), "video", ("video/mp4", ".mp4")),
    FileType("video/webm", (".webm",), "video", ("video/webm", ".webm")),
    FileType("video/quicktime", (".mov",), "video", ("video/quicktime", ".mov")),
)
BY_MIME: dict[str, FileType] = {t.mime: t for t in CATALOGUE}
RASTER_FORMATS = {"image/jpeg": "JPEG", "image/png": "PNG", "image/gif": "GIF", "image/webp": "WEBP",
                  "image/avif": "AVIF"}

# The default allowlist is the whole catalogue: every type in it is verified on upload, and
# active content (scripts in SVG, payloads in images, executables) is refused whatever the list.
DEFAULT_MAX_BYTES = 25 * 1024 * 1024
HARD_MAX_BYTES = 5 * 1024 * 1024 * 1024  # what a site or FILE_UPLOAD_MAX_BYTES may raise the cap to
DEFAULT_ALLOWED = tuple(t.mime for t in CATALOGUE)


def parse_mime(raw: str | None) -> str:
    """The bare, lower-cased MIME type of a ``Content-Type`` value (parameters dropped)."""
    return (raw or "").split(";", 1)[0].strip().lower()


def extension_of(filename: str) -> str:
    """The lower-cased extension of a file name, dot included (``""`` without one)."""
    base = filename.rsplit("/", 1)[-1]
    if "." not in base.strip("."):
        return ""
    return "." + base.rsplit(".", 1)[-1].lower()


def extensions_for(mimes: tuple[str, ...] | list[str]) -> list[str]:
    """The extensions of the given catalogue types, in catalogue order."""
    return [ext for t in CATALOGUE if t.mime in mimes for ext in t.extensions]

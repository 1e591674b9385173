"""The content checks of the upload guard, on a staged file (blocking: run in a thread).

``inspect(path, size, filetype)`` sniffs the bytes (puremagic plus the signatures below),
refuses executables, checks that the bytes are of the declared type, then the type's own
rules: SVG (``svg.py``), raster images (structure to the end marker, no script or executable
inside, readable by Pillow within its decompression-bomb limit), UTF-8 text, Office
containers (no macros). Returns what it learned (``width``, ``height``).
"""

from __future__ import annotations

import codecs
import re
import struct
import warnings
import zipfile
from pathlib import Path
from typing import Any

import puremagic
from PIL import Image, UnidentifiedImageError

from plugins.files.errors import refuse
from plugins.files.uploads.catalogue import RASTER_FORMATS, FileType
from plugins.files.uploads.svg import MAX_SVG_BYTES, check_svg

HEAD_BYTES = 64 * 1024
CHUNK = 1024 * 1024

# puremagic candidates that name an executable. Not .jar or .apk: every zip (docx too) is a
# candidate for those; a zip is only accepted as an Office document, whose parts are checked.
EXECUTABLE_TOKENS = frozenset({
    ".exe", ".dll", ".elf", ".msi", ".class", ".com", ".scr", ".sys", ".appimage",
    "application/vnd.microsoft.portable-executable", "application/x-executable", "application/x-dosexec",
    "application/x-msdownload", "application/java", "application/x-sharedlib", "application/x-mach-binary",
})
# Leading bytes of executables whatever puremagic says.
EXECUTABLE_HEADERS = (
    (b"\x7fELF", "an ELF executable"),
    (b"\xfe\xed\xfa\xce", "a Mach-O executable"), (b"\xfe\xed\xfa\xcf", "a Mach-O executable"),
    (b"\xce\xfa\xed\xfe", "a Mach-O executable"), (b"\xcf\xfa\xed\xfe", "a Mach-O executable"),
    (b"\xca\xfe\xba\xbe", "a Mach-O universal binary or a Java class"),
    (b"#!", "a script with an interpreter line"),
    (b"\x00asm", "a WebAssembly module"),
    (b"L\x00\x00\x00\x01\x14\x02\x00", "a Windows shortcut"),
)
# Inside an image: markup or a program, case-insensitive. Each is long enough that compressed
# pixel data does not spell it by chance (at least six bytes of fixed text).
EMBEDDED = re.compile(
    rb"<script|<\?php|<html|<iframe|<object|<embed|<svg[\s>]|javascript:|<body[\s>]"
    rb"|This program cannot be run in DOS mode|\x7fELF[\x01\x02][\x01\x02]\x01",
    re.IGNORECASE,
)
EMBED_OVERLAP = 64


def _is_pe(head: bytes) -> bool:
    """A DOS/PE executable: ``MZ`` and the PE signature where the header says, or the DOS stub."""
    if not head.startswith(b"MZ") or len(head) < 64:
        return False
    offset = struct.unpack_from("<I", head, 0x3C)[0]
    if offset + 4 <= len(head) and head[offset:offset + 4] == b"PE\x00\x00":
        return True
    return b"This program cannot be run in DOS mode" in head[:1024]


def sniff(head: bytes) -> tuple[set[str], set[str]]:
    """puremagic's candidate MIME types and extensions for the leading bytes (lower-cased): all
    of them, and those whose magic number starts the file. Matches further in are weak
    evidence (plain text saying "text" 38 bytes in looks like an OpenDocument file), so only
    the second set may refuse a file; the first may confirm one."""
    try:
        matches = puremagic.magic_string(head)
    except (puremagic.PureError, ValueError):
        return set(), set()
    tokens: set[str] = set()
    leading: set[str] = set()
    for match in matches:
        names = {t.lower() for t in (match.extension, match.mime_type) if t}
        tokens |= names
        if match.offset == 0:
            leading |= names
    return tokens, leading


def check_executable(head: bytes, tokens: set[str]) -> None:
    if _is_pe(head):
        raise refuse("FILE_EXECUTABLE", "The bytes are a Windows executable", detected="pe")
    for magic, what in EXECUTABLE_HEADERS:
        if head.startswith(magic):
            raise refuse("FILE_EXECUTABLE", f"The bytes are {what}", detected=what)
    found = sorted(tokens & EXECUTABLE_TOKENS)
    if found:
        raise refuse("FILE_EXECUTABLE", f"The bytes are an executable ({found[0]})", detected=found[0])


def _mismatch(filetype: FileType, detail: str = "") -> Exception:
    return refuse("FILE_CONTENT_MISMATCH", f"The bytes are not {filetype.mime}{detail}", declared=filetype.mime)


def _chunks(path: Path, overlap: int = 0) -> Any:
    """The file in 1 MiB chunks, each starting with the last ``overlap`` bytes of the one before."""
    tail = b""
    with path.open("rb") as fh:
        while chunk := fh.read(CHUNK):
            yield tail + chunk
            tail = chunk[-overlap:] if overlap else b""


# ---------------------------------------------------------------------------- text


def check_text(path: Path, head: bytes, tokens: set[str], filetype: FileType) -> None:
    binary = tokens - {".txt", "text/plain", ".csv", "text/csv", ".json", "application/json", ".md", ".html",
                       "text/html", ".xml", "text/xml", "application/xml", ".htm"}
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for chunk in _chunks(path):
            if b"\x00" in chunk:
                raise _mismatch(filetype, ": text holds NUL bytes")
            decoder.decode(chunk)
        decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        raise _mismatch(filetype, ": text must be UTF-8") from None
    if binary:  # UTF-8 without NUL, yet a known binary format's magic number (an ASCII PDF, say)
        raise _mismatch(filetype, f": the bytes look like {sorted(binary)[0]}")


# ---------------------------------------------------------------------------- rasters


def _png_end(fh: Any, size: int) -> int:
    """The offset just after the IEND chunk, walking the chunks."""
    pos = 8
    while pos + 12 <= size:
        fh.seek(pos)
        length, kind = struct.unpack(">I4s", fh.read(8))
        pos += 12 + length
        if kind == b"IEND":
            return pos
    return -1


def _avif_end(fh: Any, size: int) -> int:
    """The end of the last top-level ISO-BMFF box, walking them; -1 when a box overruns."""
    pos = 0
    while pos + 8 <= size:
        fh.seek(pos)
        box, _kind = struct.unpack(">I4s", fh.read(8))
        if box == 1:
            box = struct.unpack(">Q", fh.read(8))[0]
        elif box == 0:
            box = size - pos
        if box < 8 or pos + box > size:
            return -1
        pos += box
    return pos


def _structure_end(path: Path, size: int, mime: str) -> int:
    """Where the image's own data ends, by its format's end marker or declared sizes."""
    with path.open("rb") as fh:
        if mime == "image/png":
            return _png_end(fh, size)
        if mime == "image/webp":
            fh.seek(4)
            riff = struct.unpack("<I", fh.read(4))[0]
            return 8 + riff + (riff & 1)
        if mime == "image/avif":
            return _avif_end(fh, size)
        # JPEG ends with EOI (FF D9), GIF with its trailer (3B); trailing NUL padding is inert.
        fh.seek(max(0, size - 4096))
        tail = fh.read().rstrip(b"\x00")
        marker = b"\xff\xd9" if mime == "image/jpeg" else b";"
        if not tail.endswith(marker):
            return -1
        return size - 4096 + len(tail) if size > 4096 else len(tail)


def check_raster(path: Path, size: int, filetype: FileType) -> dict[str, Any]:
    end = _structure_end(path, size, filetype.mime)
    padded = end >= 0 and end <= size
    if padded and end < size:
        with path.open("rb") as fh:
            fh.seek(end)
            padded = not fh.read().strip(b"\x00")
    if not padded:
        raise refuse("FILE_EMBEDDED_PAYLOAD", "The image has data after its end (a polyglot or an appended "
                     "payload)", reason="trailing_data")
    for chunk in _chunks(path, EMBED_OVERLAP):
        found = EMBEDDED.search(chunk)
        if found:
            raise refuse("FILE_EMBEDDED_PAYLOAD", "The image carries markup, a script or an executable",
                         reason="embedded_payload", found=found.group(0)[:24].decode("latin-1"))
    try:
        with warnings.catch_warnings():
            # Above Pillow's warning size (89 MP) an image is still accepted; above twice it,
            # Pillow raises DecompressionBombError and the upload is refused.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as image:
                if image.format != RASTER_FORMATS[filetype.mime]:
                    raise _mismatch(filetype, f": Pillow reads {image.format}")
                width, height = image.size
                image.verify()
    except Image.DecompressionBombError:
        raise refuse("IMAGE_TOO_LARGE", "The image has too many pixels (a decompression bomb?)") from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, struct.error, EOFError):
        raise _mismatch(filetype, ": the image cannot be read") from None
    return {"width": width, "height": height}


# ---------------------------------------------------------------------------- documents


def check_office(path: Path, filetype: FileType) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
    except (zipfile.BadZipFile, OSError):
        raise _mismatch(filetype, ": not a zip container") from None
    if "[Content_Types].xml" not in names or not any(n.startswith(filetype.office) for n in names):
        raise _mismatch(filetype, f": the container has no {filetype.office} part")
    if any(n.lower().endswith("vbaproject.bin") for n in names):
        raise refuse("FILE_EXECUTABLE", "The document carries macros (vbaProject.bin)", detected="macros")


# ---------------------------------------------------------------------------- the entry point


def inspect(path: Path, size: int, filetype: FileType) -> dict[str, Any]:
    """Check the staged file ``path`` of ``size`` bytes against its declared ``filetype``;
    raise the guard's refusal, or return ``{width, height}`` (None for non-images)."""
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    if not head:
        raise _mismatch(filetype, ": the file is empty")
    tokens, leading = sniff(head)
    check_executable(head, leading)
    found: dict[str, Any] = {"width": None, "height": None}
    if filetype.text:
        check_text(path, head, leading, filetype)
    elif filetype.svg:
        if size > MAX_SVG_BYTES:
            raise refuse("FILE_TOO_LARGE", f"An SVG is at most {MAX_SVG_BYTES} bytes")
        check_svg(path.read_bytes())
    else:
        if not tokens & set(filetype.sniff):
            raise _mismatch(filetype, f" (sniffed: {', '.join(sorted(tokens))[:200] or 'unknown'})")
        if filetype.office:
            check_office(path, filetype)
        if filetype.raster:
            found = check_raster(path, size, filetype)
    return found

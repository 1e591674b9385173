"""The files plugin's pure parts, one rule a test (docs/files.md): transform parameters and
their normal form, preset DSLs, ETags and dispositions, the derivative memory, file names and
metadata, the declared-type step of the guard, content checks not shown elsewhere, and what
Pillow's rendering promises (sizes per fit, the focal crop, letterboxing, no metadata)."""

from __future__ import annotations

import io

import pytest
from PIL import Image

from kernel import ApiError
from plugin_tests.files.corpus import DOCX, ELF, PE, gradient_jpeg, image, zip_bytes
from plugins.files import records
from plugins.files.assets import assets, transforms
from plugins.files.uploads import checks, guard
from plugins.files.uploads.catalogue import BY_MIME, extension_of, parse_mime
from plugins.files.uploads.policy import UploadPolicy

DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


def _refused(call, *args, **kw) -> ApiError:
    with pytest.raises(ApiError) as caught:
        call(*args, **kw)
    return caught.value


def _inspect(tmp_path, data: bytes, mime: str):
    path = tmp_path / "staged"
    path.write_bytes(data)
    return checks.inspect(path, len(data), BY_MIME[mime])


# ------------------------------------------------------------------ transform parameters


def test_the_order_of_parameters_makes_one_derivative():
    one = transforms.parse({"width": "800", "format": "webp"})
    two = transforms.parse({"format": "WEBP", "width": " 800 "})
    assert one == two and one.digest("c", "image/jpeg") == two.digest("c", "image/jpeg")


def test_a_new_checksum_never_names_an_old_derivative():
    t = transforms.parse({"width": "10"})
    assert t.digest("old", "image/png") != t.digest("new", "image/png")


def test_the_normal_form_spells_every_default():
    assert transforms.parse({"width": "10"}).canonical("image/gif") == (
        "width=10&height=&fit=cover&format=png&quality=80&focal="
    )
    assert transforms.parse({"focal": "2900,1100.5", "format": "jpg"}).canonical("image/png") == (
        "width=&height=&fit=cover&format=jpeg&quality=80&focal=2900%2C1100.5"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("width", "0"),
        ("width", "5001"),
        ("width", "wide"),
        ("height", "-1"),
        ("height", "1e3"),
        ("quality", "0"),
        ("quality", "101"),
        ("fit", "stretch"),
        ("format", "bmp"),
        ("focal", "1"),
        ("focal", "a,b"),
        ("focal", "inf,1"),
        ("focal", "1,nan"),
        ("focal", "1,2,3"),
    ],
)
def test_a_bad_parameter_is_400_naming_it(name, value):
    error = _refused(transforms.parse, {name: value})
    assert (error.status, error.code, error.details[0].path) == (400, "VALIDATION_FAILED", ["query", name])


def test_a_parameter_given_twice_is_400():
    error = _refused(transforms.parse, {"width": ["10", "20"]})
    assert error.details[0].path == ["query", "width"] and "more than once" in error.message


def test_unknown_parameters_ask_for_no_transform():
    assert transforms.requested({"v": "3", "download": "true"}) is False
    assert transforms.requested({"fit": "cover"}) is True


def test_parameters_beside_a_preset_win():
    t = transforms.parse({"width": "30", "preset": "thumb"}, "width=64&height=64&format=png")
    assert (t.width, t.height, t.format) == (30, 64, "png")


@pytest.mark.parametrize(
    "dsl",
    [
        "",
        "   ",
        5,
        None,
        "w" * 1001,
        "preset=x",
        "width=1&width=2",
        "colour=red",
        "width=0",
        "?",
        "fit=sideways",
    ],
)
def test_a_preset_dsl_that_is_not_one_is_400_on_dsl(dsl):
    error = _refused(transforms.parse_dsl, dsl)
    assert (error.code, error.details[0].path) == ("VALIDATION_FAILED", ["dsl"])


def test_a_preset_dsl_may_start_with_a_question_mark():
    assert transforms.parse_dsl("?width=64&format=png") == {"width": "64", "format": "png"}


# ------------------------------------------------------------------ answers


@pytest.mark.parametrize(
    ("header", "matches"),
    [
        ('"abc"', True),
        ('W/"abc"', True),
        ('"x", "abc"', True),
        ("*", True),
        ('"abcd"', False),
        ("", False),
        (None, False),
    ],
)
def test_if_none_match_forms(header, matches):
    assert assets.etag_matches(header, '"abc"') is matches


def test_a_disposition_has_an_ascii_fallback_and_the_utf8_name():
    assert assets.disposition('ré"sumé;.pdf', True) == (
        "attachment; filename=\"r__sum__.pdf\"; filename*=UTF-8''r%C3%A9%22sum%C3%A9%3B.pdf"
    )
    assert assets.disposition("photo.jpg", False).startswith('inline; filename="photo.jpg"')


def test_the_derivative_memory_keeps_the_recent_within_its_budget():
    memory = assets.DerivativeMemory(budget=800)
    memory.put("a", b"a" * 100)
    memory.put("b", b"b" * 100)
    memory.put("huge", b"h" * 101)  # above an eighth of the budget: never kept
    assert memory.get("huge") is None
    assert memory.get("a") == b"a" * 100  # a is now the most recent
    for key in "cdefghi":  # 900 bytes: the least recently used (b, not a) goes
        memory.put(key, key.encode() * 100)
    assert memory.get("b") is None and memory.used == 800
    assert memory.get("a") == b"a" * 100 and memory.get("i") == b"i" * 100


# ------------------------------------------------------------------ names and metadata


@pytest.mark.parametrize(
    "name",
    [
        "",
        "a/b.png",
        "a\\b.png",
        ".hidden.png",
        " a.png",
        "a.png ",
        "a\x00.png",
        "a\n.png",
        "x" * 252 + ".png",
        5,
    ],
)
def test_a_file_name_that_cannot_be_a_key_is_400(name):
    error = _refused(records.check_filename, name)
    assert error.details[0].path == ["key"]


def test_a_file_name_may_be_any_other_text():
    assert records.check_filename("Ünïcode photo (1).png") == "Ünïcode photo (1).png"


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"title": "a\x07b"}, ["title"]),
        ({"folder": "f" * 256}, ["folder"]),
        ({"tags": [""]}, ["tags"]),
        ({"tags": ["t"] * 51}, ["tags"]),
        ({"tags": "hero"}, ["tags"]),
        ({"key": "renamed.png"}, ["key"]),
    ],
)
def test_metadata_that_cannot_be_right_is_400(body, path):
    error = _refused(records.check_meta, body, allowed=records.META_KEYS_PATCH)
    assert error.details[0].path == path


def test_tags_are_kept_once_and_null_clears_them():
    assert records.check_meta({"tags": ["a", "b", "a"]}, allowed=records.META_KEYS_PATCH) == {
        "tags": ["a", "b"]
    }
    assert records.check_meta({"tags": None, "title": None}, allowed=records.META_KEYS_PATCH) == {
        "tags": [],
        "title": None,
    }


# ------------------------------------------------------------------ the declared step


POLICY = UploadPolicy(max_bytes=1000, allowed=("image/png", "text/plain"))


def test_a_declared_length_above_the_cap_is_413_before_the_type():
    error = _refused(guard.declared, POLICY, "a.exe", "application/x-msdownload", 1001)
    assert (error.status, error.code) == (413, "FILE_TOO_LARGE")


@pytest.mark.parametrize("content_type", [None, "", "image/jpeg", "application/x-msdownload"])
def test_a_type_outside_the_allowlist_is_415(content_type):
    error = _refused(guard.declared, POLICY, "a.jpg", content_type, 10)
    assert (error.status, error.code) == (415, "FILE_TYPE_NOT_ALLOWED")


@pytest.mark.parametrize("name", ["a.jpg", "a", "a.png.txt", "png"])
def test_an_extension_of_another_type_is_415(name):
    error = _refused(guard.declared, POLICY, name, "image/png", 10)
    assert (error.status, error.code) == (415, "FILE_EXTENSION_MISMATCH")


def test_the_declared_type_ignores_case_and_parameters():
    assert guard.declared(POLICY, "A.PNG", "Image/PNG; charset=binary", None).mime == "image/png"
    assert (parse_mime(" Text/Plain ; x=1"), extension_of("archive.tar.GZ"), extension_of("..")) == (
        "text/plain",
        ".gz",
        "",
    )


# ------------------------------------------------------------------ content checks


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PE, "application/pdf"),
        (ELF, "image/png"),
        (b"#!/bin/sh\nrm -rf /\n", "text/plain"),
        (b"\x00asm\x01\x00\x00\x00" + b"\x00" * 60, "video/webm"),
    ],
)
def test_an_executable_is_named_before_a_type_mismatch(tmp_path, data, mime):
    error = _refused(_inspect, tmp_path, data, mime)
    assert (error.status, error.code) == (422, "FILE_EXECUTABLE")


def test_an_office_document_with_macros_is_an_executable(tmp_path):
    macro = zip_bytes(
        {
            "[Content_Types].xml": b"<Types/>",
            "word/document.xml": b"<w:document/>",
            "word/vbaProject.bin": b"\x00" * 10,
        }
    )
    assert _refused(_inspect, tmp_path, macro, DOCX_MIME).code == "FILE_EXECUTABLE"
    assert _inspect(tmp_path, DOCX, DOCX_MIME) == {"width": None, "height": None}


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (image("PNG") + b"PAYLOAD", "image/png"),
        (image("JPEG") + b"\x00\x00trailing", "image/jpeg"),
        (image("GIF") + b"<?php system($_GET[1]);", "image/gif"),
    ],
)
def test_data_after_an_images_end_is_an_embedded_payload(tmp_path, data, mime):
    error = _refused(_inspect, tmp_path, data, mime)
    assert (error.status, error.code) == (422, "FILE_EMBEDDED_PAYLOAD")


def test_an_image_declared_as_another_raster_type_is_a_mismatch(tmp_path):
    error = _refused(_inspect, tmp_path, image("JPEG"), "image/png")
    assert (error.status, error.code) == (415, "FILE_CONTENT_MISMATCH")


# ------------------------------------------------------------------ rendering


def _render(data, mime, **params):
    body, out_mime = transforms.render(data, transforms.parse(params), mime, 50_000_000)
    return Image.open(io.BytesIO(body)), out_mime


@pytest.mark.parametrize(
    ("fit", "size"), [("cover", (30, 30)), ("contain", (30, 30)), ("inside", (30, 15)), ("outside", (60, 30))]
)
def test_each_fit_gives_its_size(fit, size):
    out, _ = _render(image("PNG", size=(200, 100)), "image/png", width="30", height="30", fit=fit)
    assert out.size == size


def test_a_cover_crop_keeps_the_focal_point_in_view():
    source = gradient_jpeg((200, 100))  # left half red, right half blue
    right, _ = _render(source, "image/jpeg", width="50", height="100", focal="190,50", format="png")
    left, _ = _render(source, "image/jpeg", width="50", height="100", focal="-500,50", format="png")
    assert (
        right.convert("RGB").getpixel((25, 50))[2] > 200 and left.convert("RGB").getpixel((25, 50))[0] > 200
    )


def test_a_jpeg_letterbox_is_white_and_a_png_one_transparent():
    jpeg, _ = _render(image("JPEG", size=(200, 100)), "image/jpeg", width="40", height="40", fit="contain")
    png, _ = _render(image("PNG", size=(200, 100)), "image/png", width="40", height="40", fit="contain")
    assert min(jpeg.convert("RGB").getpixel((20, 2))) > 240
    assert png.mode == "RGBA" and png.getpixel((20, 2))[3] == 0


def test_a_derivative_carries_no_metadata_and_a_gif_becomes_png():
    out, mime = _render(gradient_jpeg((80, 40), orientation=6), "image/jpeg", width="20")
    assert (out.size, dict(out.getexif())) == ((20, 40), {})  # turned by its orientation, then scaled
    gif, gif_mime = _render(image("GIF"), "image/gif", width="10")
    assert (mime, gif_mime, gif.format) == ("image/jpeg", "image/png", "PNG")


def test_an_image_above_the_pixel_bound_is_refused_before_decoding():
    data = image("PNG", size=(100, 100))
    with pytest.raises(ApiError) as caught:
        transforms.render(data, transforms.parse({"width": "10"}), "image/png", 9_999)
    assert (caught.value.status, caught.value.code) == (422, "IMAGE_TOO_LARGE")


@pytest.mark.parametrize(("params", "size"), [({"width": "30"}, (30, 15)), ({"height": "10"}, (20, 10))])
def test_one_side_keeps_the_aspect_ratio(params, size):
    out, _ = _render(image("PNG", size=(200, 100)), "image/png", **params)
    assert out.size == size

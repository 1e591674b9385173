"""svc-ext: keygen, build, sign, verify; manifests are validated; the template extension loads."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import io
import json
import sys
import zipfile
from pathlib import Path

import pytest

from extensions_sdk.bundle import ManifestError, build_bundle, read_manifest, validate_manifest
from extensions_sdk.cli import main
from extensions_sdk.signing import SignatureError, generate_keypair, sign_bytes, verify_bytes

TEMPLATE = Path(__file__).resolve().parents[2] / "extensions_sdk" / "template"


def test_cli_round_trip(tmp_path, capsys):
    key = tmp_path / "key"
    assert main(["keygen", "--out", str(key)]) == 0
    bundle = tmp_path / "hello.zip"
    assert main(["build", str(TEMPLATE), "--out", str(bundle)]) == 0
    assert main(["sign", str(bundle), "--key", str(key)]) == 0
    sig = Path(str(bundle) + ".sig")
    pub = f"@{key}.pub"
    assert main(["verify", str(bundle), "--signature", str(sig), "--public-key", pub]) == 0
    assert "ok: hello-ext 0.1.0 by example" in capsys.readouterr().out
    bundle.write_bytes(bundle.read_bytes() + b"tampered")
    assert main(["verify", str(bundle), "--signature", str(sig), "--public-key", pub]) == 1


def test_build_is_deterministic():
    assert build_bundle(TEMPLATE) == build_bundle(TEMPLATE)


def test_signature_checks():
    private, public = generate_keypair()
    other_private, other_public = generate_keypair()
    sig = sign_bytes(private, b"data")
    verify_bytes(public, b"data", sig)
    with pytest.raises(SignatureError):
        verify_bytes(other_public, b"data", sig)
    with pytest.raises(SignatureError):
        verify_bytes(public, b"datA", sig)
    with pytest.raises(SignatureError):
        verify_bytes("not base64!", b"data", sig)
    with pytest.raises(SignatureError):
        verify_bytes(public, b"data", "AAAA")


@pytest.mark.parametrize("manifest,path", [
    ([], []),
    ({"name": "x"}, ["name"]),
    ({"name": "good-name", "version": "1", "publisher": "p1", "entry": "pkg"}, ["version"]),
    ({"name": "good-name", "version": "1.0.0", "publisher": "p1", "entry": "../evil"}, ["entry"]),
    ({"name": "good-name", "version": "1.0.0", "publisher": "p1", "entry": "pkg", "capabilities": "all"},
     ["capabilities"]),
    ({"name": "good-name", "version": "1.0.0", "publisher": "p1", "entry": "pkg", "extra": 1}, ["extra"]),
])
def test_bad_manifests(manifest, path):
    with pytest.raises(ManifestError) as err:
        validate_manifest(manifest)
    assert err.value.path == path


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in files.items():
            z.writestr(name, data)
    return buf.getvalue()


def test_bundles_with_unsafe_paths_or_missing_parts_are_refused():
    manifest = json.dumps({"name": "good-name", "version": "1.0.0", "publisher": "p1", "entry": "pkg"}).encode()
    with pytest.raises(ManifestError):
        read_manifest(b"not a zip")
    with pytest.raises(ManifestError):
        read_manifest(_zip({"pkg/__init__.py": b""}))
    with pytest.raises(ManifestError):
        read_manifest(_zip({"manifest.json": manifest}))
    with pytest.raises(ManifestError):
        read_manifest(_zip({"manifest.json": manifest, "pkg/__init__.py": b"", "../escape.py": b""}))
    assert read_manifest(_zip({"manifest.json": manifest, "pkg/__init__.py": b""}))["entry"] == "pkg"


async def test_template_extension_plugs_in(make_app, monkeypatch):
    monkeypatch.syspath_prepend(str(TEMPLATE))
    module = importlib.import_module("hello_ext")
    try:
        app = await make_app(plugins=[module])
        resp = await app.client.get("/api/v1/hello-ext", headers={"X-Svc-Site": "default"})
        assert resp.json() == {"data": {"message": "hello from an extension"}}
    finally:
        sys.modules.pop("hello_ext", None)


def test_new_starts_from_the_template(tmp_path, capsys):
    target = tmp_path / "my-ext"
    assert main(["new", "my-ext", "--publisher", "acme", "--out", str(target)]) == 0
    manifest = json.loads((target / "manifest.json").read_text())
    assert (manifest["name"], manifest["publisher"], manifest["entry"]) == ("my-ext", "acme", "my_ext")
    assert 'Route("/my-ext"' in (target / "my_ext" / "__init__.py").read_text()
    key = tmp_path / "key"
    assert main(["keygen", "--out", str(key)]) == 0
    bundle = tmp_path / "my.zip"
    assert main(["build", str(target), "--out", str(bundle)]) == 0
    assert main(["sign", str(bundle), "--key", str(key)]) == 0
    assert main(["verify", str(bundle), "--signature", f"{bundle}.sig", "--public-key", f"@{key}.pub"]) == 0
    assert "ok: my-ext 0.1.0 by acme" in capsys.readouterr().out
    # An existing folder or a bad name is refused.
    assert main(["new", "my-ext", "--publisher", "acme", "--out", str(target)]) == 1
    assert main(["new", "Bad_Name", "--publisher", "acme", "--out", str(tmp_path / "x")]) == 1


@pytest.mark.parametrize("caps,ok", [
    (["routes", "items:articles", "events:*.items.create", "network", "jobs", "flows", "ui"], True),
    (["root"], False), (["items"], False), (["routes:x"], False), (["items:a.b"], False),
    (["events:"], False), (["network", "network"], False), ([1], False),
])
def test_capabilities(caps, ok):
    manifest = {"name": "good-name", "version": "1.0.0", "publisher": "p1", "entry": "pkg", "capabilities": caps}
    if ok:
        assert validate_manifest(manifest) is manifest
    else:
        with pytest.raises(ManifestError):
            validate_manifest(manifest)


def test_build_skips_symlinks_and_the_archive_checks_hold(tmp_path):
    import shutil
    source = tmp_path / "src"
    shutil.copytree(TEMPLATE, source)
    (source / "hello_ext" / "passwd.py").symlink_to("/etc/passwd")
    with zipfile.ZipFile(io.BytesIO(build_bundle(source))) as archive:
        assert "hello_ext/passwd.py" not in archive.namelist()


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _internal_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        modules = [a.name for a in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
        found += [f"{path.name}:{node.lineno}: {m}" for m in modules if m.split(".")[0] in ("plugins", "kernel")]
    return found


def test_examples_and_the_template_import_only_the_sdk():
    files = sorted([*EXAMPLES.rglob("*.py"), *(TEMPLATE / "hello_ext").rglob("*.py")])
    assert any(p.parent.name == "word_count" for p in files)
    assert [hit for p in files for hit in _internal_imports(p)] == []
    assert _internal_imports(Path(__file__)) != []  # the check sees an import of kernel


def test_the_sdk_exports_what_the_example_uses():
    import extensions_sdk
    from plugins.flows import api as flows
    from plugins.items import api as items

    assert extensions_sdk.items is items
    assert (extensions_sdk.Operation, extensions_sdk.OptionError) == (flows.Operation, flows.OptionError)
    assert {"request_context", "send_data", "read_json", "items"} <= set(extensions_sdk.__all__)
    with pytest.raises(AttributeError):
        extensions_sdk.not_a_name  # noqa: B018


def test_build_compiles_every_module(tmp_path, capsys):
    import shutil
    source = tmp_path / "src"
    shutil.copytree(TEMPLATE, source, ignore=shutil.ignore_patterns("__pycache__"))
    (source / "hello_ext" / "helpers.py").write_text("x = 1\n\nif x\n    pass\n")
    assert main(["build", str(source), "--out", str(tmp_path / "b.zip")]) == 1
    assert capsys.readouterr().err.startswith("svc-ext: hello_ext/helpers.py:3: ")
    assert not (tmp_path / "b.zip").exists()
    assert not list(source.rglob("*.pyc"))  # compiling writes nothing into the folder


async def test_new_writes_a_readme_and_a_test_that_passes(tmp_path, make_app, upload_extension):
    target = tmp_path / "my-ext"
    assert main(["new", "my-ext", "--publisher", "acme", "--out", str(target)]) == 0
    readme = (target / "README.md").read_text()
    assert readme.startswith("# my-ext\n") and "svc-ext deploy . --url" in readme
    test_file = target / "tests" / "test_my_ext.py"
    spec = importlib.util.spec_from_file_location("generated_test_my_ext", test_file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.PUBLISHER == "acme"
    await module.test_my_ext_answers_in_its_site(make_app, upload_extension)


@pytest.mark.parametrize("url,base", [
    ("http://127.0.0.1:8000", "http://127.0.0.1:8000/api/v1"),
    ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/api/v1"),
    ("https://cms.example.com/api/v1/", "https://cms.example.com/api/v1"),
])
def test_deploy_takes_the_server_or_its_api_root(url, base):
    from extensions_sdk.deploy import api_base

    assert api_base(url) == base

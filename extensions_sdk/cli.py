"""``svc-ext``: new, keygen, build, sign, verify and deploy extension bundles."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from extensions_sdk.bundle import NAME, CompileError, ManifestError, build_bundle, read_manifest
from extensions_sdk.deploy import DeployError, deploy
from extensions_sdk.signing import SignatureError, generate_keypair, sign_bytes, verify_bytes

TEMPLATE = Path(__file__).resolve().parent / "template"
TEMPLATE_NAME, TEMPLATE_PACKAGE, TEMPLATE_PUBLISHER = "hello-ext", "hello_ext", '"publisher": "example"'


def new_extension(name: str, publisher: str, target: Path) -> Path:
    """Copy the template to ``target`` as extension ``name`` by ``publisher``: the manifest, the
    package, a README (test, deploy) and a test that uploads the folder to a real app."""
    for what, value in (("name", name), ("publisher", publisher)):
        if not NAME.match(value):
            raise ManifestError(f"{what} {value!r} must be 2-63 lowercase letters, digits or '-'", [what])
    if target.exists():
        raise ManifestError(f"{target} already exists", ["out"])
    package = name.replace("-", "_")
    for path in sorted(p for p in TEMPLATE.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
        rel = path.relative_to(TEMPLATE).as_posix().replace(TEMPLATE_PACKAGE, package)
        text = path.read_text(encoding="utf-8").replace(TEMPLATE_NAME, name).replace(TEMPLATE_PACKAGE, package)
        text = text.replace(TEMPLATE_PUBLISHER, f'"publisher": "{publisher}"')
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        (target / rel).write_text(text, encoding="utf-8")
    build_bundle(target)  # the new folder must build
    return target


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="svc-ext", description="Build and sign svc extension bundles")
    sub = parser.add_subparsers(dest="command", required=True)
    new = sub.add_parser("new", help="start an extension folder from the template")
    new.add_argument("name", help="the extension's name (lowercase letters, digits, '-')")
    new.add_argument("--publisher", required=True, help="your publisher name, as your key is listed")
    new.add_argument("--out", type=Path, default=None, help="the folder to create (default: ./NAME)")
    keygen = sub.add_parser("keygen", help="write an Ed25519 key pair (base64)")
    keygen.add_argument("--out", type=Path, required=True, help="private key file; the public key goes to OUT.pub")
    build = sub.add_parser("build", help="compile every module and zip an extension folder into a bundle")
    build.add_argument("source", type=Path)
    build.add_argument("--out", type=Path, required=True)
    sign = sub.add_parser("sign", help="write the detached signature of a bundle (base64)")
    sign.add_argument("bundle", type=Path)
    sign.add_argument("--key", type=Path, required=True)
    sign.add_argument("--out", type=Path, default=None)
    verify = sub.add_parser("verify", help="check a bundle's manifest and signature")
    verify.add_argument("bundle", type=Path)
    verify.add_argument("--signature", type=Path, required=True)
    verify.add_argument("--public-key", required=True, help="base64 public key, or @file")
    dep = sub.add_parser("deploy", help="build, sign, upload (upgrading in place), grant and enable in a site")
    dep.add_argument("source", type=Path, help="the extension folder")
    dep.add_argument("--url", required=True, help="the server (http://host:8000) or its /api/v1")
    dep.add_argument("--token", required=True, help="an instance admin's bearer token")
    dep.add_argument("--site", required=True, help="the site to enable it in")
    dep.add_argument("--key", type=Path, required=True, help="your private key file (svc-ext keygen)")
    dep.add_argument("--grant", action="append", default=None, metavar="CAPABILITY",
                     help="grant only this capability (repeat it); default: all the manifest asks for")
    args = parser.parse_args(argv)
    try:
        if args.command == "new":
            target = new_extension(args.name, args.publisher, args.out or Path(args.name))
            print(f"wrote {target}")
        elif args.command == "keygen":
            private, public = generate_keypair()
            args.out.write_text(private + "\n")
            args.out.chmod(0o600)
            Path(str(args.out) + ".pub").write_text(public + "\n")
            print(public)
        elif args.command == "build":
            args.out.write_bytes(build_bundle(args.source))
            print(f"wrote {args.out}")
        elif args.command == "sign":
            signature = sign_bytes(args.key.read_text().strip(), args.bundle.read_bytes())
            out = args.out or Path(str(args.bundle) + ".sig")
            out.write_text(signature + "\n")
            print(f"wrote {out}")
        elif args.command == "deploy":
            done = deploy(args.source, url=args.url, token=args.token, site=args.site,
                          private_key=args.key.read_text().strip(), grant=args.grant)
            record = done.record
            print(f"{'installed' if done.created else 'upgraded'} {record['name']} {record['version']} "
                  f"({record['id']}), enabled in site {args.site} with "
                  f"{', '.join(record['site']['grantedCapabilities']) or 'no capabilities'}")
        else:
            key = args.public_key
            if key.startswith("@"):
                key = Path(key[1:]).read_text().strip()
            data = args.bundle.read_bytes()
            manifest = read_manifest(data)
            verify_bytes(key, data, args.signature.read_text().strip())
            print(f"ok: {manifest['name']} {manifest['version']} by {manifest['publisher']}")
    except (ManifestError, CompileError, SignatureError, DeployError, OSError) as exc:
        print(f"svc-ext: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Docs are part of the product: every hook, setting and error code is documented."""

from __future__ import annotations

import ast
import inspect
import re
from pathlib import Path

import pytest

from kernel.app import build_kernel
from kernel.base.settings import KERNEL_SETTINGS, Settings
from kernel.hooks import hookspecs

DOCS = Path(__file__).resolve().parent.parent / "docs"


def hook_names() -> list[str]:
    return sorted(name for name, fn in inspect.getmembers(hookspecs, inspect.isfunction)
                  if hasattr(fn, "svc_spec"))


def test_there_are_hooks():
    assert "authenticate" in hook_names() and "register_routes" in hook_names()


@pytest.mark.parametrize("hook", hook_names())
def test_hook_is_documented(hook):
    text = (DOCS / "plugin_hooks.md").read_text()
    assert re.search(rf"^#+ `?{hook}\b", text, re.M), f"{hook} is missing from docs/plugin_hooks.md"
    assert inspect.getdoc(getattr(hookspecs, hook)), f"{hook} has no docstring"


def test_every_setting_is_documented(tmp_path):
    text = (DOCS / "settings.md").read_text()
    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    declared = [s.env for s in KERNEL_SETTINGS]
    declared += [s.env for group in kernel.pm.hook.register_settings() for s in (group or [])]
    missing = [env for env in declared if f"`{env}`" not in text]
    assert not missing, f"undocumented settings: {missing}"


def test_every_error_code_is_documented(tmp_path):
    text = (DOCS / "errors.md").read_text()
    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    missing = [code for code in kernel.error_codes if f"`{code}`" not in text]
    assert not missing, f"undocumented error codes: {missing}"


def test_every_plugin_has_a_room_sign():
    plugins = Path(__file__).resolve().parent.parent / "plugins"
    for package in plugins.iterdir():
        if (package / "plugin.py").exists():
            doc = (package / "__init__.py").read_text()
            assert doc.lstrip().startswith('"""'), f"{package.name}/__init__.py has no docstring"


# --- The docs say what is true today -----------------------------------------------------------

ROOT = DOCS.parent
# The pages a reader of a clone reads: every area page, the decisions, README and CHANGELOG.
CHECKED_PAGES = sorted([*DOCS.glob("*.md"), *(DOCS / "decisions").glob("*.md"),
                        ROOT / "README.md", ROOT / "CHANGELOG.md"])
# Wording that says a built thing is still to come. What cannot be done yet goes under the page's
# CANNOT_YET heading instead, in the present tense.
NOT_BUILT = re.compile(r"not built|when built|being built|built later|to be built|not yet built|"
                       r"once it (?:lands|exists)|when it lands|coming soon", re.I)
CANNOT_YET = "## What it cannot do yet"
# A fenced code block: its lines are examples, not headings or references.
FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("page", [p for p in CHECKED_PAGES if p.name != "CHANGELOG.md"], ids=_rel)
def test_no_page_says_a_thing_is_still_being_built(page):
    # The changelog is left out: it records what was true at each release.
    hits = [f"{_rel(page)}:{n}: {line.strip()}" for n, line in enumerate(page.read_text().splitlines(), 1)
            if NOT_BUILT.search(line)]
    assert not hits, f"say what exists, and what cannot be done yet under '{CANNOT_YET}':\n" + "\n".join(hits)


ERROR_CODE = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$|^[A-Z]{4,}$")


def raised_error_codes() -> dict[str, str]:
    """Every code a string literal hands to ``ApiError(...)``, its constructors (``code=``),
    ``ErrorDetail(...)`` or ``error_body(...)`` in the kernel, the plugins and the SDK: code -> a
    file that raises it."""
    found: dict[str, str] = {}
    for top in ("kernel", "plugins", "extensions_sdk"):
        for source in sorted((ROOT / top).rglob("*.py")):
            for node in ast.walk(ast.parse(source.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                func = node.func
                name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
                on_api_error = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "ApiError"
                if name not in ("ApiError", "ErrorDetail", "error_body") and not on_api_error:
                    continue
                for arg in [*node.args, *(k.value for k in node.keywords if k.arg == "code")]:
                    if isinstance(arg, ast.Constant) and isinstance(arg.value, str) \
                            and ERROR_CODE.match(arg.value):
                        found.setdefault(arg.value, _rel(source))
    return found


def test_the_scan_finds_raised_codes():
    codes = raised_error_codes()
    assert codes.get("SITE_NOT_FOUND", "").startswith("kernel/")
    assert codes.get("EXTENSION_EXISTS") == "plugins/extensions/service.py"  # ApiError.conflict(code=...)


def test_every_raised_error_code_is_documented_as_raised(tmp_path):
    text = (DOCS / "errors.md").read_text()
    kernel = build_kernel(Settings.from_env(environ={"SVC_DATA_DIR": str(tmp_path)}))
    codes = {**{code: "the registry" for code in kernel.error_codes}, **raised_error_codes()}
    missing = sorted(f"{code} ({where})" for code, where in codes.items() if f"`{code}`" not in text)
    assert not missing, f"raised but missing from docs/errors.md: {missing}"
    not_yet = re.compile(r"not yet|not built|being built|raised once|not raised", re.I)
    marked = [line.strip() for line in text.splitlines()
              if not_yet.search(line) and any(f"`{code}`" in line for code in codes)]
    assert not marked, "docs/errors.md marks raised codes as not raised yet:\n" + "\n".join(marked)


# Each plugin (and each kernel or sub-package area a reader looks for by name) -> its page in docs/.
AREA_PAGES = {
    "plugins/accounts": "accounts.md", "plugins/access": "access.md", "plugins/agents": "agents.md",
    "plugins/ai": "ai.md", "plugins/cdc": "change-feed.md", "plugins/dashboards": "dashboards.md",
    "plugins/delivery": "delivery.md", "plugins/editorial": "releases-and-editorial.md",
    "plugins/email": "email.md", "plugins/extensions": "extensions.md", "plugins/files": "files.md",
    "plugins/flows": "flows.md", "plugins/git": "git.md", "plugins/graphql": "graphql.md",
    "plugins/items": "items.md", "plugins/pageviews": "delivery.md", "plugins/privacy": "privacy.md",
    "plugins/realtime": "realtime.md", "plugins/regulated": "regulated-content.md",
    "plugins/releases": "releases-and-editorial.md", "plugins/schema": "schema.md",
    "plugins/settings": "settings-and-site.md", "plugins/store_sync": "store-sync.md", "plugins/studio": "studio.md",
    "plugins/utils": "utils.md", "plugins/items/search": "search.md", "kernel/tenancy": "tenancy.md",
}


def test_every_plugin_is_in_the_area_map():
    plugins = sorted(f"plugins/{p.name}" for p in (ROOT / "plugins").iterdir() if (p / "plugin.py").exists())
    assert plugins and not [p for p in plugins if p not in AREA_PAGES], "add the plugin's page to AREA_PAGES"
    assert all((ROOT / area).is_dir() for area in AREA_PAGES), "AREA_PAGES names a package that is gone"


@pytest.mark.parametrize("area", sorted(AREA_PAGES))
def test_every_area_has_a_page_that_says_what_it_cannot_do_yet(area):
    page = DOCS / AREA_PAGES[area]
    assert page.exists(), f"{area} has no page: write docs/{page.name}"
    sections = re.split(r"^(?=## )", FENCE.sub("", page.read_text()), flags=re.M)
    section = next((s for s in sections if s.splitlines()[0] == CANNOT_YET), None)
    assert section is not None, f"docs/{page.name} ({area}) has no '{CANNOT_YET}' section"
    assert section[len(CANNOT_YET):].strip(), f"docs/{page.name}: '{CANNOT_YET}' says nothing"


# --- Every reference resolves inside the repository ------------------------------------------

MD_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
# A backticked repository path: `kernel/x.py`, `docs/y.md`, `plugins/z/` (not a pattern such as
# `plugins/<area>/` or `bench/*.py`).
REPO_PATH = re.compile(r"`((?:kernel|plugins|plugin_tests|tests|docs|bench|scripts|examples|extensions_sdk)"
                       r"/[A-Za-z0-9_./-]*)`")


def _slug(heading: str) -> str:
    # GitHub's anchors: lower case, punctuation but '-' and '_' dropped, spaces to '-'.
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} +(.*?) *#*$", FENCE.sub("", page.read_text()), re.M):
        slug = _slug(heading)
        out.add(slug if slug not in seen else f"{slug}-{seen[slug]}")
        seen[slug] = seen.get(slug, 0) + 1
    return out


def _broken_references(page: Path) -> list[str]:
    text = FENCE.sub("", page.read_text())
    broken = []
    for target in MD_LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if path and (not resolved.exists() or ROOT not in resolved.parents):
            broken.append(f"link {target}")
        elif anchor and resolved.suffix == ".md" and anchor not in _anchors(resolved):
            broken.append(f"link {target} (no such heading)")
    for ref in REPO_PATH.findall(text):
        path = re.sub(r":\d+$", "", ref)
        if not (ROOT / path).exists():
            broken.append(f"path `{ref}`")
    return broken


def test_the_reference_check_sees_what_does_not_resolve(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("# A page\n[up](../outside.md) [web](https://example.com) [here](#a-page)"
                    " [nowhere](#no-heading)\n`kernel/app.py` `kernel/gone.py` `plugins/<area>/`\n"
                    "```\n[in a fence](missing.md)\n```\n")
    assert _broken_references(page) == ["link ../outside.md", "link #no-heading (no such heading)",
                                        "path `kernel/gone.py`"]
    assert {"internal", "rate_limited"} <= _anchors(DOCS / "errors.md")


@pytest.mark.parametrize("page", CHECKED_PAGES, ids=_rel)
def test_every_link_and_path_resolves(page):
    broken = _broken_references(page)
    assert not broken, f"{_rel(page)}: references that do not resolve in the repository: {broken}"


# --- Comments cite what a clone can read -------------------------------------------------------

# The specification documents live outside the repository; a comment cites the OpenAPI document
# (GET /api/v1/openapi.json) or a page in docs/ instead.
OUTSIDE = re.compile("|".join(["api-spec" + r"\.md", "contract" + r"\.md", r"\.\./shared", "/work/" + "shared"]))
CODE_DIRS = ("kernel", "plugins", "extensions_sdk", "tests", "plugin_tests", "bench", "scripts")


def test_no_comment_cites_a_file_outside_the_repository():
    hits = []
    for top in CODE_DIRS:
        for source in sorted((ROOT / top).rglob("*")):
            if source.is_file() and source.suffix in (".py", ".md", ".sh", ".toml", "") \
                    and "__pycache__" not in source.parts:
                for n, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                    if OUTSIDE.search(line):
                        hits.append(f"{_rel(source)}:{n}")
    assert not hits, f"cite docs/ or the OpenAPI document instead: {hits}"


# What a page of docs/ may not cite: the two specification documents (docs/performance.md's
# benchmark commands still name the peer's scripts outside the repository, by path).
SPEC_DOCUMENTS = re.compile("|".join(["api-spec" + r"\.md", "contract" + r"\.md"]))


@pytest.mark.parametrize("page", [p for p in CHECKED_PAGES if p.name != "CHANGELOG.md"], ids=_rel)
def test_no_page_cites_the_specification_documents(page):
    # The changelog is left out: it records what each release cited.
    hits = [n for n, line in enumerate(page.read_text().splitlines(), 1) if SPEC_DOCUMENTS.search(line)]
    assert not hits, f"{_rel(page)} lines {hits}: cite a page of docs/ or the OpenAPI document instead"


def test_the_citation_checks_see_both_documents():
    for line in ("as " + "api-spec" + ".md says", "(" + "contract" + ".md, realtime)"):
        assert SPEC_DOCUMENTS.search(line) and OUTSIDE.search(line), line
    assert OUTSIDE.search("see .." + "/shared/x")
    assert not SPEC_DOCUMENTS.search("the API contract (now the OpenAPI document and [items.md](../items.md))")

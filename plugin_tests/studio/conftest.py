"""The studio's browser tests: every `expect` on a page waits as long as the pages' own actions
(test_studio_browser.WAIT), so a loaded CI machine slows them without failing them.

They run in the first pass only (SQLite, docs/testing.md "Two passes"): a browser test proves what
the screens show and do, and every API call they make is proven on PostgreSQL and Redis by the
API tests of its plugin, which run in both passes. About four fifths of a browser test's CPU is
Chromium's own (docs/testing.md, "What the run costs"); running each twice bought no proof.

One Chromium, and one Playwright driver, for the whole folder in a worker process (``browser``):
each module's tests still get contexts of their own (a person each, no cookie or storage shared),
but the start of a driver and a browser (~1 s and ~0.5 s of CPU) is paid once instead of once a
module. Playwright binds its objects to the event loop that started it, so the folder's tests
and async fixtures run on one loop for the package (``loop_scope="package"``), and
``shared_site`` is declared again here on that loop; each module still gets its own app."""

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import expect

from kernel.testing import SharedSite, chromium_path, shared_site_with

expect.set_options(timeout=15_000)

HERE = __file__.rsplit("/", 1)[0]
BROWSER_FIXTURES = frozenset({"browser", "visit"})
FIRST_PASS_ONLY = pytest.mark.svc_first_pass_only(
    "a studio browser test: its screens' API calls are proven on PostgreSQL by their plugins' API tests"
)
PACKAGE_LOOP = pytest.mark.asyncio(loop_scope="package")
_LAUNCHED: list[Any] = []  # the folder's browser while it runs (for ``no_context_left``)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> Iterator[None]:
    """Before the other hooks (kernel.testing's second pass reads it): the browser tests are
    first-pass only. After them (kernel.testing puts the tests on ``shared_site`` on the module's
    loop): this folder's tests on a module's loop run on the package's instead."""
    mine = [item for item in items if str(item.path).startswith(HERE)]
    for item in mine:
        if BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(FIRST_PASS_ONLY)
    yield
    for item in mine:
        marker = item.get_closest_marker("asyncio")
        if marker is not None and marker.kwargs.get("loop_scope") == "module":
            item.add_marker(PACKAGE_LOOP, append=False)


@pytest_asyncio.fixture(scope="package", loop_scope="package")
async def browser() -> AsyncIterator[Any]:
    """Headless Chromium for every module of the folder (see the module docstring)."""
    executable = chromium_path()
    from playwright.async_api import async_playwright

    async with async_playwright() as pw:
        launched = await pw.chromium.launch(executable_path=executable, headless=True, args=["--no-sandbox"])
        # Tabs of emptied contexts that closed visits left for later ones, by their context's options
        # (test_studio_browser's open_visit and Visit.close).
        launched.kept_tabs = {}
        _LAUNCHED.append(launched)
        try:
            yield launched
        finally:
            _LAUNCHED.remove(launched)
            await launched.close()


@pytest_asyncio.fixture(scope="module", loop_scope="package", autouse=True)
async def no_context_left() -> AsyncIterator[None]:
    """A module closes every visit it opened: the browser outlives the module, and a page left
    open on a stopped server would go on reconnecting (the studio is live) in the next module's
    time. Once the browser was closed with the module, which hid such a leak. The contexts of
    closed visits, kept with a blank tab for later ones (``kept_tabs``), are not left open."""
    yield
    for launched in _LAUNCHED:
        kept = [tab.context for tabs in launched.kept_tabs.values() for tab in tabs]
        left = [context for context in launched.contexts if context not in kept]
        for context in left:
            await context.close()
        assert not left, f"{len(left)} browser context(s) left open by the module"


@pytest_asyncio.fixture(scope="module", loop_scope="package")
async def shared_site(
    svc_shared_db: str, svc_template_db: str, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[SharedSite]:
    """kernel.testing's ``shared_site`` (one app and site a module), on the folder's loop."""
    async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory) as shared:
        yield shared

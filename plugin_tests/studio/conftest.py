"""The studio's browser tests: every `expect` on a page waits as long as the pages' own actions
(test_studio_browser.WAIT), so a loaded CI machine slows them without failing them.

They run in the first pass only (SQLite, docs/testing.md "Two passes"): a browser test proves what
the screens show and do, and every API call they make is proven on PostgreSQL and Redis by the
API tests of its plugin, which run in both passes. A browser test costs 8 to 12 s of CPU a module
(Chromium's own work aside); running each twice bought no proof."""

import pytest
from playwright.async_api import expect

expect.set_options(timeout=15_000)

BROWSER_FIXTURES = frozenset({"browser", "visit"})
FIRST_PASS_ONLY = pytest.mark.svc_first_pass_only(
    "a studio browser test: its screens' API calls are proven on PostgreSQL by their plugins' API tests"
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = __file__.rsplit("/", 1)[0]
    for item in items:
        if str(item.path).startswith(here) and BROWSER_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(FIRST_PASS_ONLY)

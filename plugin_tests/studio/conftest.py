"""The studio's browser tests: every `expect` on a page waits as long as the pages' own actions
(test_studio_browser.WAIT), so a loaded CI machine slows them without failing them."""

from playwright.async_api import expect

expect.set_options(timeout=15_000)

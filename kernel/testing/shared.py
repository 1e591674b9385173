"""The harness's app fixtures on the module's shared app, a new site per test (docs/testing.md).

A test module whose tests each write only in a site of their own imports these, and its tests
keep taking ``svc_app``, ``client``, ``site``, ``site_headers``, ``calls``, ``anon_calls``,
``make_member`` as before; they now run on the module's ``shared_site`` app (one app for the
module instead of one per test), each with a new site::

    from kernel.testing import shared as testing_shared

    svc_app, admin_headers = testing_shared.svc_app, testing_shared.admin_headers
    site, site_b = testing_shared.site, testing_shared.site_b

(and ``admin_token``, a new login of the instance admin, where its tests take it).

A module whose tests log in many times binds ``shared_site`` to ``login_shared_site`` (the auth
rate limit off); one whose tests also send email binds ``mailbox`` and ``shared_site`` to
``module_mailbox`` and ``mailing_shared_site``: the shared app mails through the module's SMTP
server; each test reads only the mail to addresses of its own.

Such a test asserts nothing about other sites or instance-wide state (a whole table's row count,
the list of sites, a setting): the module's other tests wrote there too. A test that needs an
app of its own takes ``make_app``.

A module whose shared app needs settings of its own (many logins: the auth rate limit off)
binds ``shared_site = testing_shared.shared_site_started_with(rate_limit_auth=0)``; a module
whose tests talk to the app through a real server binds ``shared_live_server`` (one uvicorn for
the module, ``kernel/testing/live.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

import pytest

from kernel.testing import AppFactory, Calls, Mailbox, SharedSite, TestApp, running_mailbox, shared_site_with
from kernel.testing.live import LiveServer

try:
    import pytest_asyncio
except ImportError:  # as in kernel.testing: the plain fixture asks for svc-cms[test] when used
    import types

    pytest_asyncio = types.SimpleNamespace(fixture=lambda *a, loop_scope=None, **k: pytest.fixture(*a, **k))

# The auth routes' rate limit off, for a shared app whose tests log in many times from one address.
NO_AUTH_LIMIT = {"SVC_RATE_LIMIT_AUTH": "0"}


async def app_with_site(make_app: AppFactory, **overrides: Any) -> tuple[TestApp, str, Calls]:
    """``own_app`` with one site, as ``(app, site, calls)``."""
    app, [calls] = await own_app(make_app, **overrides)
    return app, calls.headers["X-Svc-Site"], calls


@pytest.fixture
def svc_app(shared_site: Any) -> Any:
    """The module's shared app (``client``, ``make_member``... follow it)."""
    return shared_site.app


@pytest.fixture
def admin_headers(shared_site: Any) -> dict[str, str]:
    """The instance admin's bearer on the shared app (logged in once per module)."""
    return shared_site.admin_headers


@pytest_asyncio.fixture(loop_scope="module")
async def admin_token(shared_site: Any) -> str:
    """A new login of the instance admin on the shared app (a session of its own)."""
    return await shared_site.app.login()


@pytest_asyncio.fixture(loop_scope="module")
async def site(shared_site: Any) -> str:
    """A new site of the shared app, for this test."""
    return await shared_site.app.create_site(shared_site.admin_headers)


@pytest_asyncio.fixture(loop_scope="module")
async def site_b(shared_site: Any) -> str:
    """A second new site of the shared app, for a cross-tenant test."""
    return await shared_site.app.create_site(shared_site.admin_headers, prefix="b", name="Site B")


@pytest.fixture(name="mailbox", scope="module")
def module_mailbox() -> Iterator[Mailbox]:
    """The module's SMTP server (``kernel.testing``'s ``mailbox``, kept for the module)."""
    with running_mailbox() as box:
        yield box


@pytest_asyncio.fixture(name="shared_site", scope="module", loop_scope="module")
async def mailing_shared_site(
    svc_shared_db: str, svc_template_db: str, tmp_path_factory: pytest.TempPathFactory, mailbox: Mailbox
) -> AsyncIterator[SharedSite]:
    """The module's shared app, mailing through ``mailbox``, with the auth rate limit off (its
    tests register, log in and reset passwords many times from one address)."""
    smtp = {"smtp_host": "127.0.0.1", "smtp_port": mailbox.port}
    async with shared_site_with(
        svc_shared_db, svc_template_db, tmp_path_factory, **smtp, env=NO_AUTH_LIMIT
    ) as shared:
        yield shared


def shared_site_started_with(
    settings: Callable[[pytest.FixtureRequest], dict[str, Any]] | None = None,
    params: Sequence[Any] | None = None,
    **overrides: Any,
) -> Callable[..., Any]:
    """A module's ``shared_site`` fixture whose app is started with ``overrides`` (``make_app``'s
    settings): ``shared_site = testing_shared.shared_site_started_with(rate_limit_auth=0)`` for a
    module whose tests log in many members (the auth rate limit counts every login of the app).
    ``settings(request)`` adds settings known only when the fixture runs (another fixture's value
    through ``request.getfixturevalue``; ``request.param``, one app for each of ``params``)."""

    @pytest_asyncio.fixture(scope="module", loop_scope="module", params=params)
    async def shared_site(
        request: pytest.FixtureRequest,
        svc_shared_db: str,
        svc_template_db: str,
        tmp_path_factory: pytest.TempPathFactory,
    ) -> AsyncIterator[Any]:
        started = {**overrides, **(settings(request) if settings else {})}
        async with shared_site_with(svc_shared_db, svc_template_db, tmp_path_factory, **started) as shared:
            yield shared

    return shared_site


# The module's shared app with the auth rate limit off (its tests log in many times from one address).
login_shared_site = shared_site_started_with(env=NO_AUTH_LIMIT)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shared_live_server(shared_site: Any) -> AsyncIterator[LiveServer]:
    """The module's shared app under one uvicorn server (WebSocket, SSE), stopped before the app."""
    server = await LiveServer(shared_site.app.app).start()
    try:
        yield server
    finally:
        await server.stop()


async def own_app(make_app: Any, sites: int = 1, **settings: Any) -> tuple[Any, list[Calls]]:
    """For a test of such a module that needs an app of its own (it reads every site, or runs
    instance-wide work): ``make_app(**settings)`` and the instance admin's ``Calls`` in ``sites``
    new sites of it (each one's ``X-Svc-Site`` in its ``.headers``)."""
    app = await make_app(**settings)
    admin = {"Authorization": f"Bearer {await app.login()}"}
    made = [await app.create_site(admin, prefix=f"s{n}") for n in range(sites)]
    return app, [Calls(app.client, {**admin, "X-Svc-Site": one}) for one in made]

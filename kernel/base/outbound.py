"""Every outbound HTTP request svc makes goes through here (the outbound rule (docs/operations.md#outbound-requests)).

A site admin is a tenant, not the operator: every destination a tenant configures (webhooks,
flow requests, push endpoints, trusted issuers' ``jwksUri``/``discoveryUrl`` and the
``jwks_uri`` a discovery document names, file import, MCP and copilot imports, translation
providers, git hosts, store-sync targets, extensions) is checked by one rule, ``refusal``:

- the unspecified address (``0.0.0.0``, ``::``, any spelling: ``0``, ``0x0``, ``0.0``,
  ``[::ffff:0.0.0.0]``) is always refused;
- loopback, private, link-local (and IPv6 site-local), reserved, multicast and cloud-metadata addresses
  (``169.254.169.254``, ``fd00:ec2::254``), and any IPv6 form carrying one (IPv4-mapped, 6to4,
  Teredo), are refused unless the operator opens their network with
  ``SVC_OUTBOUND_ALLOW_NETWORKS`` (comma list of CIDRs). A metadata address is opened only by an
  entry naming exactly it (``169.254.169.254/32``), never by a wider network.
- ``SVC_ENV=development`` opens loopback too, except for a URL fetched on a user's behalf
  (``on_behalf``: file import, MCP and copilot imports), which honours only the operator's list.
- Inside an uploaded extension (``kernel.base.sandbox``, the ``network`` grant) nothing is opened:
  only public addresses.

The checks:

- ``check_url(url)`` when a URL is saved: ``http`` or ``https``, a host, at most 2,048
  characters, no credentials, never the unspecified address; 400 ``VALIDATION_FAILED``. Given a
  ``policy``, a literal address the policy refuses is refused there too.
- ``client(kernel, name, ...)``: the app's pooled HTTP client for one kind of request. Its
  connections are pinned: when one is opened, the host is resolved, every address it resolves
  to is checked by ``policy``, and the connection goes to the checked address (the URL, its
  ``Host`` and the TLS name verified stay the host's), so a DNS answer that changes between the
  check and the connect (rebinding) cannot reach a refused address, and a kept-alive connection
  serves only the host it was opened for. A refused address raises ``OutboundRefused`` (a
  ``ValueError``) from the request. Redirects are never followed and proxy variables are
  ignored. ``operator=True`` is for a URL the operator configured (``SVC_AI_BASE_URL``,
  ``SVC_TM_PROVIDER_URL``...): only the unspecified address is refused. HTTPS checks the
  certificate against certifi's CAs plus ``SVC_OUTBOUND_CA_FILE`` and the URL's host name.

Each answer is logged (``svc.outbound``, INFO) with the method, the scheme and host[:port]
and the status: never the path or the query.

Nothing else in the product creates an HTTP client or a socket (``tests/test_outbound_layout.py``).

httpx (with httpcore, and rich, Pygments and click where installed) is imported on the first
client, here and in the modules that use one: a process that sends no request (``svc sites
list``, most tests' apps) does not pay the ~80 ms its import costs.
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import logging
import socket
import ssl
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from kernel.base import sandbox
from kernel.base.errors import ApiError

if TYPE_CHECKING:
    import httpx

MAX_URL = 2048
log = logging.getLogger("svc.outbound")
IP = ipaddress.IPv4Address | ipaddress.IPv6Address
Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]
METADATA = frozenset({ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254")})
LOOPBACK: Networks = (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))


class OutboundRefused(ValueError):
    """A URL or an address the outbound rule refuses; the message says why."""


@dataclass(frozen=True)
class Policy:
    """What one kind of request may reach besides public addresses: ``allow`` (networks the
    operator opened), or anything but the unspecified address (``operator``)."""

    allow: Networks = ()
    operator: bool = False


STRICT = Policy()  # public addresses only: an extension, or an app that opened nothing
OPERATOR = Policy(operator=True)


def policy(kernel: Any, *, on_behalf: bool = False) -> Policy:
    """The policy of a tenant-configured request in this app: the operator's
    ``SVC_OUTBOUND_ALLOW_NETWORKS``, plus loopback under ``SVC_ENV=development`` unless the URL
    is fetched on a user's behalf. Inside an extension: ``STRICT``."""
    if sandbox.current() is not None:
        return STRICT
    allow: Networks = tuple(kernel.settings.get("outbound_allow_networks") or ())
    if not on_behalf and kernel.settings.get("env") == "development":
        allow += LOOPBACK
    return Policy(allow)


def _literal(host: str) -> IP | None:
    """The address a literal host spells, in any of the forms a resolver accepts (``0``,
    ``0x7f.1``, ``017700000001``, ``2130706433``), or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


def refusal(address: IP, rule: Policy = STRICT) -> str | None:
    """Why ``address`` may not be connected to under ``rule``, or None (the module docstring)."""
    # An IPv6 address that carries an IPv4 one is judged by it: mapped (::ffff:a.b.c.d), 6to4
    # (2002:aabb:ccdd::) and Teredo (2001::/32, the client's address) reach that IPv4 host.
    teredo = getattr(address, "teredo", None)
    embedded = getattr(address, "ipv4_mapped", None) or getattr(address, "sixtofour", None) or \
        (teredo[1] if teredo else None)
    if embedded is not None:
        address = embedded
    if address.is_unspecified:
        return "the unspecified address"
    if rule.operator:
        return None
    if address in METADATA:
        if any(net.num_addresses == 1 and address in net for net in rule.allow):
            return None
        return "a cloud metadata address"
    if any(address in net for net in rule.allow):
        return None
    # fec0::/10 (IPv6 site-local, deprecated but still routed inside some networks) is global
    # to Python's ipaddress, which lists it as neither private nor reserved.
    if address.is_loopback or address.is_private or address.is_link_local or address.is_reserved \
            or address.is_multicast or not address.is_global or getattr(address, "is_site_local", False):
        return "a loopback, private, link-local or reserved address"
    return None


def check_url(url: object, *, path: list[str | int] | None = None, policy: Policy | None = None,
              status: int = 400) -> str:
    """``url``, checked to be an outbound URL the rule allows when saved; ``status``
    ``VALIDATION_FAILED`` at ``path``. A literal address is checked against ``policy`` when
    one is given (the unspecified address always)."""
    where = path or ["url"]
    sandbox.require("network", "an outbound request")
    if sandbox.current() is not None:
        policy = STRICT

    def invalid(message: str) -> ApiError:
        return ApiError.validation(message, path=where, status=status)

    if not isinstance(url, str) or not url.strip():
        raise invalid("A URL is required")
    if len(url) > MAX_URL or any(ord(c) < 33 or c == "\x7f" for c in url):
        raise invalid(f"The URL must be at most {MAX_URL} characters without spaces or control characters")
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port
    except ValueError:
        raise invalid("The URL is not valid") from None
    if parts.scheme not in ("http", "https"):
        raise invalid("The URL must be http or https")
    if not host:
        raise invalid("The URL has no host")
    if parts.username is not None or parts.password is not None:
        raise invalid("The URL must not carry credentials")
    address = _literal(host)
    if address is not None:
        reason = refusal(address, policy or OPERATOR)
        if reason:
            raise invalid(f"The URL points at {reason}")
    return url


@dataclass(frozen=True)
class Pinned:
    """A URL rewritten onto a checked address: request ``url`` with ``headers`` and ``extensions``."""

    url: str
    headers: dict[str, str]
    extensions: dict[str, str]


async def checked_address(host: str, port: int, rule: Policy = STRICT) -> IP:
    """The address to connect to for ``host``: resolved now, every address it resolves to checked
    by ``rule``; ``OutboundRefused`` when one is refused or the host does not resolve."""
    sandbox.require("network", "an outbound request")
    if sandbox.current() is not None:
        rule = STRICT
    address = _literal(host)
    if address is not None:
        addresses = [address]
    else:
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise OutboundRefused(f"{host} does not resolve: {exc}") from None
        addresses = [ipaddress.ip_address(info[4][0].split("%", 1)[0]) for info in infos]
        if not addresses:
            raise OutboundRefused(f"{host} does not resolve")
    for candidate in addresses:
        reason = refusal(candidate, rule)
        if reason:
            raise OutboundRefused(f"{host} resolves to {reason}")
    return addresses[0]


async def pinned(url: str, rule: Policy = STRICT) -> Pinned:
    """``url`` rewritten onto ``checked_address`` of its host, with the ``Host`` header and TLS
    server name it needs (for a caller with a client of its own; ``client`` does this itself)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused(f"{parts.scheme or 'a relative'} URL (only http and https)")
    host = parts.hostname or ""
    address = await checked_address(host, parts.port or (443 if parts.scheme == "https" else 80), rule)

    def netloc(name: str) -> str:  # an IPv6 literal in brackets; the URL's own port, if any
        name = f"[{name}]" if ":" in name else name
        return name if parts.port is None else f"{name}:{parts.port}"

    extensions = {"sni_hostname": host} if parts.scheme == "https" and _literal(host) is None else {}
    return Pinned(urlunsplit((parts.scheme, netloc(str(address)), parts.path or "/", parts.query, "")),
                  {"Host": netloc(host)}, extensions)


CLIENTS_STATE = "outbound.clients"


def client(kernel: Any, name: str, *, timeout: httpx.Timeout, max_connections: int = 100,
           max_keepalive: int = 20, on_behalf: bool = False, operator: bool = False) -> httpx.AsyncClient:
    """This app's pooled client ``name`` (see the module docstring); the options of its first use
    stay. Every request is pinned to an address ``policy(kernel, on_behalf=...)`` allows
    (``operator``: any but the unspecified one). An extension without the ``network``
    capability gets 403 (kernel.base.sandbox); an extension's client is always ``STRICT``."""
    sandbox.require("network", "an outbound client")
    scope = sandbox.current()
    if scope is not None:
        name = f"ext:{scope.name}:{name}"
    rule = OPERATOR if operator and scope is None else policy(kernel, on_behalf=on_behalf)
    clients: dict[str, httpx.AsyncClient] = kernel.state.setdefault(CLIENTS_STATE, {})
    found = clients.get(name)
    if found is None:
        import httpx

        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive)
        found = clients[name] = httpx.AsyncClient(
            timeout=timeout, follow_redirects=False, trust_env=False, limits=limits,
            transport=_pinning_transport()(rule, limits=limits, ssl_context=_ssl_context(kernel)),
            event_hooks={"response": [_log_response]})
    return found


def _ssl_context(kernel: Any) -> ssl.SSLContext:
    """certifi's CAs (httpx's default without the environment), plus ``SVC_OUTBOUND_CA_FILE``."""
    import httpx

    context = httpx.create_ssl_context(trust_env=False)
    ca_file = kernel.settings.get("outbound_ca_file") or ""
    if ca_file:
        context.load_verify_locations(cafile=ca_file)
    return context


async def _log_response(response: httpx.Response) -> None:
    """One line per outbound answer naming the host only: a URL's path and query may carry a
    token or a tenant's data (httpx's own line, with the full URL, is kept quiet by
    kernel.base.logconfig)."""
    url = response.request.url
    log.info("%s %s://%s -> %d", response.request.method, url.scheme, url.netloc.decode("ascii"),
             response.status_code)


@functools.cache
def _pinning_transport() -> type[httpx.AsyncHTTPTransport]:
    """The transport class of every outbound client, made on the first client: its bases are
    httpx's and httpcore's, which are imported only then (see the module docstring)."""
    import httpcore
    import httpx

    class CheckedBackend(httpcore.AsyncNetworkBackend):
        """httpcore's network backend for every outbound client: a new connection goes to
        ``checked_address`` of its host, so the check runs at connect time, the URL (and with it the
        pool's key, ``Host`` and the TLS name checked) stays the one asked for, and a kept-alive
        connection is only ever reused for that host."""

        def __init__(self, rule: Policy) -> None:
            self.rule = rule
            self.inner = httpcore.AnyIOBackend()

        async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                              local_address: str | None = None,
                              socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
            address = await checked_address(host, port, self.rule)
            return await self.inner.connect_tcp(str(address), port, timeout=timeout, local_address=local_address,
                                                socket_options=socket_options)

        async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                      socket_options: Iterable[Any] | None = None) -> httpcore.AsyncNetworkStream:
            raise OutboundRefused("an outbound client connects over TCP only")

        async def sleep(self, seconds: float) -> None:
            await self.inner.sleep(seconds)

    class Pinning(httpx.AsyncHTTPTransport):
        """The transport of every outbound client: httpx's own, on a connection pool whose network
        backend is ``CheckedBackend`` (a refused address raises ``OutboundRefused`` before any
        connection is made)."""

        def __init__(self, rule: Policy, *, limits: httpx.Limits, ssl_context: ssl.SSLContext) -> None:
            super().__init__(limits=limits, trust_env=False)
            # httpx takes no network backend: its pool is replaced by the same one with ours
            # (httpcore's public AsyncConnectionPool and its ``network_backend`` parameter).
            self._pool = httpcore.AsyncConnectionPool(
                ssl_context=ssl_context, max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry, network_backend=CheckedBackend(rule))

    return Pinning


async def close_clients(kernel: Any) -> None:
    """Close every outbound client of the app (the kernel's shutdown)."""
    for found in kernel.state.pop(CLIENTS_STATE, {}).values():
        await found.aclose()

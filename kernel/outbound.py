"""Outbound URLs a user configures (webhooks, flow requests, file import, MCP tools, git hosts).

The outbound-URL rule of every such feature (docs/change-feed.md, webhooks; docs/files.md, import
from a URL), in two checks:

- ``check_url(url)`` when the URL is saved: ``http`` or ``https``, a host, at most 2,048
  characters, no credentials in it, and never the unspecified address (``0.0.0.0``, ``::``, in any spelling:
  ``0``, ``0x0``, ``0.0``, ``::ffff:0.0.0.0``). With ``public_only=True`` (a URL fetched on a
  user's behalf: file import, MCP/AI tools) a literal loopback, private, link-local, reserved or
  multicast address, or an IPv6 form carrying one (IPv4-mapped, 6to4, Teredo), is refused too.
- ``pinned(url)`` when connecting: the host is resolved now, every address it resolves to is
  checked by the same rule, and the request goes to the checked address (``Host`` and TLS
  server name stay the URL's), so a DNS answer that changes between the check and the connect
  (rebinding) cannot reach a refused address. Redirects are never followed: callers pass
  ``follow_redirects=False``.

Errors are ``OutboundRefused`` (a ``ValueError``); ``check_url`` raises 400 ``VALIDATION_FAILED``.

``client(kernel, name, timeout=...)`` is the app's pooled HTTP client for one kind of outbound
request (webhooks, flow requests, file imports): made on first use, never following redirects,
ignoring proxy variables, and closed by the kernel at shutdown.

Inside an uploaded extension (``kernel.sandbox``, the ``network`` grant) every check is
``public_only`` and ``client`` answers a client of the extension's own whose every request is
pinned to a checked public address: the grant never reaches loopback, private or metadata
addresses (an operator's ``allow`` networks are not extended to extensions).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from kernel import sandbox
from kernel.errors import ApiError

MAX_URL = 2048
IP = ipaddress.IPv4Address | ipaddress.IPv6Address


class OutboundRefused(ValueError):
    """A URL or an address the outbound rule refuses; the message says why."""


def _literal(host: str) -> IP | None:
    """The address a literal host spells, in any of the forms a resolver accepts (``0``,
    ``0x7f.1``, ``017700000001``), or None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):
        return None


Networks = tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]


def parse_networks(raw: str) -> Networks:
    """A setting's comma list of CIDR networks (``10.20.0.0/16,127.0.0.1/32``): the private
    networks an operator lets a ``public_only`` fetch reach (an internal asset host, a
    translation server); ValueError on a bad one."""
    return tuple(ipaddress.ip_network(part.strip(), strict=False) for part in raw.split(",") if part.strip())


def refusal(address: IP, *, public_only: bool, allow: Networks = ()) -> str | None:
    """Why ``address`` may not be connected to, or None. ``allow``: networks a ``public_only``
    check lets through all the same (never the unspecified address)."""
    # An IPv6 address that carries an IPv4 one is judged by it: mapped (::ffff:a.b.c.d), 6to4
    # (2002:aabb:ccdd::) and Teredo (2001::/32, the client's address) reach that IPv4 host.
    teredo = getattr(address, "teredo", None)
    embedded = getattr(address, "ipv4_mapped", None) or getattr(address, "sixtofour", None) or \
        (teredo[1] if teredo else None)
    if embedded is not None:
        address = embedded
    if address.is_unspecified:
        return "the unspecified address"
    if public_only and any(address in net for net in allow):
        return None
    if public_only and (address.is_loopback or address.is_private or address.is_link_local
                        or address.is_reserved or address.is_multicast or not address.is_global):
        return "a loopback, private, link-local or reserved address"
    return None


def check_url(url: object, *, path: list[str | int] | None = None, public_only: bool = False,
              allow: Networks = ()) -> str:
    """``url``, checked to be an outbound URL the rule allows; 400 ``VALIDATION_FAILED`` at ``path``."""
    where = path or ["url"]
    sandbox.require("network", "an outbound request")
    public_only = public_only or sandbox.current() is not None
    if not isinstance(url, str) or not url.strip():
        raise ApiError.validation("A URL is required", path=where)
    if len(url) > MAX_URL or any(ord(c) < 33 or c == "\x7f" for c in url):
        raise ApiError.validation(f"The URL must be at most {MAX_URL} characters without spaces or control "
                                  "characters", path=where)
    try:
        parts = urlsplit(url)
        host, _port = parts.hostname, parts.port
    except ValueError:
        raise ApiError.validation("The URL is not valid", path=where) from None
    if parts.scheme not in ("http", "https"):
        raise ApiError.validation("The URL must be http or https", path=where)
    if not host:
        raise ApiError.validation("The URL has no host", path=where)
    if parts.username is not None or parts.password is not None:
        raise ApiError.validation("The URL must not carry credentials", path=where)
    address = _literal(host)
    if address is not None:
        reason = refusal(address, public_only=public_only, allow=allow)
        if reason:
            raise ApiError.validation(f"The URL points at {reason}", path=where)
    return url


@dataclass(frozen=True)
class Pinned:
    """A URL rewritten onto a checked address: request ``url`` with ``headers`` and ``extensions``."""

    url: str
    headers: dict[str, str]
    extensions: dict[str, str]


async def pinned(url: str, *, public_only: bool = False, allow: Networks = ()) -> Pinned:
    """Resolve ``url``'s host now and point the request at a checked address (see the module
    docstring); ``OutboundRefused`` when any address is refused or the host does not resolve."""
    sandbox.require("network", "an outbound request")
    public_only = public_only or sandbox.current() is not None
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
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
        reason = refusal(candidate, public_only=public_only, allow=allow)
        if reason:
            raise OutboundRefused(f"{host} resolves to {reason}")
    def netloc(name: str) -> str:  # an IPv6 literal in brackets; the URL's own port, if any
        name = f"[{name}]" if ":" in name else name
        return name if parts.port is None else f"{name}:{parts.port}"

    extensions = {"sni_hostname": host} if parts.scheme == "https" and address is None else {}
    return Pinned(urlunsplit((parts.scheme, netloc(str(addresses[0])), parts.path or "/", parts.query, "")),
                  {"Host": netloc(host)}, extensions)


CLIENTS_STATE = "outbound.clients"


def client(kernel: Any, name: str, *, timeout: httpx.Timeout, max_connections: int = 100,
           max_keepalive: int = 20) -> httpx.AsyncClient:
    """This app's pooled client ``name`` (see the module docstring); the options of its first use
    stay. An extension without the ``network`` capability gets 403 (kernel.sandbox)."""
    sandbox.require("network", "an outbound client")
    scope = sandbox.current()
    if scope is not None:  # an extension's client: every request pinned to a checked public address
        name = f"ext:{scope.name}:{name}"
    clients: dict[str, httpx.AsyncClient] = kernel.state.setdefault(CLIENTS_STATE, {})
    found = clients.get(name)
    if found is None:
        limits = httpx.Limits(max_connections=max_connections, max_keepalive_connections=max_keepalive)
        transport = _PublicOnly(limits=limits, trust_env=False) if scope is not None else None
        found = clients[name] = httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False,
                                                  limits=limits, transport=transport)
    return found


class _PublicOnly(httpx.AsyncHTTPTransport):
    """The transport of an extension's client: each request goes to its host's checked public
    address (``pinned(..., public_only=True)``); a refused one raises ``OutboundRefused``."""

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        target = await pinned(str(request.url), public_only=True)
        request.url = httpx.URL(target.url)
        for key, value in target.headers.items():
            request.headers[key] = value
        request.extensions = {**request.extensions, **target.extensions}
        return await super().handle_async_request(request)


async def close_clients(kernel: Any) -> None:
    """Close every outbound client of the app (the kernel's shutdown)."""
    for found in kernel.state.pop(CLIENTS_STATE, {}).values():
        await found.aclose()

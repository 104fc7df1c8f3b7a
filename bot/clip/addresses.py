"""Which addresses a clip may connect to, checked on the address actually connected to.

A link's host is resolved here, each address it resolves to is checked, and the connection goes to
an address that passed: a name that resolves to a private address, a redirect to the cloud's
metadata service (169.254.169.254) or to ``localhost`` is refused, and a DNS answer that changes
between a check and the connection (rebinding) cannot slip through, because nothing is resolved
twice. httpx (through httpcore) connects through :class:`CheckedBackend`, so every hop of a
redirect chain is checked the same way.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Awaitable, Callable, Iterable

import httpcore

from bot.clip.errors import AddressRefused

# Resolves (host, port) to the IP addresses to try, in order.
Resolver = Callable[[str, int], Awaitable[list[str]]]
# Says why a clip must not reach an address (what kind of address it is), or None when it may (:func:`refusal`).
Rule = Callable[[str], str | None]
_IP = ipaddress.IPv4Address | ipaddress.IPv6Address


async def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, as the system resolver gives them (off the event loop)."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def refusal(address: str) -> str | None:
    """What kind of address ``address`` is, when it is one a clip must not reach; None when it may.

    An IPv6 address that leads to an IPv4 one by its form (IPv4-mapped, -translated or -compatible,
    6to4, Teredo, NAT64) is judged by the IPv4 address it leads to: ``2002:7f00:1::`` is 127.0.0.1
    through a 6to4 relay, ``64:ff9b::a9fe:a9fe`` the metadata service through a NAT64 gateway."""
    ip: _IP = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip in _LOCAL_NAT64:
            return "a local-use NAT64 address (a private network's)"
        embedded = _embedded(ip)
        for form, inner in embedded:
            why = _kind(inner)
            if why is not None:
                return f"{form} of {inner}, {why}"
        if embedded and ip not in _COMPATIBLE:
            return None  # a public IPv4 address, reached through the translation or tunnel the form names
    return _kind(ip)


_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_LOCAL_NAT64 = ipaddress.IPv6Network("64:ff9b:1::/48")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")
_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated, never routed; :: and ::1 are not of this form


def _embedded(ip: ipaddress.IPv6Address) -> list[tuple[str, ipaddress.IPv4Address]]:
    """The IPv4 addresses ``ip`` leads to by its form, each with the form's name (none for a plain address)."""
    low = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.ipv4_mapped is not None:
        return [("an IPv4-mapped address", ip.ipv4_mapped)]
    if ip in _TRANSLATED:
        return [("an IPv4-translated address", low)]
    if ip.sixtofour is not None:
        return [("a 6to4 address", ip.sixtofour)]
    if ip.teredo is not None:
        server, client = ip.teredo
        return [("a Teredo address", client), ("a Teredo address (its server)", server)]
    if ip in _NAT64:
        return [("a NAT64 address", low)]
    if ip in _COMPATIBLE and int(ip) > 1:
        return [("an IPv4-compatible address", low)]
    return []


def _kind(ip: _IP) -> str | None:
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address (such as a cloud metadata service)"
    if ip.is_multicast:
        return "a multicast address"
    if isinstance(ip, ipaddress.IPv6Address) and ip in ipaddress.IPv6Network("fc00::/7"):
        return "a unique-local address"
    if ip.is_reserved or ip.is_unspecified:
        return "a reserved address"
    if ip.is_private or not ip.is_global:  # 10/8, 172.16/12, 192.168/16, 100.64/10 (shared) and their kin
        return "a private address"
    return None


def admitted(host: str, addresses: Iterable[str], *, allow_private: bool, rule: Rule = refusal) -> str:
    """The first of ``addresses`` (what ``host`` resolved to) that ``rule`` lets through, or
    :class:`AddressRefused` saying why none may."""
    found = list(addresses)
    if not found:
        raise AddressRefused(f"{host} does not resolve to any address.")
    if allow_private:
        return found[0]
    reasons = []
    for address in found:
        why = rule(address)
        if why is None:
            return address
        reasons.append(f"{address}, {why}")
    raise AddressRefused(
        f"{host} leads to {'; '.join(reasons)}, which vaultbot does not fetch (VAULTBOT_CLIP__ALLOW_PRIVATE)."
    )


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, connecting only to addresses :func:`admitted` lets through."""

    def __init__(self, *, allow_private: bool, resolver: Resolver = resolve, rule: Rule = refusal) -> None:
        """``rule`` replaces :func:`refusal`: a test lets its local site stand for the internet."""
        self._allow_private = allow_private
        self._resolve = resolver
        self._rule = rule
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Resolve ``host`` once, check, and connect to the address checked (TLS still verifies ``host``)."""
        try:
            ipaddress.ip_address(host.strip("[]"))
            addresses = [host.strip("[]")]
        except ValueError:
            try:
                addresses = await self._resolve(host, port)
            except OSError as exc:
                raise AddressRefused(f"{host} could not be found ({exc.strerror or exc}).") from exc
        address = admitted(host, addresses, allow_private=self._allow_private, rule=self._rule)
        return await self._inner.connect_tcp(
            address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None
    ) -> httpcore.AsyncNetworkStream:
        """Never: a clip reaches the network only."""
        raise AddressRefused("vaultbot does not fetch links through local sockets.")

    async def sleep(self, seconds: float) -> None:
        """As the default backend sleeps."""
        await self._inner.sleep(seconds)

"""Offline by default: refuse socket connections to anything but loopback while replaying.

HTTP through ``httpx2`` and ``httpx`` is answered from the cassette before it reaches a
socket. Every other connection (``requests``, ``aiohttp``, ``urllib``, raw sockets) meets
this guard: connections to loopback addresses, Unix sockets and the allowed hosts go
through; the rest raise :class:`~pytest_agentctx.exceptions.NetworkBlocked`, which is also
a ``ConnectionError``. Allowed hosts may be names (``api.example.com``, ``*.example.com``)
or addresses: names are checked against what ``socket.getaddrinfo`` resolved them to.
"""

from __future__ import annotations

import fnmatch
import ipaddress
import socket
import threading
from collections.abc import Iterable
from types import TracebackType
from typing import Any

from ..exceptions import NetworkBlocked

__all__ = ["NetworkGuard", "is_loopback"]

_original_connect = socket.socket.connect
_original_connect_ex = socket.socket.connect_ex
_original_getaddrinfo = socket.getaddrinfo

_lock = threading.RLock()
_guards: list[NetworkGuard] = []
_resolved: dict[str, str] = {}  # address -> the host name it was resolved from


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address) is this machine."""
    if host.lower() in ("localhost", "localhost.localdomain"):
        return True
    try:
        address = ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)  # ::ffff:127.0.0.1
    return address.is_loopback or bool(mapped and mapped.is_loopback)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.split("%", 1)[0])
    except ValueError:
        return False
    return True


def _getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
    if isinstance(host, (str, bytes)):
        name = host.decode() if isinstance(host, bytes) else host
        if name and not _is_address(name):
            # A name no guard allows is refused before it is looked up: a DNS query would
            # already leave the machine.
            with _lock:
                guards = list(_guards)
            port = args[0] if args else kwargs.get("port")
            for guard in guards:
                guard.check(name, port)
    result = _original_getaddrinfo(host, *args, **kwargs)
    if isinstance(host, (str, bytes)):
        name = host.decode() if isinstance(host, bytes) else host
        for *_, sockaddr in result:
            # An address "resolves" to itself: that is no name to report or allow by.
            if sockaddr and str(sockaddr[0]) != name:
                _resolved[str(sockaddr[0])] = name
    return result


def _check(address: Any) -> None:
    if not isinstance(address, tuple) or not address:
        return  # AF_UNIX paths and the like
    host = str(address[0])
    port = address[1] if len(address) > 1 else None
    with _lock:
        guards = list(_guards)
    for guard in guards:
        guard.check(host, port)


def _connect(self: socket.socket, address: Any) -> None:
    _check(address)
    _original_connect(self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    _check(address)
    return _original_connect_ex(self, address)


class NetworkGuard:
    """While active, refuse connections to non-loopback addresses that are not allowed."""

    def __init__(self, allowed_hosts: Iterable[str] = (), *, reason: str = "") -> None:
        self.allowed = tuple(host.strip().lower() for host in allowed_hosts if host.strip())
        self.reason = reason
        self.blocked: list[str] = []
        self._active = False

    def allows(self, host: str) -> bool:
        if is_loopback(host):
            return True
        names = {host.lower()}
        resolved = _resolved.get(host)
        if resolved:
            names.add(resolved.lower())
        return any(fnmatch.fnmatch(name, pattern) for name in names for pattern in self.allowed)

    def check(self, host: str, port: Any) -> None:
        """Raise :class:`NetworkBlocked` unless a connection to ``host`` is allowed."""
        if self.allows(host):
            return
        name = _resolved.get(host)
        target = f"{name} ({host}:{port})" if name else f"{host}:{port}"
        self.blocked.append(target)
        raise NetworkBlocked(self.message(target))

    def message(self, target: str) -> str:
        """What a refused connection to ``target`` is told."""
        return (
            f"pytest-agentctx blocked a connection to {target}: agent tests replay offline"
            f"{' (' + self.reason + ')' if self.reason else ''}. Record the traffic with "
            "pytest --agent-record, or allow the host with the ini option "
            "agent_allowed_hosts (names or addresses)."
        )

    def verify(self) -> None:
        """Raise :class:`NetworkBlocked` if a connection was refused, even one whose error
        the code under test caught: a test that needed the network did not replay."""
        if self.blocked:
            more = len(self.blocked) - 1
            raise NetworkBlocked(
                self.message(self.blocked[0])
                + (f"\n(and {more} more blocked connection(s))" if more else "")
            )

    def start(self) -> None:
        with _lock:
            if self._active:
                return
            if not _guards:
                socket.socket.connect = _connect  # type: ignore[method-assign,assignment]
                socket.socket.connect_ex = _connect_ex  # type: ignore[method-assign,assignment]
                socket.getaddrinfo = _getaddrinfo
            _guards.append(self)
            self._active = True

    def stop(self) -> None:
        with _lock:
            if not self._active:
                return
            _guards.remove(self)
            self._active = False
            if not _guards:
                socket.socket.connect = _original_connect  # type: ignore[method-assign]
                socket.socket.connect_ex = _original_connect_ex  # type: ignore[method-assign]
                socket.getaddrinfo = _original_getaddrinfo

    def __enter__(self) -> NetworkGuard:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

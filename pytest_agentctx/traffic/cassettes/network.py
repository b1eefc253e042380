"""The network guard of tests that run offline: :class:`NetworkGuard` refuses every way out
of the machine but loopback while it is active; :func:`expect_network_blocked` expects it to.

HTTP through ``httpx2`` and ``httpx`` is answered from the cassette (or by the fake model)
before it reaches a socket. Everything else meets this guard while it is active:

* connections (``socket.connect``/``connect_ex``: ``requests``, ``aiohttp``, ``urllib``,
  asyncio, raw sockets) and UDP datagrams (``socket.sendto``/``sendmsg``: asyncio datagram
  endpoints, statsd and syslog clients; ``send``/``sendall`` of a datagram socket connected
  before the guard started, such as an endpoint made with ``remote_addr`` in a session
  fixture) to anything but loopback addresses, Unix sockets and the allowed hosts;
* DNS lookups (``getaddrinfo``, ``gethostbyname``, ``gethostbyname_ex``, ``gethostbyaddr``,
  ``getnameinfo``) of names and addresses that are not loopback or allowed, refused before
  the query is sent. This machine's own name (``socket.gethostname()``, which
  ``socket.getfqdn()``, ``http.server`` and ``email.utils.make_msgid`` look up) may be looked up;
* child processes started while it is active get the same guard (Python children, forked
  ones and those of multiprocessing's forkserver included) or a proxy that refuses their
  requests (programs that honour proxy variables): see :mod:`._children`.

A refusal raises :class:`~pytest_agentctx.traffic.errors.NetworkBlocked`, which is also a
``ConnectionError``, and is remembered in :attr:`NetworkGuard.blocked`, so the test fails
even when the code under test caught the error. Allowed hosts may be names
(``api.example.com``, ``*.example.com``) or addresses: names are checked against what
``socket.getaddrinfo`` (or ``gethostbyname``) resolved them to.
"""

from __future__ import annotations

import contextlib
import fnmatch
import ipaddress
import socket
from collections.abc import Callable, Iterable, Iterator, Sequence
from types import TracebackType
from typing import NoReturn

from pytest_agentctx.traffic.cassettes import _children, guards
from pytest_agentctx.traffic.cassettes.guards import (
    CONNECTION as CONNECTION,
    DATAGRAM as DATAGRAM,
    LOOKUP as LOOKUP,
    active_guards as active_guards,
)
from pytest_agentctx.traffic.errors import NetworkBlocked

#: What ``gethostbyname_ex`` and ``gethostbyaddr`` give: a name, its aliases, its addresses.
_HostEntry = tuple[str, list[str], list[str]]
# The originals, called with the arguments their replacements were given, as they are.
_original_connect: Callable[..., None] = socket.socket.connect
_original_connect_ex: Callable[..., int] = socket.socket.connect_ex
_original_sendto: Callable[..., int] = socket.socket.sendto
_original_sendmsg: Callable[..., int] | None = getattr(socket.socket, "sendmsg", None)
_original_send: Callable[..., int] = socket.socket.send
_original_sendall: Callable[..., None] = socket.socket.sendall
_original_getaddrinfo: Callable[..., Sequence[tuple[object, ...]]] = socket.getaddrinfo
_original_gethostbyname: Callable[..., str] = socket.gethostbyname
_original_gethostbyname_ex: Callable[..., _HostEntry] = socket.gethostbyname_ex
_original_gethostbyaddr: Callable[..., _HostEntry] = socket.gethostbyaddr
_original_getnameinfo: Callable[..., tuple[str, str]] = socket.getnameinfo

#: What the default message tells the user to do.
RECORD_ADVICE = (
    "Record the traffic with pytest --agent-record, or allow the host with the ini option "
    "agent_allowed_hosts (names or addresses)."
)
#: What a test that uses fake_llm is told (it has no cassette to record into).
FAKE_LLM_ADVICE = (
    "Replace what made the call with a fake (fake_tools.replace(...)) or a server on "
    "127.0.0.1, or allow the host with the ini option agent_allowed_hosts or "
    "@pytest.mark.agent(allowed_hosts=[...])."
)

_AF_NETLINK = getattr(socket, "AF_NETLINK", None)  # talks to the kernel, not the network

_resolved: dict[str, str] = {}  # address -> the host name it was resolved from
_saved: dict[tuple[object, str], object] = {}  # what the patches replaced, put back at stop
_MISSING = object()


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


def _is_unspecified(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_unspecified
    except ValueError:
        return False


def _text(host: object) -> str | None:
    if isinstance(host, bytes):
        return host.decode(errors="replace")
    return host if isinstance(host, str) else None


def _asks_dns(name: str) -> bool:
    """Whether resolving ``name`` may send a DNS query (an address or loopback never does)."""
    if not name or name == "<broadcast>" or _is_address(name) or is_loopback(name):
        return False
    return name.lower() != socket.gethostname().lower()


def _refuse_unless_allowed(host: str, port: object, action: str) -> None:
    for guard in active_guards():
        guard.check(host, port, action=action)


def _remember(name: str, addresses: Iterable[object]) -> None:
    for address in addresses:
        # An address "resolves" to itself: that is no name to report or allow by.
        if address and str(address) != name and not _is_address(name):
            _resolved[str(address)] = name


# -- DNS -----------------------------------------------------------------------------
# A name no guard allows is refused before it is looked up: the query would already leave
# the machine. Looking up an address needs no query, looking one up in reverse does.


def _getaddrinfo(host: object, *args: object, **kwargs: object) -> Sequence[tuple[object, ...]]:
    name = _text(host)
    if name is not None and _asks_dns(name):
        _refuse_unless_allowed(name, args[0] if args else kwargs.get("port"), CONNECTION)
    result = _original_getaddrinfo(host, *args, **kwargs)
    if name:
        _remember(
            name,
            (sockaddr[0] for *_, sockaddr in result if isinstance(sockaddr, tuple) and sockaddr),
        )
    return result


def _gethostbyname(hostname: object) -> str:
    name = _text(hostname)
    if name is not None and _asks_dns(name):
        _refuse_unless_allowed(name, None, LOOKUP)
    address = _original_gethostbyname(hostname)
    if name:
        _remember(name, [address])
    return address


def _gethostbyname_ex(hostname: object) -> _HostEntry:
    name = _text(hostname)
    if name is not None and _asks_dns(name):
        _refuse_unless_allowed(name, None, LOOKUP)
    result = _original_gethostbyname_ex(hostname)
    if name:
        _remember(name, result[2])
    return result


def _check_reverse(host: str | None) -> None:
    if host and (_is_address(host) or _asks_dns(host)):
        _refuse_unless_allowed(host, None, LOOKUP)


def _gethostbyaddr(ip_address: object) -> _HostEntry:
    _check_reverse(_text(ip_address))
    return _original_gethostbyaddr(ip_address)


def _getnameinfo(sockaddr: object, flags: int) -> tuple[str, str]:
    if not flags & socket.NI_NUMERICHOST and isinstance(sockaddr, tuple) and sockaddr:
        _check_reverse(_text(sockaddr[0]))
    return _original_getnameinfo(sockaddr, flags)


# -- sockets -------------------------------------------------------------------------


def _check(sock: socket.socket, address: object, action: str = CONNECTION) -> None:
    if not isinstance(address, tuple) or not address or sock.family == _AF_NETLINK:
        return  # AF_UNIX paths and the like
    port = address[1] if len(address) > 1 else None
    _refuse_unless_allowed(str(address[0]), port, action)


def _sending(sock: socket.socket) -> str:
    # sendto() on a TCP socket is TCP Fast Open: a connection.
    return DATAGRAM if sock.type == socket.SOCK_DGRAM else CONNECTION


def _connect(self: socket.socket, address: object) -> None:
    _check(self, address)
    _original_connect(self, address)


def _connect_ex(self: socket.socket, address: object) -> int:
    _check(self, address)
    return _original_connect_ex(self, address)


def _sendto(self: socket.socket, data: object, *args: object) -> int:
    """``sendto(data, address)`` or ``sendto(data, flags, address)``."""
    if args:
        _check(self, args[-1], _sending(self))
    return _original_sendto(self, data, *args)


def _check_peer(sock: socket.socket) -> None:
    """A datagram socket connected before the guard started sends to its peer: check it.
    (A stream socket's peer was checked when it connected, if the guard was active then.)"""
    if sock.type != socket.SOCK_DGRAM:
        return
    try:
        peer = sock.getpeername()
    except OSError:
        return  # not connected: the send fails on its own
    _check(sock, peer, DATAGRAM)


def _send(self: socket.socket, data: object, *args: object) -> int:
    _check_peer(self)
    return _original_send(self, data, *args)


def _sendall(self: socket.socket, data: object, *args: object) -> None:
    _check_peer(self)
    _original_sendall(self, data, *args)


def _sendmsg(self: socket.socket, buffers: object, *args: object) -> int:
    """``sendmsg(buffers[, ancdata[, flags[, address]]])``."""
    if len(args) >= 3:
        _check(self, args[2], _sending(self))
    else:
        _check_peer(self)
    assert _original_sendmsg is not None  # patched only where it exists
    return int(_original_sendmsg(self, buffers, *args))


_PATCHES: tuple[tuple[object, str, Callable[..., object]], ...] = (
    (socket.socket, "connect", _connect),
    (socket.socket, "connect_ex", _connect_ex),
    (socket.socket, "sendto", _sendto),
    (socket.socket, "send", _send),
    (socket.socket, "sendall", _sendall),
    (socket, "getaddrinfo", _getaddrinfo),
    (socket, "gethostbyname", _gethostbyname),
    (socket, "gethostbyname_ex", _gethostbyname_ex),
    (socket, "gethostbyaddr", _gethostbyaddr),
    (socket, "getnameinfo", _getnameinfo),
) + (((socket.socket, "sendmsg", _sendmsg),) if _original_sendmsg is not None else ())


def _patch() -> None:
    for owner, name, patch in _PATCHES:
        # A class's own attribute only: an inherited method is put back by deleting ours.
        _saved[(owner, name)] = vars(owner).get(name, _MISSING)
        setattr(owner, name, patch)


def _unpatch() -> None:
    for owner, name, _ in _PATCHES:
        before = _saved.pop((owner, name), _MISSING)
        if before is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, before)


def _children_follow() -> None:
    _children.follow([guard for guard in active_guards() if guard.children])


class NetworkGuard:
    """While active, refuse connections, datagrams and DNS lookups that leave the machine,
    but for the allowed hosts.

    ``reason`` says which test runs offline (``replaying weather.json``), ``summary`` why
    nothing may leave and ``advice`` what to do: the three make every refusal's message.
    ``children=False`` leaves child processes alone (the guard a child installs for itself).
    """

    def __init__(
        self,
        allowed_hosts: Iterable[str] = (),
        *,
        reason: str = "",
        summary: str = "agent tests replay offline",
        advice: str = RECORD_ADVICE,
        children: bool = True,
    ) -> None:
        self.allowed = tuple(host.strip().lower() for host in allowed_hosts if host.strip())
        self.reason = reason
        self.summary = summary
        self.advice = advice
        self.children = children
        #: What was refused, oldest first (``10.0.0.1:443``, ``example.com``).
        self.blocked: list[str] = []
        #: Called with the target and the action of each refusal before it is raised: a
        #: guard in a child process tells the test process with it (see :mod:`._children`).
        self.report: Callable[[str, str], None] | None = None
        self._actions: dict[str, str] = {}
        self._active = False

    @classmethod
    def for_fake_llm(cls, allowed_hosts: Iterable[str] = ()) -> NetworkGuard:
        """The guard of a test that uses ``fake_llm``: its messages say so."""
        return cls(
            allowed_hosts,
            summary="tests that use fake_llm run offline",
            reason="fake_llm answers the model, nothing else may leave the machine",
            advice=FAKE_LLM_ADVICE,
        )

    def allows(self, host: str) -> bool:
        """Whether ``host`` may be reached: loopback, the unspecified addresses (a connection
        to ``0.0.0.0`` or ``::`` reaches this machine too: vcrpy's ``ignore_localhost``
        counts it) and the allowed hosts."""
        if is_loopback(host) or _is_unspecified(host):
            return True
        names = {host.lower()}
        resolved = _resolved.get(host)
        if resolved:
            names.add(resolved.lower())
        return any(fnmatch.fnmatch(name, pattern) for name in names for pattern in self.allowed)

    def check(self, host: str, port: object, *, action: str = CONNECTION) -> None:
        """Raise :class:`NetworkBlocked` unless ``action`` (a connection, a datagram, a DNS
        lookup) to ``host`` is allowed. ``port`` is ``None`` for a lookup."""
        if self.allows(host):
            return
        name = _resolved.get(host)
        where = host if port is None else f"{host}:{port}"
        self.refuse(f"{name} ({where})" if name else where, action)

    def note(self, target: str, action: str = CONNECTION) -> None:
        """Remember that ``action`` to ``target`` was refused (here or in a child process)."""
        self._actions.setdefault(target, action)
        self.blocked.append(target)

    def refuse(self, target: str, action: str = CONNECTION) -> NoReturn:
        """Remember the refusal of ``action`` to ``target`` (and :attr:`report` it) and raise
        :class:`NetworkBlocked`."""
        self.note(target, action)
        if self.report is not None:
            self.report(target, action)
        raise NetworkBlocked(self.message(target))

    def message(self, target: str) -> str:
        """What a refusal of ``target`` is told."""
        action = self._actions.get(target, CONNECTION)
        why = f"{self.summary} ({self.reason})" if self.reason else self.summary
        return f"pytest-agentctx blocked {action} {target}: {why}. {self.advice}"

    def verify(self) -> None:
        """Raise :class:`NetworkBlocked` if anything was refused, even what the code under
        test (or a child process) caught: a test that needed the network did not run offline."""
        if not self.blocked:
            return
        others = self.blocked[1:]
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        raise NetworkBlocked(
            self.message(self.blocked[0]) + (f"\n(also blocked: {shown})" if others else "")
        )

    def start(self) -> None:
        with guards.lock():
            if self._active:
                return
            if guards.add(self):
                _patch()
            self._active = True
            _children_follow()

    def stop(self) -> None:
        with guards.lock():
            if not self._active:
                return
            self._active = False
            if guards.remove(self):
                _unpatch()
            _children_follow()

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


@contextlib.contextmanager
def expect_network_blocked(target: str | None = None) -> Iterator[list[str]]:
    """Inside the block the network is blocked and its refusals are expected: they do not
    fail the test afterwards, as a refusal the code under test caught otherwise does. For a
    test of how an agent handles a network it cannot reach (a tool that answers "not
    available")::

        with expect_network_blocked("api.weather.example"):
            result = await agent_runtime.run(weather, "Weather in Paris?")
        assert result.output == "The weather service is not available."

    The guards active already (a replaying cassette's, ``fake_llm``'s) refuse; where none
    is (a test that records, a test the plugin does not guard), the block starts one of its
    own, so the test behaves the same when it records. Gives the list of what was refused in
    the block (``host:port`` or a name). Fails with an :class:`AssertionError` when nothing
    was refused (the test would check nothing), or when ``target`` is given and no refusal
    names it.
    """
    __tracebackhide__ = True
    with contextlib.ExitStack() as own:
        watching = active_guards()
        if not watching:
            watching = [
                own.enter_context(
                    NetworkGuard(
                        reason="inside expect_network_blocked()",
                        summary="the test expects the network to be blocked",
                        advice="Move the request out of the block if it should go through.",
                    )
                )
            ]
        starts = [len(guard.blocked) for guard in watching]
        refused: list[str] = []
        try:
            yield refused
        finally:
            for guard, start in zip(watching, starts, strict=True):
                with guards.lock():
                    refused.extend(guard.blocked[start:])
                    del guard.blocked[start:]
    if not refused:
        raise AssertionError(
            "expect_network_blocked(): nothing was blocked in the block, so the test checked "
            "no refusal. Make the code under test reach the network inside it, or remove it."
        )
    if target is not None and not any(target in where for where in refused):
        raise AssertionError(
            f"expect_network_blocked({target!r}): the refusals in the block were "
            f"{', '.join(refused)}, none of {target!r}. Name the host the agent reaches."
        )

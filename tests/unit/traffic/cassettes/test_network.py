"""Unit tests of pytest_agentctx.traffic.cassettes.network: the offline guard on sockets, DNS
lookups, datagrams and child processes.

No packet leaves the machine: connections, datagrams and lookups the guard must refuse go
to addresses that are never contacted (the guard raises before connecting, sending or
asking DNS), and as a safety net the tests that expect a refusal replace the real
``connect``, ``sendto``/``sendmsg`` and lookups with ones that record the call and fail the
test. Child processes cannot be patched from here: they aim at documentation addresses
(203.0.113.0/24), which nothing routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from pytest_agentctx.traffic.cassettes import _children, network
from pytest_agentctx.traffic.cassettes.network import (
    NetworkGuard,
    expect_network_blocked,
    is_loopback,
)
from pytest_agentctx.traffic.errors import CassetteError, NetworkBlocked

#: A private address nothing answers on; the guard must refuse it before connecting.
UNROUTED = "10.255.255.1"
#: Where a host name of the tests "resolves" to (see ``fake_dns``).
RESOLVED = "10.255.255.2"
#: A documentation address (TEST-NET-3): the target of datagrams, lookups and children.
OUTSIDE = "203.0.113.1"


@pytest.fixture
def no_real_connect(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The guard's underlying connect, replaced: a connection the guard lets through is
    recorded and refused here instead of reaching the network."""
    leaked: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        leaked.append(address)
        raise AssertionError(f"the guard let a connection to {address!r} through")

    def refuse_ex(sock: socket.socket, address: object) -> int:
        refuse(sock, address)
        return 1

    monkeypatch.setattr(network, "_original_connect", refuse)
    monkeypatch.setattr(network, "_original_connect_ex", refuse_ex)
    # The guard restores its "originals" when it stops: put the real ones back after.
    monkeypatch.setattr(socket.socket, "connect", socket.socket.connect)
    monkeypatch.setattr(socket.socket, "connect_ex", socket.socket.connect_ex)
    return leaked


@pytest.fixture
def fake_dns(monkeypatch: pytest.MonkeyPatch) -> None:
    """``api.example.test`` resolves to RESOLVED; nothing else resolves (no real DNS)."""

    def getaddrinfo(host: object, port: object, *args: object, **kwargs: object) -> list[object]:
        if host == "api.example.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (RESOLVED, port))]
        raise socket.gaierror(socket.EAI_NONAME, "no such host in this test")

    monkeypatch.setattr(network, "_original_getaddrinfo", getaddrinfo)
    monkeypatch.setattr(network, "_resolved", {})
    # The guard restores its "original" when it stops: put the real one back after.
    monkeypatch.setattr(socket, "getaddrinfo", socket.getaddrinfo)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        yield server
    finally:
        server.close()


# -- what is allowed -----------------------------------------------------------------


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.8.9.10", "::1", "::ffff:127.0.0.1", "localhost", "LOCALHOST"]
)
def test_loopback_hosts_are_recognised(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", [UNROUTED, "192.0.2.1", "::ffff:10.0.0.1", "example.com", ""])
def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_the_unspecified_addresses_reach_this_machine_and_are_allowed(host):
    assert NetworkGuard().allows(host)


def test_connection_to_loopback_goes_through(listener):
    with NetworkGuard(), socket.create_connection(listener.getsockname(), timeout=5) as client:
        accepted, _ = listener.accept()
        accepted.close()

        assert client.getpeername() == listener.getsockname()


def test_unix_socket_connection_goes_through(tmp_path: Path):
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        with NetworkGuard(), socket.socket(socket.AF_UNIX) as client:
            client.connect(path)

            assert client.getpeername() == path


# -- what is refused -----------------------------------------------------------------


def test_connection_to_another_address_is_refused_before_connecting(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect((UNROUTED, 443))

    assert no_real_connect == []


def test_connect_ex_to_another_address_is_refused(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect_ex((UNROUTED, 443))

    assert no_real_connect == []


def test_refusal_is_a_connection_error_and_a_cassette_error(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(ConnectionError) as caught:
        sock.connect((UNROUTED, 443))

    assert isinstance(caught.value, CassetteError)


def test_refusal_says_where_why_and_what_to_do(no_real_connect):
    with (
        NetworkGuard(reason="replaying c.json"),
        socket.socket() as sock,
        pytest.raises(NetworkBlocked) as caught,
    ):
        sock.connect((UNROUTED, 443))

    assert str(caught.value) == (
        f"pytest-agentctx blocked a connection to {UNROUTED}:443: agent tests replay "
        "offline (replaying c.json). Record the traffic with pytest --agent-record, or allow "
        "the host with the ini option agent_allowed_hosts (names or addresses)."
    )


def test_guard_remembers_refused_connections_and_verify_raises_for_them(no_real_connect):
    guard = NetworkGuard()
    with guard, socket.socket() as sock:
        with pytest.raises(NetworkBlocked):
            sock.connect((UNROUTED, 443))
        with pytest.raises(NetworkBlocked):
            sock.connect_ex(("192.0.2.1", 80))

    assert guard.blocked == [f"{UNROUTED}:443", "192.0.2.1:80"]
    with pytest.raises(
        NetworkBlocked, match=r"10\.255\.255\.1:443.*\n\(also blocked: 192\.0\.2\.1:80\)$"
    ):
        guard.verify()


def test_verify_passes_when_nothing_was_refused():
    NetworkGuard().verify()


async def test_asyncio_connection_is_refused(no_real_connect):
    with NetworkGuard(), pytest.raises(NetworkBlocked):
        await asyncio.open_connection(UNROUTED, 443)

    assert no_real_connect == []


def _requests_get(url: str) -> None:
    with requests.Session() as session:
        session.trust_env = False
        session.get(url, timeout=5)


def test_requests_connection_is_refused_with_the_guard_error_as_its_cause(
    no_real_connect,
):
    with NetworkGuard(), pytest.raises(requests.ConnectionError) as caught:
        _requests_get("http://192.0.2.1/v1/models")

    causes = []
    error: BaseException | None = caught.value
    while error is not None:
        causes.append(type(error))
        error = error.__cause__ or error.__context__
    assert NetworkBlocked in causes
    assert no_real_connect == []


# -- allow-lists ---------------------------------------------------------------------


def test_allowed_address_is_allowed():
    assert NetworkGuard([UNROUTED]).allows(UNROUTED)


def test_host_name_allows_the_address_it_resolved_to(fake_dns):
    with NetworkGuard(["api.example.test"]) as guard:
        socket.getaddrinfo("api.example.test", 443)

        assert guard.allows(RESOLVED)


def test_host_name_pattern_allows_the_address_it_resolved_to(fake_dns):
    with NetworkGuard(["*.example.test"]) as guard:
        socket.getaddrinfo("api.example.test", 443)

        assert guard.allows(RESOLVED)


def test_a_name_that_is_not_allowed_is_refused_before_any_dns_lookup(fake_dns):
    with (
        NetworkGuard(["other.example.test"]) as guard,
        pytest.raises(NetworkBlocked, match=r"api\.example\.test"),
    ):
        socket.getaddrinfo("api.example.test", 443)

    assert guard.blocked == ["api.example.test:443"]


def test_address_not_resolved_from_an_allowed_name_is_refused(fake_dns):
    with NetworkGuard(["api.example.test"]) as guard:
        assert not guard.allows(UNROUTED)


# -- lifecycle -----------------------------------------------------------------------


def test_stop_restores_the_socket_functions():
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    with NetworkGuard():
        assert socket.socket.connect is not connect

    assert (socket.socket.connect, socket.getaddrinfo) == (connect, getaddrinfo)


def test_nested_guard_keeps_the_outer_one_active(no_real_connect):
    with NetworkGuard():
        with NetworkGuard([UNROUTED]):
            pass
        with socket.socket() as sock, pytest.raises(NetworkBlocked):
            sock.connect((UNROUTED, 443))


def test_every_active_guard_must_allow_a_connection(no_real_connect):
    with (
        NetworkGuard([UNROUTED]),
        NetworkGuard(),
        socket.socket() as sock,
        pytest.raises(NetworkBlocked),
    ):
        sock.connect((UNROUTED, 443))


def test_stop_restores_the_lookups_and_the_datagram_functions():
    before = (socket.gethostbyname, socket.gethostbyaddr, socket.getnameinfo)
    sends = (socket.socket.sendto, socket.socket.sendmsg, socket.socket.send, socket.socket.sendall)

    with NetworkGuard():
        assert socket.socket.send is not sends[2]

    assert (socket.gethostbyname, socket.gethostbyaddr, socket.getnameinfo) == before
    assert (
        socket.socket.sendto,
        socket.socket.sendmsg,
        socket.socket.send,
        socket.socket.sendall,
    ) == sends


# -- DNS lookups ---------------------------------------------------------------------


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    """The guard's underlying lookups, replaced: every lookup the guard lets through is
    recorded and answered here (a name "resolves" to RESOLVED), none reaches DNS."""
    seen: list[tuple[str, object]] = []

    def answer(kind: str, result: object) -> object:
        def lookup(*args: object) -> object:
            seen.append((kind, args[0]))
            return result

        return lookup

    for kind, result in (
        ("gethostbyname", RESOLVED),
        ("gethostbyname_ex", ("api.example.test", [], [RESOLVED])),
        ("gethostbyaddr", ("api.example.test", [], [RESOLVED])),
        ("getnameinfo", ("api.example.test", "http")),
    ):
        monkeypatch.setattr(network, f"_original_{kind}", answer(kind, result))
    monkeypatch.setattr(network, "_resolved", {})
    return seen


@pytest.mark.parametrize(
    ("lookup", "argument", "target"),
    [
        (socket.gethostbyname, "example.invalid", "example.invalid"),
        (socket.gethostbyname_ex, "example.invalid", "example.invalid"),
        (socket.gethostbyaddr, OUTSIDE, OUTSIDE),
        (socket.gethostbyaddr, "example.invalid", "example.invalid"),
    ],
)
def test_a_lookup_that_would_ask_dns_is_refused_before_it_is_sent(
    lookups, lookup, argument, target
):
    with NetworkGuard() as guard, pytest.raises(NetworkBlocked):
        getattr(socket, lookup.__name__)(argument)

    assert (lookups, guard.blocked) == ([], [target])


def test_a_reverse_lookup_by_getnameinfo_is_refused_before_it_is_sent(lookups):
    with NetworkGuard() as guard, pytest.raises(NetworkBlocked):
        socket.getnameinfo((OUTSIDE, 80), 0)

    assert (lookups, guard.blocked) == ([], [OUTSIDE])


async def test_asyncio_getnameinfo_is_refused(lookups):
    with NetworkGuard(), pytest.raises(NetworkBlocked):
        await asyncio.get_running_loop().getnameinfo((OUTSIDE, 80))

    assert lookups == []


def test_getfqdn_swallows_the_refusal_but_the_guard_remembers_it(lookups):
    with NetworkGuard() as guard:
        assert socket.getfqdn("example.invalid") == "example.invalid"

    with pytest.raises(NetworkBlocked, match=r"blocked a DNS lookup of example\.invalid"):
        guard.verify()


def test_a_refused_lookup_says_what_why_and_what_to_do(lookups):
    with (
        NetworkGuard(reason="replaying c.json"),
        pytest.raises(NetworkBlocked) as caught,
    ):
        socket.gethostbyname("example.invalid")

    assert str(caught.value) == (
        "pytest-agentctx blocked a DNS lookup of example.invalid: agent tests replay offline "
        "(replaying c.json). Record the traffic with pytest --agent-record, or allow the host "
        "with the ini option agent_allowed_hosts (names or addresses)."
    )


def test_lookups_that_stay_on_this_machine_go_through(lookups):
    own_name = socket.gethostname()
    with NetworkGuard() as guard:
        socket.gethostbyname("localhost")
        socket.gethostbyname(OUTSIDE)  # an address: no query
        socket.gethostbyname_ex(own_name)  # what getfqdn(), http.server and smtplib ask
        socket.gethostbyaddr("127.0.0.1")
        socket.gethostbyaddr(own_name)
        socket.getnameinfo(("::1", 80), 0)
        socket.getnameinfo((OUTSIDE, 80), socket.NI_NUMERICHOST | socket.NI_NUMERICSERV)

    assert guard.blocked == []
    assert [kind for kind, _ in lookups] == [
        "gethostbyname",
        "gethostbyname",
        "gethostbyname_ex",
        "gethostbyaddr",
        "gethostbyaddr",
        "getnameinfo",
        "getnameinfo",
    ]


def test_an_allowed_name_may_be_looked_up_and_allows_its_address(lookups):
    with NetworkGuard(["*.example.test"]) as guard:
        assert socket.gethostbyname("api.example.test") == RESOLVED

        assert guard.allows(RESOLVED)
        socket.gethostbyaddr(RESOLVED)

    assert guard.blocked == []


def test_an_allowed_address_may_be_looked_up_in_reverse(lookups):
    with NetworkGuard([OUTSIDE]) as guard:
        socket.gethostbyaddr(OUTSIDE)
        socket.getnameinfo((OUTSIDE, 80), 0)

    assert (guard.blocked, len(lookups)) == ([], 2)


# -- datagrams -----------------------------------------------------------------------


@pytest.fixture
def no_real_send(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The guard's underlying sendto/sendmsg, replaced: a datagram the guard lets through
    is recorded and dropped here instead of reaching the network."""
    leaked: list[object] = []

    def sendto(sock: socket.socket, data: bytes, *args: object) -> int:
        leaked.append(args[-1])
        raise AssertionError(f"the guard let a datagram to {args[-1]!r} through")

    def sendmsg(sock: socket.socket, buffers: object, *args: object) -> int:
        return sendto(sock, b"", *args)

    monkeypatch.setattr(network, "_original_sendto", sendto)
    monkeypatch.setattr(network, "_original_sendmsg", sendmsg)
    return leaked


@pytest.fixture
def udp() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        yield sock


@pytest.mark.parametrize(
    "send",
    [
        lambda sock, address: sock.sendto(b"agent.calls:1|c", address),
        lambda sock, address: sock.sendto(b"agent.calls:1|c", 0, address),
        lambda sock, address: sock.sendmsg([b"agent.calls:1|c"], [], 0, address),
    ],
    ids=["sendto", "sendto-flags", "sendmsg"],
)
def test_a_datagram_to_another_address_is_refused_before_it_is_sent(no_real_send, udp, send):
    with NetworkGuard() as guard, pytest.raises(NetworkBlocked):
        send(udp, (OUTSIDE, 8125))

    assert (no_real_send, guard.blocked) == ([], [f"{OUTSIDE}:8125"])


@pytest.fixture
def no_real_peer_send(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The guard's underlying send/sendall, replaced: what the guard lets through is
    recorded here instead of reaching the network."""
    sent: list[bytes] = []

    def send(sock: socket.socket, data: bytes, *args: object) -> int:
        sent.append(data)
        return len(data)

    monkeypatch.setattr(network, "_original_send", send)
    monkeypatch.setattr(network, "_original_sendall", send)
    monkeypatch.setattr(network, "_original_sendmsg", lambda sock, buffers, *args: send(sock, b""))
    return sent


@pytest.mark.parametrize(
    "send",
    [
        lambda sock: sock.send(b"agent.calls:1|c"),
        lambda sock: sock.sendall(b"agent.calls:1|c"),
        lambda sock: sock.sendmsg([b"agent.calls:1|c"]),
    ],
    ids=["send", "sendall", "sendmsg"],
)
def test_a_datagram_socket_connected_before_the_guard_cannot_send_to_its_peer(
    no_real_peer_send, udp, send
):
    udp.connect((OUTSIDE, 8125))  # a UDP connect sends nothing

    with NetworkGuard() as guard, pytest.raises(NetworkBlocked, match="a datagram to"):
        send(udp)

    assert (no_real_peer_send, guard.blocked) == ([], [f"{OUTSIDE}:8125"])


def test_a_datagram_socket_connected_to_loopback_sends(no_real_peer_send, udp):
    udp.connect(("127.0.0.1", 8125))

    with NetworkGuard() as guard:
        udp.send(b"agent.calls:1|c")

    assert (no_real_peer_send, guard.blocked) == ([b"agent.calls:1|c"], [])


def test_a_refusal_is_reported_before_it_is_raised(no_real_send, udp):
    reported: list[tuple[str, str]] = []
    guard = NetworkGuard()
    guard.report = lambda target, action: reported.append((target, action))

    with guard, pytest.raises(NetworkBlocked):
        udp.sendto(b"x", (OUTSIDE, 53))

    assert reported == [(f"{OUTSIDE}:53", network.DATAGRAM)]


def test_a_datagram_to_a_host_name_is_refused_before_the_name_is_resolved(no_real_send, udp):
    with NetworkGuard(), pytest.raises(NetworkBlocked, match=r"example\.invalid:514"):
        udp.sendto(b"<14>agent ran", ("example.invalid", 514))

    assert no_real_send == []


def test_a_refused_datagram_says_so(no_real_send, udp):
    with NetworkGuard(reason="replaying c.json"), pytest.raises(NetworkBlocked) as caught:
        udp.sendto(b"x", (OUTSIDE, 53))

    assert str(caught.value).startswith(
        f"pytest-agentctx blocked a datagram to {OUTSIDE}:53: agent tests replay offline "
        "(replaying c.json). Record the traffic"
    )


def test_connecting_a_udp_socket_elsewhere_is_refused(no_real_connect, udp):
    with NetworkGuard(), pytest.raises(NetworkBlocked):
        udp.connect((OUTSIDE, 8125))

    assert no_real_connect == []


def test_a_datagram_to_loopback_goes_through(udp):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as receiver:
        receiver.bind(("127.0.0.1", 0))
        with NetworkGuard() as guard:
            udp.sendto(b"one", receiver.getsockname())
            udp.sendmsg([b"two"], [], 0, receiver.getsockname())

        assert [receiver.recv(16), receiver.recv(16)] == [b"one", b"two"]
    assert guard.blocked == []


async def test_asyncio_datagram_endpoint_to_another_address_is_refused(no_real_connect):
    loop = asyncio.get_running_loop()
    with NetworkGuard(), pytest.raises(NetworkBlocked):
        await loop.create_datagram_endpoint(asyncio.DatagramProtocol, remote_addr=(OUTSIDE, 8125))

    assert no_real_connect == []


class _Errors(asyncio.DatagramProtocol):
    def __init__(self) -> None:
        self.errors: list[Exception] = []

    def error_received(self, exc: Exception) -> None:
        self.errors.append(exc)


async def test_asyncio_datagram_refused_is_remembered_though_asyncio_hands_it_on(no_real_send):
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_datagram_endpoint(_Errors, local_addr=("127.0.0.1", 0))
    try:
        with NetworkGuard() as guard:
            transport.sendto(b"agent.calls:1|c", (OUTSIDE, 8125))
    finally:
        transport.close()

    assert [type(error) for error in protocol.errors] == [NetworkBlocked]
    assert (no_real_send, guard.blocked) == ([], [f"{OUTSIDE}:8125"])


# -- child processes -----------------------------------------------------------------


async def _python(code: str, **options: Any) -> tuple[int | None, str, str]:
    """Run ``python -c code`` (asyncio: through subprocess.Popen); exit code, out, err."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        code,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        **options,
    )
    out, err = await asyncio.wait_for(process.communicate(), 120)
    return process.returncode, out.decode(), err.decode()


CONNECT_OUT = f"import socket; socket.create_connection(({OUTSIDE!r}, 80), timeout=5)"


@pytest.fixture
async def loopback_server() -> AsyncIterator[tuple[str, int]]:
    """A TCP server on 127.0.0.1 that answers b"hello" to every connection."""

    async def greet(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"hello")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0)
    try:
        yield server.sockets[0].getsockname()[:2]
    finally:
        server.close()
        await server.wait_closed()


async def test_a_python_child_cannot_connect_out():
    with NetworkGuard(reason="replaying c.json") as guard:
        code, _, err = await _python(CONNECT_OUT)

    assert code != 0
    assert (
        f"NetworkBlocked: pytest-agentctx blocked a connection to {OUTSIDE}:80: agent tests "
        "replay offline (replaying c.json)."
    ) in err
    assert guard.blocked == [f"{OUTSIDE}:80 (from a child process)"]


async def test_a_child_that_swallows_the_refusal_still_fails_the_test():
    swallow = f"try:\n    {CONNECT_OUT}\nexcept OSError:\n    pass"
    with NetworkGuard() as guard:
        code, _, _ = await _python(swallow)

    assert code == 0
    with pytest.raises(NetworkBlocked, match=r"203\.0\.113\.1:80 \(from a child process\)"):
        guard.verify()


async def test_a_python_child_reaches_loopback(loopback_server):
    host, port = loopback_server
    read = f"import socket; print(socket.create_connection(({host!r}, {port})).recv(5))"
    with NetworkGuard() as guard:
        code, out, err = await _python(read)

    assert (code, out, err, guard.blocked) == (0, "b'hello'\n", "", [])


async def test_a_child_started_with_its_own_environment_is_guarded_too():
    # as MCP stdio clients start their servers: PATH and a few more, nothing inherited
    with NetworkGuard() as guard:
        code, _, err = await _python(CONNECT_OUT, env={"PATH": os.environ.get("PATH", "")})

    assert (code, guard.blocked) == (1, [f"{OUTSIDE}:80 (from a child process)"])
    assert "NetworkBlocked" in err


async def test_a_childs_http_request_through_its_proxy_is_refused_and_reported():
    fetch = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        f"    urllib.request.urlopen('http://{OUTSIDE}/v1/models', timeout=5)\n"
        "except urllib.error.HTTPError as error:\n"
        "    print(error.code, error.read().decode())\n"
    )
    with NetworkGuard() as guard:
        code, out, _ = await _python(fetch)

    target = f"{OUTSIDE}:80 (from a child process, through its proxy)"
    assert (code, guard.blocked) == (0, [target])
    assert out.startswith(f"403 pytest-agentctx blocked a connection to {target}: agent tests")


async def test_children_go_around_the_proxy_only_for_loopback_and_allowed_hosts():
    show = "import os; print(os.environ['NO_PROXY'], os.environ['https_proxy'])"
    with NetworkGuard(["api.example.test", "*.corp.example", "api-?.example.test"]):
        _, out, _ = await _python(show)

    no_proxy, proxy = out.split()
    assert no_proxy == "localhost,127.0.0.1,::1,127.0.0.0/8,api.example.test,.corp.example"
    assert proxy.startswith("http://127.0.0.1:")


async def test_a_child_gets_the_allowed_hosts_of_every_active_guard():
    show = (
        "from pytest_agentctx.traffic.cassettes.network import active_guards\n"
        f"print([guard.allows({OUTSIDE!r}) for guard in active_guards()])"
    )
    with NetworkGuard([OUTSIDE]), NetworkGuard([OUTSIDE, "api.example.test"]):
        _, allowed, _ = await _python(show)
        with NetworkGuard():
            _, one_refuses, _ = await _python(show)

    assert (allowed, one_refuses) == ("[True, True]\n", "[True, True, False]\n")


async def test_the_sitecustomize_the_guard_hides_still_runs(tmp_path: Path):
    (tmp_path / "sitecustomize.py").write_text("print('their sitecustomize ran')\n")
    with NetworkGuard():
        code, out, err = await _python(CONNECT_OUT, env={"PYTHONPATH": str(tmp_path)})

    assert (code, out) == (1, "their sitecustomize ran\n")
    assert "NetworkBlocked" in err


async def test_a_child_that_cannot_install_the_guard_says_so():
    broken = {"PYTHONPATH": _children.SITE_DIR, _children.GUARD_VAR: "{not json"}

    code, _, err = await _python("pass", env=broken)

    assert code == 0
    assert err.startswith(
        "pytest-agentctx: this process runs WITHOUT the network guard of the test that "
        "started it (JSONDecodeError:"
    )


def test_the_guard_sets_what_children_inherit_and_restores_it_exactly(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/their/path")
    monkeypatch.delenv(_children.GUARD_VAR, raising=False)
    monkeypatch.delenv("HTTP_PROXY", raising=False)
    before, popen = dict(os.environ), subprocess.Popen.__init__

    with NetworkGuard([OUTSIDE], reason="replaying c.json"):
        during = dict(os.environ)
        assert subprocess.Popen.__init__ is not popen

    assert during["PYTHONPATH"] == f"{_children.SITE_DIR}{os.pathsep}/their/path"
    assert json.loads(during[_children.GUARD_VAR])["guards"] == [
        {
            "allowed": [OUTSIDE],
            "reason": "replaying c.json",
            "summary": "agent tests replay offline",
            "advice": network.RECORD_ADVICE,
        }
    ]
    assert "HTTP_PROXY" not in during  # the test process's own HTTP clients are left alone
    assert (dict(os.environ), subprocess.Popen.__init__) == (before, popen)


def test_a_guard_for_this_process_only_leaves_children_alone(monkeypatch):
    monkeypatch.delenv(_children.GUARD_VAR, raising=False)
    before = dict(os.environ)

    with NetworkGuard(children=False):
        assert dict(os.environ) == before


# -- expect_network_blocked ------------------------------------------------------------


def _refused(address: tuple[str, int]) -> None:
    """What a tool that handles an unreachable service does: catch the error."""
    with contextlib.suppress(NetworkBlocked):
        socket.create_connection(address, timeout=1)


def test_refusals_expected_in_the_block_do_not_fail_the_test_afterwards(no_real_connect):
    with NetworkGuard() as guard:
        with expect_network_blocked("203.0.113.7") as refused:
            _refused(("203.0.113.7", 443))
        guard.verify()

    assert refused == ["203.0.113.7:443"]


def test_a_refusal_after_the_block_still_fails_the_test(no_real_connect):
    with NetworkGuard() as guard:
        with expect_network_blocked():
            _refused(("203.0.113.7", 443))
        _refused(("198.51.100.1", 80))

        with pytest.raises(NetworkBlocked, match=r"blocked a connection to 198\.51\.100\.1:80"):
            guard.verify()


def test_a_block_where_nothing_was_refused_fails():
    with (
        NetworkGuard(),
        pytest.raises(AssertionError, match="nothing was blocked in the block"),
        expect_network_blocked(),
    ):
        pass


def test_a_block_whose_refusals_do_not_name_the_target_fails(no_real_connect):
    with (
        NetworkGuard(),
        pytest.raises(AssertionError, match=r"none of 'api\.weather\.example'"),
        expect_network_blocked("api.weather.example"),
    ):
        _refused(("203.0.113.7", 443))


def test_a_block_without_a_guard_blocks_the_network_itself(no_real_connect):
    with expect_network_blocked("203.0.113.7") as refused:
        _refused(("203.0.113.7", 443))

    assert (refused, network.active_guards()) == (["203.0.113.7:443"], [])

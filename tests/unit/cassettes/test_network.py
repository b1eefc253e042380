"""Unit tests of pytest_agentctx.cassettes.network: the offline guard on sockets.

No packet leaves the machine: connections the guard must refuse go to addresses that
are never contacted (the guard raises before connecting), and as a safety net the tests
that expect a refusal replace the real ``connect`` with one that fails the test.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from pytest_agentctx.cassettes import network
from pytest_agentctx.cassettes.network import NetworkGuard, is_loopback
from pytest_agentctx.exceptions import CassetteError, NetworkBlocked

#: A private address nothing answers on; the guard must refuse it before connecting.
UNROUTED = "10.255.255.1"
#: Where a host name of the tests "resolves" to (see ``fake_dns``).
RESOLVED = "10.255.255.2"


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
async def test_loopback_hosts_are_recognised(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", [UNROUTED, "192.0.2.1", "::ffff:10.0.0.1", "example.com", ""])
async def test_other_hosts_are_not_loopback(host):
    assert not is_loopback(host)


async def test_connection_to_loopback_goes_through(listener):
    with NetworkGuard(), socket.create_connection(listener.getsockname(), timeout=5) as client:
        accepted, _ = listener.accept()
        accepted.close()

        assert client.getpeername() == listener.getsockname()


async def test_unix_socket_connection_goes_through(tmp_path: Path):
    path = str(tmp_path / "s.sock")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(path)
        server.listen()
        with NetworkGuard(), socket.socket(socket.AF_UNIX) as client:
            client.connect(path)

            assert client.getpeername() == path


# -- what is refused -----------------------------------------------------------------


async def test_connection_to_another_address_is_refused_before_connecting(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect((UNROUTED, 443))

    assert no_real_connect == []


async def test_connect_ex_to_another_address_is_refused(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(NetworkBlocked):
        sock.connect_ex((UNROUTED, 443))

    assert no_real_connect == []


async def test_refusal_is_a_connection_error_and_a_cassette_error(no_real_connect):
    with NetworkGuard(), socket.socket() as sock, pytest.raises(ConnectionError) as caught:
        sock.connect((UNROUTED, 443))

    assert isinstance(caught.value, CassetteError)


async def test_refusal_says_where_why_and_what_to_do(no_real_connect):
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


async def test_guard_remembers_refused_connections_and_verify_raises_for_them(no_real_connect):
    guard = NetworkGuard()
    with guard, socket.socket() as sock:
        with pytest.raises(NetworkBlocked):
            sock.connect((UNROUTED, 443))
        with pytest.raises(NetworkBlocked):
            sock.connect_ex(("192.0.2.1", 80))

    assert guard.blocked == [f"{UNROUTED}:443", "192.0.2.1:80"]
    with pytest.raises(NetworkBlocked, match=r"10\.255\.255\.1:443.*\n\(and 1 more blocked"):
        guard.verify()


async def test_verify_passes_when_nothing_was_refused():
    NetworkGuard().verify()


async def test_asyncio_connection_is_refused(no_real_connect):
    with NetworkGuard(), pytest.raises(NetworkBlocked):
        await asyncio.open_connection(UNROUTED, 443)

    assert no_real_connect == []


def _requests_get(url: str) -> None:
    with requests.Session() as session:
        session.trust_env = False
        session.get(url, timeout=5)


async def test_requests_connection_is_refused_with_the_guard_error_as_its_cause(
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


async def test_allowed_address_is_allowed():
    assert NetworkGuard([UNROUTED]).allows(UNROUTED)


async def test_host_name_allows_the_address_it_resolved_to(fake_dns):
    with NetworkGuard(["api.example.test"]) as guard:
        socket.getaddrinfo("api.example.test", 443)

        assert guard.allows(RESOLVED)


async def test_host_name_pattern_allows_the_address_it_resolved_to(fake_dns):
    with NetworkGuard(["*.example.test"]) as guard:
        socket.getaddrinfo("api.example.test", 443)

        assert guard.allows(RESOLVED)


async def test_a_name_that_is_not_allowed_is_refused_before_any_dns_lookup(fake_dns):
    with (
        NetworkGuard(["other.example.test"]) as guard,
        pytest.raises(NetworkBlocked, match=r"api\.example\.test"),
    ):
        socket.getaddrinfo("api.example.test", 443)

    assert guard.blocked == ["api.example.test:443"]


async def test_address_not_resolved_from_an_allowed_name_is_refused(fake_dns):
    with NetworkGuard(["api.example.test"]) as guard:
        assert not guard.allows(UNROUTED)


# -- lifecycle -----------------------------------------------------------------------


async def test_stop_restores_the_socket_functions():
    connect, getaddrinfo = socket.socket.connect, socket.getaddrinfo

    with NetworkGuard():
        assert socket.socket.connect is not connect

    assert (socket.socket.connect, socket.getaddrinfo) == (connect, getaddrinfo)


async def test_nested_guard_keeps_the_outer_one_active(no_real_connect):
    with NetworkGuard():
        with NetworkGuard([UNROUTED]):
            pass
        with socket.socket() as sock, pytest.raises(NetworkBlocked):
            sock.connect((UNROUTED, 443))


async def test_every_active_guard_must_allow_a_connection(no_real_connect):
    with (
        NetworkGuard([UNROUTED]),
        NetworkGuard(),
        socket.socket() as sock,
        pytest.raises(NetworkBlocked),
    ):
        sock.connect((UNROUTED, 443))

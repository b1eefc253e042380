"""End-to-end tests of the network guard's reach into the processes a replayed test starts
without ``subprocess``: children of multiprocessing's forkserver (started before the test,
or the default start method, as on Python 3.14), forked children, children started with an
environment of their own (``os.posix_spawn``, ``os.execve``...), and datagram sockets
connected before the test.

Inner runs are real pytest processes. A refused child aims at a documentation address
(203.0.113.1, which nothing routes) and swallows the refusal, exiting with 0, as a tool
that reports failures as text does: the test must fail all the same. Children that must get
through reach servers the inner test starts on 127.0.0.1 and check what arrived.
"""

from __future__ import annotations

import pytest

#: What a child does: connect to ``host:port`` (in the arguments, else the outside), swallow
#: any error (its exit status says nothing), and print what happened.
CHILDREN = '''
import os
import socket
import sys


def connect(host="203.0.113.1", port=9):
    try:
        socket.create_connection((host, port), timeout=2).close()
        print("child: connected", flush=True)
    except OSError as error:
        print(f"child: {type(error).__name__}", flush=True)


def guarded():
    """Whether this process runs a network guard."""
    return "connect" in vars(socket.socket)


CHILD_CODE = "from net_children import connect; connect()"
'''

BLOCKED_CHILD = (
    "E *NetworkBlocked: pytest-agentctx blocked a connection to 203.0.113.1:9 (from a child "
    "process): agent tests replay offline (replaying {test}.json)*"
)


@pytest.fixture
def tester(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(net_children=CHILDREN)
    return agent_pytester


def _run(tester: pytest.Pytester) -> pytest.RunResult:
    return tester.runpytest_subprocess("-p", "no:cacheprovider", "-s", timeout=300)


# -- multiprocessing's forkserver ------------------------------------------------------

FORKSERVER_STARTED_EARLIER = """
import multiprocessing

import pytest

from net_children import connect

CONTEXT = multiprocessing.get_context("forkserver")


@pytest.fixture(scope="session", autouse=True)
def forkserver_started_before_any_guard():
    child = CONTEXT.Process(target=print, args=("forkserver warmed",))
    child.start()
    child.join()


@pytest.mark.agent
def test_tool_process():
    child = CONTEXT.Process(target=connect)
    child.start()
    child.join()
    assert child.exitcode == 0
"""


def test_a_child_of_a_forkserver_started_before_the_test_fails_a_replayed_test(tester):
    tester.makepyfile(test_net_fs=FORKSERVER_STARTED_EARLIER)

    result = _run(tester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*child: NetworkBlocked*", BLOCKED_CHILD.format(test="test_tool_process")]
    )


FORKSERVER_BY_DEFAULT = """
import multiprocessing
import socket
import threading

import pytest

from net_children import connect, guarded

multiprocessing.set_start_method("forkserver", force=True)  # the default on Python 3.14


@pytest.fixture(scope="session", autouse=True)
def forkserver_started_before_any_guard():
    with multiprocessing.Pool(1) as pool:
        assert pool.apply(guarded) is False


@pytest.mark.agent
def test_outside():
    with multiprocessing.Pool(1) as pool:
        pool.apply(connect)


@pytest.mark.agent
def test_loopback():
    server = socket.create_server(("127.0.0.1", 0))
    received = []

    def serve():
        connection, _ = server.accept()
        with connection:
            received.append(connection.recv(5))

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    child = multiprocessing.Process(target=_send_hello, args=(server.getsockname()[1],))
    child.start()
    child.join()
    thread.join(30)
    server.close()
    assert (child.exitcode, received) == (0, [b"hello"])


def _send_hello(port):
    assert guarded()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(b"hello")


def test_after_the_replayed_tests():
    child = multiprocessing.Process(target=_unguarded)
    child.start()
    child.join()
    assert child.exitcode == 0


def _unguarded():
    import os

    assert not guarded()
    assert "PYTEST_AGENTCTX_NETWORK_GUARD" not in os.environ
"""


def test_the_guard_holds_when_forkserver_is_the_default_start_method(tester):
    tester.makepyfile(test_net_fs_default=FORKSERVER_BY_DEFAULT)

    result = _run(tester)

    result.assert_outcomes(failed=1, passed=2)
    result.stdout.fnmatch_lines(
        ["*test_outside*", BLOCKED_CHILD.format(test="test_outside"), "*1 failed, 2 passed*"]
    )


FORKSERVER_STARTED_UNDER_A_GUARD = """
import multiprocessing

import pytest

from net_children import guarded

CONTEXT = multiprocessing.get_context("forkserver")


@pytest.mark.agent
def test_replayed_first():
    with CONTEXT.Pool(1) as pool:
        assert pool.apply(guarded) is True


def test_then_a_test_the_plugin_does_not_guard():
    with CONTEXT.Pool(1) as pool:
        assert pool.apply(guarded) is False
"""


def test_a_forkserver_started_under_a_guard_gives_no_guard_to_later_tests(tester):
    tester.makepyfile(test_net_fs_late=FORKSERVER_STARTED_UNDER_A_GUARD)

    _run(tester).assert_outcomes(passed=2)


# -- forked children ---------------------------------------------------------------------

FORKED = """
import multiprocessing
import os

import pytest

from net_children import connect

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


@pytest.mark.agent
def test_os_fork():
    pid = os.fork()
    if pid == 0:
        connect()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.agent
def test_multiprocessing_fork():
    child = multiprocessing.get_context("fork").Process(target=connect)
    child.start()
    child.join()
    assert child.exitcode == 0
"""


def test_a_forked_childs_refusal_fails_the_replayed_test(tester):
    tester.makepyfile(test_net_fork=FORKED)

    result = _run(tester)

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            BLOCKED_CHILD.format(test="test_os_fork"),
            BLOCKED_CHILD.format(test="test_multiprocessing_fork"),
        ]
    )


# -- children started with an environment of their own ------------------------------------

LAUNCHED = """
import os
import sys

import pytest

from net_children import CHILD_CODE

ARGV = [sys.executable, "-c", CHILD_CODE]


def _exited(pid):
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.agent
def test_launch(tmp_path):
    {launch}
"""

LAUNCHES = {
    "posix_spawn": "_exited(os.posix_spawn(sys.executable, ARGV, {}))",
    "posix_spawnp": (
        "_exited(os.posix_spawnp(os.path.basename(sys.executable), ARGV, "
        "{'PATH': os.environ['PATH']}))"
    ),
    "spawnve": "_exited(os.spawnve(os.P_NOWAIT, sys.executable, ARGV, {}))",
    "execve": (
        "pid = os.fork()\n"
        "    if pid == 0:\n"
        "        os.execve(sys.executable, ARGV, {})\n"
        "    _exited(pid)"
    ),
}


@pytest.mark.parametrize("launch", sorted(LAUNCHES))
def test_a_python_child_given_an_empty_environment_fails_a_replayed_test(tester, launch):
    tester.makepyfile(net_children=CHILDREN + _SYS_PATH)
    tester.makepyfile(test_net_launch=LAUNCHED.format(launch=LAUNCHES[launch]))

    result = _run(tester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*child: NetworkBlocked*", BLOCKED_CHILD.format(test="test_launch")]
    )


#: A child given no environment finds the helper module by its own path, as a tool whose
#: script sits in the project does.
_SYS_PATH = """
CHILD_CODE = (
    f"import sys; sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r}); "
    + CHILD_CODE
)
"""


def test_the_launchers_are_put_back_when_the_test_ends(tester):
    tester.makepyfile(
        test_net_after="""
        import os

        import pytest

        SPAWN, EXECVE = os.posix_spawn, os.execve

        @pytest.mark.agent
        def test_replayed():
            assert os.posix_spawn is not SPAWN

        def test_after():
            assert (os.posix_spawn, os.execve) == (SPAWN, EXECVE)
        """
    )

    _run(tester).assert_outcomes(passed=2)


# -- datagram sockets connected before the test ---------------------------------------------

CONNECTED_EARLIER = """
import asyncio
import socket

import pytest

# A metrics client made when its module is imported: connected long before any test runs.
OUTSIDE = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
OUTSIDE.connect(("203.0.113.1", 8125))
OUTSIDE_TOO = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
OUTSIDE_TOO.connect(("203.0.113.1", 8126))
RECEIVER = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
RECEIVER.bind(("127.0.0.1", 0))
LOOPBACK = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
LOOPBACK.connect(RECEIVER.getsockname())


@pytest.mark.agent
async def test_endpoint_sendto():
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        asyncio.DatagramProtocol, sock=OUTSIDE
    )
    transport.sendto(b"agent.calls:1|c")  # errors go to the protocol, which ignores them
    transport.close()


@pytest.mark.agent
def test_send():
    try:  # as metrics clients do: a lost metric never fails the caller
        OUTSIDE_TOO.send(b"agent.calls:1|c")
    except OSError:
        pass


@pytest.mark.agent
async def test_loopback_endpoint():
    transport, _ = await asyncio.get_running_loop().create_datagram_endpoint(
        asyncio.DatagramProtocol, sock=LOOPBACK
    )
    transport.sendto(b"agent.calls:1|c")
    await asyncio.sleep(0)
    transport.close()
    RECEIVER.settimeout(10)
    assert RECEIVER.recv(100) == b"agent.calls:1|c"


"""


def test_a_datagram_socket_connected_before_the_test_fails_a_replayed_test(tester):
    tester.makepyfile(test_net_udp_early=CONNECTED_EARLIER)

    result = _run(tester)

    result.assert_outcomes(failed=2, passed=1)
    result.stdout.fnmatch_lines(
        [
            "E *NetworkBlocked: pytest-agentctx blocked a datagram to 203.0.113.1:8125: *",
            "E *NetworkBlocked: pytest-agentctx blocked a datagram to 203.0.113.1:8126: *",
        ]
    )

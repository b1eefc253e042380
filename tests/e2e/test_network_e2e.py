"""End-to-end tests of network isolation: replayed tests and fake_llm tests run offline.

Every inner test that must fail aims at a documentation address (203.0.113.1, which nothing
routes) or a ``.invalid`` name, except the child process of the brief's own example, which
aims at example.com: the guard refuses each before a packet leaves. Inner tests that must
pass reach servers they start on 127.0.0.1.
"""

from __future__ import annotations

import pytest

import pytest_agentctx.traffic.cassettes._child_guard  # noqa: F401  (loaded once, not per inner run)

#: An agent whose tool reaches the network and, as many tools do, reports a failure as text.
AGENT_MODULE = '''
import socket

from pytest_agentctx import Agent, tool


@tool
def fetch_page(host: str, port: int) -> str:
    """Fetch a page from a host."""
    try:
        with socket.create_connection((host, port), timeout=5) as connection:
            return connection.recv(5).decode()
    except OSError:
        return "the page is not available"


AGENT = Agent(name="fetcher", model="openai:gpt-4o-mini", tools=[fetch_page])
'''

LOOPBACK_SERVER = """
import socket
import threading

import pytest


@pytest.fixture
def loopback_port():
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            with connection:
                connection.sendall(b"hello")

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()
"""


@pytest.fixture
def tester(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(net_agent=AGENT_MODULE)
    agent_pytester.makeconftest(LOOPBACK_SERVER)
    return agent_pytester


# -- replayed tests ------------------------------------------------------------------


def test_a_dns_lookup_fails_a_replayed_test(tester):
    tester.makepyfile(
        test_net_dns="""
        import socket
        import pytest

        @pytest.mark.agent
        def test_lookup():
            socket.gethostbyname("example.invalid")
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *NetworkBlocked: pytest-agentctx blocked a DNS lookup of example.invalid: agent "
            "tests replay offline (replaying test_lookup.json). Record the traffic with pytest "
            "--agent-record, or allow the host*"
        ]
    )


def test_a_reverse_lookup_that_getfqdn_swallows_still_fails_a_replayed_test(tester):
    tester.makepyfile(
        test_net_fqdn="""
        import socket
        import pytest

        @pytest.mark.agent
        def test_fqdn():
            assert socket.getfqdn("203.0.113.1") == "203.0.113.1"
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *NetworkBlocked: *blocked a DNS lookup of 203.0.113.1:*"])


def test_a_udp_datagram_fails_a_replayed_test_even_when_the_error_is_ignored(tester):
    tester.makepyfile(
        test_net_udp="""
        import socket
        import pytest

        @pytest.mark.agent
        def test_metrics():
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
                try:  # as metrics clients do: a lost metric never fails the caller
                    sock.sendto(b"agent.calls:1|c", ("203.0.113.1", 8125))
                except OSError:
                    pass
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *NetworkBlocked: pytest-agentctx blocked a datagram to 203.0.113.1:8125: agent *"]
    )


def test_an_asyncio_datagram_endpoint_fails_a_replayed_test(tester):
    tester.makepyfile(
        test_net_asyncio_udp="""
        import asyncio
        import pytest

        @pytest.mark.agent
        async def test_metrics():
            loop = asyncio.get_running_loop()
            transport, _ = await loop.create_datagram_endpoint(
                asyncio.DatagramProtocol, local_addr=("127.0.0.1", 0)
            )
            transport.sendto(b"agent.calls:1|c", ("203.0.113.1", 8125))  # errors go nowhere
            transport.close()
        """
    )

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *NetworkBlocked: *blocked a datagram to 203.0.113.1:8125*"])


CHILD_CONNECTS = """
import subprocess
import sys

import pytest

@pytest.mark.agent
def test_tool_process(loopback_port):
    host = {host!r}
    port = loopback_port if host == "127.0.0.1" else 80
    code = f"import socket; socket.create_connection(({{host!r}}, {{port}}), timeout=5)"
    # a tool run as a subprocess whose exit status nobody checks
    subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
"""


def test_a_child_process_connecting_out_fails_a_replayed_test(tester):
    tester.makepyfile(test_net_child=CHILD_CONNECTS.format(host="example.com"))

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *NetworkBlocked: pytest-agentctx blocked a connection to example.com:80 (from a "
            "child process): agent tests replay offline (replaying test_tool_process.json)*"
        ]
    )


def test_a_child_process_connecting_to_loopback_passes_a_replayed_test(tester):
    tester.makepyfile(test_net_child=CHILD_CONNECTS.format(host="127.0.0.1"))

    tester.runpytest().assert_outcomes(passed=1)


# -- fake_llm tests ------------------------------------------------------------------

FAKE_LLM_TEST = """
from net_agent import AGENT

async def test_fetch(agent_runtime, fake_llm, loopback_port):
    host = {host!r}
    port = loopback_port if host == "127.0.0.1" else 80
    fake_llm.reply_tool_call("fetch_page", host=host, port=port).reply("Done.")

    result = await agent_runtime.run(AGENT, "Fetch the page.")

    assert result.output == "Done."
"""


def test_a_fake_llm_test_whose_tool_connects_out_fails(tester):
    tester.makepyfile(test_net_fake=FAKE_LLM_TEST.format(host="203.0.113.1"))

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *NetworkBlocked: pytest-agentctx blocked a connection to 203.0.113.1:80: tests "
            "that use fake_llm run offline (fake_llm answers the model, nothing else may leave "
            "the machine). Replace what made the call with a fake (fake_tools.replace(...)) or "
            "a server on 127.0.0.1, or allow the host with the ini option agent_allowed_hosts "
            "or @pytest.mark.agent(allowed_hosts=*)."  # (fnmatch reads [...] as a set)
        ]
    )


def test_a_fake_llm_test_whose_tool_reaches_loopback_passes(tester):
    tester.makepyfile(test_net_fake=FAKE_LLM_TEST.format(host="127.0.0.1"))

    tester.runpytest().assert_outcomes(passed=1)


def test_a_fake_llm_test_that_asks_a_loopback_provider_passes(tester):
    tester.makepyfile(
        test_net_provider="""
        import json
        import urllib.request

        from pytest_agentctx import LoopbackProvider

        def test_ask(fake_llm):
            body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Hi"}]}
            with LoopbackProvider() as provider:
                provider.reply("From the loopback provider.")
                request = urllib.request.Request(
                    provider.openai_base_url + "/chat/completions",
                    data=json.dumps(body).encode(),
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(request, timeout=10) as response:
                    answer = json.load(response)
            assert answer["choices"][0]["message"]["content"] == "From the loopback provider."
        """
    )

    tester.runpytest().assert_outcomes(passed=1)


ALLOWED = """
import socket

import pytest

from pytest_agentctx.traffic.cassettes import network


@pytest.fixture
def connected(monkeypatch):
    # the connection the guard lets through, kept from the network
    seen = []
    monkeypatch.setattr(network, "_original_connect", lambda sock, address: seen.append(address))
    return seen

{marker}
def test_allowed(fake_llm, connected):
    with socket.socket() as sock:
        sock.settimeout(5)
        sock.connect(("203.0.113.1", 443))
    assert connected == [("203.0.113.1", 443)]
"""


@pytest.mark.parametrize(
    ("marker", "ini", "conftest"),
    [
        ("@pytest.mark.agent(allowed_hosts=['203.0.113.1'])", "", ""),
        ("", "agent_allowed_hosts = 203.0.113.1", ""),
        (
            "",
            "",
            "@pytest.fixture\ndef agent_cassette_config():\n"
            "    return {'allowed_hosts': ['203.0.113.1']}\n",
        ),
    ],
    ids=["marker", "ini", "agent_cassette_config"],
)
def test_a_fake_llm_test_may_reach_the_allowed_hosts(tester, marker, ini, conftest):
    if ini:
        tester.makeini(tester.path.joinpath("tox.ini").read_text() + "\n" + ini + "\n")
    if conftest:
        tester.makeconftest(LOOPBACK_SERVER + conftest)
    tester.makepyfile(test_net_allowed=ALLOWED.format(marker=marker))

    tester.runpytest().assert_outcomes(passed=1)


def test_a_fake_llm_test_may_not_reach_a_host_it_does_not_allow(tester):
    tester.makepyfile(test_net_allowed=ALLOWED.format(marker=""))

    result = tester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *NetworkBlocked: *203.0.113.1:443: tests that use fake_llm*"])


def test_the_next_test_that_uses_neither_runs_as_without_the_plugin(tester):
    tester.makepyfile(
        test_net_after="""
        import _socket
        import os
        import socket
        import subprocess

        POPEN = subprocess.Popen.__init__

        def test_first(fake_llm):
            assert "PYTEST_AGENTCTX_NETWORK_GUARD" in os.environ
            assert socket.gethostbyname is not _socket.gethostbyname

        def test_after():
            assert "PYTEST_AGENTCTX_NETWORK_GUARD" not in os.environ
            assert not os.environ.get("PYTHONPATH", "").endswith("_child_site")
            assert socket.gethostbyname is _socket.gethostbyname
            assert socket.socket.sendto is _socket.socket.sendto
            assert subprocess.Popen.__init__ is POPEN
        """
    )

    tester.runpytest().assert_outcomes(passed=2)

"""A suite of deliberately broken agent tests: each must fail, for its own reason.

One project holds every way a test used to pass when it should have failed: raw-SDK agents
over budget (openai, anthropic, streaming), drift from a baseline, a DNS lookup, a UDP
packet and a child process that connects out while replaying, a misspelt marker option,
``redact_values`` given as a string, identical requests in a shared cassette,
``Exact(Like(...))`` on a call with an extra field, and a respx-mocked call in an agent
test. Beside them, plain tests under ``tests/integration/`` that the plugin must leave
alone. The project is recorded once against a loopback provider, then run serially and
under ``-n 2``; the JUnit XML says why each test failed.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import anthropic  # noqa: F401  (imported here so the inner runs do not import it again)
import openai  # noqa: F401  (same)
import pytest
from raw_sdk_project import AGENTS, CONFTEST

from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import write_cassette

RECORDED = """
import os

import openai
import pytest

from sdk_agents import anthropic_agent, chat_agent, script, streaming_chat_agent

BUDGET = pytest.mark.agent_budget(max_iterations=int(os.environ.get("AGENT_BUDGET", "10")))


def ask_once(base_url):
    client = openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Weather?"}]
    )
    return reply.choices[0].message.content


@BUDGET
@pytest.mark.agent
def test_openai_over_budget(model_server):
    script(model_server)
    chat_agent(model_server.openai_base_url)


@BUDGET
@pytest.mark.agent
async def test_openai_streaming_over_budget(model_server):
    script(model_server)
    await streaming_chat_agent(model_server.openai_base_url)


@BUDGET
@pytest.mark.agent
def test_anthropic_over_budget(model_server):
    script(model_server)
    anthropic_agent(model_server.anthropic_base_url)


@pytest.mark.agent(cassette="shared_weather")
def test_shared_sunny(model_server):
    model_server.reply("Sunny.")
    assert ask_once(model_server.openai_base_url) == "Sunny."


@pytest.mark.agent(cassette="shared_weather")
def test_shared_expects_the_other_tests_answer(model_server):
    model_server.reply("Rainy.")
    answer = ask_once(model_server.openai_base_url)
    # Deliberately wrong once replayed: this test recorded "Rainy.", not test_shared_sunny's.
    assert answer == ("Rainy." if os.environ.get("AGENT_RECORDING") else "Sunny.")
"""

BROKEN = """
import socket
import subprocess
import sys

import httpx
import pytest

from pytest_agentctx import Exact, Like, ToolCall, matches

CHILD = (
    "import socket\\n"
    "try:\\n"
    "    socket.create_connection(('203.0.113.1', 80), timeout=2)\\n"
    "except OSError:\\n"
    "    pass\\n"
)


@pytest.mark.agent
def test_dns_lookup():
    try:
        socket.gethostbyname("api.example.com")
    except OSError:
        pass  # a tool that swallows the error


@pytest.mark.agent
def test_udp_packet():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.sendto(b"agent.calls:1|c", ("203.0.113.1", 8125))
        except OSError:
            pass  # statsd clients ignore send errors


@pytest.mark.agent
def test_subprocess_connects_out():
    subprocess.run([sys.executable, "-c", CHILD], timeout=120, check=False)


@pytest.mark.agent(cassete="shared")
def test_misspelt_marker_option():
    pass


def test_exact_like_with_an_extra_field():
    call = ToolCall(id="call_1", name="f", arguments={"x": 1})
    assert matches(call, Exact(Like(ToolCall, name="f")))


@pytest.mark.agent(allow_unused=True)
def test_respx_mock_wins_over_the_cassette(respx_mock):
    respx_mock.get("https://weather.example/today").respond(text="rainy")
    # Deliberately the cassette's answer: the mock must win.
    assert httpx.get("https://weather.example/today").text == "sunny"
"""

CONFIGURED = """
import pytest


@pytest.fixture
def agent_cassette_config():
    return {"redact_values": "sk-canary-0123456789"}


@pytest.mark.agent
def test_redact_values_as_a_string():
    pass
"""

PLAIN = """
import pytest


def test_plain_integration_folder():
    pass


@pytest.mark.integration
def test_plain_marked_integration():
    pass
"""

#: Each broken test, and a text its failure must hold (the reason it failed).
REASONS = {
    "test_recorded.test_openai_over_budget": "agent budget exceeded: max_iterations 2 > 1",
    "test_recorded.test_openai_streaming_over_budget": "max_iterations 2 > 1",
    "test_recorded.test_anthropic_over_budget": "max_iterations 2 > 1",
    "test_recorded.test_shared_expects_the_other_tests_answer": "assert 'Rainy.' == 'Sunny.'",
    "test_broken.test_dns_lookup": "DNS lookup of api.example.com",
    "test_broken.test_udp_packet": "203.0.113.1:8125",
    "test_broken.test_subprocess_connects_out": "203.0.113.1",
    "test_broken.test_misspelt_marker_option": "did you mean cassette?",
    "test_broken.test_exact_like_with_an_extra_field": "arguments",
    "test_broken.test_respx_mock_wins_over_the_cassette": "assert 'rainy' == 'sunny'",
    "test_configured.test_redact_values_as_a_string": "redact_values",
}
PASSING = {
    "test_recorded.test_shared_sunny",
    "tests.integration.test_plain.test_plain_integration_folder",
    "tests.integration.test_plain.test_plain_marked_integration",
}


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(sdk_agents=AGENTS, test_recorded=RECORDED)
    monkeypatch.setenv("AGENT_STEPS", "2")
    monkeypatch.setenv("AGENT_RECORDING", "1")
    recording = agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record")
    recording.assert_outcomes(passed=5)
    monkeypatch.delenv("AGENT_RECORDING")
    monkeypatch.setenv("AGENT_BUDGET", "1")
    agent_pytester.makepyfile(test_broken=BROKEN, test_configured=CONFIGURED)
    folder = agent_pytester.mkpydir("tests")
    (folder / "integration").mkdir()
    (folder / "integration" / "__init__.py").write_text("")
    (folder / "integration" / "test_plain.py").write_text(PLAIN)
    weather = Interaction(
        method="GET",
        url="https://weather.example/today",
        request_headers={},
        request_body=None,
        status=200,
        response_headers={"content-type": "text/plain"},
        response_body={"text": "sunny"},
    )
    path = agent_pytester.path / "cassettes" / "test_broken"
    write_cassette(path / "test_respx_mock_wins_over_the_cassette.json", [weather])
    _write_baseline(agent_pytester.path / "baseline.json")
    return agent_pytester


def _write_baseline(path: Path) -> None:
    """A baseline in which each raw-SDK agent answered in one model call, with no tool."""
    tests = [
        {
            "nodeid": f"test_recorded.py::{name}",
            "outcome": "passed",
            "stats": {"runs": 1, "iterations": 1, "total_tokens": 0, "trajectory": []},
            "runs": [{"name": "conversation 1"}],
            "cassette": None,
        }
        for name in (
            "test_openai_over_budget",
            "test_openai_streaming_over_budget",
            "test_anthropic_over_budget",
        )
    ]
    report = {"format": "pytest-agentctx-report", "version": 1, "tests": tests}
    path.write_text(json.dumps(report), encoding="utf-8")


def _outcomes(junit: Path) -> dict[str, tuple[str, str]]:
    """``{classname.name: (outcome, failure text)}`` from a JUnit XML file."""
    found: dict[str, tuple[str, str]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname')}.{case.get('name')}"
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            found[name] = ("passed", "")
        else:
            text = f"{problem.get('message', '')}\n{problem.text or ''}"
            found[name] = (problem.tag, text)
    return found


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_every_broken_agent_test_fails_for_its_own_reason(
    project: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    result = project.runpytest(
        "-p",
        "no:cacheprovider",
        "-p",
        "xdist",
        *workers,
        "--junitxml=junit.xml",
        "--agent-baseline=baseline.json",
        "--agent-gate",
    )

    outcomes = _outcomes(project.path / "junit.xml")
    assert set(outcomes) == set(REASONS) | PASSING
    for name, reason in REASONS.items():
        outcome, text = outcomes[name]
        assert outcome in ("failure", "error"), f"{name} passed"
        assert reason in text, f"{name} failed for another reason:\n{text}"
    for name in PASSING:
        assert outcomes[name][0] == "passed", outcomes[name]
    assert "deselected" not in result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "agentctx gate FAILED:*",
            "*test_recorded.py::test_anthropic_over_budget: iterations 1 -> 2*",
        ],
        consecutive=False,
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED

"""End-to-end tests of redaction: a secret the session knows never reaches a file the plugin
writes (cassettes, snapshots, the JSON and HTML reports, JUnit XML, pytest's cache) nor
the terminal, recording or replaying, passing or failing, serially and on four xdist workers.

The secrets are canaries: the value of ``GROQ_API_KEY`` (one of the default secret
variables), of ``ACME_SERVICE_TOKEN`` (listed in ``agent_secret_env``), of
``ACME_TENANT`` (a test's ``redact_values``) and of ``ACME_CLIENT_KEY`` (a key sent in an
``Authorization`` header, learned from the traffic). They appear in prompts, in a tool
result and in model replies served by a :class:`LoopbackProvider`.
"""

from __future__ import annotations

import pytest

from pytest_agentctx import LoopbackProvider

GROQ = "gsk-canary-5f3a9c1e7b2d4068"
TOKEN = "svc-canary-81d4e6b0c2a9"
TENANT = "tenant-canary-3e7f0a15"
CLIENT_KEY = "sk-canary-c4b7e2a9d01f"
OPENAI_KEY = "sk-canary-openai-6a2d9e"
CANARIES = (GROQ, TOKEN, TENANT, CLIENT_KEY, OPENAI_KEY)
#: Pieces of the canaries, to find a secret cut short (a truncated string, a preview).
PIECES = ("5f3a9c1e", "81d4e6b0", "3e7f0a15", "c4b7e2a9", "6a2d9e")

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
agent_secret_env = ACME_SERVICE_TOKEN
"""

CONFTEST = """
import os

import pytest


@pytest.fixture
def agent_cassette_config():
    return {"redact_values": [os.environ["ACME_TENANT"]]}
"""

TESTS = '''
import os

import openai

from pytest_agentctx import Agent, Message, tool

SUFFIX = os.environ.get("PROMPT_SUFFIX", "")


@tool
def service_token() -> str:
    """The service's token and tenant."""
    return f"token={os.environ['ACME_SERVICE_TOKEN']} tenant={os.environ['ACME_TENANT']}"


AGENT = Agent(name="leaky", model="openai:gpt-4o-mini", tools=[service_token])


async def test_runtime(agent_runtime, agent_snapshot):
    result = await agent_runtime.run(AGENT, f"Use key {os.environ['GROQ_API_KEY']}{SUFFIX}")
    assert result.context == agent_snapshot
    if os.environ.get("BREAK"):
        assert result.context.iterations[0].messages[0] == Message(
            role="user", content="something else"
        )


async def test_raw_sdk(agent_context, agent_snapshot):
    client = openai.AsyncOpenAI(
        base_url=os.environ["RAW_BASE_URL"], api_key=os.environ["ACME_CLIENT_KEY"], max_retries=0
    )
    async with client:
        await client.chat.completions.create(
            model="gpt-4o-mini",
            messages=[{"role": "user", "content": f"Echo {os.environ['GROQ_API_KEY']}{SUFFIX}"}],
        )
    assert agent_context.context == agent_snapshot
'''

REPORTS = ("--agent-report=r.json", "--agent-report-html=r.html", "--junitxml=j.xml")
WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "4")], ids=["serial", "xdist"])


def _leaks(project: pytest.Pytester, result: pytest.RunResult) -> list[str]:
    """Where a canary (or a piece of one) was found: files under the project, terminal."""
    found = []
    for path in sorted(project.path.rglob("*")):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {p}" for p in PIECES if p.encode() in data]
    for stream, lines in (("stdout", result.outlines), ("stderr", result.errlines)):
        text = "\n".join(lines)
        found += [f"{stream}: {p}" for p in PIECES if p in text]
    return found


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    agent_pytester.makeini(INI)
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(test_leaky=TESTS)
    monkeypatch.setenv("GROQ_API_KEY", GROQ)
    monkeypatch.setenv("ACME_SERVICE_TOKEN", TOKEN)
    monkeypatch.setenv("ACME_TENANT", TENANT)
    monkeypatch.setenv("ACME_CLIENT_KEY", CLIENT_KEY)
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    return agent_pytester


def _record(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *workers: str
) -> pytest.RunResult:
    """Record both tests (and their snapshots) from two loopback providers whose replies
    hold every canary; the providers are stopped afterwards."""
    with LoopbackProvider() as runtime_provider, LoopbackProvider() as raw_provider:
        runtime_provider.reply_tool_call("service_token")
        runtime_provider.reply(f"Done: {GROQ} {TOKEN} {TENANT} {OPENAI_KEY}.")
        raw_provider.reply(f"You said {GROQ}; your key is {CLIENT_KEY}.")
        monkeypatch.setenv("OPENAI_BASE_URL", runtime_provider.openai_base_url)
        monkeypatch.setenv("RAW_BASE_URL", raw_provider.openai_base_url)
        result = project.runpytest(*workers, "--agent-record", "--snapshot-update", *REPORTS)
        runtime_provider.verify()
        raw_provider.verify()
    return result


@WORKERS
def test_no_canary_in_any_file_or_output_recording_then_replaying(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    recorded = _record(project, monkeypatch, *workers)

    recorded.assert_outcomes(passed=2)
    assert _leaks(project, recorded) == []
    snapshot = project.path / "__snapshots__" / "test_leaky" / "test_runtime.agentctx"
    assert "REDACTED" in snapshot.read_text(encoding="utf-8")
    assert "REDACTED" in (project.path / "r.json").read_text(encoding="utf-8")
    assert "REDACTED" in (project.path / "r.html").read_text(encoding="utf-8")

    replayed = project.runpytest(*workers, *REPORTS)

    replayed.assert_outcomes(passed=2)  # the recorded snapshots equal the replayed runs
    assert _leaks(project, replayed) == []


@WORKERS
def test_no_canary_in_a_failing_assertion_or_a_cassette_miss(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    _record(project, monkeypatch).assert_outcomes(passed=2)

    monkeypatch.setenv("BREAK", "1")
    failed = project.runpytest(*workers, *REPORTS)
    monkeypatch.delenv("BREAK")
    monkeypatch.setenv("PROMPT_SUFFIX", " again")
    missed = project.runpytest(*workers, *REPORTS)

    failed.assert_outcomes(passed=1, failed=1)
    assert _leaks(project, failed) == []
    failed.stdout.fnmatch_lines(
        [
            "E *content: 'Use key REDACTED' != 'something else'",
            "E *(secrets are shown as REDACTED: two values that differ only inside a secret*",
        ]
    )
    missed.assert_outcomes(failed=2)
    assert _leaks(project, missed) == []
    missed.stdout.fnmatch_lines(["*CassetteMiss*"])


PLAIN = """
import os

from pytest_agentctx import Message


def test_compare_messages():
    actual = Message(role="user", content=f"Use key {os.environ['GROQ_API_KEY']}")
    expected = Message(role="user", content="Use key")
    assert actual == expected
"""


@WORKERS
def test_an_explanation_of_models_in_a_plain_test_is_redacted(
    project: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    project.makepyfile(test_plain=PLAIN)

    result = project.runpytest(*workers, "test_plain.py")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E *content: 'Use key REDACTED' != 'Use key'"])
    assert _leaks(project, result) == []

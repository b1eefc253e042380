"""End-to-end tests: what cannot be read fails with a message a user can act on.

A cassette whose recorded response is not the JSON it says it is (an HTML page behind a
200, a stream event cut short), a tool that returns bytes, and a snapshot file of binary
garbage each fail the test naming the file, the interaction or the tool, and what to do,
never with a bare ``JSONDecodeError`` or ``UnicodeDecodeError``. Failure lines name the
public class (``pytest_agentctx.CassetteMiss``), the one to import and catch.

Cassettes are recorded from a :class:`LoopbackProvider` the inner run starts on 127.0.0.1,
then damaged as an edit or a bad merge would.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

CONFTEST = """
import pytest
from pytest_agentctx import LoopbackProvider


@pytest.fixture(scope="session")
def provider():
    with LoopbackProvider() as running:
        for _ in range(10):
            running.reply("Sunny in Paris.")
        yield running
"""

ASKS = """
import openai

QUESTION = [{"role": "user", "content": "Weather in Paris?"}]


def test_whole(provider, agent_cassette):
    with openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0) as c:
        reply = c.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
    assert reply.choices[0].message.content == "Sunny in Paris."


def test_stream(provider, agent_cassette):
    with openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0) as c:
        stream = c.chat.completions.create(model="gpt-4o-mini", messages=QUESTION, stream=True)
        text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "Sunny in Paris."


def test_swallowed(provider, agent_cassette):
    with openai.OpenAI(base_url=provider.openai_base_url, api_key="sk-test", max_retries=0) as c:
        try:  # an agent that treats an unreadable answer as no answer
            c.chat.completions.create(model="gpt-4o-mini", messages=QUESTION)
        except ValueError:
            pass
"""


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(test_asks=ASKS)
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=3)
    return agent_pytester


def _damage(tester: pytest.Pytester, test: str, change: object) -> Path:
    path = tester.path / "cassettes" / "test_asks" / f"{test}.json"
    data = json.loads(path.read_text())
    change(data["interactions"][0]["response"])  # type: ignore[operator]
    path.write_text(json.dumps(data, indent=2))
    return path


def _html_page(response: dict[str, object]) -> None:
    response["body"] = {"text": "<html><body>502 Bad Gateway</body></html>"}


def _cut_event(response: dict[str, object]) -> None:
    events = response["body"]["sse"]  # type: ignore[index]
    events[1]["data"] = json.dumps(events[1]["data"])[:40]


def test_a_json_response_that_is_not_json_names_the_cassette_and_the_interaction(recorded):
    path = _damage(recorded, "test_whole", _html_page)

    result = recorded.runpytest("-k", "test_whole")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"E   pytest_agentctx.CassetteFormatError: Cassette {path}: interaction #0 (POST "
            "127.0.0.1/v1/chat/completions) was replayed as recorded, but its body is not "
            "JSON, though its content-type (application/json) says it is (Expecting value: *): "
            "'<html><body>502 Bad Gateway</body></html>': the client cannot read it. The "
            "cassette was edited or damaged, or the server sent this: re-record this test "
            '(pytest --agent-record "test_asks.py::test_whole"), or fix interaction #0 in the '
            f"file (pytest-agentctx cassettes show {path} prints it)."
        ]
    )
    assert "JSONDecodeError" not in result.stdout.str()


def test_a_stream_event_cut_short_names_the_event(recorded):
    path = _damage(recorded, "test_stream", _cut_event)

    result = recorded.runpytest("-k", "test_stream")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"E   pytest_agentctx.CassetteFormatError: Cassette {path}: interaction #0 (POST "
            "127.0.0.1/v1/chat/completions) was replayed as recorded, but the data of its "
            "event #1 is not JSON, though it starts as JSON (*): '{*': the client cannot "
            'read it. * re-record this test (pytest --agent-record "test_asks.py::test_stream")*'
        ]
    )
    assert "JSONDecodeError" not in result.stdout.str()


def test_an_unreadable_response_the_agent_swallowed_still_fails_the_test(recorded):
    _damage(recorded, "test_swallowed", _html_page)

    result = recorded.runpytest("-k", "test_swallowed")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   pytest_agentctx.CassetteFormatError: Cassette *"])


# -- the public class in failure lines ----------------------------------------------------


def test_a_failure_line_names_the_public_class(recorded):
    (recorded.path / "cassettes" / "test_asks" / "test_whole.json").unlink()

    result = recorded.runpytest("-k", "test_whole")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E   pytest_agentctx.CassetteMiss: Cassette *test_whole.json *"])
    assert "pytest_agentctx.traffic.errors" not in result.stdout.str()


# -- tools and snapshots ------------------------------------------------------------------

TOOL_RETURNS_BYTES = """
from pytest_agentctx import Agent, tool


@tool
def screenshot(page: str) -> bytes:
    \"\"\"Take a screenshot of a page.\"\"\"
    return b"\\x89PNG\\r\\n\\x1a\\n\\x00\\x00\\x00\\rIHDR"


AGENT = Agent(name="browser", model="openai:gpt-4o-mini", tools=[screenshot])


async def test_screenshot(agent_runtime, fake_llm):
    fake_llm.reply_tool_call("screenshot", page="home").reply("Done.")
    await agent_runtime.run(AGENT, "Show me the home page.")
"""


def test_a_tool_that_returns_bytes_names_the_tool_and_what_to_return(agent_pytester):
    agent_pytester.makepyfile(test_tool_bytes=TOOL_RETURNS_BYTES)

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *pytest_agentctx.ToolDefinitionError: Tool 'screenshot' returned bytes that "
            "are not UTF-8 text (UnicodeDecodeError: *, starting b'\\x89PNG*'); its result "
            "goes to the model as text. Return a str instead: *base64.b64encode(data)*"
        ]
    )


SNAPSHOT = """
from pytest_agentctx import Agent

AGENT = Agent(name="weather", model="openai:gpt-4o-mini")


async def test_snap(agent_runtime, fake_llm, agent_snapshot):
    fake_llm.reply("Sunny.")
    result = await agent_runtime.run(AGENT, "Weather?")
    assert result.context == agent_snapshot
"""


def test_a_snapshot_file_of_binary_garbage_is_named_and_rewritten_by_snapshot_update(
    agent_pytester,
):
    agent_pytester.makepyfile(test_snapshot_garbage=SNAPSHOT)
    agent_pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    [snapshot] = (agent_pytester.path / "__snapshots__").rglob("*.agentctx")
    snapshot.write_bytes(b"\x89\xff\xfe garbage" + bytes(range(0x80, 0xC0)))  # no UTF-8

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            f"E   * The snapshot file {snapshot} is not UTF-8 text (it starts b'\\x89\\xff\\xfe "
            "garbage*'), so not a snapshot this plugin wrote: it was damaged or replaced.",
            "E   * Restore it from version control, or re-run pytest with --snapshot-update to "
            "rewrite it, then review the diff.",
        ]
    )
    assert "UnicodeDecodeError" not in result.stdout.str()
    agent_pytester.runpytest("--snapshot-update").assert_outcomes(passed=1)
    agent_pytester.runpytest().assert_outcomes(passed=1)

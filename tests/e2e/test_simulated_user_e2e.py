"""End to end: a simulated user converses with an agent, recorded, then replayed offline.

One :class:`~pytest_agentctx.LoopbackProvider` plays both the agent's model and the
simulated user's (one script, answered in the order the calls come). The conversation is
recorded (``--agent-record``), then replayed with the server answering nothing: the
transcripts in the JSON report are byte for byte the same in three runs and under
``-n 2``. An agent whose reply changes at turn 2 fails with "the agent diverged at turn 2"
and the diff of its replies, not with a miss on the simulated user's call.
"""

from __future__ import annotations

import json

import pytest

PROJECT = """
import os

import openai
import pytest

from pytest_agentctx import LoopbackProvider, OpenAIChatProvider, RecordMode, SimulatedUser


@pytest.fixture
def server(agent_cassette):
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []


@pytest.mark.agent
@pytest.mark.parametrize("order", ["42", "43"])
async def test_refund_conversation(server, agent_simulated_user, order):
    server.reply(f"Hi, I want a refund for order {order}.")          # simulated user, turn 1
    server.reply("Sure. Is the item unused?")                         # agent, turn 1
    server.reply("Yes, it is unused.")                                 # simulated user, turn 2
    server.reply(f"Done: refund for order {order} sent.")             # agent, turn 2
    server.reply("[DONE] the refund was sent")                         # simulated user: done
    async with openai.AsyncOpenAI(
        base_url=server.openai_base_url, api_key="test-key", max_retries=0
    ) as client:
        history = [{"role": "system", "content": "You handle refunds."}]

        async def agent(message):
            history.append({"role": "user", "content": message})
            reply = await client.chat.completions.create(model="gpt-4o-mini", messages=history)
            text = reply.choices[0].message.content
            history.append({"role": "assistant", "content": text})
            turn = sum(m["role"] == "user" for m in history)
            if os.environ.get("AGENT_CHANGED") and turn == 2:
                text += " Anything else?"  # the agent's code changed at turn 2
            return text

        user = agent_simulated_user(
            persona="a customer who bought a lamp",
            goal=f"get a refund for order {order}",
            provider=OpenAIChatProvider(client=client),
            max_turns=4,
        )
        transcript = await user.converse(agent)

    assert (transcript.turns, transcript.stopped_because) == (2, "done")
    assert transcript.last_reply == f"Done: refund for order {order} sent."
"""


def _transcripts(project: pytest.Pytester, report: str) -> str:
    data = json.loads((project.path / report).read_text(encoding="utf-8"))
    kept = {
        entry["nodeid"]: entry["transcripts"] for entry in data["tests"] if "transcripts" in entry
    }
    return json.dumps(kept, sort_keys=True)


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    agent_pytester.makepyfile(test_refund=PROJECT)
    result = agent_pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--agent-record",
        "--agent-report=recorded.json",
        "--agent-report-html=recorded.html",
        "--junitxml=recorded.xml",
    )
    result.assert_outcomes(passed=2)
    return agent_pytester


def test_a_simulated_conversation_replays_with_the_same_transcripts(
    recorded: pytest.Pytester,
) -> None:
    first = _transcripts(recorded, "recorded.json")
    assert '"stopped_because": "done"' in first
    for run in range(3):
        result = recorded.runpytest("-p", "no:cacheprovider", f"--agent-report=replay{run}.json")
        result.assert_outcomes(passed=2)
        assert _transcripts(recorded, f"replay{run}.json") == first


def test_the_transcripts_are_on_the_html_page_and_junit_properties(
    recorded: pytest.Pytester,
) -> None:
    page = (recorded.path / "recorded.html").read_text(encoding="utf-8")
    junit = (recorded.path / "recorded.xml").read_text(encoding="utf-8")

    assert "simulated user 1: a customer who bought a lamp" in page
    assert "Done: refund for order 42 sent." in page
    assert (
        'name="agentctx.transcript" value="a customer who bought a lamp: 2 turn(s), '
        'stopped: done (the refund was sent)"'
    ) in junit


def test_the_simulated_users_calls_are_a_run_apart_from_the_agents(
    recorded: pytest.Pytester,
) -> None:
    data = json.loads((recorded.path / "recorded.json").read_text(encoding="utf-8"))
    test = data["tests"][0]

    assert [run["name"] for run in test["runs"]] == ["conversation 1"]
    assert test["stats"]["iterations"] == 2  # the agent's two turns, none of the simulator's
    assert [(run["name"], run["role"]) for run in test["role_runs"]] == [("user_sim 1", "user_sim")]


def test_a_simulated_conversation_replays_under_xdist(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(
        "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", "--agent-report=xdist.json"
    )

    result.assert_outcomes(passed=2)
    assert _transcripts(recorded, "xdist.json") == _transcripts(recorded, "recorded.json")


def test_an_agent_changed_at_turn_2_fails_naming_the_turn(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_CHANGED", "1")

    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "42")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*The agent diverged at turn 2 of the simulated user's conversation*",
            "*-Done: refund for order 42 sent.",
            "*+Done: refund for order 42 sent. Anything else?",
        ]
    )
    assert "cannot answer" not in result.stdout.str()


def test_a_conversation_ended_by_an_error_is_in_the_report_so_far(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_CHANGED", "1")

    result = recorded.runpytest("-p", "no:cacheprovider", "-k", "42", "--agent-report=changed.json")

    result.assert_outcomes(failed=1)
    data = json.loads((recorded.path / "changed.json").read_text(encoding="utf-8"))
    [transcript] = data["tests"][0]["transcripts"]
    assert (transcript["turns"], transcript["stopped_because"]) == (2, "error")
    # what the conversation saw: the SDK's error for the cassette's stand-in answer; the
    # test's failure (beside it in the record) is the explained miss
    assert transcript["done_reason"].startswith("InternalServerError: Error code: 599")
    assert "The agent diverged at turn 2" in data["tests"][0]["failure"]["message"]
    assert transcript["messages"][-1] == {
        "role": "assistant",
        "content": "Done: refund for order 42 sent. Anything else?",
    }


UNMARKED = """
import os

import openai

from pytest_agentctx import LoopbackProvider, OpenAIChatProvider


async def test_unmarked(agent_simulated_user):
    with LoopbackProvider() as server:
        server.reply("Hi, is order 7 shipped?")  # simulated user, turn 1
        server.reply("Yes, it left today.")  # agent, turn 1
        server.reply("[DONE]")  # simulated user: done
        async with openai.AsyncOpenAI(
            base_url=server.openai_base_url, api_key="test-key", max_retries=0
        ) as client:

            async def agent(message):
                reply = await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": message}]
                )
                return reply.choices[0].message.content

            user = agent_simulated_user(
                persona="a customer", goal="know if order 7 shipped",
                provider=OpenAIChatProvider(client=client),
            )
            transcript = await user.converse(agent)
        replayed = os.environ.get("REPLAY") == "1"
        assert len(server.exchanges) == (0 if replayed else 3)
    assert transcript.last_reply == "Yes, it left today."
"""


def test_agent_simulated_user_alone_gives_the_test_a_cassette(
    agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent_pytester.makepyfile(test_unmarked=UNMARKED)
    agent_pytester.runpytest("-p", "no:cacheprovider", "--agent-record").assert_outcomes(passed=1)
    assert list(agent_pytester.path.glob("cassettes/test_unmarked/test_unmarked.*"))

    monkeypatch.setenv("REPLAY", "1")
    agent_pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=1)

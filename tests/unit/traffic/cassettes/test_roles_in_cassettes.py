"""The role of a recorded interaction: stored in both file formats, recorded from the
calls made under :func:`model_role`, and matched only against requests of the same role."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
import yaml
from cassette_support import TLS, Loopback, active, chat_completion

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.store import load_cassette, write_cassette
from pytest_agentctx.traffic.cassettes.vcr_matchers import resolve
from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.roles import model_role

REPLAY_BASE = "http://127.0.0.1:9/v1"
CHAT_URL = f"{REPLAY_BASE}/chat/completions"
MODEL = "gpt-4o-mini"
TEST_ID = "tests/test_agent.py::test_judged"


def _interaction(content: str, answer: str, role: str = "agent") -> Interaction:
    return Interaction(
        method="POST",
        url=CHAT_URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": {"model": MODEL, "messages": [{"role": "user", "content": content}]}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": chat_completion(answer)},
        role=role,
    )


def _client(base_url: str = REPLAY_BASE) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-unit-test-key-000",
        base_url=base_url,
        max_retries=0,
        http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
    )


async def _ask(client: openai.AsyncOpenAI, content: str) -> str | None:
    reply = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": content}]
    )
    return reply.choices[0].message.content


# -- the field in both formats ----------------------------------------------------------


@pytest.mark.parametrize("style", ["native", "vcr"])
def test_a_judges_interaction_keeps_its_role_in_the_file(tmp_path: Path, style: str):
    path = tmp_path / ("c.json" if style == "native" else "c.yaml")
    write_cassette(path, [_interaction("Grade it", "0.9", role="judge")], style=style)

    assert [i.role for i in load_cassette(path)] == ["judge"]


@pytest.mark.parametrize("style", ["native", "vcr"])
def test_an_agents_interaction_stores_no_role(tmp_path: Path, style: str):
    path = tmp_path / ("c.json" if style == "native" else "c.yaml")
    write_cassette(path, [_interaction("Hi", "Hello")], style=style)

    document = yaml.safe_load(path.read_text())  # JSON is YAML

    assert ["role" in item for item in document["interactions"]] == [False]


def test_a_cassette_written_before_roles_reads_as_the_agents(tmp_path: Path):
    path = tmp_path / "old.json"
    document: dict[str, Any] = {
        "cassette": "pytest-agentctx",
        "version": 1,
        "interactions": [_interaction("Hi", "Hello").to_dict()],
    }
    path.write_text(json.dumps(document))

    assert [i.role for i in load_cassette(path)] == ["agent"]


def test_an_unknown_stored_role_is_a_format_error(tmp_path: Path):
    path = tmp_path / "bad.json"
    item = {**_interaction("Hi", "Hello").to_dict(), "role": "grader"}
    document = {"cassette": "pytest-agentctx", "version": 1, "interactions": [item]}
    path.write_text(json.dumps(document))

    with pytest.raises(CassetteFormatError, match="role is 'grader'"):
        load_cassette(path)


# -- recording and matching ---------------------------------------------------------------


async def test_a_call_made_under_a_role_is_recorded_with_it(tmp_path: Path, loopback: Loopback):
    loopback.answer_json(chat_completion("0.8"))
    cassette = Cassette(tmp_path / "c.json", mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            with model_role("judge"):
                await _ask(client, "Grade it")

    assert [i.role for i in cassette.new_interactions] == ["judge"]


async def test_a_judges_request_never_replays_the_agents_recording(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Same words", "agent answer")])
    cassette = Cassette(path, test_id=TEST_ID)

    with active(cassette):
        async with _client() as client:
            with model_role("judge"), pytest.raises(openai.APIStatusError):
                await _ask(client, "Same words")

    assert cassette.replayed == 0
    assert len(cassette.misses) == 1


async def test_each_role_replays_its_own_recording_of_the_same_request(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(
        path,
        [_interaction("Same words", "judge answer", "judge"), _interaction("Same words", "agent")],
    )

    with active(Cassette(path, test_id=TEST_ID)):
        async with _client() as client:
            agent = await _ask(client, "Same words")
            with model_role("judge"):
                judge = await _ask(client, "Same words")

    assert (agent, judge) == ("agent", "judge answer")


async def test_vcrpy_matching_keeps_to_the_role_of_the_request(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(
        path,
        [_interaction("Same words", "judge answer", "judge"), _interaction("Same words", "agent")],
    )

    with active(Cassette(path, test_id=TEST_ID, match_on=resolve(("method", "uri")))):
        async with _client() as client:
            agent = await _ask(client, "Same words")

    assert agent == "agent"


# -- --agent-record=judge -----------------------------------------------------------------


async def test_judge_mode_records_the_judge_again_and_replays_the_agent(
    tmp_path: Path, loopback: Loopback
):
    path = tmp_path / "c.json"
    url = f"{loopback.url}/v1/chat/completions"
    agent = dataclasses.replace(_interaction("Weather?", "Sunny."), url=url)
    old_judge = dataclasses.replace(_interaction("Grade", "0.1", "judge"), url=url)
    write_cassette(path, [agent, old_judge])
    before = path.read_text()
    loopback.answer_json(chat_completion("0.9"))
    cassette = Cassette(path, mode=RecordMode.JUDGE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            answers = [await _ask(client, "Weather?")]
            with model_role("judge"):
                answers.append(await _ask(client, "Grade"))
    cassette.save("run-1")

    assert answers == ["Sunny.", "0.9"]
    assert len(loopback.seen) == 1
    saved = json.loads(path.read_text())["interactions"]
    assert saved[0] == json.loads(before)["interactions"][0]
    assert [item.get("role") for item in saved] == [None, "judge"]
    assert saved[1]["response"]["body"]["json"]["choices"][0]["message"]["content"] == "0.9"


async def test_judge_mode_never_records_an_agents_request(tmp_path: Path, loopback: Loopback):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Weather?", "Sunny.")])
    cassette = Cassette(path, mode=RecordMode.JUDGE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            with pytest.raises(openai.APIStatusError):
                await _ask(client, "Something new")

    assert (len(loopback.seen), len(cassette.misses)) == (0, 1)


async def test_a_judge_miss_names_the_rubric_that_changed(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("<rubric>\nBe brief.\n</rubric> Hi", "0.9", "judge")])
    cassette = Cassette(path, test_id=TEST_ID)

    with active(cassette):
        async with _client() as client:
            with model_role("judge"), pytest.raises(openai.APIStatusError):
                await _ask(client, "<rubric>\nBe kind.\n</rubric> Hi")

    message = cassette.miss_message(cassette.misses[0])
    assert "The judge's rubric changed since interaction #0 was recorded" in message
    assert "  -Be brief.\n  +Be kind." in message


async def test_a_judge_miss_advises_recording_the_judges_alone(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Grade: Hi", "0.9", "judge")])
    cassette = Cassette(path, test_id=TEST_ID)

    with active(cassette):
        async with _client() as client:
            with model_role("judge"), pytest.raises(openai.APIStatusError):
                await _ask(client, "Grade: Hello")

    last = cassette.miss_message(cassette.misses[0]).splitlines()[-1]
    assert last == (
        "If the judge's requests changed on purpose, re-record the judges' calls alone (the "
        f'agent\'s are replayed and kept): pytest --agent-record=judge "{TEST_ID}"'
    )


async def test_a_rubric_tagged_in_another_case_is_found(tmp_path: Path):
    # pydantic-evals' LLMJudge writes <Rubric>
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("<Rubric>\nBe brief.\n</Rubric> Hi", "0.9", "judge")])
    cassette = Cassette(path, test_id=TEST_ID)

    with active(cassette):
        async with _client() as client:
            with model_role("judge"), pytest.raises(openai.APIStatusError):
                await _ask(client, "<Rubric>\nBe kind.\n</Rubric> Hi")

    message = cassette.miss_message(cassette.misses[0])
    assert "  -Be brief.\n  +Be kind." in message

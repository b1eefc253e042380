"""The day an interaction was recorded: stored in both file formats, given to what a test
records, kept when the same traffic is recorded again, and read back as the day of the
recordings a test used (which prices its calls)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx2
import openai
import pytest
from cassette_support import TLS, Loopback, active, chat_completion

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.saving import dated
from pytest_agentctx.traffic.cassettes.store import load_cassette, write_cassette
from pytest_agentctx.traffic.errors import CassetteFormatError
from pytest_agentctx.traffic.roles import model_role

REPLAY_BASE = "http://127.0.0.1:9/v1"
MODEL = "gpt-4o-mini"


def _interaction(
    content: str, answer: str, day: str = "", url: str = "", role: str = "agent"
) -> Interaction:
    return Interaction(
        method="POST",
        url=url or f"{REPLAY_BASE}/chat/completions",
        request_headers={"content-type": "application/json"},
        request_body={"json": {"model": MODEL, "messages": [{"role": "user", "content": content}]}},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": chat_completion(answer)},
        recorded_on=day,
        role=role,
    )


async def _ask(base_url: str, *contents: str) -> None:
    async with openai.AsyncOpenAI(
        api_key="sk-unit-test-key-000",
        base_url=base_url,
        max_retries=0,
        http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
    ) as client:
        for content in contents:
            await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": content}]
            )


# -- the field in both formats ----------------------------------------------------------


@pytest.mark.parametrize("style", ["native", "vcr"])
def test_an_interaction_keeps_its_recording_day_in_the_file(tmp_path: Path, style: str):
    path = tmp_path / ("c.json" if style == "native" else "c.yaml")
    write_cassette(path, [_interaction("Hi", "Hello", day="2026-11-29")], style=style)

    assert [i.recorded_on for i in load_cassette(path)] == ["2026-11-29"]


@pytest.mark.parametrize("style", ["native", "vcr"])
def test_an_undated_interaction_writes_no_day(tmp_path: Path, style: str):
    path = tmp_path / ("c.json" if style == "native" else "c.yaml")
    write_cassette(path, [_interaction("Hi", "Hello")], style=style)

    assert "recorded_on" not in path.read_text()


def test_a_hand_written_yaml_day_without_quotes_reads_as_that_day(tmp_path: Path):
    path = tmp_path / "c.yaml"
    write_cassette(path, [_interaction("Hi", "Hello", day="2026-11-29")], style="vcr")
    path.write_text(path.read_text().replace("'2026-11-29'", "2026-11-29"))

    assert [i.recorded_on for i in load_cassette(path)] == ["2026-11-29"]


@pytest.mark.parametrize("day", ["29.11.2026", "2026-11-29T10:00:00", 20261129])
def test_a_day_that_is_no_day_is_a_format_error_naming_the_form(tmp_path: Path, day: object):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Hi", "Hello", day="2026-11-29")])
    document = json.loads(path.read_text())
    document["interactions"][0]["recorded_on"] = day
    path.write_text(json.dumps(document))

    with pytest.raises(CassetteFormatError, match=r"recorded_on is .*expected a day YYYY-MM-DD"):
        load_cassette(path)


# -- dating what a test records ------------------------------------------------------------


def test_a_new_interaction_is_dated_the_day_given():
    (new,) = dated([_interaction("Hi", "Hello")], [], "2026-11-30")

    assert new.recorded_on == "2026-11-30"


def test_an_interaction_recorded_again_unchanged_keeps_its_earlier_day():
    earlier = [_interaction("Hi", "Hello", day="2026-01-05")]

    (again,) = dated([_interaction("Hi", "Hello")], earlier, "2026-11-30")

    assert again.recorded_on == "2026-01-05"


def test_an_interaction_whose_response_changed_takes_the_new_day():
    earlier = [_interaction("Hi", "Hello", day="2026-01-05")]

    (again,) = dated([_interaction("Hi", "Hello there")], earlier, "2026-11-30")

    assert again.recorded_on == "2026-11-30"


def test_no_day_given_dates_nothing():
    (new,) = dated([_interaction("Hi", "Hello")], [], "")

    assert new.recorded_on == ""


async def test_a_recording_is_dated_the_cassettes_day(tmp_path: Path, loopback: Loopback):
    loopback.answer_json(chat_completion("Hello"))
    path = tmp_path / "c.json"
    cassette = Cassette(path, mode=RecordMode.REWRITE, day="2026-11-30")

    with active(cassette):
        await _ask(f"{loopback.url}/v1", "Hi")
    cassette.save("run-1")

    assert [i.recorded_on for i in load_cassette(path)] == ["2026-11-30"]
    assert cassette.recording_day() == "2026-11-30"


async def test_the_same_traffic_recorded_again_leaves_the_file_unchanged(
    tmp_path: Path, loopback: Loopback
):
    loopback.answer_json(chat_completion("Hello"))
    path = tmp_path / "c.json"
    for day, run in (("2026-11-29", "run-1"), ("2026-11-30", "run-2")):
        cassette = Cassette(path, mode=RecordMode.REWRITE, day=day)
        with active(cassette):
            await _ask(f"{loopback.url}/v1", "Hi")
        cassette.save(run)
        if run == "run-1":
            first = path.read_bytes()

    assert path.read_bytes() == first
    assert [i.recorded_on for i in load_cassette(path)] == ["2026-11-29"]


async def test_a_cassette_that_cannot_be_read_is_recorded_over(tmp_path: Path, loopback: Loopback):
    loopback.answer_json(chat_completion("Hello"))
    path = tmp_path / "c.json"
    path.write_text("{not json")
    cassette = Cassette(path, mode=RecordMode.REWRITE, day="2026-11-30")

    with active(cassette):
        await _ask(f"{loopback.url}/v1", "Hi")
    cassette.save("run-1")

    assert [i.recorded_on for i in load_cassette(path)] == ["2026-11-30"]


# -- the day of the recordings a test used -------------------------------------------------


async def test_a_replay_gives_the_latest_day_of_the_recordings_it_used(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(
        path,
        [_interaction("Hi", "Hello", "2026-03-01"), _interaction("Bye", "Bye", "2026-05-02")],
    )
    cassette = Cassette(path, day="2027-01-01")

    with active(cassette):
        await _ask(REPLAY_BASE, "Hi", "Bye")

    assert cassette.recording_day() == "2026-05-02"


async def test_a_recording_the_test_did_not_use_does_not_count(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(
        path,
        [_interaction("Hi", "Hello", "2026-03-01"), _interaction("Bye", "Bye", "2026-05-02")],
    )
    cassette = Cassette(path, day="2027-01-01", allow_unused=True)

    with active(cassette):
        await _ask(REPLAY_BASE, "Hi")

    assert cassette.recording_day() == "2026-03-01"


async def test_undated_recordings_give_no_day(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Hi", "Hello")])
    cassette = Cassette(path, day="2027-01-01")

    with active(cassette):
        await _ask(REPLAY_BASE, "Hi")

    assert cassette.recording_day() is None


async def test_the_judges_recorded_later_leave_the_day_of_the_agents_recordings(
    tmp_path: Path, loopback: Loopback
):
    loopback.answer_json(chat_completion("0.9"))
    path = tmp_path / "c.json"
    url = f"{loopback.url}/v1/chat/completions"
    write_cassette(path, [_interaction("Hi", "Hello", "2026-03-01", url=url)])
    cassette = Cassette(path, mode=RecordMode.JUDGE, day="2027-01-01")

    with active(cassette):
        await _ask(f"{loopback.url}/v1", "Hi")
        with model_role("judge"):
            await _ask(f"{loopback.url}/v1", "Grade it")

    assert cassette.recording_day() == "2026-03-01"


async def test_a_judges_recordings_alone_give_their_day(tmp_path: Path):
    path = tmp_path / "c.json"
    write_cassette(path, [_interaction("Grade it", "0.9", "2026-04-01", role="judge")])
    cassette = Cassette(path, day="2027-01-01")

    with active(cassette), model_role("judge"):
        await _ask(REPLAY_BASE, "Grade it")

    assert cassette.recording_day() == "2026-04-01"

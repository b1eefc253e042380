"""Unit tests of the message of a cassette miss (pytest_agentctx.traffic.cassettes.misses):
the one closest recording, what of it is shown by default and with ``-vv``, and that no
secret is ever printed.

The builder's tests give it recordings and a request directly; the redaction tests go
through a cassette, whose replayed requests go to ``http://127.0.0.1:9`` (the discard
port: a request the cassette did not answer would fail to connect).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from cassette_support import TLS, chat_completion

from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV
from pytest_agentctx.traffic.cassettes import Cassette, Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.matcher import make_key
from pytest_agentctx.traffic.cassettes.misses import Miss, miss_message, record_command
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.replay import Replays
from pytest_agentctx.traffic.cassettes.store import write_cassette

REPLAY_BASE = "http://127.0.0.1:9/v1"
CHAT_URL = f"{REPLAY_BASE}/chat/completions"
LINE = make_key("POST", CHAT_URL, None, None, ignored=[]).describe()
COMMAND = 'pytest --agent-record "tests/test_agent.py::test_weather"'
CANARY = "canary-7c2d-never-in-a-message"
WORDS = "You answer questions about the weather, one city at a time, politely. "


def _prompt(word: str) -> str:
    """A 3,000-character system prompt whose word at character 2,501 is ``word``."""
    return (WORDS * 40)[:2500] + word + (WORDS * 10)[: 500 - len(word)]


def _body(system: str, question: str = "Paris?", **extra: Any) -> dict[str, Any]:
    return {
        "model": "gpt-4o-mini",
        "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": question},
        ],
        **extra,
    }


def _interaction(body: dict[str, Any]) -> Interaction:
    return Interaction(
        method="POST",
        url=CHAT_URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": body},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": chat_completion("recorded")},
    )


def _message(
    recorded: Sequence[dict[str, Any]],
    now: dict[str, Any],
    *,
    played: Sequence[int] = (),
    verbosity: int = 0,
) -> list[str]:
    """The lines of the miss message of the request ``now`` against ``recorded``."""
    loaded = [_interaction(body) for body in recorded]
    keys = [make_key("POST", CHAT_URL, body, None, ignored=[]) for body in recorded]
    replays = Replays(loaded, keys, test_id="", shared=False, mode=RecordMode.NONE)
    key = make_key("POST", CHAT_URL, now, None, ignored=[])
    miss = Miss(key, now, "the cassette has no such request")
    message = miss_message(
        replays,
        miss,
        path=Path("cassettes/test_weather.json"),
        ignored=[],
        played=played,
        test_id="tests/test_agent.py::test_weather",
        verbosity=verbosity,
    )
    return message.splitlines()


# -- what is shown ---------------------------------------------------------------------


def test_a_word_changed_deep_in_a_long_prompt_is_in_the_default_message() -> None:
    lines = _message([_body(_prompt("lazy"))], _body(_prompt("busy")))

    assert lines[2] == (
        "  messages[0].content: first differs at character 2,501 "
        "(recorded 3,000 characters, now 3,000):"
    )
    assert "lazy" in lines[3]
    assert lines[3].startswith("    recorded: ...")
    assert "busy" in lines[4]
    assert lines[4].startswith("    now:      ...")
    assert lines[3].index("lazy") == lines[4].index("busy")


def test_the_default_message_is_a_handful_of_lines() -> None:
    lines = _message([_body(_prompt("lazy"))], _body(_prompt("busy")))

    assert lines == [
        "Cassette cassettes/test_weather.json cannot answer "
        f"{LINE}: the cassette has no such request.",
        f"Closest recorded request: interaction #0, {LINE}; 1 field differs: messages[0].content",
        lines[2],
        lines[3],
        lines[4],
        "(pytest -vv shows every differing field and the full diff of the bodies)",
        f"If the agent's requests changed on purpose, re-record this test: {COMMAND}",
    ]


def test_a_message_that_shows_everything_does_not_point_to_vv() -> None:
    lines = _message([_body("Be brief.")], _body("Be short."))

    assert lines[1:] == [
        f"Closest recorded request: interaction #0, {LINE}; 1 field differs: messages[0].content",
        '  messages[0].content: recorded "Be brief." != now "Be short."',
        f"If the agent's requests changed on purpose, re-record this test: {COMMAND}",
    ]


def test_many_differing_fields_are_named_and_the_first_few_shown() -> None:
    recorded = {f"f{i}": i for i in range(8)}
    now = {f"f{i}": i + 1 for i in range(8)}

    lines = _message([recorded], now)

    assert lines[1] == (
        f"Closest recorded request: interaction #0, {LINE}; 8 fields differ: "
        "f0, f1, f2, f3, f4 and 3 more"
    )
    assert lines[2:6] == [
        "  f0: recorded 0 != now 1",
        "  f1: recorded 1 != now 2",
        "  f2: recorded 2 != now 3",
        "  (and 5 more differing field(s))",
    ]
    assert lines[6].startswith("(pytest -vv shows")


# -- one closest recording -------------------------------------------------------------


def test_the_closest_recording_is_the_one_with_the_fewest_differing_fields() -> None:
    two_fields = _body(_prompt("lazy"), "Rome?")
    one_field = _body(_prompt("lazy"), "Paris?")

    lines = _message([two_fields, one_field], _body(_prompt("busy"), "Paris?"))

    assert [line for line in lines if "Closest" in line] == [
        f"Closest recorded request: interaction #1, {LINE}; 1 field differs: messages[0].content"
    ]


def test_of_recordings_as_close_the_one_not_used_yet_is_the_closest() -> None:
    first, second = _body("A", "Rome?"), _body("A", "Oslo?")

    lines = _message([first, second], _body("B", "Bern?"), played=[0])

    assert [line for line in lines if "Closest" in line] == [
        f"Closest recorded request: interaction #1, {LINE}; 2 fields differ: "
        "messages[0].content, messages[1].content"
    ]


def test_of_recordings_as_close_and_unused_the_first_is_the_closest() -> None:
    lines = _message([_body("A", "Rome?"), _body("A", "Oslo?")], _body("A", "Bern?"))

    assert lines[1].startswith("Closest recorded request: interaction #0,")
    assert sum("Closest" in line for line in lines) == 1


def test_a_closest_recording_used_already_says_so() -> None:
    lines = _message([_body("A"), _body("B", "Oslo?")], _body("A"), played=[0])

    assert lines[1:3] == [
        f"Closest recorded request: interaction #0 (already used), {LINE}; no field differs:",
        "  (the same request: every recording of it was used already)",
    ]


# -- -vv -------------------------------------------------------------------------------


def test_vv_adds_the_full_diff_of_the_bodies() -> None:
    recorded, now = _prompt("lazy"), _prompt("busy")

    lines = _message([_body(recorded)], _body(now), verbosity=2)

    full = lines.index("Full diff of the request bodies (- recorded, + now):")
    assert lines[full + 1 : full + 3] == ["  --- recorded", "  +++ now"]
    assert f'  -      "content": "{recorded}",' in lines[full:]
    assert f'  +      "content": "{now}",' in lines[full:]
    assert (
        lines[-1] == f"If the agent's requests changed on purpose, re-record this test: {COMMAND}"
    )
    assert not any(line.startswith("(pytest -vv") for line in lines)


def test_vv_shows_every_differing_field() -> None:
    recorded = {f"f{i}": i for i in range(8)}
    now = {f"f{i}": i + 1 for i in range(8)}

    lines = _message([recorded], now, verbosity=2)

    assert [line for line in lines if line.startswith("  f")] == [
        f"  f{i}: recorded {i} != now {i + 1}" for i in range(8)
    ]


def test_one_v_is_the_default_message() -> None:
    recorded, now = _body(_prompt("lazy")), _body(_prompt("busy"))

    assert _message([recorded], now, verbosity=1) == _message([recorded], now)


# -- no secret printed -----------------------------------------------------------------


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEFAULT_SECRET_ENV:
        monkeypatch.delenv(name, raising=False)


async def _miss(cassette: Cassette, system: str) -> str:
    """Send a chat request with ``system`` through ``cassette``, which misses it; the text
    of the SDK's error."""
    cassette.start()
    try:
        async with openai.AsyncOpenAI(
            api_key="sk-unit-test-key-000",
            base_url=REPLAY_BASE,
            max_retries=0,
            http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
        ) as client:
            with pytest.raises(openai.InternalServerError) as caught:
                await client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=[
                        {"role": "system", "content": system},
                        {"role": "user", "content": "Paris?"},
                    ],
                )
    finally:
        cassette.stop()
    return str(caught.value)


def _pieces(secret: str, size: int = 8) -> list[str]:
    """Every part of ``secret`` of ``size`` characters: what a window cutting it shows."""
    return [secret[i : i + size] for i in range(len(secret) - size + 1)]


@pytest.mark.parametrize("verbosity", [0, 2])
async def test_a_secret_beside_the_change_never_appears_in_the_message(
    path: Path, verbosity: int
) -> None:
    write_cassette(path, [_interaction(_body(_prompt(f"lazy {CANARY}")))])
    cassette = Cassette(path, redactor=Redactor(extra_values=[CANARY]), verbosity=verbosity)

    sdk_error = await _miss(cassette, _prompt(f"busy {CANARY}"))
    message = cassette.miss_message(cassette.misses[0])

    assert "busy REDACTED" in message
    assert [piece for piece in _pieces(CANARY) if piece in message + sdk_error] == []


async def test_a_secret_a_recording_of_another_tool_holds_never_appears(path: Path) -> None:
    # Written by another tool, the recorded body still holds the secret, after the change:
    # unless redacted before it is compared, it differs from the request's (redacted), and
    # the window of the differing part would cut it in two.
    after = "." * 40
    write_cassette(path, [_interaction(_body(_prompt(f"lazy{after}{CANARY}")))])
    cassette = Cassette(path, redactor=Redactor(extra_values=[CANARY]))

    await _miss(cassette, _prompt(f"busy{after}{CANARY}"))
    message = cassette.miss_message(cassette.misses[0])

    assert "lazy" in message
    assert "busy" in message
    assert [piece for piece in _pieces(CANARY) if piece in message] == []


async def test_the_api_key_the_agent_put_in_its_prompt_never_appears(path: Path) -> None:
    key = "sk-unit-test-key-000"  # sent as the bearer token: the redactor learns it
    write_cassette(path, [_interaction(_body(_prompt("lazy")))])
    cassette = Cassette(path, redactor=Redactor(), verbosity=2)

    sdk_error = await _miss(cassette, _prompt(f"busy, key {key}"))
    message = cassette.miss_message(cassette.misses[0])

    assert "key REDACTED" in message
    assert [piece for piece in _pieces(key) if piece in message + sdk_error] == []


async def test_the_sdk_error_names_the_miss_without_comparing(path: Path) -> None:
    write_cassette(path, [_interaction(_body(_prompt("lazy")))])
    cassette = Cassette(path)

    sdk_error = await _miss(cassette, _prompt("busy"))

    assert f"cannot answer {LINE}: the cassette has no such request." in sdk_error
    assert "The test fails with CassetteMiss" in sdk_error
    assert "Closest" not in sdk_error


async def test_check_raises_the_message_of_the_first_miss(path: Path) -> None:
    write_cassette(path, [_interaction(_body(_prompt("lazy")))])
    cassette = Cassette(path)
    with contextlib.suppress(AssertionError):
        await _miss(cassette, _prompt("busy"))

    with pytest.raises(AssertionError) as caught:
        cassette.check()

    assert str(caught.value) == cassette.miss_message(cassette.misses[0])


def test_the_record_command_names_a_placeholder_when_the_test_is_unknown() -> None:
    assert record_command(None) == 'pytest --agent-record "<test id>"'


def test_the_record_command_of_a_mode_records_only_what_that_mode_records() -> None:
    assert record_command("t.py::t", "judge") == 'pytest --agent-record=judge "t.py::t"'

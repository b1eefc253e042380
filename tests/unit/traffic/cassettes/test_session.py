"""Unit tests of pytest_agentctx.traffic.cassettes.session: a test's cassette replaying, recording,
reporting misses and stale recordings, and saving.

Replayed requests go to ``http://127.0.0.1:9`` (the discard port): if the cassette did not
answer them they would fail to connect. Recordings go to a loopback server the test starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import errno
import gzip
import json
import os
import re
import threading
from pathlib import Path
from typing import Any

import httpx
import httpx2
import openai
import pytest
from cassette_support import TLS, Loopback, active, chat_chunk, chat_completion

from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, REDACTED
from pytest_agentctx.traffic.cassettes import (
    Cassette,
    Interaction,
    RecordMode,
    load_cassette,
    recording,
    runs,
)
from pytest_agentctx.traffic.cassettes.matcher import make_key
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.errors import (
    CassetteMiss,
    CassetteWriteError,
    PartialRecording,
    StaleCassette,
)

REPLAY_BASE = "http://127.0.0.1:9/v1"
CHAT_URL = f"{REPLAY_BASE}/chat/completions"
MODEL = "gpt-4o-mini"
TEST_ID = "tests/test_agent.py::test_weather"
CANARY = "canary-7c2d-never-in-a-cassette"
#: How messages show the request line of CHAT_URL.
LINE = make_key("POST", CHAT_URL, None, None, ignored=[]).describe()


def _request(content: str, **extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "messages": [{"role": "user", "content": content}], **extra}


def _interaction(
    request: dict[str, Any], response: dict[str, Any] | None = None, url: str = CHAT_URL
) -> Interaction:
    return Interaction(
        method="POST",
        url=url,
        request_headers={"content-type": "application/json"},
        request_body={"json": request},
        status=200,
        response_headers={"content-type": "application/json"},
        response_body={"json": response or chat_completion("recorded")},
    )


def _stream_interaction(request: dict[str, Any], *words: str) -> Interaction:
    events: list[dict[str, Any]] = [
        {"data": json.loads(chat_chunk(word).decode()[len("data: ") :])} for word in words
    ]
    return Interaction(
        method="POST",
        url=CHAT_URL,
        request_headers={"content-type": "application/json"},
        request_body={"json": {**request, "stream": True}},
        status=200,
        response_headers={"content-type": "text/event-stream"},
        response_body={"sse": [*events, {"data": "[DONE]"}]},
    )


@pytest.fixture(autouse=True)
def no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEFAULT_SECRET_ENV:
        monkeypatch.delenv(name, raising=False)


def _client(base_url: str = REPLAY_BASE) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key="sk-unit-test-key-000",
        base_url=base_url,
        max_retries=0,
        http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
    )


async def _ask(client: openai.AsyncOpenAI, content: str, **extra: Any) -> str | None:
    reply = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": content}], **extra
    )
    return reply.choices[0].message.content


async def _ask_streaming(client: openai.AsyncOpenAI, content: str) -> list[str | None]:
    stream = await client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": content}], stream=True
    )
    return [chunk.choices[0].delta.content async for chunk in stream]


def _replaying(path: Path, *interactions: Interaction, **options: Any) -> Cassette:
    write_cassette(path, list(interactions))
    return Cassette(path, test_id=TEST_ID, **options)


# -- replay --------------------------------------------------------------------------


async def test_replay_answers_the_sdk_from_the_cassette(path):
    cassette = _replaying(path, _interaction(_request("Hi"), chat_completion("Hello!")))

    with active(cassette):
        async with _client() as client:
            answer = await _ask(client, "Hi")

    assert answer == "Hello!"
    assert cassette.replayed == 1


async def test_identical_requests_replay_their_recordings_in_order(path):
    cassette = _replaying(
        path,
        _interaction(_request("Poll"), chat_completion("pending")),
        _interaction(_request("Other"), chat_completion("other")),
        _interaction(_request("Poll"), chat_completion("done")),
    )

    with active(cassette):
        async with _client() as client:
            answers = [await _ask(client, "Poll"), await _ask(client, "Poll")]

    assert answers == ["pending", "done"]
    assert cassette.played == [0, 2]


async def test_replay_matches_whatever_the_key_order_of_the_body(path):
    cassette = _replaying(
        path, _interaction({"messages": [{"content": "Hi", "role": "user"}], "model": MODEL})
    )

    with active(cassette), httpx2.Client(verify=TLS) as client:
        body = b'{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hi"}]}'
        response = await asyncio.to_thread(
            client.post, CHAT_URL, content=body, headers={"content-type": "application/json"}
        )

    assert response.json()["choices"][0]["message"]["content"] == "recorded"


async def test_replay_ignores_volatile_fields(path):
    cassette = _replaying(path, _interaction(_request("Hi", user="run-1")))

    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi", user="run-2")

    assert cassette.misses == []


async def test_replay_ignores_a_users_field(path):
    cassette = _replaying(path, _interaction(_request("Hi", seed=1)), ignored_fields=["seed"])

    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi", seed=2)

    assert cassette.misses == []


async def test_replayed_stream_works_with_the_sdk_stream_api(path):
    cassette = _replaying(path, _stream_interaction(_request("Hi"), "Hel", "lo"))

    with active(cassette):
        async with _client() as client:
            deltas = await _ask_streaming(client, "Hi")

    assert deltas == ["Hel", "lo"]


async def test_replayed_stream_arrives_one_chunk_per_event(path):
    cassette = _replaying(path, _stream_interaction(_request("Hi"), "Hel", "lo"))

    with active(cassette):
        async with (
            httpx2.AsyncClient(verify=TLS) as client,
            client.stream("POST", CHAT_URL, json=_request("Hi", stream=True)) as response,
        ):
            chunks = [chunk async for chunk in response.aiter_raw()]

    assert [(chunk[:6], chunk[-2:]) for chunk in chunks] == [(b"data: ", b"\n\n")] * 3
    assert [json.loads(chunk[6:]) for chunk in chunks[:2]] == [
        json.loads(chat_chunk(word)[6:]) for word in ("Hel", "lo")
    ]
    assert chunks[2] == b"data: [DONE]\n\n"


async def test_replayed_json_response_has_its_content_length(path):
    cassette = _replaying(path, _interaction(_request("Hi")))

    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS) as client:
            response = await client.post(CHAT_URL, json=_request("Hi"))

    assert int(response.headers["content-length"]) == len(response.content)


# -- misses --------------------------------------------------------------------------


async def test_miss_fails_the_sdk_call_without_retries(path):
    cassette = _replaying(path, _interaction(_request("Weather in Paris?")))

    with active(cassette):
        async with _client() as client:
            with pytest.raises(
                openai.InternalServerError, match=r"599 - Cassette .* cannot answer"
            ):
                await _ask(client, "Weather in Rome?")

    assert len(cassette.misses) == 1


async def test_miss_is_raised_by_check(path):
    cassette = _replaying(path, _interaction(_request("Weather in Paris?")))
    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS) as client:
            await client.post(CHAT_URL, json=_request("Weather in Rome?"))

    with pytest.raises(CassetteMiss):
        cassette.check()


async def test_miss_message_names_the_cassette_request_closest_diff_and_command(path):
    cassette = _replaying(
        path,
        _interaction(_request("Weather in Paris?", temperature=0)),
        _interaction({"model": "other", "messages": []}),
    )
    with active(cassette):
        async with _client() as client:
            with contextlib.suppress(openai.InternalServerError):
                await _ask(client, "Weather in Rome?", temperature=0)

    message = cassette.miss_message(cassette.misses[0])

    assert message.splitlines() == [
        f"Cassette {path} cannot answer {LINE}: the cassette has no such request.",
        f"Closest recorded request: interaction #0, {LINE}; 1 field differs: messages[0].content",
        '  messages[0].content: recorded "Weather in Paris?" != now "Weather in Rome?"',
        "If the agent's requests changed on purpose, re-record this test: "
        f'pytest --agent-record "{TEST_ID}"',
    ]


async def test_miss_message_shows_a_changed_request_line(path):
    cassette = _replaying(path, _interaction(_request("Hi")))
    with active(cassette), httpx2.Client(verify=TLS) as client:
        await asyncio.to_thread(client.post, f"{CHAT_URL}?api-version=2", json=_request("Hi"))

    message = cassette.miss_message(cassette.misses[0])

    assert (
        f"  (request line): recorded {LINE} != now {LINE}?api-version=2"
    ) in message.splitlines()


async def test_miss_message_leaves_ignored_fields_out_of_the_diff(path):
    cassette = _replaying(path, _interaction(_request("Paris?", user="run-1")))
    with active(cassette):
        async with _client() as client:
            with contextlib.suppress(openai.InternalServerError):
                await _ask(client, "Rome?", user="run-2")

    message = cassette.miss_message(cassette.misses[0])

    assert "user" not in message
    assert 'messages[0].content: recorded "Paris?" != now "Rome?"' in message


async def test_miss_of_a_request_whose_recordings_were_all_used_says_so(path):
    cassette = _replaying(path, _interaction(_request("Hi")))
    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi")
            with pytest.raises(openai.InternalServerError):
                await _ask(client, "Hi")

    message = cassette.miss_message(cassette.misses[0])

    assert "the cassette has this request 1 time(s) and all were used already" in message
    assert "#0 (already used)" in message
    assert "(the same request: every recording of it was used already)" in message


async def test_miss_without_a_cassette_says_there_is_none(path):
    cassette = Cassette(path, test_id=TEST_ID)
    with active(cassette):
        async with _client() as client:
            with contextlib.suppress(openai.InternalServerError):
                await _ask(client, "Hi")

    message = cassette.miss_message(cassette.misses[0])

    assert ": there is no cassette." in message
    assert "Closest" not in message


# -- stale cassettes -----------------------------------------------------------------


async def test_unused_recordings_make_the_cassette_stale(path):
    cassette = _replaying(path, _interaction(_request("Hi")), _interaction(_request("Bye")))
    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi")

    with pytest.raises(StaleCassette) as caught:
        cassette.check()

    assert str(caught.value).splitlines() == [
        f"Cassette {path}: 1 of 2 recorded interactions were never used; the agent no "
        "longer sends them:",
        f"  #1: {LINE} (model call 1 of its conversation, after user: Bye)",
        f'The cassette is stale. Re-record this test: pytest --agent-record "{TEST_ID}"',
        "or, if the test should not use them all, mark it @pytest.mark.agent(allow_unused=True).",
    ]


def test_unused_recordings_are_allowed_when_the_test_says_so(path):
    cassette = _replaying(path, _interaction(_request("Hi")), allow_unused=True)

    cassette.check()


def test_unused_recordings_of_a_shared_cassette_are_not_stale(path):
    cassette = _replaying(path, _interaction(_request("Hi")), shared=True)

    cassette.check()


async def test_a_miss_is_reported_before_staleness(path):
    cassette = _replaying(path, _interaction(_request("Hi")))
    with active(cassette):
        async with _client() as client:
            with contextlib.suppress(openai.InternalServerError):
                await _ask(client, "Bye")

    with pytest.raises(CassetteMiss):
        cassette.check()


# -- recording -----------------------------------------------------------------------


async def test_recording_stores_a_gzip_response_decoded(path, loopback: Loopback):
    loopback.answer_json(chat_completion("Hello!"), gzipped=True)
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            answer = await _ask(client, "Hi")

    assert answer == "Hello!"
    match cassette.new_interactions:
        case [
            Interaction(
                request_body={"json": {"model": "gpt-4o-mini", "messages": [{"content": "Hi"}]}},
                response_body={"json": {"choices": [{"message": {"content": "Hello!"}}]}},
                response_headers=headers,
            )
        ]:
            assert "content-encoding" not in headers
        case other:
            raise AssertionError(other)


async def test_recorded_gzip_response_replays_without_the_server(path, loopback: Loopback):
    loopback.answer_json(chat_completion("Hello!"), gzipped=True)
    url = f"{loopback.url}/v1"
    recording = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)
    with active(recording):
        async with _client(url) as client:
            await _ask(client, "Hi")
    recording.save("run-1")

    with active(Cassette(path, test_id=TEST_ID)):
        async with _client(url) as client:
            answer = await _ask(client, "Hi")

    assert answer == "Hello!"
    assert len(loopback.seen) == 1


async def test_recording_stores_a_stream_event_by_event(path, loopback: Loopback):
    loopback.answer_sse(chat_chunk("Hel"), chat_chunk("lo"), b"data: [DONE]\n\n")
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            deltas = await _ask_streaming(client, "Hi")

    assert deltas == ["Hel", "lo"]
    match cassette.new_interactions:
        case [
            Interaction(
                response_headers={"content-type": "text/event-stream"},
                response_body={
                    "sse": [
                        {"data": {"choices": [{"delta": {"content": "Hel"}}]}},
                        {"data": {"choices": [{"delta": {"content": "lo"}}]}},
                        {"data": "[DONE]"},
                    ]
                },
            )
        ]:
            pass
        case other:
            raise AssertionError(other)


async def test_recorded_stream_replays_with_the_sdk_stream_api(path, loopback: Loopback):
    loopback.answer_sse(chat_chunk("Hel"), chat_chunk("lo"), b"data: [DONE]\n\n")
    url = f"{loopback.url}/v1"
    recording = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)
    with active(recording):
        async with _client(url) as client:
            live = await _ask_streaming(client, "Hi")
    recording.save("run-1")

    with active(Cassette(path, test_id=TEST_ID)):
        async with _client(url) as client:
            replayed = await _ask_streaming(client, "Hi")

    assert replayed == live == ["Hel", "lo"]
    assert len(loopback.seen) == 1


async def test_recording_passes_a_stream_through_as_it_arrives(path, loopback: Loopback):
    first_read = threading.Event()
    loopback.answer_sse(chat_chunk("Hel"), first_read, chat_chunk("lo"), b"data: [DONE]\n\n")
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    deltas: list[str | None] = []
    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            stream = await client.chat.completions.create(
                model=MODEL, messages=[{"role": "user", "content": "Hi"}], stream=True
            )
            async for chunk in stream:
                deltas.append(chunk.choices[0].delta.content)
                first_read.set()  # the server sends the rest only now

    assert deltas == ["Hel", "lo"]
    assert loopback.gates == [True]  # the first event reached the SDK before the second left
    assert len(cassette.new_interactions) == 1


async def test_recording_through_a_sync_client_works(path, loopback: Loopback):
    loopback.answer_json({"ok": True})
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette), httpx2.Client(verify=TLS, trust_env=False) as client:
        response = await asyncio.to_thread(client.post, f"{loopback.url}/v1/x", json={"a": 1})

    assert response.json() == {"ok": True}
    assert [i.response_body for i in cassette.new_interactions] == [{"json": {"ok": True}}]


async def test_recording_through_httpx_works(path, loopback: Loopback):
    loopback.answer_json({"ok": True})
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with httpx.AsyncClient(verify=TLS, trust_env=False) as client:
            response = await client.post(f"{loopback.url}/v1/x", json={"a": 1})

    assert response.json() == {"ok": True}
    assert [i.request_body for i in cassette.new_interactions] == [{"json": {"a": 1}}]


async def test_recording_keeps_meaningful_request_headers_only(path, loopback: Loopback):
    loopback.answer_json(chat_completion("ok"))
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            await _ask(client, "Hi")

    assert cassette.new_interactions[0].request_headers == {
        "accept": "application/json",
        "authorization": REDACTED,
        "content-type": "application/json",
    }


async def test_recording_keeps_a_binary_request_body_byte_for_byte(path, loopback: Loopback):
    loopback.answer_json({"ok": True})
    upload = bytes(range(256))
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
            await client.post(f"{loopback.url}/v1/files", content=upload)

    assert loopback.seen[0].body == upload
    match cassette.new_interactions:
        case [Interaction(request_body={"base64": _})]:
            pass
        case other:
            raise AssertionError(other)


async def test_recording_redacts_secrets_the_server_echoes(path, loopback: Loopback, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)
    loopback.answer(
        200,
        {"content-type": "application/json", "x-echo-key": CANARY},
        json.dumps({"echo": {"authorization": f"Bearer {CANARY}"}}).encode(),
    )
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID, redactor=Redactor())

    with active(cassette):
        async with openai.AsyncOpenAI(
            base_url=f"{loopback.url}/v1",
            max_retries=0,
            http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
        ) as client:
            await client.models.list()
    cassette.save("run-1")

    assert CANARY not in path.read_text()
    assert f"Bearer {CANARY}" in json.dumps(loopback.seen[0].headers)


async def test_recording_redacts_a_key_set_after_the_cassette_started(
    path, loopback: Loopback, monkeypatch
):
    loopback.answer_json({"echo": CANARY})
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)
    monkeypatch.setenv("ANTHROPIC_API_KEY", CANARY)

    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
            await client.post(f"{loopback.url}/v1/x", json={"key": CANARY})
    cassette.save("run-1")

    assert CANARY not in path.read_text()


async def test_interactions_are_the_loaded_then_the_recorded_ones(path, loopback: Loopback):
    loopback.answer_json(chat_completion("new"))
    write_cassette(path, [_interaction(_request("Old"))])
    cassette = Cassette(path, mode=RecordMode.NEW, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            await _ask(client, "New")

    assert [_question(i) for i in cassette.interactions] == [
        "Old",
        "New",
    ]
    assert cassette.recorded


# -- modes and saving ----------------------------------------------------------------


async def test_new_mode_replays_what_matches_and_records_the_rest(path, loopback: Loopback):
    loopback.answer_json(chat_completion("live"))
    url = f"{loopback.url}/v1"
    old = _interaction(_request("Old"), chat_completion("replayed"), f"{url}/chat/completions")
    write_cassette(path, [old])
    cassette = Cassette(path, mode=RecordMode.NEW, test_id=TEST_ID)

    with active(cassette):
        async with _client(url) as client:
            answers = [await _ask(client, "Old"), await _ask(client, "New")]
    cassette.save("run-1")

    assert answers == ["replayed", "live"]
    assert len(loopback.seen) == 1
    assert len(load_cassette(path)) == 2


def test_missing_mode_records_a_test_without_a_cassette(path):
    assert Cassette(path, mode=RecordMode.MISSING).mode is RecordMode.REWRITE


def test_missing_mode_replays_a_test_with_a_cassette(path):
    write_cassette(path, [_interaction(_request("Hi"))])

    assert Cassette(path, mode=RecordMode.MISSING, run_id="run-2").mode is RecordMode.NONE


def test_missing_mode_adds_to_a_cassette_of_the_same_path_written_in_the_same_run(path):
    first = Cassette(path, mode=RecordMode.MISSING, run_id="run-1")
    first.recorded_interactions.append(_interaction(_request("Hi")))
    first.save("run-1")

    assert Cassette(path, mode=RecordMode.MISSING, run_id="run-1").mode is RecordMode.NEW


def test_rewrite_replaces_the_old_cassette(path):
    write_cassette(path, [_interaction(_request("Old"))])
    cassette = Cassette(path, mode=RecordMode.REWRITE)
    cassette.recorded_interactions.append(_interaction(_request("New")))

    assert cassette.save("run-1")

    assert [i.request_body for i in load_cassette(path)] == [{"json": _request("New")}]


def test_save_without_recordings_writes_no_file(path):
    assert not Cassette(path, mode=RecordMode.REWRITE).save("run-1")

    assert not path.exists()


def test_rewrite_of_a_test_that_no_longer_sends_anything_empties_its_cassette(path):
    write_cassette(path, [_interaction(_request("Old"))])

    assert Cassette(path, mode=RecordMode.REWRITE).save("run-1")

    assert load_cassette(path) == []


def test_replay_mode_never_saves(path):
    write_cassette(path, [_interaction(_request("Old"))])
    before = path.read_bytes()

    assert not Cassette(path).save("run-1")

    assert path.read_bytes() == before


def test_incomplete_recordings_are_not_saved(path):
    cassette = Cassette(path, mode=RecordMode.REWRITE)
    cassette.recorded_interactions.append(None)

    assert (cassette.recorded, cassette.save("run-1")) == (False, False)


async def test_every_recorded_gzip_byte_ends_up_decoded_on_disk(path, loopback: Loopback):
    payload = {"data": ["x" * 50] * 20}
    loopback.answer_json(payload, gzipped=True)
    cassette = Cassette(path, mode=RecordMode.REWRITE)

    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
            await client.get(f"{loopback.url}/v1/big")
    cassette.save("run-1")

    stored = json.loads(path.read_text())["interactions"][0]["response"]
    assert stored["body"] == {"json": payload}
    assert "content-encoding" not in stored["headers"]
    assert gzip.compress(b"") not in path.read_bytes()


async def test_recording_with_a_key_in_the_query_matches_a_live_request_with_another(path):
    recorded = _interaction(_request("Hi"), url=f"{CHAT_URL}?key=recorded-key-123")
    cassette = _replaying(path, recorded)

    with active(cassette), httpx2.Client(verify=TLS) as client:
        await asyncio.to_thread(client.post, f"{CHAT_URL}?key=live-key-45678", json=_request("Hi"))

    assert (cassette.misses, cassette.replayed) == ([], 1)


async def test_saving_in_new_mode_scrubs_the_loaded_interactions_too(path, loopback: Loopback):
    foreign = _interaction(_request("Old"), url=f"{loopback.url}/v1/x?api_key={CANARY}")
    foreign.request_headers["authorization"] = f"Bearer {CANARY}"
    write_cassette(path, [foreign])
    loopback.answer_json({"ok": True})
    cassette = Cassette(path, mode=RecordMode.NEW)

    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
            await client.post(f"{loopback.url}/v1/y", json={"new": 1})
    cassette.save("run-1")

    assert CANARY not in path.read_text()
    assert len(load_cassette(path)) == 2


# -- shared cassettes ----------------------------------------------------------------

ONE = "tests/test_agent.py::test_one"
TWO = "tests/test_agent.py::test_two"
THREE = "tests/test_agent.py::test_three"


def _by(test_id: str, content: str, answer: str = "recorded") -> Interaction:
    """An interaction of a shared cassette, recorded by ``test_id``."""
    return dataclasses.replace(
        _interaction(_request(content), chat_completion(answer)), test_id=test_id
    )


def _shared(path: Path, test_id: str, **options: Any) -> Cassette:
    return Cassette(path, test_id=test_id, shared=True, **options)


def _contents(path: Path) -> list[tuple[str, str]]:
    """(test id, question) of every interaction in the cassette at ``path``."""
    return [(i.test_id, _question(i)) for i in load_cassette(path)]


def _question(interaction: Interaction) -> str:
    """The first message of a recorded chat completions request."""
    assert interaction.request_body is not None
    content: str = interaction.request_body["json"]["messages"][0]["content"]
    return content


async def _answers(cassette: Cassette, *questions: str) -> list[str | None]:
    with active(cassette):
        async with _client() as client:
            return [await _ask(client, question) for question in questions]


async def test_tests_sharing_a_cassette_each_replay_their_own_answer_to_the_same_request(path):
    write_cassette(path, [_by(ONE, "Weather?", "sunny"), _by(TWO, "Weather?", "rainy")])

    answers = [await _answers(_shared(path, test), "Weather?") for test in (ONE, TWO)]

    assert answers == [["sunny"], ["rainy"]]


async def test_a_test_replays_its_own_recordings_before_those_of_no_known_test(path):
    write_cassette(path, [_by("", "Weather?", "old"), _by(ONE, "Weather?", "new")])

    assert await _answers(_shared(path, ONE), "Weather?", "Weather?") == ["new", "old"]


async def test_a_shared_cassette_without_test_ids_answers_every_test(path):
    write_cassette(path, [_by("", "Weather?", "sunny"), _by("", "Time?", "noon")])

    answers = [await _answers(_shared(path, test), "Time?", "Weather?") for test in (ONE, TWO)]

    assert answers == [["noon", "sunny"], ["noon", "sunny"]]


async def test_a_test_with_recordings_of_its_own_misses_a_request_only_others_recorded(path):
    write_cassette(path, [_by(ONE, "Weather?"), _by(TWO, "Time?")])
    cassette = _shared(path, ONE)

    with pytest.raises(openai.InternalServerError):
        await _answers(cassette, "Time?")

    assert (
        f"only other tests recorded this request in the shared cassette ({TWO}), and a test "
        "replays its own recordings."
    ) in cassette.miss_message(cassette.misses[0])


async def test_a_test_without_recordings_of_its_own_replays_those_of_another_test(path):
    write_cassette(path, [_by(ONE, "Weather?", "sunny"), _by(ONE, "Weather?", "rainy")])

    answers = await _answers(_shared(path, "tests/test_agent.py::test_renamed"), "Weather?")

    assert answers == ["sunny"]


async def test_a_test_without_recordings_of_its_own_takes_an_answer_every_test_agrees_on(path):
    write_cassette(path, [_by(ONE, "Weather?", "sunny"), _by(TWO, "Weather?", "sunny")])

    assert await _answers(_shared(path, THREE), "Weather?") == ["sunny"]


async def test_a_request_other_tests_recorded_with_different_answers_misses(path):
    write_cassette(
        path, [_by(ONE, "Weather?", "sunny"), _by(TWO, "Weather?", "rainy"), _by(ONE, "Time?")]
    )
    cassette = _shared(path, THREE)

    with pytest.raises(openai.InternalServerError):
        await _answers(cassette, "Weather?")

    assert (
        "this test has no recording of its own in the shared cassette, and the tests that "
        f"recorded this request ({ONE}, {TWO}) got different answers"
    ) in cassette.miss_message(cassette.misses[0])


async def test_a_miss_in_a_shared_cassette_says_re_recording_keeps_the_other_tests(path):
    write_cassette(path, [_by(ONE, "Weather?")])
    cassette = _shared(path, ONE)

    with pytest.raises(openai.InternalServerError):
        await _answers(cassette, "Time?")

    assert cassette.miss_message(cassette.misses[0]).splitlines()[-1] == (
        "If the agent's requests changed on purpose, re-record this test: "
        f'pytest --agent-record "{ONE}" (the other tests\' interactions in the shared '
        "cassette are kept)"
    )


async def test_recording_into_a_shared_cassette_names_the_test(path, loopback: Loopback):
    loopback.answer_json(chat_completion("live"))
    cassette = _shared(path, ONE, mode=RecordMode.REWRITE)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            await _ask(client, "Weather?")
    cassette.save("run-1")

    assert _contents(path) == [(ONE, "Weather?")]


async def test_recording_into_a_tests_own_cassette_names_no_test(path, loopback: Loopback):
    loopback.answer_json(chat_completion("live"))
    cassette = Cassette(path, test_id=ONE, mode=RecordMode.REWRITE)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            await _ask(client, "Weather?")
    cassette.save("run-1")

    assert _contents(path) == [("", "Weather?")]


def test_tests_recording_into_a_shared_cassette_keep_each_others_interactions(path):
    for test in (ONE, TWO):
        cassette = _shared(path, test, mode=RecordMode.REWRITE)
        cassette.recorded_interactions.append(_by(test, "Weather?"))
        cassette.save("run-1")

    assert _contents(path) == [(ONE, "Weather?"), (TWO, "Weather?")]


def test_re_recording_a_test_of_a_shared_cassette_replaces_only_its_interactions(path):
    write_cassette(
        path,
        [_by(ONE, "one?"), _by(TWO, "two?", "old"), _by(TWO, "two again?"), _by(THREE, "three?")],
    )
    cassette = _shared(path, TWO, mode=RecordMode.REWRITE)
    cassette.recorded_interactions.append(_by(TWO, "two now?", "new"))

    assert cassette.save("run-2")

    assert _contents(path) == [(ONE, "one?"), (TWO, "two now?"), (THREE, "three?")]


def test_saving_a_shared_cassette_keeps_what_another_process_wrote_since_it_started(path):
    write_cassette(path, [_by(ONE, "one?")])
    cassette = _shared(path, ONE, mode=RecordMode.REWRITE)
    other = _shared(path, TWO, mode=RecordMode.REWRITE)
    other.recorded_interactions.append(_by(TWO, "two?"))
    other.save("run-1")  # as another xdist worker would, while this test runs
    cassette.recorded_interactions.append(_by(ONE, "one now?"))

    cassette.save("run-1")

    assert _contents(path) == [(ONE, "one now?"), (TWO, "two?")]


def test_re_recording_drops_the_matching_interactions_of_no_known_test(path):
    write_cassette(path, [_by("", "one?", "old"), _by("", "two?"), _by("", "one?", "older")])
    cassette = _shared(path, ONE, mode=RecordMode.REWRITE)
    cassette.recorded_interactions.append(_by(ONE, "one?", "new"))

    cassette.save("run-1")

    assert _contents(path) == [(ONE, "one?"), ("", "two?"), ("", "one?")]


def test_a_re_recorded_test_that_sends_nothing_leaves_the_shared_cassette(path):
    write_cassette(path, [_by(ONE, "one?"), _by(TWO, "two?")])

    assert _shared(path, ONE, mode=RecordMode.REWRITE).save("run-1")

    assert _contents(path) == [(TWO, "two?")]


def test_a_re_recorded_test_with_nothing_in_the_shared_cassette_writes_nothing(path):
    write_cassette(path, [_by(ONE, "one?")])
    before = path.read_bytes()

    assert not _shared(path, TWO, mode=RecordMode.REWRITE).save("run-1")

    assert path.read_bytes() == before


def test_new_mode_adds_after_the_tests_own_interactions_in_a_shared_cassette(path):
    write_cassette(path, [_by(ONE, "one?"), _by(TWO, "two?")])
    cassette = _shared(path, ONE, mode=RecordMode.NEW)
    cassette.recorded_interactions.append(_by(ONE, "one more?"))

    cassette.save("run-1")

    assert _contents(path) == [(ONE, "one?"), (ONE, "one more?"), (TWO, "two?")]


async def test_new_mode_records_what_only_another_test_recorded(path, loopback: Loopback):
    loopback.answer_json(chat_completion("live"))
    url = f"{loopback.url}/v1"
    recorded = dataclasses.replace(_by(ONE, "Weather?"), url=f"{url}/chat/completions")
    write_cassette(path, [recorded])
    cassette = _shared(path, TWO, mode=RecordMode.NEW)

    with active(cassette):
        async with _client(url) as client:
            answer = await _ask(client, "Weather?")

    assert (answer, len(loopback.seen)) == ("live", 1)


def test_missing_mode_records_a_test_with_nothing_of_its_own_in_a_shared_cassette(path):
    write_cassette(path, [_by(ONE, "one?")])

    assert _shared(path, TWO, mode=RecordMode.MISSING).mode is RecordMode.REWRITE


def test_missing_mode_replays_a_test_with_its_own_interactions_in_a_shared_cassette(path):
    write_cassette(path, [_by(ONE, "one?")])

    assert _shared(path, ONE, mode=RecordMode.MISSING, run_id="run-2").mode is RecordMode.NONE


def test_missing_mode_replays_a_shared_cassette_without_test_ids(path):
    write_cassette(path, [_by("", "one?")])

    assert _shared(path, TWO, mode=RecordMode.MISSING, run_id="run-2").mode is RecordMode.NONE


# -- the exchange log (capture) -----------------------------------------------------


async def test_exchange_log_lists_replayed_interactions_in_request_order(path):
    cassette = _replaying(
        path,
        _interaction(_request("Poll"), chat_completion("pending")),
        _interaction(_request("Other"), chat_completion("other")),
        _interaction(_request("Poll"), chat_completion("done")),
    )

    with active(cassette):
        async with _client() as client:
            for content in ("Poll", "Poll", "Other"):
                await _ask(client, content)

    assert cassette.exchange_log == [cassette.loaded[0], cassette.loaded[2], cassette.loaded[1]]


async def test_exchange_log_interleaves_replayed_and_recorded_interactions(
    path, loopback: Loopback
):
    loopback.answer_json(chat_completion("recorded now"))
    url = f"{loopback.url}/v1"
    cassette = _replaying(
        path,
        _interaction(_request("Old"), chat_completion("old"), url=f"{url}/chat/completions"),
        mode=RecordMode.NEW,
    )

    with active(cassette):
        async with _client(url) as client:
            await _ask(client, "New")
            await _ask(client, "Old")

    match cassette.exchange_log:
        case [
            Interaction(
                response_body={"json": {"choices": [{"message": {"content": "recorded now"}}]}}
            ),
            Interaction(response_body={"json": {"choices": [{"message": {"content": "old"}}]}}),
        ]:
            pass
        case other:
            raise AssertionError(other)


async def test_exchange_log_leaves_out_a_miss(path):
    cassette = _replaying(path, _interaction(_request("Hi"), chat_completion("Hello!")))

    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi")
            with pytest.raises(openai.APIStatusError):
                await _ask(client, "Unknown")

    assert cassette.exchange_log == [cassette.loaded[0]]


# -- streams the agent never closes --------------------------------------------------


def _sync_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(
        api_key="sk-unit-test-key-000",
        base_url=base_url,
        max_retries=0,
        http_client=httpx2.Client(verify=TLS, trust_env=False),
    )


def _first_delta_then_break(client: openai.OpenAI) -> tuple[Any, str | None]:
    """An agent that stops reading a stream at its first word, without closing it; returns
    the stream (kept alive, as an agent's local in a reference cycle would be) and the word."""
    stream = client.chat.completions.create(
        model=MODEL, messages=[_request("Hi")["messages"][0]], stream=True
    )
    for chunk in stream:
        return stream, chunk.choices[0].delta.content
    return stream, None


def _events(interaction: Interaction) -> list[Any]:
    return [event["data"] for event in (interaction.response_body or {})["sse"]]


def _words(interaction: Interaction) -> list[str]:
    return [
        data["choices"][0]["delta"]["content"]
        for data in _events(interaction)
        if isinstance(data, dict)
    ]


async def test_a_sync_stream_the_agent_stops_reading_is_recorded_whole(path, loopback: Loopback):
    loopback.answer_sse(chat_chunk("Hel"), chat_chunk("lo"), chat_chunk("!"), b"data: [DONE]\n\n")
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette), _sync_client(f"{loopback.url}/v1") as client:
        stream, word = await asyncio.to_thread(_first_delta_then_break, client)
        cassette.finish_streams()  # as the plugin does when the test function returns

        [recorded] = cassette.new_interactions
    assert (word, _words(recorded), _events(recorded)[-1]) == ("Hel", ["Hel", "lo", "!"], "[DONE]")
    assert not recorded.partial
    assert stream is not None


async def test_a_sync_stream_that_does_not_end_in_time_keeps_its_whole_events(
    path, loopback: Loopback, monkeypatch
):
    monkeypatch.setattr(recording, "STREAM_FINISH_BYTES", 1)  # stop at the first chunk read on
    go_on = threading.Event()
    loopback.answer_sse(chat_chunk("Hel"), go_on, chat_chunk("lo"), b'data: {"choices": [{"de')
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette), _sync_client(f"{loopback.url}/v1") as client:
        stream, word = await asyncio.to_thread(_first_delta_then_break, client)
        go_on.set()
        cassette.finish_streams()

        [recorded] = cassette.new_interactions
    assert (word, _words(recorded), recorded.partial) == ("Hel", ["Hel", "lo"], True)
    assert stream is not None


async def test_a_sync_stream_whose_client_was_closed_keeps_what_arrived(path, loopback: Loopback):
    go_on = threading.Event()
    loopback.answer_sse(chat_chunk("Hel"), go_on, chat_chunk("lo"), b"data: [DONE]\n\n")
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        with _sync_client(f"{loopback.url}/v1") as client:
            stream, word = await asyncio.to_thread(_first_delta_then_break, client)
        go_on.set()
        cassette.finish_streams()

        [recorded] = cassette.new_interactions
    assert (word, _words(recorded), recorded.partial) == ("Hel", ["Hel"], True)
    assert stream is not None


async def test_an_async_stream_the_agent_stops_reading_keeps_what_it_read(path, loopback: Loopback):
    go_on = threading.Event()
    loopback.answer_sse(chat_chunk("Hel"), go_on, chat_chunk("lo"), b"data: [DONE]\n\n")
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)

    with active(cassette):
        async with _client(f"{loopback.url}/v1") as client:
            stream = await client.chat.completions.create(
                model=MODEL, messages=_request("Hi")["messages"], stream=True
            )
            async for chunk in stream:
                word = chunk.choices[0].delta.content
                break
            cassette.finish_streams()
            go_on.set()

    [recorded] = cassette.new_interactions
    assert (word, _words(recorded), recorded.partial) == ("Hel", ["Hel"], True)


def _partial(*words: str) -> Interaction:
    whole = _stream_interaction(_request("Hi"), *words)
    events = (whole.response_body or {})["sse"][: len(words)]  # no [DONE]: cut short
    return dataclasses.replace(whole, partial=True, response_body={"sse": events})


async def test_a_partial_recording_replays_what_the_agent_read(path):
    cassette = _replaying(path, _partial("Hel", "lo"))

    with active(cassette):
        async with _client() as client:
            stream = await client.chat.completions.create(
                model=MODEL, messages=_request("Hi")["messages"], stream=True
            )
            words = []
            async for chunk in stream:
                words.append(chunk.choices[0].delta.content)
                if len(words) == 2:
                    break

    assert words == ["Hel", "lo"]
    cassette.check()


async def test_reading_past_a_partial_recording_fails_and_says_to_re_record(path):
    cassette = _replaying(path, _partial("Hel", "lo"))

    with active(cassette):
        async with _client() as client:
            with pytest.raises(PartialRecording) as raised:
                await _ask_streaming(client, "Hi")

    message = (
        f"Cassette {path}: interaction #0 ({LINE}) is a partial recording of a stream "
        "(2 event(s)): while recording, the agent stopped reading it without closing it, and "
        "the rest could not be read when the test ended (an async stream, a stream whose "
        "client was closed first, or one that did not end in time). Now the agent reads "
        "past its end. Re-record this test: "
        f'pytest --agent-record "{TEST_ID}"; if the agent stops reading a stream, close it '
        "(`with stream:` or `stream.close()`), which records what it read."
    )
    assert str(raised.value) == message
    with pytest.raises(PartialRecording, match=re.escape(message)):
        cassette.check()


# -- saving fails clearly ------------------------------------------------------------


def _recorded(path: Path) -> Cassette:
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID)
    cassette.recorded_interactions.append(_interaction(_request("New")))
    return cassette


def _failing_rename(monkeypatch: pytest.MonkeyPatch, code: int) -> None:
    def fail(source: object, target: object) -> None:
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(os, "replace", fail)


def test_a_full_disk_keeps_the_old_cassette_and_says_what_to_do(path, monkeypatch):
    write_cassette(path, [_interaction(_request("Old"))])
    before = path.read_bytes()
    _failing_rename(monkeypatch, errno.ENOSPC)

    with pytest.raises(CassetteWriteError) as raised:
        _recorded(path).save("run-1")

    assert str(raised.value) == (
        f"Cassette {path} could not be saved (No space left on device, ENOSPC). The previous "
        "version of the cassette is kept unchanged. Free some disk space, then record again: "
        f'pytest --agent-record "{TEST_ID}"'
    )
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_a_read_only_folder_says_to_make_it_writable(path, monkeypatch):
    _failing_rename(monkeypatch, errno.EROFS)

    with pytest.raises(CassetteWriteError) as raised:
        _recorded(path).save("run-1")

    assert str(raised.value) == (
        f"Cassette {path} could not be saved (Read-only file system, EROFS). No cassette was "
        f"written (there was none before). Make {path.parent} writable for the user running "
        "pytest (or set agent_cassette_dir to a writable folder), then record again: "
        f'pytest --agent-record "{TEST_ID}"'
    )
    assert not path.exists()


def test_a_file_where_the_cassette_folder_should_be_is_named(path):
    blocking = path.parents[1]  # cassettes/, with test_agent/test_weather.json under it
    blocking.write_text("not a folder")

    with pytest.raises(CassetteWriteError) as raised:
        _recorded(path).save("run-1")

    assert str(raised.value).startswith(f"Cassette {path} could not be saved (")
    assert str(raised.value).endswith(
        f"No cassette was written (there was none before). {blocking} is a file, where a "
        "folder of the cassette should be: move it away (or set agent_cassette_dir to another "
        f'folder), then record again: pytest --agent-record "{TEST_ID}"'
    )
    assert blocking.read_text() == "not a folder"


async def test_a_replay_under_a_file_says_which_file_is_in_the_way(path):
    blocking = path.parents[1]
    blocking.write_text("not a folder")
    cassette = Cassette(path, test_id=TEST_ID)

    with active(cassette):
        async with _client() as client:
            with contextlib.suppress(openai.APIStatusError):
                await _ask(client, "Hi")

    with pytest.raises(
        CassetteMiss, match=re.escape(f"there is no cassette ({blocking} is a file")
    ):
        cassette.check()


def test_a_replay_removes_what_a_killed_write_left_in_the_cassette_folder(path, dead_pid):
    write_cassette(path, [_interaction(_request("Hi"))])
    left = path.with_name(f".{path.name}.{dead_pid}.0123abcd.tmp")
    left.write_text('{"cassette": ')
    runs._swept_folders.discard(path.parent)

    Cassette(path, test_id=TEST_ID)

    assert [p.name for p in path.parent.iterdir()] == [path.name]


async def test_seen_log_keeps_a_miss_with_the_error_it_was_answered(path):
    cassette = _replaying(path, _interaction(_request("Hi"), chat_completion("Hello!")))

    with active(cassette):
        async with _client() as client:
            await _ask(client, "Hi")
            with pytest.raises(openai.APIStatusError):
                await _ask(client, "Unknown")

    match cassette.seen_log:
        case [
            first,
            Interaction(
                status=599,
                request_body={"json": {"messages": [{"content": "Unknown"}]}},
                response_body={"json": {"error": {"type": "cassette_miss"}}},
            ),
        ] if first is cassette.loaded[0]:
            pass
        case other:
            raise AssertionError(other)

"""AWS event-stream bodies in a cassette: stored as readable messages without losing a
byte, redacted as a stream (a secret streamed in pieces across messages is cut out, and
one in an InvokeModel chunk's base64 too), replayed one message per chunk with the CRCs
computed again, and read back from vcrpy's ``!!binary`` bodies."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx2
import pytest
import yaml
from botocore.eventstream import EventStreamBuffer
from hypothesis import given, strategies as st

from pytest_agentctx.redaction.redactor import REDACTED
from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard, fileformat
from pytest_agentctx.traffic.cassettes.body import body_bytes, body_chunks, encode_body
from pytest_agentctx.traffic.cassettes.eventbody import whole_messages
from pytest_agentctx.traffic.cassettes.fileformat import Interaction, read_body
from pytest_agentctx.traffic.cassettes.redact import Redactor
from pytest_agentctx.traffic.cassettes.store import load_cassette, write_cassette
from pytest_agentctx.traffic.cassettes.vcr import dump_vcr, from_vcr
from pytest_agentctx.traffic.codecs.eventstream import (
    EventMessage,
    decode_messages,
    encode_message,
    encode_messages,
    event,
)

CONTENT_TYPE = "application/vnd.amazon.eventstream"
SECRET = "sk-canary-0d9e-never-in-a-cassette"
CONVERSE = "https://bedrock-runtime.us-east-1.amazonaws.com/model/m%3A0/converse-stream"


def _delta(index: int, text: str) -> EventMessage:
    return event("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": text}})


STREAM = [
    event("messageStart", {"p": "abcd", "role": "assistant"}),
    _delta(0, "The key is sk-canary-0d9e"),
    _delta(0, "-never-in-a-cassette, keep it."),
    event("contentBlockStop", {"contentBlockIndex": 0}),
    event("messageStop", {"stopReason": "end_turn"}),
]


def test_an_event_stream_is_stored_as_its_messages_payloads_as_json():
    stored = encode_body(encode_messages(STREAM), CONTENT_TYPE)

    assert stored is not None
    assert stored["eventstream"][1] == {
        "headers": {
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
            ":message-type": "event",
        },
        "json": {"contentBlockIndex": 0, "delta": {"text": "The key is sk-canary-0d9e"}},
    }


def test_each_message_is_one_chunk_on_replay():
    stored = encode_body(encode_messages(STREAM), CONTENT_TYPE)

    chunks = body_chunks(stored)

    assert [decode_messages(chunk) for chunk in chunks] == [[message] for message in STREAM]


payloads = st.one_of(
    st.binary(max_size=40),
    st.dictionaries(st.text(max_size=5), st.text(max_size=8), max_size=3).map(
        lambda value: json.dumps(value).encode()  # not compact: kept as bytes
    ),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=3).map(
        lambda value: json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()
    ),
)
streams = st.lists(
    st.builds(
        EventMessage,
        headers=st.dictionaries(
            st.sampled_from([":event-type", ":content-type", ":message-type", "x"]),
            st.one_of(st.text(max_size=12), st.booleans(), st.integers(-5, 5)),
            max_size=3,
        ),
        payload=payloads,
    ),
    min_size=1,
    max_size=4,
)


@given(streams)
def test_storing_an_event_stream_loses_no_byte(stream: list[EventMessage]):
    raw = encode_messages(stream)

    stored = encode_body(raw, CONTENT_TYPE)

    assert stored is not None
    assert "eventstream" in stored
    assert body_bytes(stored) == raw


def _json_containers(children: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=4), children, max_size=3)
    )


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**70), max_value=2**70),
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([1.5e-7, 2e-9, 1e16, 5e-324, "1e-5", "one-time", "null"]),
        st.text(max_size=8),
    ),
    _json_containers,
    max_leaves=8,
)


@given(json_values)
def test_a_stored_payload_is_framed_as_compact_json_writes_it(payload: object):
    # The stored form is framed again on replay: the payload's bytes must be exactly what
    # json writes compact (how the stream is stored), whichever encoder frames it.
    entry = {"headers": {":event-type": "x"}, "json": payload}
    compact = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()

    (chunk,) = body_chunks({"eventstream": [entry]})

    assert decode_messages(chunk)[0].payload == compact


@pytest.mark.parametrize(
    "raw",
    [encode_messages(STREAM)[:-3], b"not an event stream at all"],
    ids=["cut-short", "not-a-stream"],
)
def test_bytes_that_are_no_whole_event_stream_are_kept_as_they_came(raw):
    assert encode_body(raw, CONTENT_TYPE) == {"base64": base64.b64encode(raw).decode()}


def test_a_stored_event_stream_reads_back_from_the_cassette_file():
    stored = encode_body(encode_messages(STREAM), CONTENT_TYPE)

    assert read_body(json.loads(json.dumps(stored))) == stored


def test_a_stored_event_stream_that_is_no_list_is_refused():
    with pytest.raises(ValueError, match="an eventstream body is dict; expected a list"):
        read_body({"eventstream": {}})


def test_a_malformed_stored_message_names_its_entry():
    with pytest.raises(ValueError, match=r"entry #0 has keys \['headers', 'text'\]"):
        body_chunks({"eventstream": [{"headers": {}, "text": "hi"}]})


def test_a_secret_streamed_in_pieces_across_messages_is_cut_out():
    stored = encode_body(encode_messages(STREAM), CONTENT_TYPE)

    scrubbed = Redactor(env=(), extra_values=[SECRET]).body(stored)

    assert scrubbed is not None
    texts = [e["json"]["delta"]["text"] for e in scrubbed["eventstream"] if "delta" in e["json"]]
    assert "".join(texts) == f"The key is {REDACTED}, keep it."
    # the redacted stream still reads, its CRCs computed again
    buffer = EventStreamBuffer()
    buffer.add_data(body_bytes(scrubbed))
    assert len(list(buffer)) == len(STREAM)


def test_a_secret_in_an_invoke_model_chunk_is_redacted_inside_its_base64():
    inner = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta"}}
    inner["delta"]["text"] = f"echo {SECRET}"  # type: ignore[index]
    chunk = event("chunk", {"bytes": base64.b64encode(json.dumps(inner).encode()).decode()})
    stored = encode_body(encode_message(chunk), CONTENT_TYPE)

    scrubbed = Redactor(env=(), extra_values=[SECRET]).body(stored)

    assert scrubbed is not None
    payload = scrubbed["eventstream"][0]["json"]
    assert json.loads(base64.b64decode(payload["bytes"]))["delta"]["text"] == f"echo {REDACTED}"


def test_a_stream_without_a_secret_comes_back_as_it_was():
    stored = encode_body(encode_messages(STREAM[:1]), CONTENT_TYPE)

    assert Redactor(env=(), extra_values=[SECRET]).body(stored) == stored


def _vcrpy_document(raw: bytes) -> dict[str, object]:
    return {
        "interactions": [
            {
                "request": {"method": "POST", "uri": CONVERSE, "body": "{}", "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": [CONTENT_TYPE]},
                    "body": {"string": raw},
                },
            }
        ],
        "version": 1,
    }


def test_a_vcrpy_binary_event_stream_is_read_as_its_messages_and_served_byte_for_byte():
    raw = encode_messages(STREAM)

    (interaction,) = from_vcr(_vcrpy_document(raw), "cassette.yaml")

    assert interaction.is_stream
    assert interaction.response_body is not None
    assert len(interaction.response_body["eventstream"]) == len(STREAM)
    assert body_bytes(interaction.response_body) == raw


def test_a_replayed_event_stream_reaches_the_client_one_message_per_chunk(tmp_path: Path):
    path = tmp_path / "cassette.yaml"
    path.write_text(yaml.safe_dump(_vcrpy_document(encode_messages(STREAM))))
    cassette = Cassette(path)
    guard = NetworkGuard(reason="replay")
    cassette.start()
    guard.start()
    try:
        with httpx2.Client() as client, client.stream("POST", CONVERSE, content=b"{}") as reply:
            chunks = list(reply.iter_raw())
    finally:
        guard.stop()
        cassette.stop()

    assert chunks == [encode_message(message) for message in STREAM]
    assert "content-length" not in reply.headers


def test_a_stream_recorded_in_part_keeps_its_whole_messages():
    raw = encode_messages(STREAM)

    kept = whole_messages(raw[:-3], CONTENT_TYPE)

    assert kept == encode_messages(STREAM[:-1])
    stored = encode_body(kept, CONTENT_TYPE)
    assert stored is not None
    assert len(stored["eventstream"]) == len(STREAM) - 1
    assert whole_messages(raw[:-3], "application/json") == raw[:-3]


def test_an_event_stream_written_in_vcrpy_s_format_is_bytes_and_reads_back_the_same():
    (interaction,) = from_vcr(_vcrpy_document(encode_messages(STREAM)), "cassette.yaml")

    text = dump_vcr([interaction])

    assert "!!binary" in text
    (again,) = from_vcr(yaml.safe_load(text), "cassette.yaml")
    assert again.response_body == interaction.response_body


@pytest.mark.parametrize("suffix", ["json", "yaml"])
def test_a_cassette_file_keeps_every_message_of_an_event_stream(tmp_path: Path, suffix):
    (interaction,) = from_vcr(_vcrpy_document(encode_messages(STREAM)), "cassette.yaml")
    path = tmp_path / f"cassette.{suffix}"

    write_cassette(path, [interaction])
    (again,) = load_cassette(path)

    assert again.response_body is not None
    replayed = [decode_messages(chunk) for chunk in body_chunks(again.response_body)]
    assert [(dict(m.headers), json.loads(m.payload)) for [m] in replayed] == [
        (dict(m.headers), json.loads(m.payload)) for m in STREAM
    ]


def _streamed(body: object) -> Interaction:
    return Interaction(
        method="POST",
        url=CONVERSE,
        request_headers={},
        request_body=None,
        status=200,
        response_headers={"content-type": CONTENT_TYPE},
        response_body=body,  # type: ignore[arg-type]
    )


def test_an_interaction_replayed_again_frames_its_messages_once(monkeypatch):
    interaction = _streamed(encode_body(encode_messages(STREAM), CONTENT_TYPE))
    first = interaction.response_chunks()
    framed: list[object] = []

    def frame_again(body: object) -> list[bytes]:
        framed.append(body)
        return []

    monkeypatch.setattr(fileformat, "body_chunks", frame_again)

    again = interaction.response_chunks()

    assert (again, framed) == (first, [])
    assert [decode_messages(chunk) for chunk in again] == [[message] for message in STREAM]


def test_an_interaction_whose_body_is_replaced_serves_the_new_body():
    interaction = _streamed(encode_body(encode_messages(STREAM), CONTENT_TYPE))
    interaction.response_chunks()

    interaction.response_body = encode_body(encode_messages(STREAM[:1]), CONTENT_TYPE)

    assert interaction.response_chunks() == [encode_message(STREAM[0])]

"""The own corpus's Bedrock cassettes replay through ``boto3``, byte for byte.

pydantic-ai recorded them with vcrpy against AWS Bedrock (Converse and ConverseStream): a
stream's body is AWS's binary event stream, stored by vcrpy as ``!!binary``. Each recorded
request is made again through a ``bedrock-runtime`` client whose transport is an
``httpx2`` client (botocore's ``before-send`` event hands it the signed request), answered
by a :class:`Cassette` in replay mode while a :class:`NetworkGuard` refuses every
connection. Every interaction must be used, in order; a recorded error surfaces as
botocore's ``ClientError`` with its status; a stream reaches botocore exactly as recorded,
one whole message per chunk; and what the ``bedrock`` codec decodes (text, tool calls,
stop reason) is what boto3 parsed. ``test_corpus_replay.py`` replays the other files
through the ``openai`` and ``anthropic`` SDKs.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import httpx2
import pytest
import yaml
from botocore.awsrequest import AWSResponse
from botocore.exceptions import ClientError

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, NetworkGuard
from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.cassettes.vcr import HOLDS_BYTES, vcr_json
from pytest_agentctx.traffic.codecs import Completion, bedrock
from pytest_agentctx.traffic.codecs.eventstream import decode_messages

pytestmark = pytest.mark.integration

OWN_CORPUS = Path(__file__).resolve().parent / "corpus"
FILES = sorted(OWN_CORPUS.glob("*__bedrock_*.yaml"))
PARAMS = [pytest.param(path, id=path.name) for path in FILES]
#: The files whose replies are (some of them) event streams.
STREAMS = [pytest.param(path, id=path.name) for path in FILES if "_stream_" in path.name]
_OPERATION = re.compile(r"/model/(?P<model>[^/]+)/(?P<operation>[a-z-]+)$")


class _Chunks:
    """The raw body botocore reads, as the ``httpx2`` response streams it; each chunk is
    kept."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self.seen: list[bytes] = []

    def stream(self, **_: object) -> Iterator[bytes]:
        whole = self.response.is_stream_consumed  # a body replayed in one piece
        for chunk in [self.response.content] if whole else self.response.iter_raw():
            self.seen.append(chunk)
            yield chunk


class Transport:
    """botocore's transport: each signed request sent through one ``httpx2`` client."""

    def __init__(self) -> None:
        self.http = httpx2.Client()
        self.bodies: list[_Chunks] = []

    def send(self, request: Any, **_: object) -> AWSResponse:
        headers = {
            name: value.decode() if isinstance(value, bytes) else value
            for name, value in request.headers.items()
        }
        body = request.body
        sent = self.http.build_request(
            request.method,
            request.url,
            headers=headers,
            content=body.encode() if isinstance(body, str) else body,
        )
        response = self.http.send(sent, stream=True)
        raw = _Chunks(response)
        self.bodies.append(raw)
        return AWSResponse(request.url, response.status_code, dict(response.headers), raw)

    def client_for(self, url: str) -> Any:
        parts = urlsplit(url)
        region = parts.netloc.split(".")[1]
        client = boto3.client(
            "bedrock-runtime",
            region_name=region,
            endpoint_url=f"{parts.scheme}://{parts.netloc}",
            aws_access_key_id="AKIDEXAMPLE",
            aws_secret_access_key="not-a-secret",
        )
        client.meta.events.register("before-send.bedrock-runtime.*", self.send)
        return client


@pytest.fixture
def transport() -> Iterator[Transport]:
    made = Transport()
    try:
        yield made
    finally:
        made.http.close()


def _blobs(value: Any) -> Any:
    """The recorded JSON as boto3's arguments: a document's or image's ``source.bytes``,
    base64 on the wire, is given as the bytes it encodes (boto3 encodes them again)."""
    if isinstance(value, list):
        return [_blobs(item) for item in value]
    if not isinstance(value, dict):
        return value
    found = {key: _blobs(item) for key, item in value.items()}
    source = found.get("source")
    if isinstance(source, dict) and isinstance(source.get("bytes"), str):
        found["source"] = {**source, "bytes": base64.b64decode(source["bytes"])}
    return found


def _converse(transport: Transport, interaction: Interaction) -> tuple[dict[str, Any], bool]:
    """Send the recorded Converse request again; boto3's reply and whether it streamed."""
    found = _OPERATION.search(urlsplit(interaction.url).path)
    assert found is not None, interaction.url
    body = _blobs(json.loads(body_bytes(interaction.request_body)))
    client = transport.client_for(interaction.url)
    model = unquote(found["model"])
    if found["operation"] == "converse-stream":
        reply: dict[str, Any] = client.converse_stream(modelId=model, **body)
        reply["stream"] = list(reply["stream"])
        return reply, True
    assert found["operation"] == "converse", interaction.url
    return client.converse(modelId=model, **body), False


def _boto3_reply(reply: dict[str, Any], streamed: bool) -> tuple[Any, ...]:
    """Text, tool calls and stop reason as boto3 parsed them."""
    texts: list[str] = []
    calls: list[tuple[str, str]] = []
    stop = None
    if streamed:
        for item in reply["stream"]:
            start = item.get("contentBlockStart", {}).get("start", {}).get("toolUse")
            delta = item.get("contentBlockDelta", {}).get("delta", {})
            if start and start.get("type") != "server_tool_use":
                calls.append((start["toolUseId"], start["name"]))
            texts.append(delta.get("text", ""))
            stop = item.get("messageStop", {}).get("stopReason", stop)
    else:
        for block in reply["output"]["message"]["content"]:
            texts.append(block.get("text", ""))
            use = block.get("toolUse")
            if use and use.get("type") != "server_tool_use":
                calls.append((use["toolUseId"], use["name"]))
        stop = reply["stopReason"]
    return ("".join(texts) or None, calls, stop)


def _codec_reply(completion: Completion) -> tuple[Any, ...]:
    calls = [(call.id, call.name) for call in completion.tool_calls]
    return (completion.content, calls, completion.stop_reason)


def _recorded_bytes(path: Path) -> list[bytes | None]:
    """Each response body as vcrpy wrote it: bytes for ``!!binary``, else ``None``."""
    document = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
    bodies: list[bytes | None] = []
    for item in document["interactions"]:
        string = (item["response"].get("body") or {}).get("string")
        bodies.append(string if isinstance(string, bytes) else None)
    return bodies


def _replay(transport: Transport, cassette: Cassette, position: int, raw: bytes | None) -> None:
    interaction = cassette.loaded[position]
    if interaction.status >= 400:
        with pytest.raises(ClientError) as raised:
            _converse(transport, interaction)
        assert raised.value.response["ResponseMetadata"]["HTTPStatusCode"] == interaction.status
        assert interaction.response_body is not None
        message = interaction.response_body["json"]["message"]
        assert raised.value.response["Error"]["Message"] == message
        return
    reply, streamed = _converse(transport, interaction)
    if streamed:
        chunks = transport.bodies[-1].seen
        assert b"".join(chunks) == raw  # byte for byte as AWS sent it
        assert all(len(decode_messages(chunk)) == 1 for chunk in chunks)  # one per chunk
        completion = bedrock.decode_stream(b"".join(chunks))
    else:
        assert interaction.response_body is not None
        recorded = interaction.response_body["json"]
        assert json.loads(b"".join(transport.bodies[-1].seen)) == recorded
        completion = bedrock.decode_response(recorded)
    assert _codec_reply(completion) == _boto3_reply(reply, streamed)


@pytest.mark.parametrize("path", PARAMS)
def test_a_bedrock_cassette_replays_through_boto3(path: Path, transport: Transport) -> None:
    cassette = Cassette(path)
    guard = NetworkGuard(reason="replaying the corpus")
    raws = _recorded_bytes(path)
    cassette.start()
    guard.start()
    try:
        for position in range(len(cassette.loaded)):
            _replay(transport, cassette, position, raws[position])
    finally:
        guard.stop()
        cassette.stop()

    assert [cassette.miss_message(miss) for miss in cassette.misses] == []
    assert cassette.played == list(range(len(cassette.loaded)))
    assert guard.blocked == []


@pytest.mark.parametrize("path", STREAMS)
def test_a_recorded_event_stream_is_stored_as_its_messages(path: Path) -> None:
    cassette = Cassette(path)
    raws = _recorded_bytes(path)

    for interaction, raw in zip(cassette.loaded, raws, strict=True):
        if raw is not None:
            assert interaction.response_body is not None
            first = interaction.response_body["eventstream"][0]
            assert first["headers"][":event-type"] == "messageStart"
            assert body_bytes(interaction.response_body) == raw


@pytest.mark.parametrize("path", PARAMS)
def test_json_cannot_hold_a_boto3_recording_so_it_is_not_converted(path: Path) -> None:
    # boto3's request headers are bytes (!!binary), and so is an event stream
    assert vcr_json(path) == (None, HOLDS_BYTES)


def test_the_corpus_has_bedrock_files() -> None:
    assert len(FILES) == 5

"""Unit tests of pytest_agentctx.traffic.cassettes.vcr: cassettes written in vcrpy's format,
read back by this package and by vcrpy itself."""

from __future__ import annotations

import base64
import gzip
import json
import zlib
from pathlib import Path

import brotli
import pytest
import yaml
from hypothesis import given, strategies as st
from vcr.serialize import deserialize as vcr_deserialize
from vcr.serializers import yamlserializer

from pytest_agentctx.traffic.cassettes.body import body_bytes
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import (
    dump_cassette,
    load_cassette,
    parse_cassette,
    write_cassette,
)
from pytest_agentctx.traffic.cassettes.vcr import HOLDS_BYTES, convert_vcr_yaml, vcr_json


def _interaction(**changes: object) -> Interaction:
    fields: dict[str, object] = {
        "method": "POST",
        "url": "https://api.openai.com/v1/chat/completions",
        "request_headers": {"content-type": "application/json"},
        "request_body": {"json": {"model": "gpt-4o-mini", "messages": []}},
        "status": 200,
        "response_headers": {"content-type": "application/json"},
        "response_body": {"json": {"id": "chatcmpl-1", "choices": []}},
    }
    fields.update(changes)
    return Interaction(**fields)  # type: ignore[arg-type]


def _round_trip(interaction: Interaction) -> Interaction:
    path = Path("c.yaml")
    [back] = parse_cassette(dump_cassette([interaction], path, style="vcr"), path)
    return back


def test_a_vcr_cassette_has_vcrpy_s_layout():
    data = yaml.safe_load(dump_cassette([_interaction()], Path("c.yaml"), style="vcr"))

    assert data == {
        "version": 1,
        "interactions": [
            {
                "request": {
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                    "headers": {"content-type": ["application/json"]},
                    "body": '{"model": "gpt-4o-mini", "messages": []}',
                },
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"content-type": ["application/json"]},
                    "body": {"string": '{"id": "chatcmpl-1", "choices": []}'},
                },
            }
        ],
    }


def test_a_stream_reads_back_as_the_same_events():
    events = [{"data": {"choices": [{"delta": {"content": "Hi"}}]}}, {"data": "[DONE]"}]
    stream = _interaction(
        response_headers={"content-type": "text/event-stream"}, response_body={"sse": events}
    )

    assert _round_trip(stream).response_body == {"sse": events}


@pytest.mark.parametrize(
    ("query", "kept_as_text"), [("", True), ("?key=k", True), ("?alt=sse", False)]
)
def test_a_gemini_stream_sent_as_one_json_array_replays_byte_for_byte(query, kept_as_text):
    sent = '[{\n  "candidates": [{"content": {"parts": [{"text": "Hi"}]}}]\n}\n,\r\n{}\n]'
    url = f"https://generativelanguage.googleapis.com/v1beta/models/m:streamGenerateContent{query}"
    document = {
        "version": 1,
        "interactions": [
            {
                "request": {"method": "POST", "uri": url, "body": "{}", "headers": {}},
                "response": {
                    "status": {"code": 200, "message": "OK"},
                    "headers": {"Content-Type": ["application/json; charset=UTF-8"]},
                    "body": {"string": sent},
                },
            }
        ],
    }

    (interaction,) = parse_cassette(yaml.safe_dump(document), Path("c.yaml"))

    assert (body_bytes(interaction.response_body) == sent.encode()) is kept_as_text
    assert ("text" in (interaction.response_body or {})) is kept_as_text


def test_a_binary_body_is_yaml_binary_and_reads_back_as_the_same_bytes():
    raw = bytes(range(256))
    image = _interaction(
        response_headers={"content-type": "image/png"},
        response_body={"base64": base64.b64encode(raw).decode("ascii")},
    )

    text = dump_cassette([image], Path("c.yaml"), style="vcr")

    assert "!!binary" in text
    assert _round_trip(image).response_body == image.response_body


def test_the_test_that_recorded_it_and_a_partial_stream_are_kept():
    shared = _interaction(test_id="tests/test_a.py::test_paris", partial=True)

    back = _round_trip(shared)

    assert (back.test_id, back.partial) == ("tests/test_a.py::test_paris", True)


def test_an_empty_request_body_is_null_as_vcrpy_writes_it():
    get = _interaction(method="GET", request_body=None, request_headers={})

    data = yaml.safe_load(dump_cassette([get], Path("c.yaml"), style="vcr"))

    assert data["interactions"][0]["request"]["body"] is None


def test_a_vcr_cassette_written_to_disk_loads_as_written(tmp_path):
    path = tmp_path / "c.yaml"
    interactions = [_interaction(), _interaction(status=429, response_body=None)]

    write_cassette(path, interactions, style="vcr")

    assert [(i.status, i.response_body) for i in load_cassette(path)] == [
        (200, interactions[0].response_body),
        (429, None),
    ]


def _nested(inner: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    """Lists and dicts of ``inner`` (a named function: hypothesis reads whether a lambda
    uses its argument from its source, and misreads it where two lambdas share a line)."""
    return st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    _nested,
    max_leaves=10,
)


@given(
    request=st.dictionaries(st.text(max_size=8), _json, max_size=4),
    response=st.dictionaries(st.text(max_size=8), _json, max_size=4),
    status=st.integers(min_value=100, max_value=599),
    header=st.text(st.characters(min_codepoint=32, max_codepoint=126), max_size=30),
)
def test_any_json_exchange_reads_back_as_it_was_written(request, response, status, header):
    interaction = _interaction(
        request_body={"json": request} if request else None,
        response_body={"json": response} if response else None,
        status=status,
        response_headers={"content-type": "application/json", "x-trace": header},
    )

    back = _round_trip(interaction)

    assert (
        back.request_body,
        back.response_body,
        back.status,
        back.response_headers,
    ) == (
        interaction.request_body,
        interaction.response_body,
        status,
        interaction.response_headers,
    )


# -- converting to JSON -----------------------------------------------------------------------


def _vcr_file(tmp_path: Path, *interactions: Interaction) -> Path:
    path = tmp_path / "c.yaml"
    path.write_text(dump_cassette(list(interactions), path, style="vcr"), encoding="utf-8")
    return path


def test_a_converted_cassette_is_read_as_before(tmp_path):
    path = _vcr_file(tmp_path, _interaction(), _interaction(status=404))
    before = parse_cassette(path.read_text(encoding="utf-8"), path)

    assert convert_vcr_yaml(path)

    assert path.read_text(encoding="utf-8").startswith('{"interactions":')
    assert parse_cassette(path.read_text(encoding="utf-8"), path) == before


def test_a_converted_cassette_is_the_same_document_for_vcrpy(tmp_path):
    path = _vcr_file(tmp_path, _interaction())
    loader = getattr(yaml, "CLoader", yaml.Loader)  # vcrpy's
    before = yaml.load(path.read_text(encoding="utf-8"), Loader=loader)

    convert_vcr_yaml(path)

    assert yaml.load(path.read_text(encoding="utf-8"), Loader=loader) == before


def test_a_cassette_with_a_binary_body_is_left_as_it_is(tmp_path):
    body = {"base64": base64.b64encode(b"\x1f\x8b\x00\xff").decode()}
    path = _vcr_file(tmp_path, _interaction(response_body=body))
    text = path.read_text(encoding="utf-8")

    assert not convert_vcr_yaml(path)
    assert path.read_text(encoding="utf-8") == text


def test_a_converted_cassette_is_not_converted_again(tmp_path):
    path = _vcr_file(tmp_path, _interaction())
    convert_vcr_yaml(path)
    text = path.read_text(encoding="utf-8")

    assert not convert_vcr_yaml(path)
    assert path.read_text(encoding="utf-8") == text


def test_a_file_that_is_no_vcrpy_cassette_is_left_as_it_is(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("just: a mapping\n", encoding="utf-8")

    assert not convert_vcr_yaml(path)
    assert path.read_text(encoding="utf-8") == "just: a mapping\n"


# -- converting bodies vcrpy wrote as bytes ----------------------------------------------------

_TEXT = '{"id": "chatcmpl-1", "choices": [{"message": {"content": "h\u00e9llo"}}]}'
_ENCODERS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
}


def _vcrpy_file(tmp_path: Path, body: bytes, headers: dict[str, list[str]]) -> Path:
    """A cassette as vcrpy writes one: a response body held as bytes (``!!binary``)."""
    document = {
        "interactions": [
            {
                "request": {
                    "body": '{"model": "gpt-4o-mini"}',
                    "headers": {"Content-Type": ["application/json"]},
                    "method": "POST",
                    "uri": "https://api.openai.com/v1/chat/completions",
                },
                "response": {
                    "body": {"string": body},
                    "headers": headers,
                    "status": {"code": 200, "message": "OK"},
                },
            }
        ],
        "version": 1,
    }
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def _encoded_headers(encoding: str, body: bytes) -> dict[str, list[str]]:
    return {
        "Content-Encoding": [encoding],
        "Content-Length": [str(len(body))],
        "Content-Type": ["application/json"],
        "Transfer-Encoding": ["chunked"],
        "x-request-id": ["req-1"],
    }


def _vcrpy_bodies(path: Path) -> list[bytes]:
    """The bodies vcrpy's own loader gives the client, with their content-encoding undone
    as an HTTP client undoes it."""
    _, responses = vcr_deserialize(path.read_text(encoding="utf-8"), yamlserializer)
    decoded = []
    for response in responses:
        headers = {name.lower(): value for name, value in response["headers"].items()}
        body = response["body"]["string"]
        for encoding in headers.get("content-encoding", []):
            body = {"gzip": gzip.decompress, "deflate": zlib.decompress}.get(
                encoding, brotli.decompress
            )(body)
        decoded.append(body)
    return decoded


@pytest.mark.parametrize("encoding", sorted(_ENCODERS))
def test_an_encoded_text_body_is_converted_decoded(tmp_path, encoding):
    raw = _ENCODERS[encoding](_TEXT.encode())
    path = _vcrpy_file(tmp_path, raw, _encoded_headers(encoding, raw))

    assert convert_vcr_yaml(path)

    response = json.loads(path.read_text(encoding="utf-8"))["interactions"][0]["response"]
    assert response["body"] == {"string": _TEXT}
    assert response["headers"] == {
        "Content-Type": ["application/json"],
        "x-request-id": ["req-1"],
    }


@pytest.mark.parametrize("encoding", sorted(_ENCODERS))
def test_vcrpy_hands_the_client_the_same_decoded_body_after_conversion(tmp_path, encoding):
    raw = _ENCODERS[encoding](_TEXT.encode())
    path = _vcrpy_file(tmp_path, raw, _encoded_headers(encoding, raw))
    before = _vcrpy_bodies(path)

    assert convert_vcr_yaml(path)

    assert _vcrpy_bodies(path) == before == [_TEXT.encode()]


@pytest.mark.parametrize("encoding", sorted(_ENCODERS))
def test_an_encoded_text_body_converted_is_read_by_this_package_as_before(tmp_path, encoding):
    raw = _ENCODERS[encoding](_TEXT.encode())
    path = _vcrpy_file(tmp_path, raw, _encoded_headers(encoding, raw))
    before = parse_cassette(path.read_text(encoding="utf-8"), path)

    assert convert_vcr_yaml(path)

    assert parse_cassette(path.read_text(encoding="utf-8"), path) == before


def test_a_text_body_held_as_bytes_with_no_encoding_is_converted_as_text(tmp_path):
    headers = {"Content-Type": ["application/json"], "Content-Length": ["70"]}
    path = _vcrpy_file(tmp_path, _TEXT.encode(), headers)
    before = _vcrpy_bodies(path)

    assert convert_vcr_yaml(path)

    response = json.loads(path.read_text(encoding="utf-8"))["interactions"][0]["response"]
    assert (response["body"], response["headers"]) == ({"string": _TEXT}, headers)
    assert _vcrpy_bodies(path) == before


@pytest.mark.parametrize(
    ("body", "encoding"),
    [
        pytest.param(gzip.compress(b"\x89PNG\r\n\x1a\n\xff"), "gzip", id="gzip of no text"),
        pytest.param(b"\x1f\x8b\x08\x00broken", "gzip", id="gzip that does not decode"),
        pytest.param(zlib.compress(_TEXT.encode()), "compress", id="an unknown coding"),
    ],
)
def test_an_encoded_body_that_is_no_text_once_decoded_stays_yaml(tmp_path, body, encoding):
    path = _vcrpy_file(tmp_path, body, _encoded_headers(encoding, body))
    text = path.read_text(encoding="utf-8")

    assert vcr_json(path) == (None, HOLDS_BYTES)
    assert not convert_vcr_yaml(path)
    assert path.read_text(encoding="utf-8") == text

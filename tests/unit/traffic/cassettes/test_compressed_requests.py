"""Unit tests of compressed request bodies (``Content-Encoding`` gzip, deflate, br, zstd):
matched by their decoded content, a miss shows the diff of the decoded body, and an
encoding that cannot be decoded fails the request instead of matching its bytes.

Requests are sent with httpx2 to ``http://127.0.0.1:9`` (the discard port: a request the
cassette did not answer would fail to connect).
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import brotli
import httpx2
import pytest
import zstandard

from pytest_agentctx.traffic.cassettes import Cassette, Interaction, RecordMode
from pytest_agentctx.traffic.cassettes.store import write_cassette
from pytest_agentctx.traffic.errors import CassetteError

URL = "http://127.0.0.1:9/v1/chat/completions"
BODY = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "Paris?"}]}
COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    path = tmp_path / "cassette.json"
    write_cassette(
        path,
        [
            Interaction(
                method="POST",
                url=URL,
                request_headers={"content-type": "application/json"},
                request_body={"json": BODY},
                status=200,
                response_headers={"content-type": "application/json"},
                response_body={"json": {"id": "chatcmpl-1"}},
            )
        ],
    )
    return path


@contextmanager
def _running(cassette: Cassette) -> Iterator[httpx2.Client]:
    cassette.start()
    try:
        with httpx2.Client(trust_env=False) as client:
            yield client
    finally:
        cassette.stop()


def _post(path: Path, raw: bytes, encoding: str) -> tuple[Cassette, httpx2.Response]:
    cassette = Cassette(path, test_id="tests/test_chat.py::test_paris", mode=RecordMode.NONE)
    headers = {"content-type": "application/json", "content-encoding": encoding}
    with _running(cassette) as client:
        response = client.post(URL, content=raw, headers=headers)
    return cassette, response


@pytest.mark.parametrize("encoding", sorted(COMPRESS))
def test_a_compressed_request_replays_the_recording_of_its_decoded_body(
    path: Path, encoding: str
) -> None:
    cassette, response = _post(path, COMPRESS[encoding](json.dumps(BODY).encode()), encoding)

    assert (response.status_code, cassette.replayed) == (200, 1)


def test_a_request_compressed_twice_replays_decoded_in_reverse_order(path: Path) -> None:
    raw = brotli.compress(gzip.compress(json.dumps(BODY).encode()))

    cassette, _ = _post(path, raw, "gzip, br")

    assert cassette.replayed == 1


def test_a_miss_on_a_compressed_request_shows_the_diff_of_its_decoded_json(path: Path) -> None:
    changed = {**BODY, "messages": [{"role": "user", "content": "Rome?"}]}

    cassette, _ = _post(path, gzip.compress(json.dumps(changed).encode()), "gzip")

    assert cassette.miss_message(cassette.misses[0]).splitlines()[1:3] == [
        "Closest recorded request: interaction #0, POST 127.0.0.1/v1/chat/completions; "
        "1 field differs: messages[0].content",
        '  messages[0].content: recorded "Paris?" != now "Rome?"',
    ]


@pytest.mark.parametrize(
    ("raw", "encoding", "said"),
    [
        (b"\x1f\x9d\x90compressed", "compress", "does not know this encoding"),
        (b"not gzip at all", "gzip", "not valid gzip data"),
    ],
    ids=["unknown encoding", "bytes that are not what they claim"],
)
def test_a_request_whose_encoding_cannot_be_decoded_fails_loudly(
    path: Path, raw: bytes, encoding: str, said: str
) -> None:
    cassette = Cassette(path, test_id="tests/test_chat.py::test_paris", mode=RecordMode.NONE)
    headers = {"content-type": "application/json", "content-encoding": encoding}

    with _running(cassette) as client, pytest.raises(CassetteError) as caught:
        client.post(URL, content=raw, headers=headers)

    message = str(caught.value)
    assert "was neither sent, matched nor recorded" in message
    assert f"content-encoding {encoding!r}: " in message
    assert said in message

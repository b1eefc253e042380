"""Unit tests of the bodies a recording can scrub: every content encoding decoded (gzip,
deflate, br, zstd), one it cannot decode refused rather than stored opaque, and response
headers that change on every call left out of the cassette.

Recordings go to a loopback server the test starts (``loopback`` fixture), through the real
``openai`` SDK.
"""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import brotli
import httpx2
import openai
import pytest
import zstandard
from cassette_support import TLS, Loopback, active, chat_completion

from pytest_agentctx.exceptions import RunError
from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, REDACTED
from pytest_agentctx.traffic.cassettes import Cassette, RecordMode, body as body_module
from pytest_agentctx.traffic.cassettes.body import UndecodableBody, decode_content, decompress
from pytest_agentctx.traffic.cassettes.redact import NORMALISED_REQUEST_ID, Redactor
from pytest_agentctx.traffic.errors import CassetteError, CassetteWriteError

CANARY = "sk-canary-0d9e-never-in-a-cassette"
TEST_ID = "tests/test_agent.py::test_weather"
PAYLOAD = b'{"echo": "hello"}'


@pytest.fixture(autouse=True)
def canary_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in DEFAULT_SECRET_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", CANARY)


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cassette.json"


# -- decoding --------------------------------------------------------------------------


def test_zstd_body_is_decoded():
    assert decode_content(zstandard.ZstdCompressor().compress(PAYLOAD), "zstd") == PAYLOAD


def test_brotli_body_is_decoded():
    assert decode_content(brotli.compress(PAYLOAD), "br") == PAYLOAD


def test_stacked_encodings_are_undone_last_first():
    raw = brotli.compress(gzip.compress(PAYLOAD))

    assert decode_content(raw, "gzip, br") == PAYLOAD


def test_an_unknown_encoding_is_refused_with_its_name_and_the_fix():
    with pytest.raises(UndecodableBody) as caught:
        decode_content(b"\x1f\x9d\x90", "compress")

    assert caught.value.encoding == "compress"
    assert "Accept-Encoding: gzip" in str(caught.value)


def test_zstd_without_a_decoder_installed_names_the_package_to_install(monkeypatch):
    monkeypatch.setattr(body_module, "_optional", lambda *names: None)

    with pytest.raises(UndecodableBody, match=r"zstandard package.*compression"):
        decode_content(zstandard.ZstdCompressor().compress(PAYLOAD), "zstd")


def test_bytes_that_are_not_what_the_encoding_says_are_refused():
    with pytest.raises(UndecodableBody, match="not valid br data"):
        decode_content(b"\x1b\x00\xf8brotli-ish bytes", "br")


def test_decompress_still_reports_what_it_cannot_decode():
    assert decompress(b"\x1f\x9d\x90", "compress") == (b"\x1f\x9d\x90", False)


# -- recording -------------------------------------------------------------------------


def _client(loopback: Loopback) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        api_key=CANARY,
        base_url=f"{loopback.url}/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
    )


async def _record(path: Path, loopback: Loopback) -> tuple[Cassette, str | None]:
    """Record one chat completion through the openai SDK."""
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID, redactor=Redactor())
    with active(cassette):
        async with _client(loopback) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Hi"}]
            )
    return cassette, reply.choices[0].message.content


async def _record_raw(path: Path, loopback: Loopback) -> tuple[Cassette, bytes]:
    """Record one GET through a plain httpx2 client, which reads any body as bytes (the
    SDKs' httpx2 cannot read zstd without the standard library's zstd module)."""
    cassette = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID, redactor=Redactor())
    with active(cassette):
        async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
            response = await client.get(
                f"{loopback.url}/v1/files/1/content",
                headers={"authorization": f"Bearer {CANARY}", "accept-encoding": "zstd"},
            )
            raw = await response.aread()
    return cassette, raw


def _answer(loopback: Loopback, raw: bytes, encoding: str, **headers: str) -> None:
    loopback.answer(
        200,
        {"content-type": "application/json", "content-encoding": encoding, **headers},
        raw,
    )


ECHO = json.dumps(chat_completion(f"your key: {CANARY}")).encode()


async def test_a_brotli_response_is_recorded_decoded_and_scrubbed(path, loopback):
    _answer(loopback, brotli.compress(ECHO), "br")

    cassette, live = await _record(path, loopback)
    cassette.check()
    cassette.save("run-1")

    assert live == f"your key: {CANARY}"
    written = path.read_text()
    assert CANARY not in written
    assert f"your key: {REDACTED}" in written
    assert "content-encoding" not in written


async def test_a_zstd_response_is_recorded_decoded_and_scrubbed(path, loopback):
    _answer(loopback, zstandard.ZstdCompressor().compress(ECHO), "zstd")

    cassette, _ = await _record_raw(path, loopback)
    cassette.check()
    cassette.save("run-1")

    written = path.read_text()
    assert CANARY not in written
    assert f"your key: {REDACTED}" in written
    assert "content-encoding" not in written


async def test_a_response_that_cannot_be_decoded_fails_the_recording_and_is_not_stored(
    path, loopback
):
    _answer(loopback, b"\x1f\x9d\x90 opaque", "compress")

    cassette, live = await _record_raw(path, loopback)

    assert live == b"\x1f\x9d\x90 opaque"  # the test still gets what the server sent

    assert cassette.new_interactions == []
    with pytest.raises(CassetteError) as caught:
        cassette.check()
    message = str(caught.value)
    assert str(path) in message
    assert "'compress'" in message
    assert "Accept-Encoding: gzip" in message
    assert f'pytest --agent-record "{TEST_ID}"' in message
    assert (type(caught.value), isinstance(caught.value, RunError)) == (CassetteWriteError, True)


VOLATILE = {
    "x-request-id": "req_{n}",
    "openai-processing-ms": "{n}",
    "x-ratelimit-remaining-tokens": "{n}",
    "cf-ray": "8f{n}-CDG",
}


async def test_recording_an_unchanged_answer_again_writes_the_same_file(path, loopback):
    written = []
    for n in (1, 2):
        headers = {name: value.format(n=n) for name, value in VOLATILE.items()}
        _answer(loopback, gzip.compress(ECHO), "gzip", **headers)
        cassette, _ = await _record(path, loopback)
        cassette.save(f"run-{n}")
        written.append(path.read_text())

    assert written[0] == written[1]
    stored: dict[str, Any] = json.loads(written[0])["interactions"][0]["response"]["headers"]
    assert stored["x-request-id"] == NORMALISED_REQUEST_ID
    assert not {"date", "openai-processing-ms", "x-ratelimit-remaining-tokens", "cf-ray"} & set(
        stored
    )


async def test_a_secret_in_a_binary_upload_is_overwritten_and_the_upload_still_replays(
    path, loopback
):
    upload = b"\x00\xff\xfe" + CANARY.encode() + b"\x80\x81"
    loopback.answer_json(
        {"id": "file-1", "object": "file", "bytes": len(upload), "created_at": 1,
         "filename": "key.bin", "purpose": "assistants", "status": "processed"}
    )  # fmt: skip

    async def send(cassette: Cassette) -> str:
        # A raw upload (a multipart one has a new boundary on every request, and matches no
        # recording whatever the redactor does).
        with active(cassette):
            async with httpx2.AsyncClient(verify=TLS, trust_env=False) as client:
                response = await client.post(
                    f"{loopback.url}/v1/uploads/1/parts",
                    content=upload,
                    headers={"content-type": "application/octet-stream"},
                )
        return str(response.json()["id"])

    recording = Cassette(path, mode=RecordMode.REWRITE, test_id=TEST_ID, redactor=Redactor())
    assert await send(recording) == "file-1"
    recording.save("run-1")
    [interaction] = recording.new_interactions
    stored = base64.b64decode(interaction.request_body["base64"])  # type: ignore[index]
    replayed = await send(Cassette(path, test_id=TEST_ID, redactor=Redactor()))

    assert CANARY.encode() not in stored
    assert b"\x00\xff\xfe" + (b"REDACTED" * 5)[: len(CANARY)] + b"\x80\x81" in stored
    assert replayed == "file-1"
    assert len(loopback.seen) == 1

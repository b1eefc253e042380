"""A real upload recorded by another project replays when the SDK sends it again with a new
boundary.

pydantic-ai recorded an Anthropic Files API upload (``POST /v1/files?beta=true``, a
multipart body with one CSV file) through vcrpy: the body is stored as the text sent, with
the boundary chosen then. The current ``anthropic`` SDK sends the same file with a boundary
of its own, and the cassette answers it (matched part by part), while a
:class:`NetworkGuard` refuses every connection; the same file with another content misses,
naming the part.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import anthropic
import httpx2

from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard
from pytest_agentctx.traffic.cassettes.multipart import split_parts

CORPUS = Path(__file__).parent / "corpus"
UPLOAD = CORPUS / "pydantic-ai__anthropic_cache_marker_moves_code_execution_files.yaml"
CSV = b"item,value\napple,30\nbanana,70\n"


def _upload(content: bytes) -> tuple[Cassette, list[str]]:
    """Upload ``content`` as ``data.csv`` through the SDK, answered by the corpus cassette;
    the cassette and the boundary of the recorded body and of the one sent."""
    cassette = Cassette(UPLOAD)
    guard = NetworkGuard(reason="replaying the corpus")
    sent: list[str] = []

    def seen(request: httpx2.Request) -> None:
        sent.append(request.headers["content-type"])

    cassette.start()
    guard.start()
    try:
        http = httpx2.Client(trust_env=False, event_hooks={"request": [seen]})
        sdk = anthropic.Anthropic(api_key="sk-ant-test", max_retries=0, http_client=http)
        with sdk, contextlib.suppress(anthropic.APIStatusError):  # a miss: the cassette says why
            sdk.beta.files.upload(file=("data.csv", content, "text/csv"))
    finally:
        guard.stop()
        cassette.stop()
    assert guard.blocked == []
    recorded = cassette.loaded[0].request_headers["content-type"]
    return cassette, [recorded, *sent]


def test_the_recorded_upload_is_one_csv_file() -> None:
    recorded = Cassette(UPLOAD).loaded[0]
    body = recorded.request_body

    parts = split_parts(
        str((body or {})["text"]).encode(), recorded.request_headers["content-type"]
    )

    assert [(p.name, p.filename, p.content_type, p.content) for p in parts or []] == [
        ("file", "data.csv", "text/csv", CSV)
    ]


def test_the_sdk_upload_replays_the_recording_with_its_own_boundary() -> None:
    cassette, (recorded, sent) = _upload(CSV)

    assert [cassette.miss_message(miss) for miss in cassette.misses] == []
    assert cassette.played == [0]
    assert recorded != sent


def test_the_sdk_upload_of_another_file_misses_naming_the_part() -> None:
    cassette, _ = _upload(CSV.replace(b"70", b"71"))

    [miss] = cassette.misses
    lines = cassette.miss_message(miss).splitlines()
    assert lines[1].endswith('1 field differs: part "file".text')

"""End-to-end tests of boto3 (botocore, which sends through urllib3): an agent's tools call
S3 against a real local S3 endpoint, recorded with ``--agent-record`` and replayed offline.

The outer test starts moto's S3 server on 127.0.0.1 (``ThreadedMotoServer``, on a free
port; stopped by its fixture, even on failure) and hands its URL to the inner tests in
``S3_ENDPOINT``, with fake AWS credentials in the environment (a session token too, as
temporary credentials have). Each case records, then the server is stopped and the same
tests replay: a request the cassette did not answer would find no server.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from moto.server import ThreadedMotoServer

#: Fake credentials, shaped as AWS issues them: none may reach a cassette.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "ASIAE2EFAKEKEYID0001",
    "AWS_SECRET_ACCESS_KEY": "e2eFakeSecretAccessKey/0123456789abcdefXY",
    "AWS_SESSION_TOKEN": "IQoJb3JpZ2luX2VjE2EFakeSessionTokenForTheEndToEndTests0123",
}
#: SigV4's request headers, new on every call: none may reach a cassette.
SIGV4_HEADERS = (
    "authorization",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
)


class S3Server:
    """moto's S3 server on 127.0.0.1, on a free port."""

    def __init__(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self._server.start()
        self._running = True
        host, port = self._server.get_host_and_port()
        self.url = f"http://{host}:{port}"

    def stop(self) -> None:
        if self._running:
            self._running = False
            self._server.stop()


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for name in ("AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    server = S3Server()
    monkeypatch.setenv("S3_ENDPOINT", server.url)
    try:
        yield server
    finally:
        server.stop()


TOOLS = '''
import os

import boto3

BUCKET = "agent-notes"
#: Bytes that are no text, and longer than one read: the object comes back whole.
PICTURE = bytes(range(256)) * 64


def s3(endpoint=None):
    return boto3.client("s3", endpoint_url=endpoint or os.environ["S3_ENDPOINT"])


def save_note(client, key, body):
    """The agent's tool: keep a note."""
    client.put_object(Bucket=BUCKET, Key=key, Body=body)
    return f"saved {key}"


def read_note(client, key):
    """The agent's tool: read a note back, streamed."""
    reply = client.get_object(Bucket=BUCKET, Key=key)
    chunks = list(reply["Body"].iter_chunks(chunk_size=1000))
    return reply["ContentLength"], b"".join(chunks)


def note_size(client, key):
    """The agent's tool: a note's size, without reading it."""
    return client.head_object(Bucket=BUCKET, Key=key)["ContentLength"]


def list_notes(client):
    """The agent's tool: the keys of every note."""
    return [item["Key"] for item in client.list_objects_v2(Bucket=BUCKET)["Contents"]]
'''

CASE = """
import pytest

from notes_tools import BUCKET, PICTURE, list_notes, note_size, read_note, s3, save_note


@pytest.mark.agent
def test_notes(agent_context):
    client = s3()
    client.create_bucket(Bucket=BUCKET)
    assert save_note(client, "plan.txt", b"buy milk") == "saved plan.txt"
    save_note(client, "picture.bin", PICTURE)

    assert read_note(client, "plan.txt") == (8, b"buy milk")
    assert read_note(client, "picture.bin") == (len(PICTURE), PICTURE)
    assert note_size(client, "picture.bin") == len(PICTURE)
    assert list_notes(client) == ["picture.bin", "plan.txt"]
    methods = [call.method for call in agent_context.non_llm]
    assert methods == ["PUT"] * 3 + ["GET"] * 2 + ["HEAD", "GET"]
"""


PRESIGNED = """
import os

import boto3
import pytest
import requests
from botocore.config import Config

from notes_tools import BUCKET, save_note


@pytest.mark.agent
def test_notes():
    sigv4 = Config(signature_version="s3v4")
    client = boto3.client("s3", endpoint_url=os.environ["S3_ENDPOINT"], config=sigv4)
    client.create_bucket(Bucket=BUCKET)
    save_note(client, "plan.txt", b"buy milk")
    url = client.generate_presigned_url(
        "get_object", Params={"Bucket": BUCKET, "Key": "plan.txt"}, ExpiresIn=600
    )

    assert "X-Amz-Signature=" in url
    assert requests.get(url, timeout=5).content == b"buy milk"
"""


def _recorded(tester: pytest.Pytester, s3: S3Server) -> str:
    """Record the inner test against the S3 server, stop the server; the cassette's text."""
    tester.makepyfile(notes_tools=TOOLS, test_notes=CASE)
    tester.runpytest("--agent-record").assert_outcomes(passed=1)
    s3.stop()
    return (tester.path / "cassettes" / "test_notes" / "test_notes.json").read_text()


def test_boto3_s3_calls_of_a_tool_record_and_replay_offline(agent_pytester, s3):
    _recorded(agent_pytester, s3)

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_the_cassette_holds_no_aws_credential(agent_pytester, s3):
    text = _recorded(agent_pytester, s3)

    assert [name for name, value in CREDENTIALS.items() if value in text] == []


def test_the_cassette_holds_no_sigv4_header(agent_pytester, s3):
    text = _recorded(agent_pytester, s3)

    stored = {
        name
        for interaction in json.loads(text)["interactions"]
        for name in interaction["request"]["headers"]
    }
    assert stored.isdisjoint(SIGV4_HEADERS)


def test_a_presigned_url_signed_again_on_replay_is_answered(agent_pytester, s3, monkeypatch):
    agent_pytester.makepyfile(notes_tools=TOOLS, test_notes=PRESIGNED)
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=1)
    s3.stop()
    # signed by other credentials (so with another signature and credential scope)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ASIAE2EOTHERKEYID002")

    agent_pytester.runpytest().assert_outcomes(passed=1)


def test_a_boto3_call_to_a_host_not_in_the_cassette_is_a_miss(agent_pytester, s3):
    _recorded(agent_pytester, s3)
    agent_pytester.makepyfile(
        test_notes=CASE.replace("client = s3()", 'client = s3("http://127.0.0.2:9")')
    )

    result = agent_pytester.runpytest()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["E *CassetteMiss: *cannot answer PUT 127.0.0.2*/agent-notes (sent through botocore)*"]
    )

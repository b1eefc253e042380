"""End to end: uploads and compressed request bodies are recorded, replay offline, and a
change shows in the miss.

The outer test starts a server of its own on 127.0.0.1 (``Uploads``, in a thread, stopped by
its fixture) that answers the openai SDK's ``files.create`` and
``audio.transcriptions.create``, a plain multipart upload, and a JSON body sent
gzip-compressed, each with what it read of the request. The inner tests upload through the
openai SDK, requests and httpx (each request with a new random boundary) and send gzip
bodies through requests and httpx; they are recorded, then replayed with the server
stopped. On replay, an upload whose file changed misses, naming the part that differs, and
a compressed body that changed misses with the diff of its decoded JSON.
"""

from __future__ import annotations

import base64
import email.parser
import email.policy
import gzip
import json
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import yaml
from support.http_server import ServerThread


def _fields(content_type: str, raw: bytes) -> dict[str, tuple[str | None, bytes]]:
    """The fields of a multipart body, by name: (file name, content)."""
    parser = email.parser.BytesParser(policy=email.policy.HTTP)
    message = parser.parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    out = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        content = part.get_payload(decode=True)
        out[str(name)] = (part.get_filename(), content if isinstance(content, bytes) else b"")
    return out


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _answer(self, value: Any) -> None:
        raw = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        if self.headers.get("content-encoding") == "gzip":
            raw = gzip.decompress(raw)
        if self.path == "/echo":
            self._answer({"asked": json.loads(raw)["question"]})
            return
        fields = _fields(self.headers["content-type"], raw)
        filename, content = fields["file"]
        if self.path == "/v1/files":
            self._answer(
                {"id": f"file-{len(content)}", "object": "file", "bytes": len(content),
                 "created_at": 1, "filename": filename, "purpose": "assistants",
                 "status": "processed"}
            )  # fmt: skip
        elif self.path == "/v1/audio/transcriptions":
            model = fields["model"][1].decode()
            self._answer({"text": f"{model} heard {filename}, {len(content)} bytes"})
        else:
            self._answer({"received": {name: file for name, (file, _) in fields.items()}})


@pytest.fixture
def uploads(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerThread]:
    server = ServerThread(_Handler).start()
    monkeypatch.setenv("UPLOAD_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


TESTS = """
import gzip
import json
import os

import httpx
import openai
import pytest
import requests

BASE = os.environ["UPLOAD_SERVER"]
#: What the uploads hold: changed on replay to see the miss.
CONTENT = os.environ.get("UPLOAD_CONTENT", "hello")
AUDIO = b"RIFF\\x24\\x00\\x00\\x00WAVEfmt \\xff\\xfe" + CONTENT.encode()


def sdk():
    return openai.OpenAI(api_key="sk-test", base_url=BASE + "/v1", max_retries=0)


@pytest.mark.agent
def test_files_create():
    with sdk() as client:
        uploaded = client.files.create(file=("notes.txt", CONTENT.encode()), purpose="assistants")
    assert (uploaded.id, uploaded.filename) == ("file-5", "notes.txt")


@pytest.mark.agent
def test_transcription():
    with sdk() as client:
        heard = client.audio.transcriptions.create(model="whisper-1", file=("a.wav", AUDIO))
    assert heard.text == "whisper-1 heard a.wav, 23 bytes"


@pytest.mark.agent
def test_requests_upload():
    files = {"file": ("notes.txt", CONTENT.encode(), "text/plain")}
    answer = requests.post(BASE + "/upload", files=files, data={"purpose": "x"}).json()
    assert answer == {"received": {"purpose": None, "file": "notes.txt"}}


@pytest.mark.agent
def test_httpx_upload():
    files = {"file": ("notes.txt", CONTENT.encode(), "text/plain")}
    with httpx.Client() as client:
        answer = client.post(BASE + "/upload", files=files, data={"purpose": "x"}).json()
    assert answer == {"received": {"purpose": None, "file": "notes.txt"}}


def gzipped():
    body = gzip.compress(json.dumps({"question": CONTENT, "n": 1}).encode())
    return body, {"content-type": "application/json", "content-encoding": "gzip"}


@pytest.mark.agent
def test_requests_gzip():
    body, headers = gzipped()
    assert requests.post(BASE + "/echo", data=body, headers=headers).json() == {"asked": "hello"}


@pytest.mark.agent
def test_httpx_gzip():
    body, headers = gzipped()
    with httpx.Client() as client:
        answer = client.post(BASE + "/echo", content=body, headers=headers).json()
    assert answer == {"asked": "hello"}
"""


def _cassette(tester: pytest.Pytester, test: str) -> list[dict[str, Any]]:
    path = tester.path / "cassettes" / "test_uploads" / f"{test}.json"
    interactions: list[dict[str, Any]] = json.loads(path.read_text())["interactions"]
    return interactions


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, uploads: ServerThread) -> pytest.Pytester:
    """The inner tests, recorded against the server, which is then stopped."""
    agent_pytester.makepyfile(test_uploads=TESTS)
    agent_pytester.runpytest("--agent-record").assert_outcomes(passed=6)
    uploads.stop()
    return agent_pytester


def test_uploads_and_gzip_bodies_replay_offline_with_new_boundaries(
    recorded: pytest.Pytester,
) -> None:
    result = recorded.runpytest()

    result.assert_outcomes(passed=6)


def test_an_sdk_upload_is_stored_part_by_part(recorded: pytest.Pytester) -> None:
    [files] = _cassette(recorded, "test_files_create")
    [audio] = _cassette(recorded, "test_transcription")

    file_parts = files["request"]["body"]["multipart"]["parts"]
    audio_parts = {
        part["headers"][0]: part for part in audio["request"]["body"]["multipart"]["parts"]
    }
    assert [part["text"] for part in file_parts] == ["assistants", "hello"]
    assert audio_parts['Content-Disposition: form-data; name="model"']["text"] == "whisper-1"
    wav = audio_parts['Content-Disposition: form-data; name="file"; filename="a.wav"']
    assert base64.b64decode(wav["base64"]).endswith(b"hello")


def test_a_gzip_body_is_stored_decoded(recorded: pytest.Pytester) -> None:
    [sent] = _cassette(recorded, "test_requests_gzip")

    assert sent["request"]["body"] == {"json": {"question": "hello", "n": 1}}
    assert "content-encoding" not in sent["request"]["headers"]


def test_a_changed_upload_misses_naming_the_part_that_differs(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPLOAD_CONTENT", "hullo")

    result = recorded.runpytest(
        "-k", "files_create or transcription or requests_upload or httpx_upload"
    )

    result.assert_outcomes(failed=4)
    result.stdout.fnmatch_lines(
        [
            "*cannot answer POST 127.0.0.1/v1/files*",
            '*1 field differs: part "file".text',
            '*part "file".text: recorded "hello" != now "hullo"',
            "*re-record this test: pytest --agent-record*test_files_create*",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*cannot answer POST 127.0.0.1/v1/audio/transcriptions*",
            '*part "file".content: recorded 23 bytes, sha256 * != now 23 bytes, sha256 *, '
            "first differs at byte offset 19",
        ]
    )
    assert "no field differs" not in result.stdout.str()


def test_a_changed_gzip_body_misses_with_the_diff_of_its_decoded_json(
    recorded: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UPLOAD_CONTENT", "goodbye")

    result = recorded.runpytest("-k", "requests_gzip or httpx_gzip")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*cannot answer POST 127.0.0.1/echo*",
            "*1 field differs: question",
            '*question: recorded "hello" != now "goodbye"',
        ]
    )


def test_uploads_recorded_in_vcrpys_format_are_written_whole_and_replay(
    agent_pytester: pytest.Pytester, uploads: ServerThread
) -> None:
    ini = (agent_pytester.path / "tox.ini").read_text(encoding="utf-8")
    agent_pytester.makeini(ini.rstrip("\n") + "\nagent_cassette_format = vcr\n")
    agent_pytester.makepyfile(test_uploads=TESTS)
    chosen = ("-k", "requests_upload or httpx_upload or transcription")
    agent_pytester.runpytest("--agent-record", *chosen).assert_outcomes(passed=3)
    uploads.stop()

    result = agent_pytester.runpytest(*chosen)

    result.assert_outcomes(passed=3)
    folder = agent_pytester.path / "cassettes" / "test_uploads"
    written = yaml.safe_load((folder / "test_requests_upload.yaml").read_text())
    body = written["interactions"][0]["request"]["body"]
    assert body.startswith("--")
    assert 'name="file"; filename="notes.txt"' in body

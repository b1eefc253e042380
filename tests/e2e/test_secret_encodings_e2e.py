"""End-to-end: a known secret reaches no file of the project, however the traffic encodes it.

The outer test starts ``Echo``, a server on 127.0.0.1 (in a thread, stopped by the test) that
answers each request with what it received (its body decoded from its
``content-encoding``, and its headers), and gives an OAuth access token. The inner tests
send secrets the way careless code does: in compressed request bodies (gzip, deflate, br,
zstd; through httpx2, httpx, requests and aiohttp), as an access token a response gave and a
later request sends back, base64-encoded in a ``data:`` URL and in ``Authorization: Basic``,
``\\u``-escaped in JSON and NDJSON, percent-encoded in a form, in a header and an
environment variable that are secrets only by their name.

After each recording every file under the project (cassettes, ``.pytest_cache``...) is read
byte for byte, its ``\\u`` escapes and percent-encoding undone, its base64 and compressed
runs decoded, and must hold no secret; the recording then replays with the server stopped.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import zlib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import brotli
import pytest
import zstandard
from support.http_server import ServerThread

#: A default secret variable's value (``GROQ_API_KEY``), with characters URLs encode.
KEY = "gsk-canary+7Qx9/Lm2=Vb8"
#: The password of an ``Authorization: Basic`` header (known from nowhere else).
BASIC = "basic-canary-Tz4Nw81q"
#: The access token the server gives.
TOKEN = "oauth-canary-Hd3Yc7Rk2"
#: The value of a custom ``X-My-Token`` header, and of ``MY_SERVICE_TOKEN``.
HEADER = "hdr-canary-Pq5Ws9Ej"
SERVICE = "svc-canary-Ua6Ko0Zi"
SECRETS = (KEY, BASIC, TOKEN, HEADER, SERVICE)

DECODE = {
    "gzip": gzip.decompress,
    "deflate": zlib.decompress,
    "br": brotli.decompress,
    "zstd": lambda raw: zstandard.ZstdDecompressor().decompressobj().decompress(raw),
}


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

    def _body(self) -> bytes:
        if self.headers.get("transfer-encoding") != "chunked":
            return self.rfile.read(int(self.headers.get("content-length") or 0))
        chunks = []
        while size := int(self.rfile.readline().split(b";")[0], 16):
            chunks.append(self.rfile.read(size))
            self.rfile.readline()
        self.rfile.readline()
        return b"".join(chunks)

    def do_POST(self) -> None:
        raw = self._body()
        encoding = self.headers.get("content-encoding")
        if encoding:
            raw = DECODE[encoding](raw)
        if self.path == "/oauth/token":
            self._answer({"access_token": TOKEN, "token_type": "bearer", "expires_in": 3600})
            return
        headers = {name.lower(): value for name, value in self.headers.items()}
        self._answer({"body": raw.decode(), "header": headers.get("x-my-token", "")})

    def do_GET(self) -> None:
        authorization = self.headers.get("authorization", "")
        self._answer({"me": "ok" if authorization.endswith(TOKEN) else "who?"})


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[ServerThread]:
    server = ServerThread(_Handler).start()
    monkeypatch.setenv("ECHO_SERVER", server.url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("GROQ_API_KEY", KEY)
    # Secrets by their name only; and names that say "token" over values that are not.
    monkeypatch.setenv("MY_SERVICE_TOKEN", SERVICE)
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    monkeypatch.setenv("MODEL_TOKEN_LIMIT", "100000000")
    return agent_pytester


def _base64_cores(secret: bytes) -> set[bytes]:
    """The base64 characters only ``secret`` decides, at each alignment, both alphabets."""
    cores = set()
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + secret)
        core = encoded[-(-pad * 8 // 6) : (pad + len(secret)) * 8 // 6]
        cores |= {core, core.translate(bytes.maketrans(b"+/", b"-_"))}
    return cores


def _decoded_runs(data: bytes) -> Iterator[bytes]:
    """``data``'s base64 runs decoded, and decompressed when they are compressed."""
    for run in re.findall(rb"[A-Za-z0-9+/_-]{16,}={0,2}", data):
        run = run.rstrip(b"=").translate(bytes.maketrans(b"-_", b"+/"))
        try:
            raw = base64.b64decode(run + b"=" * (-len(run) % 4))
        except ValueError:
            continue
        yield raw
        for decode in DECODE.values():
            try:
                yield decode(raw)
            except Exception:  # not this compression: the next one
                continue


def files(root: Path) -> dict[Path, bytes]:
    """Every file under ``root`` (hidden ones included) and its bytes."""
    return {path: path.read_bytes() for path in sorted(root.rglob("*")) if path.is_file()}


def leaks(root: Path, before: dict[Path, bytes] | None = None) -> list[str]:
    """Where a secret shows in a file under ``root`` (but those as they were ``before``: the
    test's own sources): as it is, ``\\u``-escaped, percent-encoded, base64-encoded, or in
    a compressed base64 body."""
    found = []
    for path, data in files(root).items():
        if before is not None and before.get(path) == data:
            continue
        text = data.decode("utf-8", "replace")
        unescaped = re.sub(r"\\u([0-9A-Fa-f]{4})", lambda m: chr(int(m[1], 16)), text)
        plain = unescaped + "\n" + unquote(unescaped)
        for secret in SECRETS:
            forms = [secret.encode() in data, secret in plain]
            forms += [core in data for core in _base64_cores(secret.encode())]
            forms += [secret.encode() in raw for raw in _decoded_runs(data)]
            if any(forms):
                found.append(f"{path.relative_to(root)}: {secret}")
    return found


def test_the_leak_finder_finds_every_encoding(tmp_path: Path) -> None:
    quoted = "".join(f"%{ord(c):02x}" for c in KEY)
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    gzipped = base64.b64encode(gzip.compress(KEY.encode())).decode()
    for number, text in enumerate(
        [KEY, quoted, escaped, base64.b64encode(b"ab" + KEY.encode()).decode(), gzipped]
    ):
        (tmp_path / f"{number}.txt").write_text(f'{{"v": "{text}"}}')

    assert len(leaks(tmp_path)) == 5


def _record_and_replay(tester: pytest.Pytester, echo: ServerThread) -> pytest.RunResult:
    sources = files(tester.path)
    recorded = tester.runpytest("--agent-record", "--agent-report=report.json")
    recorded.assert_outcomes(passed=1)
    assert (tester.path / ".pytest_cache").is_dir()
    assert leaks(tester.path, sources) == []
    echo.stop()
    return tester.runpytest()


COMPRESSED = """
import asyncio
import gzip
import json
import os
import zlib

import aiohttp
import brotli
import httpx
import httpx2
import pytest
import requests
import zstandard

URL = os.environ["ECHO_SERVER"] + "/v1/upload"
KEY = os.environ["GROQ_API_KEY"]
COMPRESS = {
    "gzip": gzip.compress,
    "deflate": zlib.compress,
    "br": brotli.compress,
    "zstd": zstandard.ZstdCompressor().compress,
}


def body(client, encoding):
    return json.dumps({"client": client, "encoding": encoding, "key": KEY}).encode()


def sent(client, encoding):
    return {"content-type": "application/json", "content-encoding": encoding}, COMPRESS[
        encoding
    ](body(client, encoding))


async def through_aiohttp():
    async with aiohttp.ClientSession() as session:
        for encoding in COMPRESS:
            headers, data = sent("aiohttp", encoding)
            async with session.post(URL, data=data, headers=headers) as response:
                assert response.status == 200
        # aiohttp compressing the body itself
        async with session.post(URL, data=body("aiohttp", "own"), compress="deflate") as response:
            assert response.status == 200


@pytest.mark.agent
def test_compressed_uploads():
    with httpx2.Client(trust_env=False) as client2, httpx.Client(trust_env=False) as client:
        for encoding in COMPRESS:
            for name, http in (("httpx2", client2), ("httpx", client)):
                headers, data = sent(name, encoding)
                assert http.post(URL, content=data, headers=headers).status_code == 200
            headers, data = sent("requests", encoding)
            assert requests.post(URL, data=data, headers=headers).status_code == 200
    asyncio.run(through_aiohttp())
"""


def test_compressed_request_bodies_are_stored_decoded_scrubbed_and_replay(tester, echo):
    tester.makepyfile(test_upload=COMPRESSED)

    replayed = _record_and_replay(tester, echo)

    replayed.assert_outcomes(passed=1)
    cassette = tester.path / "cassettes" / "test_upload" / "test_compressed_uploads.json"
    stored = json.loads(cassette.read_text())["interactions"]
    assert len(stored) == 17
    assert {json.dumps(i["request"]["body"]["json"]["key"]) for i in stored} == {'"REDACTED"'}
    assert all("content-encoding" not in i["request"]["headers"] for i in stored)


OAUTH = """
import os

import httpx2
import pytest

BASE = os.environ["ECHO_SERVER"]


@pytest.mark.agent
def test_oauth_flow():
    with httpx2.Client(trust_env=False, base_url=BASE) as http:
        grant = http.post("/oauth/token", data={"grant_type": "client_credentials"}).json()
        me = http.get("/v1/me", headers={"authorization": "Bearer " + grant["access_token"]})
        assert me.json()["me"] in ("ok", "who?")
"""


def test_a_token_a_response_gave_is_scrubbed_from_the_earlier_interaction_too(tester, echo):
    tester.makepyfile(test_oauth=OAUTH)

    replayed = _record_and_replay(tester, echo)

    replayed.assert_outcomes(passed=1)
    cassette = tester.path / "cassettes" / "test_oauth" / "test_oauth_flow.json"
    grant = json.loads(cassette.read_text())["interactions"][0]["response"]["body"]["json"]
    assert grant["access_token"] == "REDACTED"


ENCODED = """
import base64
import json
import os
from urllib.parse import quote

import httpx2
import pytest

URL = os.environ["ECHO_SERVER"] + "/v1/echo"
KEY = os.environ["GROQ_API_KEY"]
BASIC = "basic-canary-Tz4Nw81q"
PNG = b"\\x89PNG\\r\\n\\x1a\\n" + bytes(range(7))


def escaped(text):
    return "".join(f"\\\\u{ord(c):04x}" for c in text)


@pytest.mark.agent
def test_encoded_secrets():
    basic = base64.b64encode(f"client:{BASIC}".encode()).decode()
    with httpx2.Client(trust_env=False, headers={"authorization": "Basic " + basic}) as http:
        for align in range(3):  # the key in an image, at each alignment of base64
            image = base64.b64encode(PNG[:align] + KEY.encode() + PNG).decode()
            http.post(URL, json={"image_url": "data:image/png;base64," + image})
        http.post(URL, json={"owner": base64.urlsafe_b64encode(KEY.encode()).decode()})
        for secret in (KEY, BASIC):
            http.post(
                URL,
                content='{"key": "' + escaped(secret) + '"}',
                headers={"content-type": "application/json"},
            )
            http.post(
                URL,
                content='{"n": 1}\\n{"key": "' + escaped(secret) + '"}\\n',
                headers={"content-type": "application/x-ndjson"},
            )
            form = quote(secret, safe="").lower().replace(secret.lower(), secret)
            every = "".join(f"%{ord(c):02X}" for c in secret)
            http.post(
                URL,
                content=f"grant_type=password&password={form}&again={every}",
                headers={"content-type": "application/x-www-form-urlencoded"},
            )
"""


def test_a_secret_base64_escaped_or_percent_encoded_is_found(tester, echo):
    tester.makepyfile(test_encoded=ENCODED)

    replayed = _record_and_replay(tester, echo)

    replayed.assert_outcomes(passed=1)


NAMED = """
import os

import httpx2
import pytest

URL = os.environ["ECHO_SERVER"] + "/v1/echo"


@pytest.mark.agent
def test_a_tool_with_its_own_token():
    words = "tokenizers false, limit 100000000"
    with httpx2.Client(trust_env=False) as http:
        reply = http.post(
            URL,
            json={"tool_result": os.environ["MY_SERVICE_TOKEN"], "words": words},
            headers={"x-my-token": "hdr-canary-Pq5Ws9Ej"},
        )
    assert reply.json()["header"] in ("hdr-canary-Pq5Ws9Ej", "REDACTED")
"""


def test_a_header_and_a_variable_secret_by_their_name_are_redacted_by_default(tester, echo):
    tester.makepyfile(test_named=NAMED)

    replayed = _record_and_replay(tester, echo)

    replayed.assert_outcomes(passed=1)
    cassette = tester.path / "cassettes" / "test_named" / "test_a_tool_with_its_own_token.json"
    interaction = json.loads(cassette.read_text())["interactions"][0]
    assert interaction["request"]["headers"]["x-my-token"] == "REDACTED"
    # Values of variables named like secrets that are no secret stay as they are.
    assert interaction["request"]["body"]["json"]["words"] == "tokenizers false, limit 100000000"


def test_a_request_body_in_an_encoding_that_cannot_be_decoded_fails_and_is_never_written(
    tester, echo
):
    tester.makepyfile(
        test_legacy="""
        import os

        import httpx2
        import pytest

        @pytest.mark.agent
        def test_upload():
            with httpx2.Client(trust_env=False) as http:
                http.post(
                    os.environ["ECHO_SERVER"] + "/v1/upload",
                    content=b"\\x1f\\x9d\\x90" + os.environ["GROQ_API_KEY"].encode(),
                    headers={"content-encoding": "compress"},
                )
        """
    )

    result = tester.runpytest("--agent-record")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*CassetteWriteError: Cassette *test_upload.json: the request POST "
            "http://127.0.0.1:*/v1/upload was neither sent, matched nor recorded, because its "
            "body cannot be scrubbed of secrets: content-encoding 'compress': *"
            "then record again: pytest --agent-record *test_upload*"
        ]
    )
    assert not (tester.path / "cassettes" / "test_legacy" / "test_upload.json").exists()

"""Projects in the shape of real vcrpy suites, for the end-to-end tests of
``pytest-agentctx migrate`` (test_migrate_recording_e2e.py, test_migrate_vcr_e2e.py).

Each project is a small chat client (``chatapp.py``, on ``pythonpath``) and its suite:
parametrized ids with spaces and punctuation, a class, a cassette name computed in a
fixture, a conftest hook that marks a module's tests, a telemetry thread that calls another
host while each recorded test runs (ignored in ``vcr_config``), a multipart upload, a Gemini
call under ``GOOGLE_API_KEY`` (the suite sets it; nothing may set ``GEMINI_API_KEY``), and
tests that use no cassette (one skipped, one expected to fail, one failing). The cassettes
are recorded for real by the old tool, against :class:`ApiHandler` on 127.0.0.1, stopped
before the runs that compare outcomes.

The test modules import it by file name, as they do ``raw_sdk_project``.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import NamedTuple

import pytest
from support.http_server import ServerThread
from support.inner import INNER_ADDOPTS
from support.wire import chat_completion

#: A line of ``pytest -v``: the node id, then its outcome.
_VERBOSE = re.compile(
    r"^(?P<nodeid>tests/\S.*?) (?P<outcome>PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b"
)
#: What is no file of the project: caches pytest and Python write.
_NOT_PROJECT = {"__pycache__", ".pytest_cache"}
#: The files pytester's runs write their output to, in the project's folder.
_PYTESTER_OUTPUT = {"stdout", "stderr"}

CHATAPP = '''
"""The chat client of the project: an OpenAI-like chat API and a Gemini-like one."""

import os

import httpx
import requests

API = os.environ["CHAT_API"]


def ask(question, model="gpt-4o-mini"):
    response = httpx.post(
        f"{API}/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": question}]},
        headers={"Authorization": "Bearer " + os.environ.get("OPENAI_API_KEY", "sk-none")},
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["choices"][0]["message"]["content"]


def gemini(question):
    response = httpx.post(
        f"{API}/v1beta/models/gemini-2.0-flash:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": question}]}]},
        headers={"x-goog-api-key": os.environ["GOOGLE_API_KEY"]},
        timeout=10,
    )
    response.raise_for_status()
    return response.json()["candidates"][0]["content"]["parts"][0]["text"]


def model_info(name):
    response = requests.get(f"{API}/v1/models/{name}", timeout=10)
    response.raise_for_status()
    return response.json()


def upload(name, data, *, client="requests"):
    files = {"file": (name, data, "text/plain")}
    form = {"purpose": "assistants"}
    if client == "httpx":
        response = httpx.post(f"{API}/v1/files", files=files, data=form, timeout=10)
    else:
        response = requests.post(f"{API}/v1/files", files=files, data=form, timeout=10)
    response.raise_for_status()
    return response.json()
'''

#: The telemetry thread of the SDK: one report per recorded test, sent from another thread
#: while the test's cassette is in use.
TELEMETRY = """

@pytest.fixture(autouse=True)
def telemetry(request):
    if request.node.get_closest_marker("vcr") is None:
        yield
        return
    errors = []

    def report():
        try:
            answer = requests.post(
                os.environ["TELEMETRY_URL"] + "/v1/events",
                json={"test": request.node.name},
                timeout=10,
            )
            answer.raise_for_status()
        except Exception as exc:  # the thread's failure, shown at teardown
            errors.append(repr(exc))

    # the SDK's thread reports as the test starts; waited for here, because vcrpy's
    # patches are not thread-safe: a request of the test made meanwhile is not recorded
    # on every run
    thread = threading.Thread(target=report, name="sdk-telemetry")
    thread.start()
    thread.join(timeout=30)
    yield
    assert not errors, errors


def pytest_collection_modifyitems(config, items):
    # the integration module's tests are recorded: the hook marks them
    for item in items:
        if item.module.__name__ == "test_integration":
            item.add_marker(pytest.mark.vcr)
"""

MULTIPART_MATCHER = '''

def _fields(request):
    headers = {str(k).lower(): v for k, v in dict(request.headers).items()}
    ctype = headers.get("content-type", "")
    ctype = ctype[0] if isinstance(ctype, list) else ctype
    body = request.body or b""
    body = body.encode() if isinstance(body, str) else bytes(body)
    if "boundary=" not in ctype:
        return body
    boundary = ctype.split("boundary=", 1)[1].strip('"').encode()
    parts = []
    for part in body.split(b"--" + boundary):
        head, _, content = part.partition(b"\\r\\n\\r\\n")
        name = re.search(rb'name="([^"]*)"', head)
        if name:
            parts.append((name.group(1), content.rstrip(b"\\r\\n")))
    return sorted(parts)


def multipart_fields(r1, r2):
    """The fields of two multipart bodies match whatever their boundaries."""
    assert _fields(r1) == _fields(r2), "the multipart fields differ"
'''

RECORDING_CONFTEST = (
    """
import os
import re
import threading

import pytest
import requests

# the suite's own key: google-genai reads GOOGLE_API_KEY, and logs a warning when
# GEMINI_API_KEY is set beside it
os.environ.setdefault("GOOGLE_API_KEY", "google-key-of-the-suite")


@pytest.fixture
def vcr_config():
    return {
        "filter_headers": ["authorization", "x-goog-api-key"],
        "ignore_hosts": ["localhost"],
        "allowed_hosts": ["localhost", "127.0.0.1", "::1"],
    }


def pytest_recording_configure(config, vcr):
    vcr.register_matcher("multipart_fields", multipart_fields)
"""
    + MULTIPART_MATCHER
    + TELEMETRY
)

VCR_CONFTEST = (
    """
import os
import threading

import pytest
import requests

os.environ.setdefault("GOOGLE_API_KEY", "google-key-of-the-suite")


@pytest.fixture(scope="module")
def vcr_config():
    return {
        "filter_headers": ["authorization", "x-goog-api-key"],
        "ignore_hosts": ["localhost"],
        "match_on": ["method", "scheme", "host", "port", "path", "query"],
    }
"""
    + TELEMETRY
)

TEST_CHAT = """
import pytest

from chatapp import ask, model_info

QUESTIONS = ["is it safe?", "openai:gpt-4o-mini", "Paris, France (FR) & more"]


@pytest.mark.vcr
@pytest.mark.parametrize("question", QUESTIONS)
def test_ask(question):
    assert ask(question) == f"answer to {question}"


@pytest.mark.vcr
class TestModels:
    def test_info(self):
        assert model_info("gpt-4o-mini")["id"] == "gpt-4o-mini"

    @pytest.mark.parametrize("model", ["gpt-4o-mini", "o3 mini"])
    def test_ask_model(self, model):
        assert ask("hello", model=model) == f"answer to hello from {model}"


def test_prompt_is_trimmed():
    assert " hi ".strip() == "hi"


@pytest.mark.skip(reason="the provider has no batch endpoint yet")
@pytest.mark.vcr
def test_batches():
    raise AssertionError("skipped")


@pytest.mark.xfail(reason="known bug: titles lose their accents", strict=True)
def test_title_accents():
    assert "Café".upper().encode("ascii", "ignore").decode() == "CAFÉ"


def test_failing_today():
    assert "Paris".lower() == "Paris"
"""

TEST_GEMINI = """
import os

import pytest

from chatapp import gemini


@pytest.mark.vcr
def test_gemini_answers():
    assert gemini("bonjour") == "answer to bonjour"
    assert os.environ["GOOGLE_API_KEY"] == "google-key-of-the-suite"
    assert "GEMINI_API_KEY" not in os.environ
"""

TEST_INTEGRATION = """
from chatapp import ask


def test_marked_by_the_hook():
    assert ask("from the hook") == "answer to from the hook"
"""

RECORDING_TESTS = {
    "tests/test_weather.py": """
import pytest

from chatapp import ask


@pytest.fixture
def default_cassette_name(request):
    return "weather-" + request.node.callspec.params["city"].lower().replace(" ", "-")


@pytest.mark.vcr
@pytest.mark.parametrize("city", ["Rome", "New York"])
def test_weather(city):
    assert ask(f"weather in {city}") == f"answer to weather in {city}"
""",
    "tests/test_upload.py": """
import pytest

from chatapp import upload


@pytest.fixture
def vcr_config(vcr_config):
    return {**vcr_config, "match_on": ["method", "host", "port", "path", "multipart_fields"]}


@pytest.mark.vcr
def test_upload():
    assert upload("notes.txt", b"remember the milk") == {
        "id": "file-notes.txt", "bytes": 17, "purpose": "assistants"
    }
""",
}

VCR_TESTS = {
    "tests/test_weather.py": """
import pytest

from chatapp import ask


@pytest.fixture
def vcr_cassette_name(request):
    return "weather-" + request.node.callspec.params["city"].lower().replace(" ", "-")


@pytest.mark.vcr
@pytest.mark.parametrize("city", ["Rome", "New York"])
def test_weather(city):
    assert ask(f"weather in {city}") == f"answer to weather in {city}"
""",
    "tests/test_upload.py": """
import pytest

from chatapp import upload


@pytest.mark.vcr
def test_upload():
    assert upload("notes.txt", b"remember the milk", client="httpx") == {
        "id": "file-notes.txt", "bytes": 17, "purpose": "assistants"
    }
""",
}

RECORDING_INI = """\
[pytest]
# the chat client's suite: cassettes replayed offline, the network blocked
testpaths = tests
pythonpath = .
addopts = --block-network --record-mode=none
markers =
    slow: a slow test
"""

VCR_INI = """\
[pytest]
# the chat client's suite (pytest-vcr)
testpaths = tests
pythonpath = .
addopts =
    --vcr-record=none
    -ra
"""


def write_project(root: Path, tool: str) -> None:
    """The project of ``tool`` (``pytest-recording`` or ``pytest-vcr``) under ``root``."""
    recording = tool == "pytest-recording"
    files = {
        "pytest.ini": RECORDING_INI if recording else VCR_INI,
        "chatapp.py": CHATAPP,
        "tests/conftest.py": RECORDING_CONFTEST if recording else VCR_CONFTEST,
        "tests/test_chat.py": TEST_CHAT,
        "tests/test_gemini.py": TEST_GEMINI,
        "tests/test_integration.py": TEST_INTEGRATION,
        **(RECORDING_TESTS if recording else VCR_TESTS),
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.lstrip("\n"), encoding="utf-8")


# -- the servers the projects call ---------------------------------------------------------


def _multipart(body: bytes, content_type: str) -> dict[str, tuple[str | None, bytes]]:
    boundary = content_type.split("boundary=", 1)[1].strip('"').encode()
    fields: dict[str, tuple[str | None, bytes]] = {}
    for part in body.split(b"--" + boundary):
        head, _, content = part.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]*)"', head)
        filename = re.search(rb'filename="([^"]*)"', head)
        if name:
            fields[name.group(1).decode()] = (
                filename.group(1).decode() if filename else None,
                content.rstrip(b"\r\n"),
            )
    return fields


class ApiHandler(BaseHTTPRequestHandler):
    """The provider the cassettes are recorded from: chat completions answer "answer to
    <question>" (and "from <model>" for another model than the default's question "hello"),
    Gemini the same, a file upload its name, size and purpose, a model its id."""

    def log_message(self, format: str, *args: object) -> None:
        del format, args

    def _send(self, payload: Mapping[str, object]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self._send({"id": self.path.rsplit("/", 1)[-1], "object": "model"})

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path == "/v1/files":
            fields = _multipart(body, self.headers["Content-Type"])
            name, data = fields["file"]
            self._send({"id": f"file-{name}", "bytes": len(data), "purpose": "assistants"})
            return
        request = json.loads(body)
        if "contents" in request:
            text = "answer to " + request["contents"][-1]["parts"][0]["text"]
            self._send(
                {
                    "candidates": [
                        {
                            "content": {"role": "model", "parts": [{"text": text}]},
                            "finishReason": "STOP",
                        }
                    ],
                    "usageMetadata": {
                        "promptTokenCount": 1,
                        "candidatesTokenCount": 1,
                        "totalTokenCount": 2,
                    },
                    "modelVersion": "gemini-2.0-flash",
                }
            )
            return
        question = request["messages"][-1]["content"]
        text = f"answer to {question}"
        if question == "hello":
            text += f" from {request['model']}"
        self._send(chat_completion(text, model=request["model"]))


class TelemetryHandler(BaseHTTPRequestHandler):
    """The telemetry host: takes every report."""

    def log_message(self, format: str, *args: object) -> None:
        del format, args

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(204)
        self.end_headers()


# -- what the tests compare ----------------------------------------------------------------


def outcomes(result: pytest.RunResult) -> dict[str, set[str]]:
    """Each test's outcomes in a ``pytest -v`` run (a test that failed at teardown has
    two)."""
    found: dict[str, set[str]] = {}
    for line in result.outlines:
        match = _VERBOSE.match(line)
        if match and "::" in match.group("nodeid"):
            found.setdefault(match.group("nodeid"), set()).add(match.group("outcome"))
    return found


def snapshot(root: Path) -> dict[str, str]:
    """Every file of the project (caches left out) and the SHA-256 of its bytes."""
    files = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root)
        if relative.as_posix() in _PYTESTER_OUTPUT:
            continue
        if path.is_file() and not _NOT_PROJECT & set(relative.parts):
            files[relative.as_posix()] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


def changed_files(before: Mapping[str, str], after: Mapping[str, str]) -> set[str]:
    return {name for name in before.keys() | after.keys() if before.get(name) != after.get(name)}


def pytest_vcr_folder() -> Path:
    """Where ``make install`` puts pytest-vcr, beside the venv's packages (Makefile)."""
    folder = Path(sys.prefix) / "pytest-vcr"
    if not (folder / "pytest_vcr.py").is_file():
        pytest.fail(
            f"pytest-vcr is not in {folder}: the tests of pytest-vcr projects run it from "
            "there (it cannot be installed beside pytest-recording). Run `make install`, "
            "which puts it there, then run the tests again."
        )
    return folder


class CommandRun(NamedTuple):
    """The exit code and the printed lines of one run of the command."""

    ret: int
    outlines: list[str]
    errlines: list[str]


def migrate_command(tester: pytest.Pytester, *args: str) -> CommandRun:
    """``pytest-agentctx migrate`` run as users run it: the console script, in the
    project's folder (not through ``pytester.run``, which writes its output files there)."""
    script = Path(sys.executable).parent / "pytest-agentctx"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "pytest_agentctx"]
    done = subprocess.run(
        [*argv, "migrate", *args],
        cwd=tester.path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return CommandRun(done.returncode, done.stdout.splitlines(), done.stderr.splitlines())


def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key of the outer environment reaches the projects' runs."""
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "CHAT_API", "TELEMETRY_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_ADDOPTS)
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")


#: Every test of both projects and its outcome under the old tool.
BASELINE_OUTCOMES = {
    "tests/test_chat.py::test_ask[is it safe?]": {"PASSED"},
    "tests/test_chat.py::test_ask[openai:gpt-4o-mini]": {"PASSED"},
    "tests/test_chat.py::test_ask[Paris, France (FR) & more]": {"PASSED"},
    "tests/test_chat.py::TestModels::test_info": {"PASSED"},
    "tests/test_chat.py::TestModels::test_ask_model[gpt-4o-mini]": {"PASSED"},
    "tests/test_chat.py::TestModels::test_ask_model[o3 mini]": {"PASSED"},
    "tests/test_chat.py::test_prompt_is_trimmed": {"PASSED"},
    "tests/test_chat.py::test_batches": {"SKIPPED"},
    "tests/test_chat.py::test_title_accents": {"XFAIL"},
    "tests/test_chat.py::test_failing_today": {"FAILED"},
    "tests/test_gemini.py::test_gemini_answers": {"PASSED"},
    "tests/test_integration.py::test_marked_by_the_hook": {"PASSED"},
    "tests/test_upload.py::test_upload": {"PASSED"},
    "tests/test_weather.py::test_weather[Rome]": {"PASSED"},
    "tests/test_weather.py::test_weather[New York]": {"PASSED"},
}


class Migration:
    """One project's way through the migration: recorded and replayed by the old tool,
    migrated by the command, replayed by this plugin."""

    def __init__(self, tester: pytest.Pytester, api: ServerThread, baseline: tuple[str, ...]):
        self.tester = tester
        self.api = api
        self.baseline_args = baseline

    def run(self, *args: str) -> pytest.RunResult:
        return self.tester.runpytest_subprocess("-v", "-p", "no:cacheprovider", *args, timeout=300)

    def record(self, *args: str) -> pytest.RunResult:
        """The old tool records every cassette from the API, which is stopped after it."""
        with self.api:
            return self.run(*self.baseline_args, *args)

    def cassettes(self) -> set[str]:
        return {
            name
            for name in snapshot(self.tester.path)
            if "/cassettes/" in name and name.endswith(".yaml")
        }

    def check(self, migrated_args: tuple[str, ...] = ()) -> CommandRun:
        """The old tool's outcomes, then the command, then the same outcomes under the
        plugin, with the command's file the only one changed; returns the command's run."""
        baseline = self.run(*self.baseline_args)
        assert outcomes(baseline) == BASELINE_OUTCOMES, baseline.stdout.str()
        before = snapshot(self.tester.path)

        command = migrate_command(self.tester)
        report = self.tester.path.parent / f"{self.tester.path.name}-report.json"
        migrated = self.run(*migrated_args, f"--agent-report={report}")

        assert command.ret == 0, command
        assert outcomes(migrated) == outcomes(baseline), migrated.stdout.str()
        changed = changed_files(before, snapshot(self.tester.path))
        assert changed == {"pytest.ini"}, changed
        assert "changed pytest.ini:" in command.outlines
        replayed = {
            _relative(test["cassette"]["path"], self.tester.path)
            for test in json.loads(report.read_text())["tests"]
            if test.get("cassette")
        }
        assert replayed == self.cassettes(), replayed ^ self.cassettes()
        return command


def _relative(path: str, root: Path) -> str:
    candidate = Path(path)
    return (candidate.relative_to(root) if candidate.is_absolute() else candidate).as_posix()

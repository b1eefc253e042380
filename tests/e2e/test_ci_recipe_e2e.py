"""End-to-end: the GitHub Actions workflow of docs/ci.md, job by job, as written.

The ``run:`` scripts of the workflow's ``tests`` and ``integration`` jobs are read from
docs/ci.md and run with bash in a small project: a weather agent on the raw ``openai`` SDK,
which reads its key and base URL from the environment, two unit tests with cassettes and
one integration test. A chat completions server on 127.0.0.1 stands in for the provider
(``OPENAI_BASE_URL``), and counts what reaches it.

* the ``tests`` job runs without API keys and sends nothing to the provider;
* on ``main`` its report is the baseline; a pull request's run with the same agent passes
  the gate against it, and one whose agent now spends far more tokens fails it;
* the ``integration`` job runs the integration test live against the provider, with the
  keys, and writes no cassette.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
import yaml
from support.http_server import ServerThread
from support.inner import INNER_ADDOPTS

DOCS = Path(__file__).parents[2] / "docs" / "ci.md"

AGENT = """
import openai


def weather(city):
    # the key and the base URL come from OPENAI_API_KEY and OPENAI_BASE_URL
    with openai.OpenAI(max_retries=0) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": f"Weather in {city}?"}]
        )
    return reply.choices[0].message.content
"""

UNIT_TESTS = """
import pytest

from agent import weather


@pytest.mark.agent
def test_paris():
    assert weather("Paris") == "Sunny in Paris."


@pytest.mark.agent
def test_rome():
    assert weather("Rome") == "Sunny in Rome."
"""

INTEGRATION_TEST = """
import pytest

from agent import weather


@pytest.mark.agent
def test_weather_live():
    assert weather("Oslo") == "Sunny in Oslo."
"""

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
pythonpath = .
"""

KEY = "sk-live-key-of-the-ci-secret-0123456789"


class Provider:
    """Chat completions on 127.0.0.1: ``Sunny in <city>.``, with ``tokens`` of usage."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        self.tokens = 20
        self.keys: list[str] = []
        owner = self
        lock = threading.Lock()

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                question = body["messages"][-1]["content"]
                with lock:
                    owner.hits.append(question)
                    owner.keys.append(self.headers.get("authorization", ""))
                city = re.sub(r"Weather in (.*)\?", r"\1", question)
                reply = {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "finish_reason": "stop",
                            "message": {"role": "assistant", "content": f"Sunny in {city}."},
                        }
                    ],
                    "usage": {
                        "prompt_tokens": owner.tokens,
                        "completion_tokens": 5,
                        "total_tokens": owner.tokens + 5,
                    },
                }
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ServerThread(Handler).start()
        self.url = self.server.url + "/v1"


def _job_script(job: str, marker: str) -> str:
    """The ``run:`` script of the step of ``job`` whose script contains ``marker``."""
    text = DOCS.read_text(encoding="utf-8")
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))  # type: ignore[union-attr]
    scripts = [step["run"] for step in workflow["jobs"][job]["steps"] if "run" in step]
    [script] = [s for s in scripts if marker in s]
    return str(script)


@pytest.fixture
def provider() -> Iterator[Provider]:
    running = Provider()
    try:
        yield running
    finally:
        running.server.stop()


@pytest.fixture
def project(pytester: pytest.Pytester, provider: Provider) -> Path:
    pytester.makeini(INI)
    pytester.makepyfile(agent=AGENT)
    (pytester.path / "tests" / "integration").mkdir(parents=True)
    (pytester.path / "tests" / "test_weather.py").write_text(UNIT_TESTS)
    (pytester.path / "tests" / "integration" / "test_live.py").write_text(INTEGRATION_TEST)
    return pytester.path


def _environment(provider: Provider, *, keys: bool) -> dict[str, str]:
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("PYTEST_", "OPENAI_", "ANTHROPIC_", "GEMINI_"))
    }
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["OPENAI_BASE_URL"] = provider.url
    env["COLUMNS"] = "120"
    env["PYTEST_ADDOPTS"] = INNER_ADDOPTS
    if keys:
        env["OPENAI_API_KEY"] = KEY
    return env


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _record(project: Path, provider: Provider) -> None:
    """What a developer did once: record the unit tests' cassettes with the real key."""
    recorded = subprocess.run(
        [sys.executable, "-m", "pytest", "--agent-record", "-p", "no:cacheprovider"],
        cwd=project,
        env=_environment(provider, keys=True),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert recorded.returncode == 0, recorded.stdout + recorded.stderr
    provider.hits.clear()


def test_the_tests_job_runs_without_keys_and_sends_nothing(project, provider):
    _record(project, provider)

    job = _bash(_job_script("tests", "--agent-gate"), project, _environment(provider, keys=False))

    assert job.returncode == 0, job.stdout + job.stderr
    assert "2 passed" in job.stdout
    assert provider.hits == []
    report = json.loads((project / "agent-report.json").read_text())
    assert sorted(test["cassette"]["status"] for test in report["tests"]) == [
        "replayed",
        "replayed",
    ]
    assert (project / "junit.xml").is_file()
    assert (project / "agent-report.html").is_file()


def test_a_pull_request_passes_against_main_s_baseline_until_its_agent_drifts(project, provider):
    _record(project, provider)
    script = _job_script("tests", "--agent-gate")
    env = _environment(provider, keys=False)
    assert _bash(script, project, env).returncode == 0  # on main: the baseline
    (project / "baseline").mkdir()
    shutil.copy(project / "agent-report.json", project / "baseline" / "agent-report.json")

    same = _bash(script, project, env)
    provider.tokens = 200  # the agent now sends far longer prompts: re-recorded
    _record(project, provider)
    drifted = _bash(script, project, env)

    assert same.returncode == 0, same.stdout + same.stderr
    assert "baseline" in same.stdout
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert (
        "tests/test_weather.py::test_paris: tokens 25 -> 205 (+720.0%, allowed ±10%)"
        in drifted.stdout
    ), drifted.stdout


def test_the_integration_job_runs_live_with_the_keys_and_writes_no_cassette(project, provider):
    job = _bash(
        _job_script("integration", "-m integration"), project, _environment(provider, keys=True)
    )

    assert job.returncode == 0, job.stdout + job.stderr
    assert "1 passed" in job.stdout
    assert (provider.hits, provider.keys) == (["Weather in Oslo?"], [f"Bearer {KEY}"])
    assert not (project / "cassettes").exists()
    report = json.loads((project / "integration-report.json").read_text())
    assert [test["cassette"]["status"] for test in report["tests"]] == ["live"]

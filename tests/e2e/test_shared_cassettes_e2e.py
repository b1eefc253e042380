"""End-to-end tests of cassettes shared by several tests (``@pytest.mark.agent(cassette=...)``).

Each test replays its own recording, even of a request another test sent too, and
re-recording some of the tests (by node id, with ``-k``, in a run killed half-way, on
several xdist workers) keeps every other test's interactions in the shared file.

The outer test starts a provider on 127.0.0.1 and hands its OpenAI base URL to the inner
tests in ``AGENT_BASE_URL``; they talk to it through the real ``openai`` SDK. ``Echo``
answers ``"<version>: <question>"``, so a file shows which run recorded each answer; the
``LoopbackProvider`` of the package gives scripted answers in order, so two tests asking the
same question record different answers.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import signal
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.http_server import ServerThread

from pytest_agentctx import LoopbackProvider

CLIENT_MODULE = """
import os
from pathlib import Path

import openai


def ask(question):
    with openai.OpenAI(
        base_url=os.environ["AGENT_BASE_URL"], api_key="sk-e2e-test-key", max_retries=0
    ) as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        )
    folder = os.environ.get("AGENT_WORKERS")
    if folder:  # which process asked: an xdist worker's name, or "main"
        Path(folder, question).write_text(os.environ.get("PYTEST_XDIST_WORKER", "main"))
    return reply.choices[0].message.content
"""

#: Three tests sharing one cassette; ``test_two`` kills its own process (no clean-up, no
#: hook: the run stops between two tests) when ``AGENT_KILL`` is set.
THREE_TESTS = """
import os
import signal

import pytest
from shared_client import ask

pytestmark = pytest.mark.agent(cassette="shared")


def test_one():
    assert ask("one?").endswith(": one?")


def test_two():
    if os.environ.get("AGENT_KILL"):
        os.kill(os.getpid(), signal.SIGKILL)
    assert ask("two?").endswith(": two?")


def test_three():
    assert ask("three?").endswith(": three?")
"""


class Echo:
    """An OpenAI-compatible chat completions server on 127.0.0.1 answering
    ``"<version>: <last user message>"`` (HTTP/1.0: one connection per request)."""

    def __init__(self) -> None:
        self.version = "v1"
        self.hits: list[str] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                question = json.loads(self.rfile.read(length))["messages"][-1]["content"]
                with owner._lock:
                    owner.hits.append(question)
                    text = f"{owner.version}: {question}"
                body = json.dumps(
                    {
                        "id": "chatcmpl-e2e",
                        "object": "chat.completion",
                        "created": 1,
                        "model": "gpt-4o-mini",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._serving = ServerThread(Handler)
        self.base_url: str = f"{self._serving.url}/v1"
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def echo(monkeypatch: pytest.MonkeyPatch) -> Iterator[Echo]:
    server = Echo()
    monkeypatch.setenv("AGENT_BASE_URL", server.base_url)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def tester(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with the SDK helper module ``shared_client``."""
    agent_pytester.makepyfile(shared_client=CLIENT_MODULE)
    return agent_pytester


@pytest.fixture
def recorded(tester: pytest.Pytester, echo: Echo) -> pytest.Pytester:
    """``THREE_TESTS`` recorded by version ``v1`` of the provider, which is then ``v2``."""
    tester.makepyfile(test_shared=THREE_TESTS)
    tester.runpytest("--agent-record").assert_outcomes(passed=3)
    assert _answers(tester) == ["v1: one?", "v1: two?", "v1: three?"]
    echo.version = "v2"
    return tester


def _answers(tester: pytest.Pytester) -> list[str]:
    """The recorded answer of every interaction of ``cassettes/shared.json``, in order."""
    data = json.loads((tester.path / "cassettes" / "shared.json").read_text())
    return [
        item["response"]["body"]["json"]["choices"][0]["message"]["content"]
        for item in data["interactions"]
    ]


def _workers(tester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder where the inner tests note which process asked each question."""
    folder = tester.path / "workers"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    monkeypatch.setenv("AGENT_WORKERS", str(folder))
    return folder


# -- replay --------------------------------------------------------------------------


def test_tests_asking_the_same_question_each_replay_their_own_answer(tester, monkeypatch):
    tester.makepyfile(
        test_weather="""
        import pytest
        from shared_client import ask

        @pytest.mark.agent(cassette="weather")
        def test_first():
            assert ask("Weather in Paris?") == "Sunny."

        @pytest.mark.agent(cassette="weather")
        def test_second():
            assert ask("Weather in Paris?") == "Rainy."
        """
    )
    with LoopbackProvider() as provider:
        provider.reply("Sunny.").reply("Rainy.")
        monkeypatch.setenv("AGENT_BASE_URL", provider.openai_base_url)
        tester.runpytest("--agent-record").assert_outcomes(passed=2)
        provider.verify()

    result = tester.runpytest()

    result.assert_outcomes(passed=2)
    assert len(provider.exchanges) == 2


def test_a_shared_cassette_names_the_test_that_recorded_each_interaction(recorded):
    data = json.loads((recorded.path / "cassettes" / "shared.json").read_text())

    assert [item["test_id"] for item in data["interactions"]] == [
        "test_shared.py::test_one",
        "test_shared.py::test_two",
        "test_shared.py::test_three",
    ]


# -- re-recording some of the tests --------------------------------------------------


def test_re_recording_one_test_by_node_id_keeps_the_others(recorded, echo):
    recorded.runpytest("--agent-record", "test_shared.py::test_two").assert_outcomes(passed=1)
    echo.stop()

    assert _answers(recorded) == ["v1: one?", "v2: two?", "v1: three?"]
    recorded.runpytest().assert_outcomes(passed=3)


def test_re_recording_one_test_selected_with_k_keeps_the_others(recorded, echo):
    recorded.runpytest("--agent-record", "-k", "test_three").assert_outcomes(passed=1)
    echo.stop()

    assert _answers(recorded) == ["v1: one?", "v1: two?", "v2: three?"]
    recorded.runpytest().assert_outcomes(passed=3)


def test_the_command_a_miss_prints_re_records_that_test_and_keeps_the_others(recorded, echo):
    shutil.rmtree(recorded.path / "__pycache__", ignore_errors=True)  # same size, same second
    recorded.makepyfile(test_shared=THREE_TESTS.replace("two?", "two, again?"))
    missed = recorded.runpytest()
    missed.assert_outcomes(passed=2, failed=1)
    # (the message is printed more than once: the SDK error, then the test failure)
    [command] = set(
        re.findall(r"re-record this test: (pytest --agent-record \S+)", missed.stdout.str())
    )

    recorded.runpytest(*shlex.split(command)[1:]).assert_outcomes(passed=1)
    echo.stop()

    assert command == 'pytest --agent-record "test_shared.py::test_two"'
    assert _answers(recorded) == ["v1: one?", "v2: two, again?", "v1: three?"]
    recorded.runpytest().assert_outcomes(passed=3)


def test_a_run_killed_between_two_tests_keeps_the_tests_it_did_not_re_record(
    recorded, echo, monkeypatch
):
    monkeypatch.setenv("AGENT_KILL", "1")
    killed = recorded.runpytest_subprocess("--agent-record", "-p", "no:cacheprovider", timeout=120)
    monkeypatch.delenv("AGENT_KILL")
    echo.stop()

    assert killed.ret == -signal.SIGKILL
    assert _answers(recorded) == ["v2: one?", "v1: two?", "v1: three?"]
    recorded.runpytest().assert_outcomes(passed=3)


# -- xdist ---------------------------------------------------------------------------


def test_re_recording_two_tests_on_two_workers_keeps_the_third(recorded, echo, monkeypatch):
    workers = _workers(recorded, monkeypatch)

    result = recorded.runpytest("-n", "2", "--agent-record", "-k", "test_one or test_three")

    result.assert_outcomes(passed=2)
    echo.stop()
    assert sorted(p.read_text() for p in workers.iterdir()) == ["gw0", "gw1"]
    assert _answers(recorded) == ["v2: one?", "v1: two?", "v2: three?"]
    recorded.runpytest().assert_outcomes(passed=3)


def test_a_worker_killed_between_two_tests_loses_nothing_of_the_others(recorded, echo, monkeypatch):
    workers = _workers(recorded, monkeypatch)
    monkeypatch.setenv("AGENT_KILL", "1")

    result = recorded.runpytest("-n", "2", "--agent-record")

    monkeypatch.delenv("AGENT_KILL")
    echo.stop()
    result.assert_outcomes(passed=2, failed=1)
    # the worker running test_two died; test_one and test_three ran on workers of their own
    # or before it died on the same one (xdist's replacement gets a new name): either way,
    # their recordings are kept
    assert re.search(r"worker 'gw\d' crashed while running .*test_two", result.stdout.str())
    assert sorted(p.name for p in workers.iterdir()) == ["one?", "three?"]
    assert _answers(recorded) == ["v2: one?", "v1: two?", "v2: three?"]
    recorded.runpytest().assert_outcomes(passed=3)

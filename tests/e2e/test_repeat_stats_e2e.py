"""End-to-end: the statistics of repeated runs recorded from a provider that answers
wrongly now and then, replayed offline serially, under ``-n 2`` and as two shards merged
by ``pytest-agentctx report merge``: every figure, and the gate's verdict, the same; and
the gate's paired comparison with a baseline of the merged shards gives the session's
lines.

The provider is a stdlib chat completions server (``support.http_server``) that answers
``wrong`` on some calls and ``right`` on the others; it is stopped before the replays, so
they can only come from the cassettes.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from typing import Any

import openai  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest
from support.http_server import ServerThread, send_json
from support.wire import chat_completion

from pytest_agentctx.cli.main import main

#: The calls (from 1, in the order the server gets them) answered ``wrong``.
WRONG = {3, 7, 8, 12, 15}

CLIENT = """
import os

import openai


def ask():
    with openai.OpenAI(
        base_url=os.environ["AGENT_SERVER"] + "/v1", api_key="sk-e2e-test-key", max_retries=0
    ) as sdk:
        reply = sdk.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": "right or wrong?"}]
        )
    return reply.choices[0].message.content
"""

TESTS_A = """
import pytest
from stats_client import ask


@pytest.mark.agent
@pytest.mark.agent_repeat(10, min_pass_rate=0.3, k=3)
def test_mostly_right():
    assert ask() == "right"
"""

TESTS_B = """
import pytest
from stats_client import ask


@pytest.mark.agent
@pytest.mark.agent_repeat(6, min_pass_rate=0.8, interval="clopper_pearson")
def test_often_right():
    assert ask() == "right"
"""


class FlakyServer:
    """Answers ``wrong`` on the calls in :data:`WRONG`, ``right`` on the others."""

    def __init__(self) -> None:
        self.calls = 0
        lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with lock:
                    owner.calls += 1
                    answer = "wrong" if owner.calls in WRONG else "right"
                send_json(self, chat_completion(answer))

        self._serving = ServerThread(Handler)
        self.url: str = self._serving.url
        self._serving.start()

    def stop(self) -> None:
        self._serving.stop()


@pytest.fixture
def recorded(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose two repeated tests were recorded against :class:`FlakyServer`,
    which is stopped once they are: the replays can only come from the cassettes."""
    agent_pytester.makepyfile(stats_client=CLIENT, test_a=TESTS_A, test_b=TESTS_B)
    server = FlakyServer()
    monkeypatch.setenv("AGENT_SERVER", server.url)
    try:
        recording = agent_pytester.runpytest(
            "-p", "no:cacheprovider", "-p", "no:randomly", "--agent-record", "test_a.py",
            "test_b.py", "--agent-report=recorded.json",
        )  # fmt: skip
        assert server.calls == 16
    finally:
        server.stop()
    recording.assert_outcomes(passed=1, failed=1)
    assert len(list((agent_pytester.path / "cassettes").rglob("*-repeat-*.json"))) == 16
    return agent_pytester


def _repeats(path: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    report = json.loads(path.read_text())
    return {test["nodeid"]: (test["outcome"], test["repeat"]) for test in report["tests"]}


def test_repeated_runs_give_the_same_statistics_serially_under_xdist_and_merged(
    recorded: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    quiet = ("-p", "no:cacheprovider", "-p", "no:randomly", "--agent-gate")
    serial = recorded.runpytest(*quiet, "--agent-report=serial.json")
    xdist = recorded.runpytest(*quiet, "-p", "xdist", "-n", "2", "--agent-report=xdist.json")
    recorded.runpytest(*quiet, "test_a.py", "--agent-report=shard1.json")
    recorded.runpytest(*quiet, "test_b.py", "--agent-report=shard2.json")
    path = recorded.path
    merged = main(
        ["report", "merge", str(path / "shard2.json"), str(path / "shard1.json"), "-o",
         str(path / "merged.json")]
    )  # fmt: skip
    gate = main(["gate", str(path / "merged.json")])
    printed = capsys.readouterr().out

    expected = _repeats(path / "recorded.json")
    assert _repeats(path / "serial.json") == expected
    assert _repeats(path / "xdist.json") == expected
    assert (merged, _repeats(path / "merged.json")) == (0, expected)
    a, b = expected["test_a.py::test_mostly_right"], expected["test_b.py::test_often_right"]
    # test_a: calls 1-10, wrong on 3, 7, 8; test_b: calls 11-16, wrong on 12, 15
    assert a[0] == "passed"
    assert (a[1]["passed"], a[1]["runs"], a[1]["pass_hat_k"]) == (7, 10, {"3": 0.291667})
    assert a[1]["outcomes"][2] == "failed"
    assert b[0] == "failed"
    assert (b[1]["passed"], b[1]["runs"], b[1]["method"]) == (4, 6, "clopper_pearson")
    serial.assert_outcomes(passed=1, failed=1)
    xdist.assert_outcomes(passed=1, failed=1)
    # the gate of the merged report: the serial session's verdict (its failed test counted)
    assert gate == serial.ret == 1
    assert "agentctx gate: passed" in printed
    assert "1 test(s) failed in" in printed
    assert "agentctx gate: passed" in serial.stdout.str()


def test_the_paired_gate_of_merged_shards_is_the_sessions(
    recorded: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    path = recorded.path
    baseline = json.loads((path / "recorded.json").read_text())
    for test in baseline["tests"]:  # a baseline in which every repetition passed
        test["outcome"] = "passed"
        test["repeat"]["outcomes"] = ["passed"] * len(test["repeat"]["outcomes"])
    (path / "base.json").write_text(json.dumps(baseline))
    quiet = ("-p", "no:cacheprovider", "-p", "no:randomly", "--agent-gate")
    compared = (*quiet, "--agent-baseline=base.json")
    session = recorded.runpytest(*compared, "--agent-report=serial.json")
    recorded.runpytest(*quiet, "test_a.py", "--agent-report=shard1.json")
    recorded.runpytest(*quiet, "test_b.py", "--agent-report=shard2.json")
    main(["report", "merge", "shard1.json", "shard2.json", "-o", "merged.json"])
    capsys.readouterr()
    code = main(["gate", "merged.json", "--baseline", "base.json"])
    lines = capsys.readouterr().out.splitlines()[:-1]  # without the failed tests' line

    # 5 of the 16 repetitions broke, none was fixed: McNemar p = 2 * 0.5**5, not significant
    assert lines[0] == "agentctx gate: passed"
    assert lines[3].endswith(
        "McNemar p = 0.062 over 5 flips (5 passed -> failed, 0 failed -> passed); level 0.05, "
        "margin 0 points: the drop is past the margin but not significant: it may be chance"
    )
    assert lines[7:] == [
        "flips: 5 (5 passed -> failed, 0 failed -> passed)",
        "  test_a.py::test_mostly_right (repetition 3): passed -> failed",
        "  test_a.py::test_mostly_right (repetition 7): passed -> failed",
        "  test_a.py::test_mostly_right (repetition 8): passed -> failed",
        "  test_b.py::test_often_right (repetition 2): passed -> failed",
        "  test_b.py::test_often_right (repetition 5): passed -> failed",
    ]
    start = session.stdout.lines.index(lines[0])
    assert lines == session.stdout.lines[start : start + len(lines)]
    assert code == session.ret == 1

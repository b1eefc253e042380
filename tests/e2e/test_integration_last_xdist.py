"""End-to-end tests: under pytest-xdist, no integration test starts before every unit test
of the session has ended, on every worker, whatever ``--dist`` load mode; and the sessions
that stop early (``-x``, a crashed worker) or hold nothing do not hang.

Each inner test writes when it started and ended (``time.monotonic()``, one clock for every
process of the machine) to a file of its own. A slow unit test waits until an integration
test starts (or until ``UNIT_WAIT`` seconds have passed): where a worker could take an
integration test early, it does so while that unit test runs.
"""

from __future__ import annotations

import itertools
import json

import pytest

#: Every inner run ends well within this (seconds); a hang fails the test instead.
TIMEOUT = 120

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
agent_suites = true
"""

CONFTEST = """
import json
import os
import time
from pathlib import Path

import pytest

LOG = Path(os.environ["ORDER_LOG"])


@pytest.fixture(autouse=True)
def _timed(request):
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    # --dist each runs a test on every worker: one file per worker, never shared
    name = worker + "-" + request.node.nodeid.replace("/", "_").replace(":", "_")
    suite = "integration" if request.node.get_closest_marker("integration") else "unit"
    start = time.monotonic()
    (LOG / f"{suite}-{name}.started").touch()
    yield
    record = {"nodeid": request.node.nodeid, "suite": suite, "start": start,
              "end": time.monotonic(), "worker": worker}
    (LOG / f"{suite}-{name}.json").write_text(json.dumps(record))
"""

UNIT_TESTS = """
import os
import time
from pathlib import Path

LOG = Path(os.environ["ORDER_LOG"])
UNIT_WAIT = float(os.environ["UNIT_WAIT"])


def test_slow_unit():
    # Waits for an integration test to start (it must not, while this test runs).
    deadline = time.monotonic() + UNIT_WAIT
    while time.monotonic() < deadline and not list(LOG.glob("integration-*.started")):
        time.sleep(0.01)


def test_unit_a():
    pass


def test_unit_b():
    pass


def test_unit_c():
    pass


def test_unit_d():
    pass


def test_unit_e():
    pass
"""

MORE_UNIT_TESTS = """
def test_other_unit_a():
    pass


def test_other_unit_b():
    pass
"""

INTEGRATION_TESTS = """
def test_integration_one():
    pass


def test_integration_two():
    pass


def test_integration_three():
    pass
"""


@pytest.fixture
def ordered(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """Eight unit tests in two files (one slow), three integration tests, every test sorted
    (``agent_suites = true``); each test logs its start and end under ``log/``."""
    log = agent_pytester.path / "log"
    log.mkdir()
    monkeypatch.setenv("ORDER_LOG", str(log))
    monkeypatch.setenv("UNIT_WAIT", "2")
    agent_pytester.makeini(INI)
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.mkpydir("tests")
    agent_pytester.mkpydir("tests/integration")
    tests = agent_pytester.path / "tests"
    (tests / "test_unit.py").write_text(UNIT_TESTS)
    (tests / "test_more_unit.py").write_text(MORE_UNIT_TESTS)
    (tests / "integration" / "test_services.py").write_text(INTEGRATION_TESTS)
    return agent_pytester


def _records(project: pytest.Pytester) -> list[dict[str, object]]:
    return [json.loads(path.read_text()) for path in (project.path / "log").glob("*.json")]


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "xdist", "-n", "2", "-v", *args, timeout=TIMEOUT
    )


def _assert_integration_last(records: list[dict[str, object]]) -> None:
    """Every integration test started after every unit test ended, and they ran one at a
    time."""
    unit = [r for r in records if r["suite"] == "unit"]
    integration = sorted((r for r in records if r["suite"] == "integration"), key=_start)
    last_unit_end = max((float(str(r["end"])) for r in unit), default=0.0)
    early = [r["nodeid"] for r in integration if _start(r) < last_unit_end]
    assert not early, f"integration tests started before the last unit test ended: {early}"
    for before, after in itertools.pairwise(integration):
        assert float(str(before["end"])) <= _start(after), (before, after)


def _start(record: dict[str, object]) -> float:
    return float(str(record["start"]))


#: The --dist modes whose scheduler holds the integration tests.
DIST_MODES = ["load", "worksteal"]


@pytest.mark.parametrize("dist", DIST_MODES)
def test_integration_tests_start_after_every_unit_test_ended(
    ordered: pytest.Pytester, dist: str
) -> None:
    result = _run(ordered, "--agent-integration", "--dist", dist)

    result.assert_outcomes(passed=11)
    records = _records(ordered)
    assert len(records) == 11
    _assert_integration_last(records)
    result.stdout.fnmatch_lines(["agentctx suites: 8 unit, 3 integration tests ran"])


# -- sessions that stop early, or hold nothing, end --------------------------------------

FAILING_UNIT = """
def test_failing_unit():
    assert False
"""

CRASHING_UNIT = """
import os


def test_crashing_unit():
    os._exit(3)
"""


@pytest.mark.parametrize("stop", [("-x",), ("--maxfail", "1")], ids=["x", "maxfail"])
def test_a_session_that_stops_while_integration_tests_are_held_ends(
    ordered: pytest.Pytester, stop: tuple[str, ...]
) -> None:
    (ordered.path / "tests" / "test_failing.py").write_text(FAILING_UNIT)

    result = _run(ordered, "--agent-integration", "--dist", "load", *stop)

    assert result.ret == pytest.ExitCode.INTERRUPTED  # xdist's exit status for a stop
    assert result.parseoutcomes()["failed"] == 1
    records = _records(ordered)
    assert not [r for r in records if r["suite"] == "integration"]


@pytest.mark.parametrize("dist", DIST_MODES)
def test_a_worker_crash_in_a_unit_test_still_runs_the_integration_tests_last(
    ordered: pytest.Pytester, dist: str
) -> None:
    (ordered.path / "tests" / "test_crash.py").write_text(CRASHING_UNIT)

    result = _run(ordered, "--agent-integration", "--dist", dist)

    result.assert_outcomes(passed=11, failed=1)
    result.stdout.fnmatch_lines(["*crashed while running*test_crashing_unit*"])
    _assert_integration_last(_records(ordered))


def test_only_integration_tests_selected_run_one_after_another(ordered: pytest.Pytester) -> None:
    result = _run(ordered, "-m", "integration", "--dist", "load")

    result.assert_outcomes(passed=3)
    records = _records(ordered)
    assert {r["suite"] for r in records} == {"integration"}
    _assert_integration_last(records)


@pytest.mark.parametrize("args", [(), ("--agent-integration",)], ids=["default", "asked"])
def test_a_session_without_integration_tests_runs_every_unit_test(
    ordered: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, args: tuple[str, ...]
) -> None:
    (ordered.path / "tests" / "integration" / "test_services.py").unlink()
    monkeypatch.setenv("UNIT_WAIT", "0")

    result = _run(ordered, *args)

    result.assert_outcomes(passed=8)
    # --agent-integration switches xdist to loadgroup (agent_suites); nothing is held
    expected = "LoadGroupScheduling" if args else "LoadScheduling"
    result.stdout.fnmatch_lines([f"scheduling tests via {expected}"])


@pytest.mark.parametrize("dist", ["loadscope", "loadfile", "loadgroup", "each"])
def test_the_scope_modes_are_left_to_xdist_with_the_lock(
    ordered: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, dist: str
) -> None:
    monkeypatch.setenv("UNIT_WAIT", "0")

    result = _run(ordered, "--agent-integration", "--dist", dist)

    result.assert_outcomes(passed=22 if dist == "each" else 11)
    assert len(_records(ordered)) == (22 if dist == "each" else 11)
    integration = sorted((r for r in _records(ordered) if r["suite"] == "integration"), key=_start)
    for before, after in itertools.pairwise(integration):
        assert float(str(before["end"])) <= _start(after), (before, after)

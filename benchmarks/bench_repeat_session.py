"""What do the statistics of repeated runs cost a session?

A generated project of ``--tests`` tests (1,000 unless told), each marked
``@pytest.mark.agent_repeat(10, min_pass_rate=0.5, k=3)`` and failing on a fixed share of
its repetitions (so every interval, stability and pass@k/pass^k is a real one), runs in a
child pytest process with ``--agent-report`` and ``--agent-report-html``. A plugin of the
benchmark times, inside that process:

- **statistics**: every call of the code that computes them (``RepeatTally.to_dict``,
  ``RepeatTally.describe``, ``score_means``, ``entry_met``, ``repeat_html``), wherever in
  the session it runs (the tally's entry and line at each test's last repetition, the
  page at the session's end), and apart the part of it that runs at the session's end;
- **session end**: ``pytest_sessionfinish`` and ``pytest_terminal_summary`` (the report
  built, the gate, the JSON and HTML files written, the summary printed);
- **session**: from the first test's start to the process's end.

Reported: each time, and the statistics (all of them, wherever they ran) as a share of
the session's end (target: under 5%) and of the whole session. The share is a ratio
inside one process, so the machine's speed cancels out; the absolute times are the
machine's. The tests use the gate's default interval (Clopper-Pearson's); ``--interval
wilson`` runs the same with Wilson's; ``--baseline`` times a session compared with the
report of an untimed one (``--agent-baseline``) in which each test failed at another
period (flips both ways, most tests' rates changed): the paired comparison's
bootstraps and tests are then among the statistics timed (``paired_records``).

    .venv/bin/python benchmarks/bench_repeat_session.py                # 1,000 tests x 10
    .venv/bin/python benchmarks/bench_repeat_session.py --tests 100    # quick
    .venv/bin/python benchmarks/bench_repeat_session.py --baseline     # with --agent-baseline
    .venv/bin/python benchmarks/bench_repeat_session.py --json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

#: The plugin the child session loads: accumulates the time of each statistics function
#: and of the session's end, and writes them to ``$BENCH_OUT`` at exit.
TIMER_PLUGIN = """
import atexit
import functools
import json
import os
import time

import pytest

from pytest_agentctx.reports import html_repeats, repeats

TIMES = {"statistics": 0.0, "statistics_at_end": 0.0, "session_end": 0.0, "calls": 0}
START = []
DEPTH = [0]
AT_END = [False]


def timed(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        DEPTH[0] += 1
        began = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            DEPTH[0] -= 1
            if DEPTH[0] == 0:  # nested statistics calls are counted once
                spent = time.perf_counter() - began
                TIMES["statistics"] += spent
                TIMES["calls"] += 1
                if AT_END[0]:
                    TIMES["statistics_at_end"] += spent
    return wrapper


repeats.RepeatTally.to_dict = timed(repeats.RepeatTally.to_dict)
repeats.RepeatTally.describe = timed(repeats.RepeatTally.describe)
repeats.score_means = timed(repeats.score_means)
repeats.entry_met = timed(repeats.entry_met)
from pytest_agentctx.reports import gate_pairing
gate_pairing.paired_records = timed(gate_pairing.paired_records)
html_repeats.repeat_html = timed(html_repeats.repeat_html)
html_repeats.entry_met = repeats.entry_met
from pytest_agentctx.reports import html as _html
_html.repeat_html = html_repeats.repeat_html
_html.entry_met = repeats.entry_met


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    AT_END[0] = True
    began = time.perf_counter()
    try:
        return (yield)
    finally:
        TIMES["session_end"] += time.perf_counter() - began


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_terminal_summary(terminalreporter, exitstatus, config):
    began = time.perf_counter()
    try:
        return (yield)
    finally:
        TIMES["session_end"] += time.perf_counter() - began


def pytest_runtest_logstart(nodeid, location):
    if not START:
        START.append(time.perf_counter())


@atexit.register
def _write():
    TIMES["session"] = time.perf_counter() - START[0] if START else 0.0
    with open(os.environ["BENCH_OUT"], "w") as out:
        json.dump(TIMES, out)
"""

TEST_MODULE = """
import os

import pytest

COUNT = {{}}
SHIFT = int(os.environ.get("BENCH_SHIFT", "0"))


def repetition(name):
    COUNT[name] = COUNT.get(name, 0) + 1
    return COUNT[name]


{tests}
"""

ONE_TEST = """
@pytest.mark.agent_repeat(10, min_pass_rate=0.5, k=3, interval="{interval}")
def test_{index}():
    assert repetition("{index}") % (3 + ({index} + SHIFT) % 5) != 0
"""


def make_project(root: Path, tests: int, interval: str) -> None:
    """``tests`` repeated tests in files of 100; test ``i`` fails every ``3 + (i + s) % 5``th
    repetition, ``s`` the environment's ``BENCH_SHIFT`` (0 unless set)."""
    for start in range(0, tests, 100):
        body = "".join(
            ONE_TEST.format(index=index, interval=interval)
            for index in range(start, min(start + 100, tests))
        )
        (root / f"test_repeated_{start // 100:03d}.py").write_text(TEST_MODULE.format(tests=body))
    (root / "bench_timer.py").write_text(TIMER_PLUGIN)
    (root / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")


def run(tests: int, interval: str, baseline: bool) -> dict[str, float]:
    """One timed session; with ``baseline``, after an untimed one whose report is its
    ``--agent-baseline``."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        make_project(root, tests, interval)
        out = root / "times.json"
        inherited = os.environ.get("PYTHONPATH")
        path = os.pathsep.join([str(root), *([inherited] if inherited else [])])
        env = {**os.environ, "BENCH_OUT": str(out), "PYTHONPATH": path}
        env.pop("PYTEST_ADDOPTS", None)
        command = [
            sys.executable, "-m", "pytest", "-q", "-p", "bench_timer", "-p", "no:cacheprovider",
            "-p", "no:randomly", "-p", "no:deepeval", "-p", "no:rerunfailures",
            "--agent-report-html=report.html",
        ]  # fmt: skip
        if baseline:
            first = [*command, "--agent-report=base.json"]
            subprocess.run(first, cwd=root, env=env, capture_output=True, timeout=1800)
            command.append("--agent-baseline=base.json")
            env["BENCH_SHIFT"] = "1"  # each test fails at another period: rates change
        command.append("--agent-report=report.json")
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=1800
        )
        if not out.exists():
            raise SystemExit(f"the child session wrote no times:\n{done.stdout[-3000:]}")
        times: dict[str, float] = json.loads(out.read_text())
        report = json.loads((root / "report.json").read_text())
        times["tests"] = len(report["tests"])
        times["repetitions"] = sum(test["repeat"]["runs"] for test in report["tests"])
        return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=1000)
    parser.add_argument(
        "--interval", default="clopper_pearson", choices=("wilson", "clopper_pearson")
    )
    parser.add_argument(
        "--baseline", action="store_true", help="compare with a baseline (the same project)"
    )
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    options = parser.parse_args()
    times = run(options.tests, options.interval, options.baseline)
    times["share_of_session_end"] = times["statistics"] / times["session_end"]
    times["share_of_session"] = times["statistics"] / times["session"]
    if options.json:
        print(json.dumps(times, indent=2))
        return
    print(
        textwrap.dedent(
            f"""\
            {times["tests"]:.0f} tests x 10 repetitions ({times["repetitions"]:.0f} runs), \
interval {options.interval}{", against a baseline" if options.baseline else ""}
            statistics:  {times["statistics"] * 1000:8.1f} ms in {times["calls"]:.0f} calls \
({times["statistics_at_end"] * 1000:.1f} ms of it at the session's end)
            session end: {times["session_end"] * 1000:8.1f} ms
            session:     {times["session"]:8.1f} s
            statistics / session end: {times["share_of_session_end"]:.1%} (target < 5%)
            statistics / session:     {times["share_of_session"]:.2%}"""
        )
    )


if __name__ == "__main__":
    main()

"""End-to-end tests of the baseline comparison pair by pair: ``agent_repeat`` tests whose
repetitions passed in the baseline and fail now flip, and the gate fails on the drop of
the pass rate when it is past the margin and significant; the same session against itself
passes. Serially and on two xdist workers, in the session and in ``pytest-agentctx gate``,
and in the JUnit XML file.

The inner suite's behaviour is set by an environment variable: with ``SUITE_MODE=worse``,
the 2nd and 4th repetition of each of its ten tests fails (``min_pass_rate=0`` keeps every
test passing: only the gate can see the drop).
"""

from __future__ import annotations

import json
from typing import Any
from xml.etree import ElementTree

import pytest

from pytest_agentctx.cli.main import main

SUITE = """
import os
from pathlib import Path

import pytest


def repetition(name):
    path = Path(f"{name}.count")
    number = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(number))
    return (number - 1) % 5 + 1


@pytest.mark.parametrize("case", range(10))
@pytest.mark.agent_repeat(5, min_pass_rate=0.0)
def test_case(case):
    index = repetition(f"case{case}")
    if os.environ.get("SUITE_MODE") == "worse":
        assert index not in (2, 4)
"""

WORKERS = pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
QUIET = ("-p", "no:cacheprovider")
GATE = ("--agent-gate", "--agent-baseline=base.json", "--agent-report=report.json")


@pytest.fixture
def suite(agent_pytester: pytest.Pytester) -> pytest.Pytester:
    """SUITE with a baseline report (base.json) where every repetition passed."""
    agent_pytester.makepyfile(test_suite=SUITE)
    agent_pytester.runpytest(*QUIET, "--agent-report=base.json").assert_outcomes(passed=10)
    return agent_pytester


def _gate(tester: pytest.Pytester) -> Any:
    return json.loads((tester.path / "report.json").read_text())["summary"]["gate"]


@WORKERS
def test_many_flips_fail_the_gate_with_the_p_value_and_the_flip_table(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    monkeypatch.setenv("SUITE_MODE", "worse")

    result = suite.runpytest(*workers, *QUIET, *GATE)

    result.assert_outcomes(passed=10)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "agentctx gate FAILED: 1 reason",
            "  pass rate 100.0% -> 60.0% over 50 pairs (-40.0 points, 95% interval *); "
            "McNemar p = 1.9e-06 over 20 flips (20 passed -> failed, 0 failed -> passed); "
            "level 0.05, margin 0 points: the drop is past the margin and significant: the "
            "gate fails",
            "baseline: *base.json (*)",
            "paired with the baseline:",
            "flips: 20 (20 passed -> failed, 0 failed -> passed)",
            "  test_suite.py::test_case[0] (repetition 2): passed -> failed",
            "  test_suite.py::test_case[0] (repetition 4): passed -> failed",
            "  ... and 10 more",
        ]
    )
    [rate] = [record for record in _gate(suite)["records"] if record["kind"] == "pass_rate"]
    assert (rate["nodeid"], rate["verdict"], rate["baseline"], rate["now"]) == (
        None,
        "fail",
        1.0,
        0.6,
    )
    assert rate["p_value"] == pytest.approx(2 * 0.5**20)
    flips = [record for record in _gate(suite)["records"] if record["kind"] == "flip"]
    assert len(flips) == 20


@WORKERS
def test_the_same_suite_against_its_baseline_passes(
    suite: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    result = suite.runpytest(*workers, *QUIET, *GATE)

    result.assert_outcomes(passed=10)
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "agentctx gate: passed",
            "  pass rate 100.0% -> 100.0% over 50 pairs (+0.0 points, 95% interval +0.0 to "
            "+0.0); McNemar p = 1.000 over 0 flips (0 passed -> failed, 0 failed -> passed); "
            "level 0.05, margin 0 points: no drop",
        ]
    )
    assert "flips:" not in result.stdout.str()


def test_a_margin_lets_the_drop_pass_and_the_gate_command_agrees(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SUITE_MODE", "worse")
    suite.makeini("[pytest]\nagent_baseline_margin = 50\n")

    session = suite.runpytest(*QUIET, *GATE)
    capsys.readouterr()
    code = main(["gate", "report.json", "--baseline", "base.json", "--baseline-margin", "50"])
    lines = capsys.readouterr().out.splitlines()

    assert session.ret == code == 0
    assert "the drop is significant but within the margin" in lines[3]
    assert lines == session.stdout.lines[session.stdout.lines.index(lines[0]) :][: len(lines)]


def test_junit_gets_the_gates_records(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUITE_MODE", "worse")

    suite.runpytest(*QUIET, *GATE, "--junitxml=junit.xml")

    suite_element = ElementTree.parse(suite.path / "junit.xml").getroot().find("testsuite")
    assert suite_element is not None
    properties = [(p.get("name"), p.get("value")) for p in suite_element.iter("property")]
    assert properties[0] == ("agentctx.gate", "failed")
    [rate] = [json.loads(str(value)) for name, value in properties[1:]]
    assert (rate["kind"], rate["verdict"]) == ("pass_rate", "fail")


def test_flips_set_to_fail_fail_the_gate_on_each_broken_repetition(
    suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SUITE_MODE", "worse")
    suite.makeini("[pytest]\nagent_baseline_margin = 50\nagent_baseline_flips = fail\n")

    session = suite.runpytest(*QUIET, *GATE)
    capsys.readouterr()
    code = main(["gate", "report.json", "--baseline", "base.json", "--baseline-flips", "fail"])
    printed = capsys.readouterr().out

    # within the margin, the pass rate passes: the 20 broken repetitions fail the gate alone
    assert session.ret == code == 1
    session.stdout.fnmatch_lines(
        [
            "agentctx gate FAILED: 20 reasons",
            "  test_suite.py::test_case[[]0[]] (repetition 2): passed -> failed "
            "(--agent-baseline-flips=fail: a test that broke fails the gate)",
        ]
    )
    assert "agentctx gate FAILED: 20 reasons" in printed


@pytest.mark.parametrize(
    ("option", "said"),
    [
        ("--agent-baseline-level=5%", "*agent_baseline_level = '5%': expected a significance*"),
        ("--agent-baseline-margin=lots", "*agent_baseline_margin = 'lots': expected points*"),
        ("--agent-baseline-flips=always", "*agent_baseline_flips = 'always': expected report*"),
    ],
)
def test_a_bad_level_or_margin_is_a_usage_error(
    suite: pytest.Pytester, option: str, said: str
) -> None:
    result = suite.runpytest(*QUIET, *GATE, option)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {said}e.g.*"])

"""``pytest-agentctx gate``: the gate of ``--agent-gate`` over a report, after the session.

The same code as in a session (:func:`~pytest_agentctx.reports.gate.evaluate_gate` and
:func:`~pytest_agentctx.reports.gate.gate_lines`), the same tolerance options (the command
line over the project's ini file), so the same verdict, lines and exit code: 1 when the
gate fails or a test of the report failed (the session exited 1 for it), 0 otherwise.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from pytest_agentctx.cli.config import IniOptions
from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.gate import GateTolerance, evaluate_gate, gate_lines
from pytest_agentctx.reports.session_report import load_report


def _tolerance(args: argparse.Namespace, ini: IniOptions) -> GateTolerance:
    def value(name: str, default: str) -> str:
        given = getattr(args, f"baseline_{name}")
        return str(given) if given is not None else ini.get(f"agent_baseline_{name}", default)

    try:
        return GateTolerance.parse(
            tokens=value("tokens", "10"),
            iterations=value("iterations", "0"),
            trajectory=value("trajectory", "exact"),
            level=value("level", "0.05"),
            margin=value("margin", ""),
            flips=value("flips", "report"),
        )
    except ReportError as exc:
        raise UsageError(f"gate: {exc}") from None


def run_gate(args: argparse.Namespace, ini: IniOptions, out: Callable[[str], None]) -> int:
    """Print the gate's block for the report ``args.input``; the exit code."""
    report = load_report(args.input)
    tolerance = _tolerance(args, ini)
    baseline = baseline_path = None
    if args.baseline:
        # the session shows the baseline's path joined to the folder pytest started in
        baseline_path = str(Path.cwd() / args.baseline)
        try:
            baseline = load_report(baseline_path)
        except ReportError as exc:
            raise UsageError(f"--baseline: {exc}") from None
    result = evaluate_gate(
        report, baseline=baseline, baseline_path=baseline_path, tolerance=tolerance
    )
    for line in gate_lines(result, enabled=True):
        out(line)
    failed = [test["nodeid"] for test in report["tests"] if test.get("outcome") == "failed"]
    if failed:
        out(
            f"agentctx: {len(failed)} test(s) failed in {args.input} (the session that wrote "
            "it exited 1 for them): " + ", ".join(failed[:5]) + (", ..." if len(failed) > 5 else "")
        )
    return 1 if failed or not result.passed else 0

"""The CI gate: reasons to fail a session whose tests all passed.

:func:`evaluate_gate` reads a session's report (the dict of ``--agent-report``) and lists,
one :class:`~pytest_agentctx.reports.gate_records.GateRecord` each, every budget that was
exceeded, every cassette that is stale or left recordings unused, and, given a baseline
report, every test whose iterations, tool trajectory or tokens moved beyond a
:class:`GateTolerance`, and the comparison of the two sessions pair by pair
(:mod:`~pytest_agentctx.reports.gate_pairing`: the flips, the pass rate's drop, the
differences of the figures). Tests missing from the baseline are listed as new, and
baseline tests this session did not run as not run: neither is a failure.
:func:`attach_baselines` keeps the baseline's figures of each test that drifted in the
report, for the HTML page to show beside the test's own.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.gate_records import Figure, GateRecord
from pytest_agentctx.reports.record import is_agent_test
from pytest_agentctx.reports.tolerance import (
    _TRAJECTORY_MODES,
    TrajectoryMode as TrajectoryMode,
    parse_significance,
    parse_tolerance,
)


@dataclass(frozen=True)
class GateTolerance:
    """How far a test may move from its baseline before the gate fails it.

    ``tokens_percent``: allowed change of the test's total tokens, in percent of the
    baseline's (either way); ``iterations``: allowed change of its iterations, as a count;
    ``trajectory``: ``exact`` (the same tool calls in the same order), ``unordered`` (the
    same calls, any order) or ``ignore``. ``None`` ignores tokens or iterations.

    The suite's pass rate, paired with the baseline's test by test (and repetition by
    repetition), fails the gate on a drop that is both past ``margin`` (in points of pass
    rate; ``None`` for 0: any drop) and significant at ``level`` (the exact McNemar test
    of the flips). ``fail_on_flips`` fails it on any pair that passed in the baseline and
    fails now, whatever the pass rate says.
    """

    tokens_percent: float | None = 10.0
    iterations: int | None = 0
    trajectory: TrajectoryMode = "exact"
    level: float = 0.05
    margin: float | None = None
    fail_on_flips: bool = False

    def __post_init__(self) -> None:
        if self.tokens_percent is not None and not self.tokens_percent >= 0:
            raise ReportError(
                f"tokens tolerance {self.tokens_percent!r}%: expected a percentage of 0 or "
                "more, e.g. 10 (or 'ignore')."
            )
        if self.iterations is not None and self.iterations < 0:
            raise ReportError(
                f"iterations tolerance {self.iterations!r}: expected a count of 0 or more "
                "(or 'ignore')."
            )
        if self.trajectory not in _TRAJECTORY_MODES:
            raise ReportError(
                f"trajectory tolerance {self.trajectory!r}: expected one of "
                f"{', '.join(_TRAJECTORY_MODES)}."
            )
        if isinstance(self.level, bool) or not 0 < self.level < 1:
            raise ReportError(
                f"significance level {self.level!r}: expected a probability between 0 and 1, "
                "e.g. 0.05."
            )
        if self.margin is not None and not 0 <= self.margin <= 100:
            raise ReportError(
                f"pass rate margin {self.margin!r}: expected points of pass rate from 0 to "
                "100, e.g. 2 (no worse than 2 points)."
            )

    @classmethod
    def parse(
        cls,
        *,
        tokens: str,
        iterations: str,
        trajectory: str,
        level: str = "0.05",
        margin: str = "",
        flips: str = "report",
    ) -> GateTolerance:
        """A tolerance from option text: ``tokens`` like ``10`` or ``10%``, ``iterations``
        like ``1``, either ``ignore``; ``trajectory`` one of exact, unordered, ignore;
        ``level`` like ``0.05``; ``margin`` like ``2`` (points) or empty for none; ``flips``
        ``report`` or ``fail``."""
        figures = parse_tolerance(tokens=tokens, iterations=iterations, trajectory=trajectory)
        return cls(*figures, *parse_significance(level=level, margin=margin, flips=flips))

    def describe(self) -> str:
        """The tolerance in words, for the gate's summary."""
        tokens = "ignored" if self.tokens_percent is None else f"±{self.tokens_percent:g}%"
        iterations = "ignored" if self.iterations is None else f"±{self.iterations}"
        margin = "none" if self.margin is None else f"{self.margin:g} points"
        return (
            f"tokens {tokens}, iterations {iterations}, trajectory {self.trajectory}; "
            f"pass rate: level {self.level:g}, margin {margin}"
            f"{'; a pass that fails now fails the gate' if self.fail_on_flips else ''}"
        )


@dataclass(frozen=True)
class BaselineComparison:
    """What :func:`compare_reports` found: ``drifts`` (one line per change beyond the
    tolerance: failures), ``new`` agent tests (not in the baseline) and ``not_run`` agent
    tests (in the baseline only), each as node ids; ``records``, the drifts as
    :class:`~pytest_agentctx.reports.gate_records.GateRecord`."""

    drifts: tuple[str, ...] = ()
    new: tuple[str, ...] = ()
    not_run: tuple[str, ...] = ()
    records: tuple[GateRecord, ...] = ()


class _Drift(NamedTuple):
    """One change beyond the tolerance: the measure, the words, and its figures."""

    measure: str
    text: str
    baseline: Figure
    now: Figure
    allowed: Figure


def _names(trajectory: Sequence[str]) -> str:
    return "[" + ", ".join(trajectory) + "]"


def _trajectory_text(before: Sequence[str], after: Sequence[str], mode: TrajectoryMode) -> str:
    if mode == "unordered":
        lost = Counter(before) - Counter(after)
        gained = Counter(after) - Counter(before)
        changes = [f"+{name}" for name in sorted(gained.elements())]
        changes += [f"-{name}" for name in sorted(lost.elements())]
        return f"tool calls changed (any order): {' '.join(changes)}"
    if len(before) <= 6 and len(after) <= 6:
        return f"tool trajectory {_names(before)} -> {_names(after)}"
    index = next(
        (i for i, (a, b) in enumerate(zip(before, after, strict=False)) if a != b),
        min(len(before), len(after)),
    )
    was = before[index] if index < len(before) else "(end)"
    now = after[index] if index < len(after) else "(end)"
    return (
        f"tool trajectory differs from call #{index + 1}: {was} -> {now} "
        f"({len(before)} calls before, {len(after)} now)"
    )


def _trajectory_drift(
    before: Sequence[str], after: Sequence[str], mode: TrajectoryMode
) -> _Drift | None:
    if mode == "ignore" or list(before) == list(after):
        return None
    if mode == "unordered" and Counter(before) == Counter(after):
        return None
    text = _trajectory_text(before, after, mode)
    return _Drift("trajectory", text, list(before), list(after), mode)


def _number(value: float) -> str:
    """A figure as it reads best: ``25`` for a whole number, ``25.5`` (two places) else."""
    return f"{value:g}" if float(value).is_integer() else f"{value:.2f}".rstrip("0")


def _iterations_drift(was: float, now: float, tolerance: GateTolerance) -> _Drift | None:
    if tolerance.iterations is None or abs(now - was) <= tolerance.iterations:
        return None
    text = f"iterations {_number(was)} -> {_number(now)} (allowed change ±{tolerance.iterations})"
    return _Drift("iterations", text, was, now, tolerance.iterations)


def _tokens_drift(was: float, now: float, tolerance: GateTolerance) -> _Drift | None:
    if tolerance.tokens_percent is None or was == now:
        return None
    change = (now - was) / was * 100 if was else float("inf")
    if abs(change) <= tolerance.tokens_percent:
        return None
    shown = "new usage" if was == 0 else f"{change:+.1f}%"
    text = (
        f"tokens {_number(was)} -> {_number(now)} ({shown}, allowed ±{tolerance.tokens_percent:g}%)"
    )
    return _Drift("total_tokens", text, was, now, f"±{tolerance.tokens_percent:g}%")


def _record(nodeid: str, drift: _Drift, label: str | None = None) -> GateRecord:
    where = nodeid if label is None else f"{nodeid} ({label})"
    measure = drift.measure if label is None else f"{drift.measure} ({label})"
    return GateRecord(
        nodeid=nodeid,
        kind="drift",
        measure=measure,
        message=f"{where}: {drift.text}",
        baseline=drift.baseline,
        now=drift.now,
        allowed=drift.allowed,
    )


def _drifts(
    nodeid: str, before: Mapping[str, Any], after: Mapping[str, Any], tolerance: GateTolerance
) -> list[GateRecord]:
    found = [
        _iterations_drift(before["iterations"], after["iterations"], tolerance),
        _trajectory_drift(before["trajectory"], after["trajectory"], tolerance.trajectory),
        _tokens_drift(before["total_tokens"], after["total_tokens"], tolerance),
    ]
    return [_record(nodeid, drift) for drift in found if drift is not None]


def _per_run(test: Mapping[str, Any]) -> list[Mapping[str, Any]] | None:
    """The figures of each run of an ``agent_repeat`` test, if its report has them."""
    repeat = test.get("repeat")
    per_run = repeat.get("per_run") if isinstance(repeat, Mapping) else None
    return list(per_run) if per_run else None


def _most_common(trajectories: Sequence[Sequence[str]]) -> list[str]:
    """The trajectory most runs took (the first of those, on a tie)."""
    keys: list[tuple[str, ...]] = [tuple(trajectory) for trajectory in trajectories]
    counts = Counter(keys)
    first = {key: -index for index, key in reversed(list(enumerate(keys)))}

    def rank(key: tuple[str, ...]) -> tuple[int, int]:
        return counts[key], first[key]

    most: tuple[str, ...] = max(keys, key=rank)
    return list(most)


def _test_drifts(
    nodeid: str, before: Mapping[str, Any], after: Mapping[str, Any], tolerance: GateTolerance
) -> list[GateRecord]:
    """The drift of one test: of its totals, or, for an ``agent_repeat`` test whose two
    reports both hold per-run figures, of the mean run and the largest run (iterations and
    tokens) and of the trajectory most runs took, so the tolerances apply to one run
    whatever the number of repetitions."""
    was, now = _per_run(before), _per_run(after)
    if was is None or now is None:
        return _drifts(nodeid, before["stats"], after["stats"], tolerance)
    records: list[GateRecord] = []
    for label, pick in (("mean run", statistics.fmean), ("largest run", max)):
        for name, check in (
            ("iterations", _iterations_drift),
            ("total_tokens", _tokens_drift),
        ):
            drift = check(
                pick([run[name] for run in was]), pick([run[name] for run in now]), tolerance
            )
            if drift is not None:
                records.append(_record(nodeid, drift, label))
    trajectory = _trajectory_drift(
        _most_common([run["trajectory"] for run in was]),
        _most_common([run["trajectory"] for run in now]),
        tolerance.trajectory,
    )
    if trajectory is not None:
        records.append(_record(nodeid, trajectory, "the trajectory most runs took"))
    return records


def _unmeasured(
    nodeid: str, before: Mapping[str, Any], after: Mapping[str, Any]
) -> GateRecord | None:
    """The failure of a baseline entry that cannot be compared: an agent test with no
    measured run in this session, or in the baseline (nothing to compare either way)."""
    if not is_agent_test(before) and not is_agent_test(after):
        return None
    had = len(before.get("runs") or ())
    if not after.get("runs"):
        message = (
            f"{nodeid}: made no measured model call (the baseline has {had} run(s)): the "
            "agent did not run, or its model calls did not go through httpx/httpx2 where the "
            "plugin measures them; check the test, then write a new baseline with "
            "--agent-report=PATH if the change is intended"
        )
        return GateRecord(nodeid, "unmeasured", "runs", message, baseline=had, now=0)
    if not had:
        message = (
            f"{nodeid}: the baseline has no measured run for this test (written before its "
            "runs were measured, or the agent did not run then): nothing to compare with; "
            "write a new baseline with --agent-report=PATH"
        )
        now = len(after.get("runs") or ())
        return GateRecord(nodeid, "unmeasured", "runs", message, baseline=0, now=now)
    return None


def _compare(
    report: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: GateTolerance
) -> tuple[dict[str, list[GateRecord]], list[str], list[str]]:
    before = {test["nodeid"]: test for test in baseline["tests"]}
    now = {test["nodeid"]: test for test in report["tests"]}
    drifts: dict[str, list[GateRecord]] = {}
    new: list[str] = []
    for nodeid in sorted(now):
        test = now[nodeid]
        old = before.get(nodeid)
        if old is None:
            if is_agent_test(test):
                new.append(nodeid)
            continue
        if "skipped" in (test.get("outcome"), old.get("outcome")):
            continue
        unmeasured = _unmeasured(nodeid, old, test)
        records = [unmeasured] if unmeasured else _test_drifts(nodeid, old, test, tolerance)
        if records:
            drifts[nodeid] = records
    not_run = [
        nodeid for nodeid in sorted(before) if nodeid not in now and is_agent_test(before[nodeid])
    ]
    return drifts, new, not_run


def compare_reports(
    report: Mapping[str, Any],
    baseline: Mapping[str, Any],
    tolerance: GateTolerance | None = None,
) -> BaselineComparison:
    """Compare each test of ``report`` with the same test (by node id) in ``baseline``.

    Tests skipped in either report are not compared; tests that ran no agent and had no
    cassette are neither listed as new nor as not run.
    """
    drifts, new, not_run = _compare(report, baseline, tolerance or GateTolerance())
    records = tuple(record for nodeid in sorted(drifts) for record in drifts[nodeid])
    lines = tuple(record.message for record in records)
    return BaselineComparison(lines, tuple(new), tuple(not_run), records)


#: The baseline's figures a drifted test keeps (``baseline.stats`` in the report).
_BASELINE_FIGURES = (
    "runs",
    "iterations",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "cost_usd",
    "trajectory",
)


def attach_baselines(
    report: dict[str, Any], baseline: Mapping[str, Any], tolerance: GateTolerance | None = None
) -> int:
    """Give each test of ``report`` that drifted from ``baseline`` (beyond ``tolerance``,
    or that cannot be compared with it) a ``baseline`` entry: the baseline's figures
    (``{"stats": {"iterations": ..., "trajectory": [...], ...}}``), so the HTML page,
    rendered from the report alone, shows both runs side by side. Returns how many tests
    got one."""
    drifts, _, _ = _compare(report, baseline, tolerance or GateTolerance())
    before = {test["nodeid"]: test for test in baseline["tests"]}
    for test in report["tests"]:
        if test["nodeid"] not in drifts:
            continue
        stats = before[test["nodeid"]].get("stats") or {}
        test["baseline"] = {
            "stats": {name: stats.get(name) for name in _BASELINE_FIGURES if name in stats}
        }
    return len(drifts)


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict: its ``records``
    (:class:`~pytest_agentctx.reports.gate_records.GateRecord`, the failing ones first in
    node id order, then the session-wide ones), and, when a baseline was given, its path
    (``baseline``, for the summary) and the ``tolerance`` it was compared with.

    ``failures`` (each failing record's message), ``new`` and ``not_run`` (node ids) are
    read from the records."""

    records: tuple[GateRecord, ...] = ()
    baseline: str | None = None
    tolerance: GateTolerance | None = None

    @property
    def passed(self) -> bool:
        return not any(record.fails for record in self.records)

    @property
    def failures(self) -> tuple[str, ...]:
        """The message of each failing record, in order."""
        return tuple(record.message for record in self.records if record.fails)

    @property
    def new(self) -> tuple[str, ...]:
        """The agent tests not in the baseline."""
        return tuple(r.nodeid for r in self.records if r.kind == "new" and r.nodeid)

    @property
    def not_run(self) -> tuple[str, ...]:
        """The baseline's agent tests this session did not run."""
        return tuple(r.nodeid for r in self.records if r.kind == "not_run" and r.nodeid)

    def to_dict(self, *, enabled: bool) -> dict[str, Any]:
        """``summary.gate`` of the report: whether the gate was ``enabled``, whether it
        ``passed``, its ``records`` and the ``failures`` (their messages)."""
        return {
            "enabled": enabled,
            "passed": self.passed,
            "failures": list(self.failures),
            "records": [record.to_dict() for record in self.records],
        }


def _figure(value: Any) -> str:
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:.8f}".rstrip("0")
    return str(value)


def _record_command(nodeid: str) -> str:
    return f'pytest --agent-record "{nodeid}"'


def _budget_records(nodeid: str, budget: Mapping[str, Any] | None) -> list[GateRecord]:
    records: list[GateRecord] = []
    if (budget or {}).get("unmeasured"):
        message = (
            f"{nodeid}: budget not measured: the test made no model call the plugin saw "
            "(see the test's failure for what to check)"
        )
        records.append(GateRecord(nodeid, "unmeasured", "budget", message))
    for exceeded in (budget or {}).get("exceeded", ()):
        name, measured, allowed = exceeded["name"], exceeded["measured"], exceeded["allowed"]
        message = (
            f"{nodeid}: over budget: {name} measured {_figure(measured)}, allowed "
            f"{_figure(allowed)}"
        )
        records.append(GateRecord(nodeid, "budget", name, message, now=measured, allowed=allowed))
    return records


def _cassette_record(nodeid: str, cassette: Mapping[str, Any] | None) -> GateRecord | None:
    if cassette is None or cassette["status"] not in ("stale", "unused"):
        return None
    unused = cassette.get("unused") or []
    listed = ", ".join(f"#{i}" for i in unused[:10]) + (", ..." if len(unused) > 10 else "")
    if cassette["status"] == "unused":
        what = f"left {len(unused)} recorded interaction(s) unused ({listed})"
    elif unused:
        what = f"is stale: {len(unused)} recorded interaction(s) never used ({listed})"
    else:
        what = "is stale: the agent sent requests it has no recording for"
    message = (
        f"{nodeid}: cassette {cassette['path']} {what}; re-record with {_record_command(nodeid)}"
    )
    return GateRecord(
        nodeid, "cassette", "cassette", message, now=cassette["status"], allowed="replayed"
    )


def _own_failures(test: Mapping[str, Any]) -> list[GateRecord]:
    nodeid = test["nodeid"]
    records = _budget_records(nodeid, test.get("budget"))
    cassette = _cassette_record(nodeid, test.get("cassette"))
    return records if cassette is None else [*records, cassette]


def evaluate_gate(
    report: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    baseline_path: str | None = None,
    tolerance: GateTolerance | None = None,
) -> GateResult:
    """Every reason the gate fails ``report``: budgets, cassettes, and drift from
    ``baseline`` (if given), in node id order; then, with a baseline, the new and not-run
    tests and the paired comparison of the two sessions
    (:func:`~pytest_agentctx.reports.gate_pairing.paired_records`)."""
    by_test: dict[str, list[GateRecord]] = {}
    for test in report["tests"]:
        by_test.setdefault(test["nodeid"], []).extend(_own_failures(test))
    if baseline is None:
        records = tuple(record for nodeid in sorted(by_test) for record in by_test[nodeid])
        return GateResult(records)
    tolerance = tolerance or GateTolerance()
    drifts, new, not_run = _compare(report, baseline, tolerance)
    for nodeid, found in drifts.items():
        by_test.setdefault(nodeid, []).extend(found)
    from pytest_agentctx.reports.gate_pairing import paired_records

    records = tuple(
        [
            *(record for nodeid in sorted(by_test) for record in by_test[nodeid]),
            *(GateRecord(nodeid, "new", "test", nodeid, "info") for nodeid in new),
            *(GateRecord(nodeid, "not_run", "test", nodeid, "info") for nodeid in not_run),
            *paired_records(report, baseline, tolerance),
        ]
    )
    return GateResult(records, baseline=baseline_path, tolerance=tolerance)


def _listed(lines: list[str], title: str, items: Sequence[str], limit: int) -> None:
    if not items:
        return
    lines.append(f"{title}: {len(items)}")
    lines.extend(f"  {item}" for item in items[:limit])
    if len(items) > limit:
        lines.append(f"  ... and {len(items) - limit} more")


def gate_lines(result: GateResult, *, enabled: bool, limit: int = 10) -> list[str]:
    """The gate's summary block: its verdict, then every failure, new and not-run test,
    and the comparison with the baseline pair by pair (its flips at most ``limit``)."""
    lines: list[str] = []
    failures = result.failures
    if not failures:
        lines.append("agentctx gate: passed" if enabled else "agentctx: no gate failures")
    else:
        count = len(failures)
        lines.append(
            f"agentctx gate FAILED: {_reasons(count)}"
            if enabled
            else f"agentctx: the gate would fail ({_reasons(count)}; it is off: add "
            "--agent-gate to enforce it)"
        )
        lines.extend(f"  {line}" for line in failures)
    if result.baseline is not None and result.tolerance is not None:
        lines.append(f"baseline: {result.baseline} ({result.tolerance.describe()})")
    _listed(lines, "new (not in the baseline, not compared)", result.new, limit)
    _listed(lines, "in the baseline but not run", result.not_run, limit)
    from pytest_agentctx.reports.gate_pairing import paired_lines

    lines.extend(paired_lines(result.records, limit=limit))
    return lines


def _reasons(count: int) -> str:
    return f"{count} reason" if count == 1 else f"{count} reasons"

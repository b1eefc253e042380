"""The baseline comparison pair by pair: the gate's records of a session held against its
baseline test by test, and, for ``agent_repeat`` tests, repetition by repetition.

:func:`paired_records` pairs every test both reports ran (skipped on neither side) by node
id, and the repetitions of an ``agent_repeat`` test by their index (``repeat.outcomes``
on both sides; the test's own outcome otherwise), and gives:

- one ``flip`` record per pair that passed on one side and failed on the other;
- one ``pass_rate`` record: the pass rates over the pairs, the paired bootstrap interval
  of their difference, and the exact McNemar p-value of the flips; it fails when the drop
  is both past the margin (:attr:`~pytest_agentctx.reports.gate.GateTolerance.margin`,
  in points; none is 0) and significant at the level, and says which of the two held;
- with a margin, one ``margin`` record: the non-inferiority test of the pass rate
  ("no worse than 2 points") and the equivalence test (TOST);
- one ``difference`` record per figure (iterations, tokens, cost, per run) of the agent
  tests measured on both sides: the means and the paired bootstrap interval of the change.

The bootstrap is seeded: the same reports give the same records, byte for byte.
:func:`paired_lines` renders the records for the gate's summary.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pytest_agentctx.reports.figures import cache_read_share
from pytest_agentctx.reports.gate_records import GateRecord
from pytest_agentctx.reports.pairing import (
    check_drop,
    flips,
    mcnemar_exact,
    non_inferior,
    paired_bootstrap_difference,
)
from pytest_agentctx.reports.record import is_agent_test

if TYPE_CHECKING:
    from pytest_agentctx.reports.gate import GateTolerance

_OUTCOMES = ("passed", "failed")
#: The bootstrap's resamples of each interval of the comparison: 1,000, where a percentile
#: interval's bounds move by about a tenth of its width from one seed to another, and a
#: session's end does not wait on a comparison of many tests.
RESAMPLES = 1000
#: The figures compared per run: (the key of ``stats``, its name in the summary).
_FIGURES = (
    ("iterations", "iterations"),
    ("total_tokens", "tokens"),
    ("cost_usd", "cost"),
    ("cache_read_share", "cache read share"),
)


def _pairs(
    report: Mapping[str, Any], baseline: Mapping[str, Any]
) -> dict[str, tuple[str, int | None, bool, bool]]:
    """Each pair: its label, to (node id, repetition from 1 or ``None``, passed before,
    passed now), in node id then repetition order."""
    before = {test["nodeid"]: test for test in baseline["tests"]}
    pairs: dict[str, tuple[str, int | None, bool, bool]] = {}
    for test in sorted(report["tests"], key=lambda test: str(test["nodeid"])):
        nodeid = test["nodeid"]
        old = before.get(nodeid)
        if old is None:
            continue
        was, now = _repetitions(old), _repetitions(test)
        if was is not None and now is not None:
            for index, (a, b) in enumerate(zip(was, now, strict=False), start=1):
                if a in _OUTCOMES and b in _OUTCOMES:
                    label = f"{nodeid} (repetition {index})"
                    pairs[label] = (nodeid, index, a == "passed", b == "passed")
        elif old.get("outcome") in _OUTCOMES and test.get("outcome") in _OUTCOMES:
            pairs[nodeid] = (nodeid, None, old["outcome"] == "passed", test["outcome"] == "passed")
    return pairs


def _repetitions(test: Mapping[str, Any]) -> list[object] | None:
    repeat = test.get("repeat")
    outcomes = repeat.get("outcomes") if isinstance(repeat, Mapping) else None
    return list(outcomes) if isinstance(outcomes, list) and outcomes else None


def _points(rate: float) -> str:
    return f"{rate * 100:+.1f}"


def _percent(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _p(value: float) -> str:
    return f"{value:.2g}" if value < 0.001 else f"{value:.3f}"


def _flip_records(
    pairs: Mapping[str, tuple[str, int | None, bool, bool]], *, fail: bool = False
) -> list[GateRecord]:
    """One record per flip; with ``fail`` (``--agent-baseline-flips=fail``) each pass that
    became a failure fails the gate on its own."""
    records: list[GateRecord] = []
    for label, (nodeid, index, was, now) in pairs.items():
        if was == now:
            continue
        old, new = ("passed", "failed") if was else ("failed", "passed")
        measure = "outcome" if index is None else f"outcome (repetition {index})"
        verdict: Literal["fail", "info"] = "fail" if fail and was else "info"
        message = f"{label}: {old} -> {new}"
        if verdict == "fail":
            message += " (--agent-baseline-flips=fail: a test that broke fails the gate)"
        records.append(GateRecord(nodeid, "flip", measure, message, verdict, old, new))
    return records


_HELD = {
    "both": "the drop is past the margin and significant: the gate fails",
    "past tolerance": "the drop is past the margin but not significant: it may be chance",
    "significant": "the drop is significant but within the margin",
    "neither": "the drop is within the margin and not significant",
}


def _by_test(
    pairs: Mapping[str, tuple[str, int | None, bool, bool]],
) -> tuple[list[float], list[float]]:
    """Each test's pass rate over its paired repetitions, before and now (in node id
    order): what the interval and the margin resample and test, since a test's repetitions
    are not independent of each other (an easy test passes them all)."""
    counts: dict[str, list[int]] = {}
    for nodeid, _, was, now in pairs.values():
        count = counts.setdefault(nodeid, [0, 0, 0])
        count[0] += 1
        count[1] += was
        count[2] += now
    return (
        [passed / n for n, passed, _ in counts.values()],
        [passed / n for n, _, passed in counts.values()],
    )


def _pass_rate_record(
    was: Sequence[float],
    now: Sequence[float],
    by_test: tuple[Sequence[float], Sequence[float]],
    broke: int,
    fixed: int,
    tolerance: GateTolerance,
) -> GateRecord:
    n = len(was)
    before, after = math.fsum(was) / n, math.fsum(now) / n
    # the tests are resampled, each with its repetitions: they move together
    interval = paired_bootstrap_difference(
        *by_test, confidence=1 - tolerance.level, resamples=RESAMPLES
    )
    p_value = mcnemar_exact(broke, fixed)
    margin = tolerance.margin or 0.0
    check = check_drop(before - after, margin / 100, p_value, tolerance.level)
    held = "no drop" if before <= after else _HELD[check.held]
    message = (
        f"pass rate {_percent(before)} -> {_percent(after)} over {n} pairs "
        f"({_points(after - before)} points, {1 - tolerance.level:.0%} interval "
        f"{_points(interval.low)} to {_points(interval.high)}); McNemar p = {_p(p_value)} "
        f"over {broke + fixed} flips ({broke} passed -> failed, {fixed} failed -> passed); "
        f"level {tolerance.level:g}, margin {margin:g} points: {held}"
    )
    return GateRecord(
        nodeid=None,
        kind="pass_rate",
        measure="pass_rate",
        message=message,
        verdict="fail" if check.fails else "pass",
        baseline=before,
        now=after,
        allowed=margin,
        interval=(interval.low, interval.high),
        p_value=p_value,
    )


def _margin_record(
    was: Sequence[float], now: Sequence[float], tolerance: GateTolerance
) -> GateRecord | None:
    if tolerance.margin is None or len(was) < 2:
        return None
    found = non_inferior(was, now, tolerance.margin / 100, alpha=tolerance.level)
    message = (
        f"no worse than {tolerance.margin:g} points: "
        f"{'holds' if found.holds else 'not shown'} (one-sided {1 - tolerance.level:.0%} "
        f"lower bound of the change {_points(found.lower_bound)} points, p = "
        f"{_p(found.p_value)}); within ±{tolerance.margin:g} points (TOST): "
        f"{'yes' if found.equivalent else 'not shown'}"
    )
    return GateRecord(
        nodeid=None,
        kind="margin",
        measure="pass_rate",
        message=message,
        verdict="info",
        baseline=math.fsum(was) / len(was),
        now=math.fsum(now) / len(now),
        allowed=tolerance.margin,
        p_value=found.p_value,
    )


def _cache_read_share(stats: Mapping[str, Any]) -> float | None:
    """The share of a test's input tokens read from the prompt cache, when its runs
    reported cache figures (``None`` else: nothing to compare)."""
    counts = [stats.get(key) for key in ("uncached_input_tokens", "cache_read_tokens")]
    if counts[0] is None or not all(isinstance(c, int | None) for c in counts):
        return None
    read, written = stats.get("cache_read_tokens") or 0, stats.get("cache_write_tokens") or 0
    return cache_read_share(counts[0], read, written)


def _per_run(test: Mapping[str, Any], name: str) -> float | None:
    stats = test.get("stats")
    if not isinstance(stats, Mapping) or not stats.get("runs"):
        return None
    if name == "cache_read_share":  # a share of the test's input, not a sum of its runs
        return _cache_read_share(stats)
    value = stats.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) / float(stats["runs"])


def _figure(value: float, name: str, *, signed: bool = False) -> str:
    """A mean (``signed``: a change) as it reads: dollars to six places for cost."""
    sign = ("+" if value >= 0 else "-") if signed else ("-" if value < 0 else "")
    if name == "cache read share":
        return f"{sign}{abs(value) * 100:.1f}{' points' if signed else '%'}"
    return f"{sign}${abs(value):.6f}" if name == "cost" else f"{sign}{abs(value):.1f}"


def _difference_records(
    report: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: GateTolerance
) -> list[GateRecord]:
    before = {test["nodeid"]: test for test in baseline["tests"]}
    both = [
        (before[test["nodeid"]], test)
        for test in sorted(report["tests"], key=lambda test: str(test["nodeid"]))
        if test["nodeid"] in before
        and is_agent_test(test)
        and "skipped" not in (test.get("outcome"), before[test["nodeid"]].get("outcome"))
    ]
    records: list[GateRecord] = []
    for key, name in _FIGURES:
        figures = [(_per_run(old, key), _per_run(new, key)) for old, new in both]
        paired = [(a, b) for a, b in figures if a is not None and b is not None]
        if not paired:
            continue
        was, now = [a for a, _ in paired], [b for _, b in paired]
        interval = paired_bootstrap_difference(
            was, now, confidence=1 - tolerance.level, resamples=RESAMPLES
        )
        mean_was, mean_now = math.fsum(was) / len(was), math.fsum(now) / len(now)
        message = (
            f"{name}{' of a test' if key == 'cache_read_share' else ' per run'}: mean "
            f"{_figure(mean_was, name)} -> {_figure(mean_now, name)} "
            f"({_figure(mean_now - mean_was, name, signed=True)}, {1 - tolerance.level:.0%} "
            f"interval {_figure(interval.low, name, signed=True)} to "
            f"{_figure(interval.high, name, signed=True)}) over {len(paired)} tests"
        )
        records.append(
            GateRecord(
                nodeid=None,
                kind="difference",
                measure=key,
                message=message,
                verdict="info",
                baseline=mean_was,
                now=mean_now,
                interval=(interval.low, interval.high),
            )
        )
    return records


def paired_records(
    report: Mapping[str, Any], baseline: Mapping[str, Any], tolerance: GateTolerance
) -> list[GateRecord]:
    """The records of the comparison of ``report`` with ``baseline`` pair by pair (see the
    module's docstring): the flips, the pass rate, the margin, the figures' differences.
    None when no test ran on both sides."""
    pairs = _pairs(report, baseline)
    if not pairs:
        return []
    found = flips(
        {label: pair[2] for label, pair in pairs.items()},
        {label: pair[3] for label, pair in pairs.items()},
    )
    was = [1.0 if pair[2] else 0.0 for pair in pairs.values()]
    now = [1.0 if pair[3] else 0.0 for pair in pairs.values()]
    by_test = _by_test(pairs)
    records = [
        *_flip_records(pairs, fail=tolerance.fail_on_flips),
        _pass_rate_record(was, now, by_test, len(found.broke), len(found.fixed), tolerance),
    ]
    margin = _margin_record(*by_test, tolerance)
    if margin is not None:
        records.append(margin)
    return records + _difference_records(report, baseline, tolerance)


def paired_lines(records: Sequence[GateRecord], *, limit: int = 10) -> list[str]:
    """The comparison's block of the gate's summary, from its records: the pass rate (a
    failing one is also among the gate's failures), the margin, the differences, then the
    flip table (at most ``limit`` flips)."""
    compared = [r for r in records if r.kind in ("pass_rate", "margin", "difference")]
    lines = ["paired with the baseline:"] if compared else []
    lines.extend(f"  {record.message}" for record in compared)
    flipped = [record for record in records if record.kind == "flip"]
    if flipped:
        broke = sum(record.baseline == "passed" for record in flipped)
        lines.append(
            f"flips: {len(flipped)} ({broke} passed -> failed, {len(flipped) - broke} "
            "failed -> passed)"
        )
        lines.extend(f"  {record.message}" for record in flipped[:limit])
        if len(flipped) > limit:
            lines.append(f"  ... and {len(flipped) - limit} more")
    return lines

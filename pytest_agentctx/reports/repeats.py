"""The pass rate of an ``agent_repeat`` test and the gate on it, free of pytest.

:class:`RepeatSpec` reads the marker's options (runs, ``min_pass_rate``, the ``rule``, the
``interval`` method and its ``confidence``, the ``k`` of pass@k and pass^k, a pass^k
target); :class:`RepeatTally` counts the repetitions' outcomes as they come in and gives
the rate, its interval, the test's stability, the pass@k and pass^k estimates, and whether
the test passes (:attr:`RepeatTally.met`). :func:`score_means` gives the judges' scores of
the repetitions a mean with a bootstrap interval. docs/statistics.md explains each figure.

The gate (``rule="lower_bound"``, the default) holds the interval's lower bound against
``min_pass_rate``: a test passes when the runs show, at the interval's confidence, that
its rate is at least that. ``rule="point"`` holds the rate itself against it, as
``agent_repeat`` did before it had intervals. ``min_pass_rate=1.0`` (the default) means
every run passes, under either rule: no finite number of runs gives a lower bound of 1.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal, cast

from pytest_agentctx.reports.errors import RepeatError
from pytest_agentctx.reports.estimators import (
    Interval,
    Stability,
    bootstrap_mean,
    clopper_pearson,
    pass_at_k,
    pass_hat_k,
    stability,
    wilson,
)

if TYPE_CHECKING:
    from pytest_agentctx.reports.schema import RepeatEntry, ScoreEntry

Rule = Literal["lower_bound", "point"]
Method = Literal["wilson", "clopper_pearson"]
Outcome = Literal["passed", "failed", "skipped"]

#: The gate's rules: the interval's lower bound (the default) or the rate itself.
RULES: tuple[Rule, ...] = ("lower_bound", "point")
#: The interval of a pass rate, by the name ``agent_repeat(interval=...)`` takes.
METHODS: Mapping[Method, Callable[[int, int, float], Interval]] = {
    "wilson": wilson,
    "clopper_pearson": clopper_pearson,
}
#: The interval of a repeated test's pass rate unless the marker names one: the exact
#: interval, whose coverage is never below its confidence (Wilson's falls to about 90% for
#: rates close to 1: benchmarks/bench_stats.py), so the gate's lower bound is sound.
DEFAULT_METHOD: Method = "clopper_pearson"
#: The confidence of a repeated test's pass-rate interval unless the marker gives one.
CONFIDENCE = 0.95
#: The most runs :meth:`RepeatTally.runs_needed` looks at.
_MOST_RUNS = 1_000_000
#: What a rate may fall short of its target by and still meet it (rounding).
_SLACK = 1e-9

_EXAMPLE = "e.g. @pytest.mark.agent_repeat(20, min_pass_rate=0.8)"
_OPTIONS = frozenset(
    {"n", "runs", "min_pass_rate", "rule", "interval", "confidence", "k", "min_pass_hat_k"}
)


def _share(value: object, name: str, where: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise RepeatError(
            f"{where}: agent_repeat {name}={value!r}; expected a number from 0 to 1 ({what}), "
            f"{_EXAMPLE}."
        )
    return float(value)


def _choice(value: object, name: str, choices: Sequence[str], where: str) -> str:
    if value not in choices:
        listed = ", ".join(repr(choice) for choice in choices)
        raise RepeatError(
            f"{where}: agent_repeat {name}={value!r}; expected one of {listed} "
            f"(docs/statistics.md), {_EXAMPLE}."
        )
    return cast("str", value)


def _ks(value: object, runs: int, where: str) -> tuple[int, ...]:
    """``k=3`` or ``k=(1, 3)``: each a whole number from 1 to the number of runs."""
    values = value if isinstance(value, list | tuple) else (value,)
    for k in values:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= runs:
            raise RepeatError(
                f"{where}: agent_repeat k={value!r} with {runs} runs; expected a whole number "
                f"from 1 to {runs}, or several (k=(1, 3)): pass@k and pass^k of k runs need "
                "at least k runs. e.g. @pytest.mark.agent_repeat(10, k=3)."
            )
    return tuple(sorted(set(cast("Sequence[int]", values))))


def _confidence(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1:
        raise RepeatError(
            f"{where}: agent_repeat confidence={value!r}; expected a level between 0 and 1 "
            "(0.95 for a 95% interval), e.g. @pytest.mark.agent_repeat(20, confidence=0.9)."
        )
    return float(value)


@dataclass(frozen=True)
class RepeatSpec:
    """``@pytest.mark.agent_repeat(runs, min_pass_rate=1.0, *, rule="lower_bound",
    interval="clopper_pearson", confidence=0.95, k=(), min_pass_hat_k=None)``: run a test ``runs``
    times; it passes when the runs (those not skipped) meet ``min_pass_rate`` under ``rule``
    and, when given, the pass^k target ``min_pass_hat_k`` (``k`` a single number then)."""

    runs: int
    min_pass_rate: float = 1.0
    rule: Rule = "lower_bound"
    interval: Method = DEFAULT_METHOD
    confidence: float = CONFIDENCE
    k: tuple[int, ...] = ()
    min_pass_hat_k: float | None = None

    @classmethod
    def from_marker(
        cls, args: Sequence[object], kwargs: Mapping[str, object], *, where: str
    ) -> RepeatSpec:
        """Read the marker's arguments; a bad one is a :class:`RepeatError` naming ``where``."""
        unknown = sorted(set(kwargs) - _OPTIONS)
        if unknown or len(args) > 2:
            given = ", ".join([*map(repr, args), *(f"{k}={v!r}" for k, v in kwargs.items())])
            raise RepeatError(
                f"{where}: agent_repeat({given}) is not understood; it takes the number of "
                "runs, min_pass_rate, and by name rule, interval, confidence, k and "
                f"min_pass_hat_k (docs/suites.md#repeated-runs), {_EXAMPLE}."
            )
        runs: object = args[0] if args else kwargs.get("runs", kwargs.get("n"))
        if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
            raise RepeatError(
                f"{where}: agent_repeat run count {runs!r}; expected a whole number >= 1, "
                f"{_EXAMPLE}."
            )
        target = kwargs.get("min_pass_hat_k")
        ks = _ks(kwargs["k"], runs, where) if "k" in kwargs else ()
        if target is not None:
            target = _share(target, "min_pass_hat_k", where, "the pass^k to reach")
            if len(ks) != 1:
                raise RepeatError(
                    f"{where}: agent_repeat min_pass_hat_k={target!r} with k={kwargs.get('k')!r};"
                    " expected one k, the number of runs in a row that must all pass, e.g. "
                    "@pytest.mark.agent_repeat(20, k=3, min_pass_hat_k=0.5)."
                )
        default_rate = 0.0 if target is not None else 1.0  # a pass^k target alone
        rate: object = args[1] if len(args) > 1 else kwargs.get("min_pass_rate", default_rate)
        return cls(
            runs,
            _share(rate, "min_pass_rate", where, "the share of runs that must pass"),
            cast("Rule", _choice(kwargs.get("rule", "lower_bound"), "rule", RULES, where)),
            cast(
                "Method",
                _choice(kwargs.get("interval", DEFAULT_METHOD), "interval", tuple(METHODS), where),
            ),
            _confidence(kwargs.get("confidence", CONFIDENCE), where),
            ks,
            target,
        )


def _percent(value: float) -> str:
    return f"{value:.0%}"


@dataclass
class RepeatTally:
    """The outcomes of the repetitions of one test, as their reports come in."""

    spec: RepeatSpec
    outcomes: dict[int, Outcome] = field(default_factory=dict)
    #: The interval of each (passes, runs) asked so far: Clopper-Pearson's bisects.
    _intervals: dict[tuple[int, int], Interval] = field(
        default_factory=dict, repr=False, compare=False
    )
    _counted_for: tuple[tuple[str, ...] | None, tuple[int, int]] = field(
        default=(None, (0, 0)), repr=False, compare=False
    )
    _entry_for: tuple[tuple[tuple[int, str], ...] | None, RepeatEntry | None] = field(
        default=(None, None), repr=False, compare=False
    )

    def observe(self, index: int, when: str, outcome: str) -> None:
        """Record a phase report (``when``: setup/call/teardown) of repetition ``index``.

        A repetition passes when each of its phases passed; a skip in setup or call skips it.
        """
        current = self.outcomes.get(index)
        if outcome == "failed":
            self.outcomes[index] = "failed"
        elif outcome == "skipped" and when != "teardown" and current != "failed":
            self.outcomes[index] = "skipped"
        elif current is None:
            self.outcomes[index] = "passed"

    def _counts(self) -> tuple[int, int]:
        """The passes and the repetitions counted, recounted when the outcomes changed."""
        key = tuple(self.outcomes.values())
        if self._counted_for[0] != key:
            passed = key.count("passed")
            self._counted_for = (key, (passed, passed + key.count("failed")))
        return self._counted_for[1]

    @property
    def passed(self) -> int:
        return self._counts()[0]

    @property
    def counted(self) -> int:
        """Repetitions that ran to an outcome other than a skip."""
        return self._counts()[1]

    @property
    def pass_rate(self) -> float:
        return round(self.passed / self.counted, 6) if self.counted else 0.0

    @property
    def interval(self) -> Interval:
        """The pass rate's interval, by the spec's method and confidence (``[0, 1]`` before
        any run counted)."""
        key = (self.passed, self.counted)
        found = self._intervals.get(key)
        if found is None:
            method = METHODS[self.spec.interval]
            found = self._intervals[key] = method(*key, self.spec.confidence)
        return found

    @property
    def stability(self) -> Stability | None:
        """``stable pass``, ``stable fail`` or ``stochastic`` (the interval excludes both 0
        and 1); ``None`` before any run counted."""
        return stability(self.passed, self.counted, self.interval) if self.counted else None

    @property
    def all_skipped(self) -> bool:
        return bool(self.outcomes) and self.counted == 0

    def estimates(self) -> dict[str, dict[str, float]]:
        """pass@k and pass^k for each ``k`` of the spec the counted runs allow (``k`` at
        most the number counted), keyed by ``k`` as text: ``{"pass_at_k": {"3": 0.99},
        "pass_hat_k": {"3": 0.29}}``; empty without ``k``."""
        ks = [k for k in self.spec.k if k <= self.counted]
        if not ks:
            return {}
        n, c = self.counted, self.passed
        return {
            "pass_at_k": {str(k): round(pass_at_k(n, c, k), 6) for k in ks},
            "pass_hat_k": {str(k): round(pass_hat_k(n, c, k), 6) for k in ks},
        }

    @property
    def rate_met(self) -> bool:
        """Whether the runs meet ``min_pass_rate`` under the spec's rule."""
        low = self.interval.low if self.spec.rule == "lower_bound" and self.counted else None
        return _rate_meets(self.counted, self.passed, self.spec.min_pass_rate, low)

    @property
    def pass_hat_met(self) -> bool | None:
        """Whether the runs meet the pass^k target; ``None`` without one. Under the
        lower-bound rule the figure is the interval's lower bound to the power ``k``."""
        target = self.spec.min_pass_hat_k
        if target is None:
            return None
        (k,) = self.spec.k
        if self.counted < k:
            return False
        if target >= 1:
            return self.passed == self.counted
        return self.pass_hat_figure >= target - _SLACK

    @property
    def pass_hat_figure(self) -> float:
        """What the pass^k target is held against: the estimate under ``rule="point"``,
        the interval's lower bound to the power ``k`` under the lower-bound rule."""
        (k,) = self.spec.k[:1] or (1,)
        if self.spec.rule == "point":
            return pass_hat_k(self.counted, self.passed, k) if self.counted >= k else 0.0
        return float(self.interval.low**k)

    @property
    def met(self) -> bool:
        """Whether the test passes: ``min_pass_rate`` and the pass^k target (if any) met."""
        return self.rate_met and self.pass_hat_met is not False

    def runs_needed(self) -> int | None:
        """The fewest runs that, all passing, would meet the spec's targets under the
        lower-bound rule (``None`` when no number up to a million would, or under
        ``rule="point"``, where every run passing meets any target)."""
        if self.spec.rule == "point":
            return None
        method, confidence = METHODS[self.spec.interval], self.spec.confidence
        rate = self.spec.min_pass_rate if self.spec.min_pass_rate < 1 else 0.0
        hat = self.spec.min_pass_hat_k if (self.spec.min_pass_hat_k or 1.0) < 1 else None
        k = self.spec.k[0] if hat is not None else 1

        def enough(n: int) -> bool:
            low = method(n, n, confidence).low
            return low >= rate - _SLACK and (hat is None or low**k >= hat - _SLACK)

        high = max(1, k)
        while not enough(high):
            if high >= _MOST_RUNS:
                return None
            high *= 2
        low = high // 2
        while low + 1 < high:  # the all-pass lower bound grows with n: bisect
            middle = (low + high) // 2
            low, high = (low, middle) if enough(middle) else (middle, high)
        return high

    def to_dict(self) -> RepeatEntry:
        """The entry of :meth:`_entry`, computed once per set of outcomes (a copy)."""
        key = tuple(self.outcomes.items())
        cached_key, entry = self._entry_for
        if entry is None or cached_key != key:
            entry = self._entry()
            self._entry_for = (key, entry)
        return entry.copy()

    def _entry(self) -> RepeatEntry:
        """``{"runs", "passed", "pass_rate", "min_pass_rate", "rule", "outcomes"}`` (runs:
        those not skipped; outcomes: each repetition's, in order), and once a run counted
        the pass rate's ``interval`` (``[low, high]``) with its ``method`` and
        ``confidence`` and the test's ``stability``; pass@k and pass^k when the spec asks
        for them, and the pass^k target."""
        entry: RepeatEntry = {
            "runs": self.counted,
            "passed": self.passed,
            "pass_rate": self.pass_rate,
            "min_pass_rate": self.spec.min_pass_rate,
            "rule": self.spec.rule,
            "outcomes": [self.outcomes[index] for index in sorted(self.outcomes)],
        }
        if self.spec.min_pass_hat_k is not None:
            entry["min_pass_hat_k"] = {"k": self.spec.k[0], "target": self.spec.min_pass_hat_k}
        if self.stability is not None:
            low, high = self.interval
            entry["interval"] = [round(low, 6), round(high, 6)]
            entry["method"] = self.spec.interval
            entry["confidence"] = self.spec.confidence
            entry["stability"] = self.stability
        estimates = self.estimates()
        if estimates:
            entry["pass_at_k"] = estimates["pass_at_k"]
            entry["pass_hat_k"] = estimates["pass_hat_k"]
        return entry

    def _spread(self) -> str:
        if self.stability is None:
            return ""
        low, high = self.interval
        name = "" if self.spec.interval == DEFAULT_METHOD else " Wilson"
        estimates = self.estimates()
        shown = "".join(
            f", pass@{k} {_percent(estimates['pass_at_k'][k])}, "
            f"pass^{k} {_percent(estimates['pass_hat_k'][k])}"
            for k in estimates.get("pass_at_k", {})
        )
        return (
            f"; {self.spec.confidence:.0%}{name} interval {low * 100:.0f}-{_percent(high)}, "
            f"{self.stability}{shown}"
        )

    def _targets(self) -> list[str]:
        spec, lower = self.spec, self.spec.rule == "lower_bound" and self.counted > 0
        targets: list[str] = []
        if spec.min_pass_rate > 0 or spec.min_pass_hat_k is None:
            bound = ""
            if 0 < spec.min_pass_rate < 1:
                bound = (
                    f" (lower bound {_percent(self.interval.low)})" if lower else " (rule point)"
                )
            targets.append(f"min_pass_rate {_percent(spec.min_pass_rate)}{bound}")
        if spec.min_pass_hat_k is not None:
            k = spec.k[0]
            figure = "lower bound" if spec.rule == "lower_bound" else "estimate"
            shown = f" ({figure} {_percent(self.pass_hat_figure)})" if self.counted >= k else ""
            targets.append(f"pass^{k} target {_percent(spec.min_pass_hat_k)}{shown}")
        return targets

    def _advice(self) -> str:
        """How to meet the gate, when the lower-bound rule is what fails the test."""
        if self.met or self.spec.rule != "lower_bound" or self.counted == 0:
            return ""
        needed = self.runs_needed() if self.passed == self.counted else None
        if needed is not None:
            return (
                f": {self.counted} runs cannot show it at {self.spec.confidence:.0%} "
                f"confidence even when all pass; agent_repeat({needed}, ...) can, when all "
                f'{needed} pass; or add rule="point" to hold the pass rate itself against the '
                "target (docs/statistics.md#how-many-runs)"
            )
        if self.passed == self.counted or not self.rate_met_by_point():
            return ""
        low = (
            f"the rate as low as {_percent(self.interval.low)}"
            if not self.rate_met
            else f"pass^{self.spec.k[0]} as low as {_percent(self.pass_hat_figure)}"
        )
        return (
            f": the runs leave {low}; more runs "
            'narrow the interval, or add rule="point" to hold the pass rate itself against '
            "the target (docs/statistics.md#how-many-runs)"
        )

    def rate_met_by_point(self) -> bool:
        """Whether the pass rate itself (and the pass^k estimate) meets the targets: what
        ``rule="point"`` would say."""
        point = RepeatTally(replace(self.spec, rule="point"), self.outcomes)
        return point.met

    def describe(self) -> str:
        """``4 of 5 runs passed (80%; 95% interval 38-96%, stochastic), min_pass_rate 80%
        (lower bound 38%): failed``."""
        verdict = "passed" if self.met else "failed"
        skipped = len(self.outcomes) - self.counted
        extra = f", {skipped} skipped" if skipped else ""
        return (
            f"{self.passed} of {self.counted} runs passed ({_percent(self.pass_rate)}"
            f"{self._spread()}){extra}, {', '.join(self._targets())}: {verdict}"
            f"{self._advice()}"
        )


def score_means(
    verdicts: Sequence[Mapping[str, object]], confidence: float = CONFIDENCE
) -> list[ScoreEntry]:
    """Each judge's and rubric's scores (``Verdict.to_dict()``) with at least two verdicts:
    their mean and its bootstrap interval, in the order first seen."""
    scores: dict[tuple[str, str], list[float]] = {}
    for verdict in verdicts:
        score = verdict.get("score")
        if isinstance(score, int | float) and not isinstance(score, bool):
            key = (str(verdict.get("judge")), str(verdict.get("rubric_id")))
            scores.setdefault(key, []).append(float(score))
    entries: list[ScoreEntry] = []
    for (judge, rubric_id), values in scores.items():
        if len(values) < 2:
            continue
        low, high = bootstrap_mean(values, confidence)
        entries.append(
            {
                "judge": judge,
                "rubric_id": rubric_id,
                "n": len(values),
                "mean": round(sum(values) / len(values), 6),
                "interval": [round(low, 6), round(high, 6)],
                "confidence": confidence,
            }
        )
    return entries


def entry_met(entry: Mapping[str, object]) -> bool:
    """Whether a report's repeat entry (:meth:`RepeatTally.to_dict`) met its
    ``min_pass_rate`` under its rule: what the page and the table show as a low rate. An
    entry of an older report (no ``rule``) is read by the rate itself."""
    runs, passed, target = entry.get("runs"), entry.get("passed"), entry.get("min_pass_rate")
    if not all(isinstance(value, int | float) for value in (runs, passed, target)):
        return True  # nothing to hold against: the test's own outcome says it
    interval = entry.get("interval")
    low = None
    if entry.get("rule") == "lower_bound" and isinstance(interval, list) and interval:
        low = float(interval[0])
    return _rate_meets(
        int(cast("int", runs)), int(cast("int", passed)), float(cast("float", target)), low
    )


def _rate_meets(counted: int, passed: int, target: float, low: float | None) -> bool:
    """Whether ``passed`` of ``counted`` runs meet ``target``: every run when the target is
    1, else the interval's lower bound ``low`` when the rule holds it, else the rate itself."""
    if counted == 0:
        return False
    if target >= 1:
        return passed == counted
    if low is not None:
        return low >= target - _SLACK
    return passed >= target * counted - _SLACK

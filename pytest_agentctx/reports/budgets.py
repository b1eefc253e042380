"""Behaviour budgets: the most iterations, tool calls, tokens, dollars, seconds and MCP tool
calls a test's agent runs may use.

A :class:`Budget` comes from ``@pytest.mark.agent_budget(...)`` (on the test, its class or
its module; the closest marker wins for each limit) laid over the ``agent_budget_*`` ini
defaults. After the test ran, :meth:`Budget.check` measures the test's runs with
:func:`~pytest_agentctx.reports.figures.run_stats` (the same figures the reports and the
gate use) and returns a :class:`BudgetCheck` that names every limit exceeded, with the
measured and allowed figures and what each run contributed.

Usage comes from the contexts, which come from the provider's responses (recorded in
cassettes), so budgets hold offline. The duration is the contexts' own: the time between a
run's first iteration starting and its last completing on the run's clock, which is the
deterministic stepping clock under the plugin; it is never wall-clock time.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.errors import BudgetError
from pytest_agentctx.reports.figures import PriceTable, RunStats, run_stats
from pytest_agentctx.reports.limits import (
    BUDGET_LIMITS as BUDGET_LIMITS,
    FLOORS,
    ini_name as ini_name,
)

if TYPE_CHECKING:
    from pytest_agentctx.reports.schema import BudgetEntry, ExceededEntry

_WHOLE = frozenset(
    {"max_iterations", "max_tool_calls", "max_tokens", "max_mcp_calls", "max_cache_write_tokens"}
)
_WHAT = {
    "max_iterations": "iterations",
    "max_tool_calls": "tool calls",
    "max_tokens": "tokens (input + output)",
    "max_cost_usd": "cost in US dollars",
    "max_duration_s": "seconds on the runs' clocks",
    "max_mcp_calls": "MCP tool calls",
    "max_cache_write_tokens": "input tokens written to the prompt cache",
    "min_cache_read_share": "the share of the input tokens read from the prompt cache",
}
_EXAMPLE = {
    "max_iterations": "5",
    "max_tool_calls": "10",
    "max_tokens": "20000",
    "max_cost_usd": "0.05",
    "max_duration_s": "30",
    "max_mcp_calls": "4",
    "max_cache_write_tokens": "20000",
    "min_cache_read_share": "0.5",
}

Number = int | float


def _measure(stats: RunStats, limit: str) -> Number | None:
    match limit:
        case "max_iterations":
            return stats.iterations
        case "max_tool_calls":
            return stats.tool_calls
        case "max_tokens":
            return stats.total_tokens
        case "max_cost_usd":
            return None if stats.cost_usd is None else round(stats.cost_usd, 8)
        case "max_mcp_calls":
            return stats.mcp_calls
        case "max_cache_write_tokens":
            return stats.cache_write_tokens
        case "min_cache_read_share":
            return round(stats.cache_read_share or 0.0, 6)
        case _:
            return round(stats.duration_s, 6)


def _expected(limit: str) -> str:
    if limit in FLOORS:
        return f"a number from 0 to 1, {_WHAT[limit]} (or None for no limit)"
    kind = "a whole number" if limit in _WHOLE else "a number"
    return f"{kind} >= 0 of {_WHAT[limit]} (or None for no limit)"


def _check_value(limit: str, value: object, where: str) -> Number | None:
    if value is None:
        return None
    whole = limit in _WHOLE
    good = isinstance(value, int) if whole else isinstance(value, int | float)
    if isinstance(value, bool) or not good:
        raise BudgetError(
            f"{where}: {limit}={value!r} is a {type(value).__name__}; expected "
            f"{_expected(limit)}, e.g. @pytest.mark.agent_budget({limit}={_EXAMPLE[limit]})."
        )
    assert isinstance(value, int | float)
    if not math.isfinite(value) or value < 0 or (limit in FLOORS and value > 1):
        raise BudgetError(
            f"{where}: {limit}={value!r} is not allowed; expected {_expected(limit)}, "
            f"e.g. @pytest.mark.agent_budget({limit}={_EXAMPLE[limit]})."
        )
    return value


def _unknown(key: str, where: str) -> BudgetError:
    import difflib

    close = difflib.get_close_matches(key, BUDGET_LIMITS, n=1)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return BudgetError(
        f"{where}: agent_budget has no limit {key!r}{hint}; the limits are "
        f"{', '.join(BUDGET_LIMITS)}, e.g. @pytest.mark.agent_budget(max_tokens=20000)."
    )


@dataclass(frozen=True)
class Budget:
    """The limits of one test; ``None`` means no limit."""

    max_iterations: int | None = None
    max_tool_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    max_duration_s: float | None = None
    max_mcp_calls: int | None = None
    max_cache_write_tokens: int | None = None
    min_cache_read_share: float | None = None

    @property
    def limits(self) -> dict[str, Number]:
        """The limits that are set, by name, in :data:`BUDGET_LIMITS` order."""
        found = {f.name: getattr(self, f.name) for f in fields(self)}
        return {name: found[name] for name in BUDGET_LIMITS if found[name] is not None}

    def __bool__(self) -> bool:
        return bool(self.limits)

    def updated(self, values: Mapping[str, object], *, where: str) -> Budget:
        """This budget with ``values`` laid over it (``None`` removes a limit).

        Raises :class:`BudgetError`, naming ``where`` and the key, for an unknown key, a
        negative or non-finite value, or a value of the wrong type.
        """
        merged: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        for key, value in values.items():
            if key not in BUDGET_LIMITS:
                raise _unknown(key, where)
            merged[key] = _check_value(key, value, where)
        return Budget(**merged)

    @classmethod
    def from_markers(
        cls,
        markers: Iterable[tuple[Sequence[object], Mapping[str, object]]],
        *,
        defaults: Budget | None = None,
        where: str,
    ) -> Budget:
        """The budget of a test from its ``agent_budget`` markers' ``(args, kwargs)``,
        closest first (as ``item.iter_markers`` gives them), over the ini ``defaults``."""
        budget = defaults or cls()
        for args, kwargs in reversed(list(markers)):
            if args:
                raise BudgetError(
                    f"{where}: agent_budget{tuple(args)!r} has positional arguments; name "
                    "each limit, e.g. @pytest.mark.agent_budget(max_tokens=20000, "
                    "max_iterations=5)."
                )
            budget = budget.updated(kwargs, where=where)
        return budget

    @classmethod
    def from_ini(cls, values: Mapping[str, str]) -> Budget:
        """The ini defaults from ``{limit: raw ini text}`` (empty text: no limit)."""
        parsed: dict[str, Number | None] = {}
        for limit, raw in values.items():
            text = raw.strip()
            if not text:
                continue
            try:
                value: Number = int(text) if limit in _WHOLE else float(text)
                _check_value(limit, value, where="")
            except (ValueError, BudgetError):
                raise BudgetError(
                    f"ini option {ini_name(limit)} = {raw!r}; expected {_expected(limit)}, "
                    f"e.g. {ini_name(limit)} = {_EXAMPLE[limit]}. Fix it in your pytest ini "
                    "file and run pytest again."
                ) from None
            parsed[limit] = value
        return cls().updated(parsed, where="ini")

    def check(
        self, runs: Sequence[tuple[str, RunStats]], *, prices: PriceTable | None = None
    ) -> BudgetCheck:
        """Measure ``runs`` (a label and the figures of each run of the test) against the
        limits. The test's figures are the runs' sums."""
        total = RunStats.total(stats for _, stats in runs)
        exceeded: list[Exceeded] = []
        unpriced: tuple[str, ...] = ()
        for name, allowed in self.limits.items():
            measured = _measure(total, name)
            if measured is None:
                unpriced = total.unpriced
                continue
            if measured < allowed if name in FLOORS else measured > allowed:
                parts = tuple((label, _measure(stats, name) or 0) for label, stats in runs)
                exceeded.append(Exceeded(name, measured, allowed, parts, _detail(name, total)))
        return BudgetCheck(self, tuple(exceeded), unpriced)


def _detail(limit: str, total: RunStats) -> str:
    """What a cost is made of: the input tokens by kind and the output tokens, so a cost
    over its budget shows whether the prompt cache was read, written or missed."""
    if limit not in ("max_cost_usd", "min_cache_read_share", "max_cache_write_tokens"):
        return ""
    if not (total.cache_read_tokens or total.cache_write_tokens):
        return ""
    return (
        f"input tokens: {total.uncached_input_tokens:,} uncached, {total.cache_read_tokens:,} "
        f"read from the prompt cache, {total.cache_write_tokens:,} written to it; "
        f"{total.output_tokens:,} output"
    )


@dataclass(frozen=True)
class Exceeded:
    """One limit a test went over: its name, the measured and allowed figures, and what
    each run contributed (``(label, figure)`` pairs)."""

    name: str
    measured: Number
    allowed: Number
    runs: tuple[tuple[str, Number], ...] = ()
    #: What the figure is made of, where that tells why (the tokens by kind of a cost).
    detail: str = ""

    def to_dict(self) -> ExceededEntry:
        """``{"name", "measured", "allowed"}``, as the JSON report stores it."""
        return {"name": self.name, "measured": self.measured, "allowed": self.allowed}

    def describe(self) -> str:
        """``max_tokens: measured 1500, allowed 1000 (runs: #1 weather 900, ...)``; a floor
        ``min_cache_read_share: measured 0.1, required at least 0.5``."""
        bound = "required at least" if self.name in FLOORS else "allowed"
        line = f"{self.name}: measured {self.measured:g}, {bound} {self.allowed:g}"
        if self.runs:
            line += " (runs: " + ", ".join(f"{label} {n:g}" for label, n in self.runs) + ")"
        if self.detail:
            line += f"; {self.detail}"
        return line


@dataclass(frozen=True)
class BudgetCheck:
    """The outcome of measuring a test's runs against its budget."""

    budget: Budget
    exceeded: tuple[Exceeded, ...] = ()
    #: Models with token usage but no price, when ``max_cost_usd`` is set: the cost
    #: cannot be measured, so the check fails rather than guess.
    unpriced: tuple[str, ...] = ()
    #: The test made no model call the plugin saw: nothing to measure, so the check fails
    #: rather than pass a budget it never checked.
    unmeasured: bool = False

    @property
    def passed(self) -> bool:
        return not self.exceeded and not self.unpriced and not self.unmeasured

    def to_dict(self) -> BudgetEntry:
        """``{"limits": {...set ones}, "exceeded": [{"name", "measured", "allowed"}, ...]}``,
        and ``"unmeasured": true`` when the test made no measured run."""
        entry: BudgetEntry = {
            "limits": self.budget.limits,
            "exceeded": [item.to_dict() for item in self.exceeded],
        }
        if self.unmeasured:
            entry["unmeasured"] = True
        return entry

    def merged(self, other: BudgetCheck) -> BudgetCheck:
        """The checks of two repetitions of a test as one: each limit exceeded in either,
        with the higher measured figure."""
        worst: dict[str, Exceeded] = {item.name: item for item in self.exceeded}
        for item in other.exceeded:
            known = worst.get(item.name)
            lower = item.name in FLOORS
            if known is None or (
                item.measured < known.measured if lower else item.measured > known.measured
            ):
                worst[item.name] = item
        ordered = tuple(worst[name] for name in BUDGET_LIMITS if name in worst)
        unpriced = tuple(dict.fromkeys((*self.unpriced, *other.unpriced)))
        return BudgetCheck(self.budget, ordered, unpriced, self.unmeasured or other.unmeasured)

    def failure_message(self, where: str) -> str:
        """What a failing test prints: every limit exceeded, then what to do."""
        if self.unmeasured and not self.exceeded:
            return _unmeasured_message(self.budget, where)
        over = [
            f"{item.name} {item.measured:g} {'<' if item.name in FLOORS else '>'} {item.allowed:g}"
            for item in self.exceeded
        ]
        if self.unpriced:
            over.append("max_cost_usd unmeasured")
        lines = [f"agent budget exceeded: {', '.join(over)} ({where})"]
        lines += [f"  {item.describe()}" for item in self.exceeded]
        if self.unpriced:
            names = ", ".join(repr(m) for m in self.unpriced)
            lines.append(
                f"  max_cost_usd: cannot be measured: no price for model {names}: the price "
                "data (genai-prices) does not know it. Price it yourself with a line "
                f"'{self.unpriced[0]} = <input USD per million tokens> <output USD per "
                "million tokens>' in the agent_prices ini option, or extend the agent_prices "
                "fixture; or update the price data (pip install -U genai-prices, then "
                "pytest-agentctx prices pin)."
            )
        if self.exceeded:
            lines.append(
                "If the agent is meant to use more, raise the limit in "
                "@pytest.mark.agent_budget(...) or the agent_budget_* ini options; otherwise "
                "find out why it uses more (compare its trajectory and iterations)."
            )
        return "\n".join(lines)


def _unmeasured_message(budget: Budget, where: str) -> str:
    limits = ", ".join(f"{name}={value:g}" for name, value in budget.limits.items())
    off = ", ".join(f"{name}=None" for name in budget.limits)
    return (
        f"agent budget not measured: {where} made no model call that pytest-agentctx saw, "
        f"so its budget ({limits}) was never checked.\n"
        "  Model calls are measured when they go through httpx or httpx2 (the openai, "
        "anthropic and google-genai SDKs and the frameworks built on them) in a test that "
        "replays or records a cassette (@pytest.mark.agent), uses fake_llm or "
        "agent_runtime.\n"
        "  Check that the agent runs inside the test body and sends its model calls that "
        "way. If this test makes no model call on purpose, take the budget off it: "
        f"@pytest.mark.agent_budget({off})."
        + (
            "\n  max_mcp_calls counts the MCP tool calls of the test's conversations: MCP "
            "traffic without a model call belongs to no run (agent_context.mcp_calls "
            "lists it)."
            if "max_mcp_calls" in budget.limits
            else ""
        )
    )


def check_budget(
    spec: tuple[Budget, bool] | None,
    records: Callable[[], Sequence[RunRecord]],
    *,
    prices: PriceTable,
    earlier: BudgetCheck | None = None,
    agent_test: bool = False,
) -> BudgetCheck | None:
    """Measure a test's runs against its budget, or ``None`` when there is nothing to check.

    ``spec`` is the test's budget and whether a marker set it (``None``: not read);
    ``records()`` gives the runs it made (called only when the budget has limits). The ini
    defaults are for agent tests (``agent_test``: the plugin measures its traffic), so a
    test that is neither marked nor an agent test is not checked. A checked test that made
    no run fails as unmeasured (:attr:`BudgetCheck.unmeasured`): a budget nothing was
    measured against is no pass. ``earlier`` is the check of a previous repetition of the
    test: the result then holds the worst of both (:meth:`BudgetCheck.merged`).
    """
    if spec is None or not spec[0]:
        return None
    budget, explicit = spec
    if not explicit and not agent_test:
        return None  # the ini defaults are for agent tests
    made = records()
    if not made:
        check = BudgetCheck(budget, unmeasured=True)
        return earlier.merged(check) if earlier is not None else check
    runs = [
        (f"#{number} {record.name}", run_stats(record, prices=prices))
        for number, record in enumerate(made, start=1)
    ]
    check = budget.check(runs, prices=prices)
    return earlier.merged(check) if earlier is not None else check

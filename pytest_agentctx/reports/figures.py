"""Prices per model (:class:`ModelPrice`, :class:`PriceTable`, :data:`DEFAULT_PRICES`)
and the figures of an agent run read off its context (:class:`RunStats`,
:func:`run_stats`): iterations, tool calls, tokens, cost, time.

Budgets, reports and the CI gate all measure runs with :func:`run_stats`, so they agree;
the runs a test made reach them as :class:`~pytest_agentctx.context.runs.RunRecord`
objects, from the runtime or rebuilt from the test's traffic. Token usage comes from each
iteration's ``metadata["usage"]`` (what the provider reported, kept in cassettes, so the
figures hold offline); the model from ``metadata["model"]``. Sub-agent runs stored in an
iteration's metadata are counted with their parent unless ``nested=False``. Cost is
priced with a :class:`PriceTable` (US dollars per million tokens); a model missing from
the table has no cost (``cost_usd`` is ``None``), never a guessed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_agentctx.exceptions import AgentCtxError

if TYPE_CHECKING:
    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.reports.schema import StatsEntry


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million input and output tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


#: Published list prices (USD per million tokens, input/output) of common models; extend or
#: override them with ``PriceTable.with_prices`` or the ``agent_prices`` ini option.
DEFAULT_PRICES: Mapping[str, ModelPrice] = {
    "gpt-4o": ModelPrice(2.50, 10.00),
    "gpt-4o-mini": ModelPrice(0.15, 0.60),
    "gpt-4.1": ModelPrice(2.00, 8.00),
    "gpt-4.1-mini": ModelPrice(0.40, 1.60),
    "gpt-4.1-nano": ModelPrice(0.10, 0.40),
    "o3-mini": ModelPrice(1.10, 4.40),
    "claude-haiku-4-5": ModelPrice(1.00, 5.00),
    "claude-sonnet-4-5": ModelPrice(3.00, 15.00),
    "claude-opus-4-1": ModelPrice(15.00, 75.00),
    "claude-3-5-haiku": ModelPrice(0.80, 4.00),
}


@dataclass(frozen=True)
class PriceTable:
    """Model prices. A model is found by its exact name, else by the longest known name it
    starts with (``gpt-4o-mini-2024-07-18`` is priced as ``gpt-4o-mini``)."""

    prices: Mapping[str, ModelPrice] = field(default_factory=lambda: dict(DEFAULT_PRICES))

    def with_prices(self, prices: Mapping[str, ModelPrice | tuple[float, float]]) -> PriceTable:
        """A table with ``prices`` added (or replacing entries of the same name)."""
        merged = dict(self.prices)
        for name, price in prices.items():
            merged[name] = price if isinstance(price, ModelPrice) else ModelPrice(*price)
        return PriceTable(merged)

    @classmethod
    def parse_lines(cls, lines: Iterable[str], base: PriceTable | None = None) -> PriceTable:
        """Read ini lines ``model = input_per_million output_per_million``."""
        added: dict[str, ModelPrice] = {}
        for line in lines:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, figures = text.partition("=")
            parts = figures.split()
            try:
                if not sep or not name.strip() or len(parts) != 2:
                    raise ValueError
                added[name.strip()] = ModelPrice(float(parts[0]), float(parts[1]))
            except ValueError:
                raise AgentCtxError(
                    f"agent_prices line {text!r}: expected 'model = <input USD per million "
                    "tokens> <output USD per million tokens>', e.g. 'gpt-4o-mini = 0.15 0.60'. "
                    "Fix the line in your pytest ini file and run pytest again."
                ) from None
        return (base or cls()).with_prices(added)

    def price_of(self, model: str) -> ModelPrice | None:
        if model in self.prices:
            return self.prices[model]
        known = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(known, key=len)] if known else None


@dataclass(frozen=True)
class RunStats:
    """What one run (or several, added with ``+``) used."""

    runs: int = 0
    iterations: int = 0
    tool_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = 0.0
    duration_s: float = 0.0
    models: tuple[str, ...] = ()
    trajectory: tuple[str, ...] = ()
    #: MCP ``tools/call`` requests (each iteration's ``metadata["mcp"]``), joined or not.
    mcp_calls: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: RunStats) -> RunStats:
        cost = (
            None
            if self.cost_usd is None or other.cost_usd is None
            else self.cost_usd + other.cost_usd
        )
        return RunStats(
            runs=self.runs + other.runs,
            iterations=self.iterations + other.iterations,
            tool_calls=self.tool_calls + other.tool_calls,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cost_usd=cost,
            duration_s=self.duration_s + other.duration_s,
            models=tuple(dict.fromkeys((*self.models, *other.models))),
            trajectory=(*self.trajectory, *other.trajectory),
            mcp_calls=self.mcp_calls + other.mcp_calls,
        )

    def to_dict(self) -> StatsEntry:
        """JSON-ready, with ``total_tokens``; cost rounded to 1e-8 dollars; ``mcp_calls``
        only when the runs made any."""
        entry: StatsEntry = {
            "runs": self.runs,
            "iterations": self.iterations,
            "tool_calls": self.tool_calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
            "cost_usd": None if self.cost_usd is None else round(self.cost_usd, 8),
            "duration_s": round(self.duration_s, 6),
            "models": list(self.models),
            "trajectory": list(self.trajectory),
        }
        if self.mcp_calls:
            entry["mcp_calls"] = self.mcp_calls
        return entry

    @classmethod
    def total(cls, stats: Iterable[RunStats]) -> RunStats:
        """The sum of ``stats``, as ``+`` adds them one after another, in linear time (a
        chain of ``+`` copies the growing trajectory at every step: quadratic in the
        tool calls of a session of thousands of tests)."""
        runs = iterations = tool_calls = input_tokens = output_tokens = mcp_calls = 0
        cost: float | None = 0.0
        duration = 0.0
        models: dict[str, None] = {}
        trajectory: list[str] = []
        for item in stats:
            runs += item.runs
            iterations += item.iterations
            tool_calls += item.tool_calls
            input_tokens += item.input_tokens
            output_tokens += item.output_tokens
            cost = None if cost is None or item.cost_usd is None else cost + item.cost_usd
            duration += item.duration_s
            models.update(dict.fromkeys(item.models))
            trajectory.extend(item.trajectory)
            mcp_calls += item.mcp_calls
        return cls(
            runs=runs,
            iterations=iterations,
            tool_calls=tool_calls,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            cost_usd=cost,
            duration_s=duration,
            models=tuple(models),
            trajectory=tuple(trajectory),
            mcp_calls=mcp_calls,
        )


def _mcp_calls_of(metadata: Mapping[str, object]) -> tuple[int, int]:
    """The MCP tool calls of an iteration (``metadata["mcp"]``), and how many of them are
    joined to no tool call of the model (those count as tool calls of their own)."""
    calls = metadata.get("mcp")
    if isinstance(calls, str) or not isinstance(calls, Sequence):
        return 0, 0
    unjoined = sum(
        1 for call in calls if isinstance(call, Mapping) and call.get("tool_call_id") is None
    )
    return len(calls), unjoined


def _usage_of(metadata: Mapping[str, object]) -> tuple[int, int]:
    usage = metadata.get("usage")
    if not isinstance(usage, Mapping):
        return 0, 0
    return int(usage.get("input_tokens") or 0), int(usage.get("output_tokens") or 0)


def _own_stats(context: AgentContext, prices: PriceTable) -> RunStats:
    input_total = output_total = 0
    cost: float | None = 0.0
    models: list[str] = []
    trajectory: list[str] = []
    calls = mcp_calls = 0
    for iteration in context.iterations:
        metadata = iteration.metadata
        input_tokens, output_tokens = _usage_of(metadata)
        input_total += input_tokens
        output_total += output_tokens
        model = metadata.get("model")
        if isinstance(model, str) and model:
            if model not in models:
                models.append(model)
            price = prices.price_of(model)
            if cost is not None and price is not None:
                cost += price.cost(input_tokens, output_tokens)
            elif input_tokens or output_tokens:
                cost = None
        elif input_tokens or output_tokens:
            cost = None
        made, unjoined = _mcp_calls_of(metadata)
        mcp_calls += made
        calls += len(iteration.tool_calls) + unjoined
        trajectory.extend(call.name for call in iteration.tool_calls)
    duration = 0.0
    if context.iterations:
        first = context.iterations[0].started_at
        last = context.iterations[-1].completed_at or context.iterations[-1].started_at
        duration = max((last - first).total_seconds(), 0.0)
    return RunStats(
        runs=1,
        iterations=len(context.iterations),
        tool_calls=calls,
        input_tokens=input_total,
        output_tokens=output_total,
        cost_usd=cost,
        duration_s=duration,
        models=tuple(models),
        trajectory=tuple(trajectory),
        mcp_calls=mcp_calls,
    )


def run_stats(run: object, *, prices: PriceTable | None = None, nested: bool = True) -> RunStats:
    """The figures of ``run`` (an :class:`AgentContext` or a ``RunResult``).

    With ``nested`` (the default) sub-agent runs found in iteration metadata add their
    iterations, tool calls, tokens and cost; the duration stays the parent's (sub-agents run
    inside it) and ``runs`` counts the parent only.
    """
    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.context.nested import located_calls, nested_contexts

    context = getattr(run, "context", run)
    if not isinstance(context, AgentContext):
        raise AgentCtxError(
            f"run_stats() takes an AgentContext or a RunResult, got {type(run).__name__}. "
            "Pass result.context."
        )
    table = prices or PriceTable()
    stats = _own_stats(context, table)
    if not nested:
        return stats
    for _, sub in nested_contexts(context):
        own = _own_stats(sub, table)
        stats = stats + RunStats(
            iterations=own.iterations,
            tool_calls=own.tool_calls,
            input_tokens=own.input_tokens,
            output_tokens=own.output_tokens,
            cost_usd=own.cost_usd,
            models=own.models,
            mcp_calls=own.mcp_calls,
        )
    # the calls in the order they happened: a sub-agent's calls follow its parent iteration's
    names = tuple(located.call.name for located in located_calls(context, nested=True))
    return replace(stats, trajectory=names)

"""How calls are priced (:class:`PriceTable`: the project's own :class:`ModelPrice`
entries, then genai-prices) and the figures of an agent run read off its context (:class:`RunStats`,
:func:`run_stats`): iterations, tool calls, tokens, cost, time.

Budgets, reports and the CI gate all measure runs with :func:`run_stats`, so they agree;
the runs a test made reach them as :class:`~pytest_agentctx.context.runs.RunRecord`
objects, from the runtime or rebuilt from the test's traffic. Token usage comes from each
iteration's ``metadata["usage"]`` (what the provider reported, kept in cassettes, so the
figures hold offline); the model from ``metadata["model"]``. Sub-agent runs stored in an
iteration's metadata are counted with their parent unless ``nested=False``. Cost is
priced with a :class:`PriceTable`, cache reads and writes at their own prices; a model
no price knows has no cost (``cost_usd`` is ``None``, the model in ``unpriced``), never a
guessed one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from pytest_agentctx.exceptions import AgentCtxError
from pytest_agentctx.reports.pricing import CallPrice, PriceData, TokenBreakdown, price_call

if TYPE_CHECKING:
    from datetime import date

    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.reports.schema import CallEntry, StatsEntry


@dataclass(frozen=True)
class ModelPrice:
    """A price of the project's own (``agent_prices``): US dollars per million input and
    output tokens, and per million tokens read from and written to the prompt cache
    (the input price when not given)."""

    input_per_million: float
    output_per_million: float
    cache_read_per_million: float | None = None
    cache_write_per_million: float | None = None

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """The price of ``input_tokens`` uncached input and ``output_tokens`` output."""
        return self.cost_of(TokenBreakdown(uncached_input=input_tokens, output=output_tokens))

    def cost_of(self, tokens: TokenBreakdown) -> float:
        """The price of a call's tokens, by their kind."""
        return self.price_of(tokens, "").total

    def price_of(self, tokens: TokenBreakdown, model: str) -> CallPrice:
        """The price of a call of ``model`` that used ``tokens``, with its parts."""
        read, write = self.cache_read_per_million, self.cache_write_per_million
        parts = (
            tokens.uncached_input * self.input_per_million / 1_000_000,
            tokens.cache_read * (self.input_per_million if read is None else read) / 1_000_000,
            tokens.cache_write * (self.input_per_million if write is None else write) / 1_000_000,
            tokens.output * self.output_per_million / 1_000_000,
        )
        return CallPrice(sum(parts), *parts, model=model, provider="agent_prices")


#: The prices of the project's own, ``agent_prices`` lines (``model = input output [cache
#: read] [cache write]``, US dollars per million tokens).
_PRICE_LINE = (
    "'model = <input USD per million tokens> <output USD per million tokens> [<cache read "
    "USD per million>] [<cache write USD per million>]', e.g. 'gpt-4o-mini = 0.15 0.60'"
)


@dataclass(frozen=True)
class PriceTable:
    """How model calls are priced: the project's own ``prices`` first (a model found by
    its exact name, else by the longest name it starts with: ``house-model-v2`` as
    ``house-model``), then genai-prices' data (:mod:`~pytest_agentctx.reports.pricing`)
    at ``data``'s day (the installed data at today's prices when ``None``)."""

    prices: Mapping[str, ModelPrice] = field(default_factory=dict)
    data: PriceData | None = None

    def with_prices(
        self,
        prices: Mapping[
            str,
            ModelPrice
            | tuple[float, float]
            | tuple[float, float, float]
            | tuple[float, float, float, float],
        ],
    ) -> PriceTable:
        """A table with ``prices`` added (or replacing entries of the same name)."""
        merged = dict(self.prices)
        for name, price in prices.items():
            merged[name] = price if isinstance(price, ModelPrice) else ModelPrice(*price)
        return PriceTable(merged, self.data)

    def with_data(self, data: PriceData) -> PriceTable:
        """This table, pricing with ``data``."""
        return PriceTable(self.prices, data)

    def on_day(self, day: date) -> PriceTable:
        """This table, with its price data at ``day``'s prices (the day the calls it prices
        were recorded); the release stays the same, pinned or not."""
        data = self.data or PriceData.installed(day)
        return self if data.day == day else PriceTable(self.prices, replace(data, day=day))

    @classmethod
    def parse_lines(cls, lines: Iterable[str], base: PriceTable | None = None) -> PriceTable:
        """Read ini lines ``model = input_per_million output_per_million [cache_read]
        [cache_write]``."""
        added: dict[str, ModelPrice] = {}
        for line in lines:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            name, sep, figures = text.partition("=")
            parts = figures.split()
            try:
                if not sep or not name.strip() or not 2 <= len(parts) <= 4:
                    raise ValueError
                numbers = [float(part) for part in parts]
                if any(number < 0 for number in numbers):
                    raise ValueError
                added[name.strip()] = ModelPrice(*numbers)
            except ValueError:
                raise AgentCtxError(
                    f"agent_prices line {text!r}: expected {_PRICE_LINE}, each a number from "
                    "0. Fix the line in your pytest ini file and run pytest again."
                ) from None
        return (base or cls()).with_prices(added)

    def price_of(self, model: str) -> ModelPrice | None:
        """The project's own price of ``model`` (``agent_prices``), if it has one."""
        if model in self.prices:
            return self.prices[model]
        known = [name for name in self.prices if model.startswith(name)]
        return self.prices[max(known, key=len)] if known else None

    def cost(self, model: str, provider: str | None, usage: Mapping[str, object]) -> float | None:
        """The price in US dollars of a call of ``model`` (through capture's ``provider``)
        that used ``usage`` (an iteration's ``metadata["usage"]``): the project's own
        price, else genai-prices'; ``None`` when neither knows the model."""
        priced = self.price(model, provider, usage)
        return None if priced is None else priced.total

    def price(
        self, model: str, provider: str | None, usage: Mapping[str, object]
    ) -> CallPrice | None:
        """:meth:`cost` with its parts (uncached input, cache read, cache write, output)."""
        tokens = TokenBreakdown.from_usage(usage)
        own = self.price_of(model)
        if own is not None:
            return own.price_of(tokens, model)
        tier = usage.get("service_tier")
        return price_call(
            model,
            provider,
            tokens,
            self.data or PriceData.installed(),
            tier if isinstance(tier, str) else None,
        )


def cache_read_share(uncached: int, read: int, written: int) -> float | None:
    """The share of input tokens read from the prompt cache, of ``uncached`` + ``read`` +
    ``written``; ``None`` when that is 0 (no input counted)."""
    total = uncached + read + written
    return read / total if total else None


#: The counts :class:`RunStats` adds up, run by run.
_SUMMED = (
    "runs",
    "iterations",
    "tool_calls",
    "input_tokens",
    "output_tokens",
    "mcp_calls",
    "uncached_input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "reasoning_tokens",
)
#: The counts :meth:`RunStats.to_dict` writes only when a run had some (a report of
#: runs without them stays as it was).
_WHEN_ANY = ("mcp_calls", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


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
    #: The input tokens by kind: neither read from nor written to the prompt cache, read
    #: from it, written to it; and the output tokens spent reasoning (each iteration's
    #: ``metadata["usage"]``: see :class:`~pytest_agentctx.reports.pricing.TokenBreakdown`).
    uncached_input_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    #: The models that used tokens but that no price knows: their calls are left out of
    #: ``cost_usd``, which is then ``None``.
    unpriced: tuple[str, ...] = ()

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def cache_read_share(self) -> float | None:
        """The share of the input tokens read from the prompt cache; ``None`` when the runs
        counted no input."""
        return cache_read_share(
            self.uncached_input_tokens, self.cache_read_tokens, self.cache_write_tokens
        )

    def __add__(self, other: RunStats) -> RunStats:
        return RunStats.total((self, other))

    def to_dict(self) -> StatsEntry:
        """JSON-ready, with ``total_tokens``; cost rounded to 1e-8 dollars; ``mcp_calls``,
        the cache's tokens and the reasoning tokens only when the runs had any, and
        ``unpriced`` when a model had no price."""
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
        for name in _WHEN_ANY:
            if getattr(self, name):
                entry[name] = getattr(self, name)  # type: ignore[literal-required]
        if self.cache_read_tokens or self.cache_write_tokens:
            entry["uncached_input_tokens"] = self.uncached_input_tokens
        if self.unpriced:
            entry["unpriced"] = list(self.unpriced)
        return entry

    @classmethod
    def total(cls, stats: Iterable[RunStats]) -> RunStats:
        """The sum of ``stats``, in linear time (a chain of ``+`` would copy the growing
        trajectory at every step: quadratic in the tool calls of a session of thousands of
        tests). The cost is ``None`` when one of them has none."""
        sums = dict.fromkeys(_SUMMED, 0)
        cost: float | None = 0.0
        duration = 0.0
        models: dict[str, None] = {}
        unpriced: dict[str, None] = {}
        trajectory: list[str] = []
        for item in stats:
            for name in _SUMMED:
                sums[name] += getattr(item, name)
            cost = None if cost is None or item.cost_usd is None else cost + item.cost_usd
            duration += item.duration_s
            models.update(dict.fromkeys(item.models))
            unpriced.update(dict.fromkeys(item.unpriced))
            trajectory.extend(item.trajectory)
        return cls(
            **sums,
            cost_usd=cost,
            duration_s=duration,
            models=tuple(models),
            trajectory=tuple(trajectory),
            unpriced=tuple(unpriced),
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


def _model_price(
    metadata: Mapping[str, object], usage: Mapping[str, object], prices: PriceTable
) -> tuple[str | None, CallPrice | None]:
    """An iteration's model (``None`` when it names none) and the price of its call that
    used ``usage`` (``None`` when no price knows the model)."""
    model = metadata.get("model")
    if not (isinstance(model, str) and model):
        return None, None
    provider = metadata.get("provider")
    return model, prices.price(model, provider if isinstance(provider, str) else None, usage)


def _call_figures(
    metadata: Mapping[str, object], prices: PriceTable
) -> tuple[TokenBreakdown, int, float | None, str | None]:
    """An iteration's tokens by kind, its input tokens as the provider counted them, its
    price (``None`` when no price knows its model) and its model."""
    usage = metadata.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    tokens = TokenBreakdown.from_usage(usage)
    counted = int(usage.get("input_tokens") or 0)
    if not (counted or tokens.input or tokens.output):
        model = metadata.get("model")
        return tokens, counted, 0.0, model if isinstance(model, str) and model else None
    model, priced = _model_price(metadata, usage, prices)
    return tokens, counted, None if priced is None else priced.total, model


def _own_stats(context: AgentContext, prices: PriceTable) -> RunStats:
    sums = dict.fromkeys(_SUMMED, 0)
    cost: float | None = 0.0
    models: dict[str, None] = {}
    unpriced: dict[str, None] = {}
    trajectory: list[str] = []
    for iteration in context.iterations:
        metadata = iteration.metadata
        tokens, counted, price, model = _call_figures(metadata, prices)
        sums["input_tokens"] += counted
        sums["output_tokens"] += tokens.output
        sums["uncached_input_tokens"] += tokens.uncached_input
        sums["cache_read_tokens"] += tokens.cache_read
        sums["cache_write_tokens"] += tokens.cache_write
        sums["reasoning_tokens"] += tokens.reasoning
        if model is not None:
            models[model] = None
        if price is None:
            cost = None
            unpriced[model or "(no model named)"] = None
        elif cost is not None:
            cost += price
        made, unjoined = _mcp_calls_of(metadata)
        sums["mcp_calls"] += made
        sums["tool_calls"] += len(iteration.tool_calls) + unjoined
        trajectory.extend(call.name for call in iteration.tool_calls)
    duration = 0.0
    if context.iterations:
        first = context.iterations[0].started_at
        last = context.iterations[-1].completed_at or context.iterations[-1].started_at
        duration = max((last - first).total_seconds(), 0.0)
    sums["runs"], sums["iterations"] = 1, len(context.iterations)
    return RunStats(
        **sums,
        cost_usd=cost,
        duration_s=duration,
        models=tuple(models),
        trajectory=tuple(trajectory),
        unpriced=tuple(unpriced),
    )


def call_entries(context: AgentContext, prices: PriceTable | None = None) -> list[CallEntry]:
    """Each iteration of ``context`` that reported its usage, priced: the model, its
    tokens (by kind where the provider said) and its price with its parts, for the reports
    (which iterations read and wrote the prompt cache, and what each cost)."""
    from pytest_agentctx.traffic.codecs.base import BREAKDOWN_KEYS  # loads the codecs' models

    table = prices or PriceTable()
    entries: list[CallEntry] = []
    for index, iteration in enumerate(context.iterations):
        usage = iteration.metadata.get("usage")
        if not isinstance(usage, Mapping):
            continue
        model, priced = _model_price(iteration.metadata, usage, table)
        entry: CallEntry = {
            "iteration": index,
            "model": model,
            "input_tokens": int(usage.get("input_tokens") or 0),
            "output_tokens": int(usage.get("output_tokens") or 0),
            "cost_usd": None if priced is None else round(priced.total, 8),
        }
        for key in BREAKDOWN_KEYS:  # where the provider reported them
            if key in usage:
                entry[key] = usage[key]  # type: ignore[literal-required]
        if priced is not None:
            entry["cost_parts"] = {
                "uncached_input": round(priced.uncached_input, 8),
                "cache_read": round(priced.cache_read, 8),
                "cache_write": round(priced.cache_write, 8),
                "output": round(priced.output, 8),
            }
        entries.append(entry)
    return entries


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
        stats = stats + replace(own, runs=0, duration_s=0.0, trajectory=())
    # the calls in the order they happened: a sub-agent's calls follow its parent iteration's
    names = tuple(located.call.name for located in located_calls(context, nested=True))
    return replace(stats, trajectory=names)

"""How the cost of updating an :class:`AgentContext` grows with the number of iterations.

The context is immutable: every update returns a new context. Done naively (copy the list
of iterations on every update), building a run of ``n`` iterations costs ``O(n**2)``.
pytest-agentctx shares storage between a context and the one it came from (``Seq``), so
each update should cost the same at iteration 10,000 as at iteration 10.

Each iteration here is what the agent loop does for one tool round:
``add_assistant_message(None, [ToolCall(...)])`` then ``add_tool_results([ToolResult(...)])``,
with a fixed ``at=`` timestamp. The same steps run on :class:`NaiveContext`, a frozen
pydantic model with plain ``list`` fields whose updates copy the list of iterations
(``model_copy(update={"iterations": [*old[:-1], new]})``), which is what a user or a rival
library writes first. Both use the package's own ``Message``/``ToolCall``/``ToolResult``
models; the naive one skips the package's state checks, which only flatters it.

Run it alone with ``.venv/bin/python benchmarks/bench_context.py [--quick]``; ``run.py``
runs it with the other benchmarks and prints the tables.
"""

from __future__ import annotations

import argparse
import gc
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field

from pytest_agentctx import AgentContext, Message, ToolCall, ToolResult

FULL_SIZES: tuple[int, ...] = (1_000, 2_000, 5_000, 10_000)
QUICK_SIZES: tuple[int, ...] = (250, 500, 1_000)
FULL_REPEATS = 5
QUICK_REPEATS = 2

AT = datetime(2025, 1, 1, tzinfo=UTC)

Round = tuple[ToolCall, ToolResult]


class _Updatable(Protocol):
    def add_assistant_message(
        self, content: str | None, tool_calls: Iterable[ToolCall] = (), *, at: datetime
    ) -> Any: ...

    def add_tool_results(self, results: Iterable[ToolResult], *, at: datetime) -> Any: ...


# -- the naive alternative ----------------------------------------------------------------

_NAIVE_CONFIG = ConfigDict(frozen=True, extra="forbid")


class NaiveIteration(BaseModel):
    """An iteration with plain list fields."""

    model_config = _NAIVE_CONFIG

    number: int
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    started_at: datetime
    completed_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class NaiveContext(BaseModel):
    """An immutable context whose every update copies the whole list of iterations."""

    model_config = _NAIVE_CONFIG

    iterations: list[NaiveIteration]
    current_iteration: int
    created_at: datetime
    updated_at: datetime

    @classmethod
    def new(cls, input: str, *, at: datetime) -> NaiveContext:
        first = NaiveIteration(
            number=1, messages=[Message(role="user", content=input)], started_at=at
        )
        return cls(iterations=[first], current_iteration=1, created_at=at, updated_at=at)

    def add_assistant_message(
        self, content: str | None, tool_calls: Iterable[ToolCall] = (), *, at: datetime
    ) -> NaiveContext:
        current = self.iterations[-1]
        calls = list(tool_calls)
        message = Message(role="assistant", content=content, tool_calls=calls)
        updated = current.model_copy(
            update={
                "messages": [*current.messages, message],
                "tool_calls": [*current.tool_calls, *calls],
                "completed_at": None if calls else at,
            }
        )
        return self.model_copy(
            update={"iterations": [*self.iterations[:-1], updated], "updated_at": at}
        )

    def add_tool_results(self, results: Iterable[ToolResult], *, at: datetime) -> NaiveContext:
        current = self.iterations[-1]
        messages = [*current.messages, *(result.to_message() for result in results)]
        completed = current.model_copy(update={"messages": messages, "completed_at": at})
        following = NaiveIteration(number=current.number + 1, started_at=at)
        return self.model_copy(
            update={
                "iterations": [*self.iterations[:-1], completed, following],
                "current_iteration": following.number,
                "updated_at": at,
            }
        )


# -- the workload -------------------------------------------------------------------------


def make_rounds(n: int) -> list[Round]:
    """The tool calls and results of ``n`` iterations, built before any timer starts."""
    rounds: list[Round] = []
    for i in range(n):
        call = ToolCall(id=f"call_{i}", name="lookup", arguments={"query": f"q{i}"})
        rounds.append((call, ToolResult(tool_call_id=call.id, name="lookup", content=f"r{i}")))
    return rounds


def _run_rounds(ctx: _Updatable, rounds: Sequence[Round]) -> Any:
    for call, result in rounds:
        ctx = ctx.add_assistant_message(None, [call], at=AT)
        ctx = ctx.add_tool_results([result], at=AT)
    return ctx


def build_agentctx(rounds: Sequence[Round]) -> AgentContext:
    """A context of ``len(rounds)`` completed iterations, through the public API."""
    ctx: AgentContext = _run_rounds(AgentContext.new("benchmark", at=AT), rounds)
    return ctx


def build_naive(rounds: Sequence[Round]) -> NaiveContext:
    """The same run on the copy-the-list model."""
    ctx: NaiveContext = _run_rounds(NaiveContext.new("benchmark", at=AT), rounds)
    return ctx


# -- measuring ----------------------------------------------------------------------------


class Timing(NamedTuple):
    """Seconds of wall-clock time (``perf_counter``) and of this process's CPU time."""

    wall: float
    cpu: float

    def best(self, other: Timing) -> Timing:
        """The shorter of each, taken separately."""
        return Timing(min(self.wall, other.wall), min(self.cpu, other.cpu))


def time_once(func: Callable[[], object], *, collector: bool = True) -> Timing:
    """One timing of ``func()``, after a ``gc.collect()``.

    The collector stays enabled during the timing, as in a real test run, unless
    ``collector`` is false. CPU time leaves out the time the process waited for a core,
    so it is the steadier of the two on a machine shared with other work.
    """
    gc.collect()
    if not collector:
        gc.disable()
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        func()
        return Timing(time.perf_counter() - wall, time.process_time() - cpu)
    finally:
        gc.enable()


def best_of(repeats: int, func: Callable[[], object]) -> Timing:
    """The shortest of ``repeats`` timings of ``func()`` (see :func:`time_once`)."""
    best = time_once(func)
    for _ in range(repeats - 1):
        best = best.best(time_once(func))
    return best


#: The implementations measured at every size: name -> (build, collector enabled).
IMPLEMENTATIONS: dict[str, tuple[Callable[[Sequence[Round]], object], bool]] = {
    "agentctx": (build_agentctx, True),
    "naive": (build_naive, True),
    "agentctx_gc_off": (build_agentctx, False),
}


@dataclass(frozen=True)
class ScalingRow:
    """One size: the best timing of every implementation."""

    n: int
    timings: dict[str, Timing]

    def total_ms(self, name: str, clock: str = "wall") -> float:
        return float(getattr(self.timings[name], clock)) * 1e3

    def per_iter_us(self, name: str, clock: str = "wall") -> float:
        return float(getattr(self.timings[name], clock)) / self.n * 1e6

    def to_json(self) -> dict[str, Any]:
        return {
            "n": self.n,
            **{
                f"{name}_{clock}_per_iter_us": self.per_iter_us(name, clock)
                for name in self.timings
                for clock in Timing._fields
            },
        }


@dataclass(frozen=True)
class SerializationResult:
    """Cost of a JSON round trip of the largest context (informational)."""

    n: int
    json_bytes: int
    dump: Timing
    validate: Timing


@dataclass(frozen=True)
class ContextResults:
    sizes: tuple[int, ...]
    repeats: int
    rows: list[ScalingRow]
    serialization: SerializationResult

    def growth(self, name: str, clock: str = "wall") -> float:
        """Per-iteration cost at the largest size over that at the smallest (linear: ~1)."""
        first, last = self.rows[0], self.rows[-1]
        return last.per_iter_us(name, clock) / first.per_iter_us(name, clock)

    def to_json(self) -> dict[str, Any]:
        return {
            "sizes": list(self.sizes),
            "repeats": self.repeats,
            "rows": [row.to_json() for row in self.rows],
            "growth": {
                f"{name}_{clock}": self.growth(name, clock)
                for name in IMPLEMENTATIONS
                for clock in Timing._fields
            },
            "serialization": {
                "n": self.serialization.n,
                "json_bytes": self.serialization.json_bytes,
                "dump": self.serialization.dump._asdict(),
                "validate": self.serialization.validate._asdict(),
            },
        }


def check_equivalent(n: int = 50) -> None:
    """Both implementations produce the same data (so they do the same work)."""
    rounds = make_rounds(n)
    ours = build_agentctx(rounds).model_dump(mode="json")
    naive = build_naive(rounds).model_dump(mode="json")
    if ours != naive:
        raise AssertionError("NaiveContext and AgentContext disagree; the comparison is unfair")
    if len(ours["iterations"]) != n + 1:
        raise AssertionError(f"expected {n + 1} iterations, got {len(ours['iterations'])}")


def measure_scaling(sizes: Sequence[int], repeats: int) -> list[ScalingRow]:
    """Best of ``repeats`` for every size and implementation.

    The repeats are interleaved (every size and implementation once per round) so that a
    burst of load from other processes does not land on one size only.
    """
    rounds = {n: make_rounds(n) for n in sizes}
    best: dict[int, dict[str, Timing]] = {n: {} for n in sizes}
    for _ in range(repeats):
        for n in sizes:
            for name, (build, collector) in IMPLEMENTATIONS.items():
                timing = time_once(partial(build, rounds[n]), collector=collector)
                previous = best[n].get(name)
                best[n][name] = timing if previous is None else previous.best(timing)
    return [ScalingRow(n=n, timings=best[n]) for n in sizes]


def measure_serialization(n: int, repeats: int) -> SerializationResult:
    ctx = build_agentctx(make_rounds(n))
    text = ctx.model_dump_json()
    dump = best_of(repeats, ctx.model_dump_json)
    validate = best_of(repeats, lambda: AgentContext.model_validate_json(text))
    if AgentContext.model_validate_json(text) != ctx:
        raise AssertionError("model_validate_json(model_dump_json()) did not round-trip")
    return SerializationResult(n=n, json_bytes=len(text.encode()), dump=dump, validate=validate)


def run(*, quick: bool = False) -> ContextResults:
    """Run the context benchmarks (full sizes, or small ones with ``quick``)."""
    sizes = QUICK_SIZES if quick else FULL_SIZES
    repeats = QUICK_REPEATS if quick else FULL_REPEATS
    check_equivalent()
    rows = measure_scaling(sizes, repeats)
    serialization = measure_serialization(sizes[-1], min(repeats, 3))
    return ContextResults(sizes=sizes, repeats=repeats, rows=rows, serialization=serialization)


# -- reporting ----------------------------------------------------------------------------


def markdown(results: ContextResults) -> str:
    """The results as Markdown tables."""
    lines = [
        f"### Context scaling (best of {results.repeats}; one iteration = "
        "add_assistant_message + add_tool_results)",
        "",
        "Wall = time.perf_counter, CPU = time.process_time (leaves out time spent waiting "
        "for a core). Per-iteration figures are wall / CPU.",
        "",
        "| iterations | AgentContext total (wall) | AgentContext per iteration "
        "| naive copy total (wall) | naive per iteration | naive / AgentContext (wall) "
        "| AgentContext per iteration, gc off |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def per_iter(row: ScalingRow, name: str) -> str:
        wall, cpu = (row.per_iter_us(name, clock) for clock in Timing._fields)
        return f"{wall:,.1f} / {cpu:,.1f} µs"

    for row in results.rows:
        ratio = row.total_ms("naive") / row.total_ms("agentctx")
        lines.append(
            f"| {row.n:,} | {row.total_ms('agentctx'):,.1f} ms | {per_iter(row, 'agentctx')} "
            f"| {row.total_ms('naive'):,.1f} ms | {per_iter(row, 'naive')} | {ratio:,.2f}x "
            f"| {per_iter(row, 'agentctx_gc_off')} |"
        )

    def growth(name: str) -> str:
        return f"{results.growth(name, 'wall'):.2f} / {results.growth(name, 'cpu'):.2f}"

    first, last = results.rows[0].n, results.rows[-1].n
    serialization = results.serialization
    lines += [
        "",
        f"Per-iteration cost at {last:,} over that at {first:,} iterations, wall / CPU "
        f"(constant cost per iteration = 1.0; a cost proportional to the iterations already "
        f"held = {last / first:.1f}): AgentContext **{growth('agentctx')}**, "
        f"naive copy **{growth('naive')}**, AgentContext with gc off {growth('agentctx_gc_off')}.",
        "",
        f"### JSON round trip of a {serialization.n:,}-iteration context "
        f"(informational, best of {min(results.repeats, 3)}, wall / CPU)",
        "",
        "| JSON size | ctx.model_dump_json() | AgentContext.model_validate_json() |",
        "|---:|---:|---:|",
        f"| {serialization.json_bytes / 1e6:,.2f} MB "
        f"| {serialization.dump.wall * 1e3:,.1f} / {serialization.dump.cpu * 1e3:,.1f} ms "
        f"| {serialization.validate.wall * 1e3:,.1f} / "
        f"{serialization.validate.cpu * 1e3:,.1f} ms |",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="small sizes, fewer repeats")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args(argv)
    results = run(quick=args.quick)
    print(json.dumps(results.to_json(), indent=2) if args.json else markdown(results))


if __name__ == "__main__":
    main()

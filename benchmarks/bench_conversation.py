"""Conversations: what pruning costs before a model call, and how a long conversation grows.

Two measurements, both offline:

1. **Pruning a 10,000-message conversation.** A conversation of 10,000 messages (a system
   message, then turns of a user question, an assistant tool call, sometimes two in
   parallel, their results and an answer) is pruned by a :class:`ContextWindow` of
   ``max_tokens=8_000, min_recent_turns=2`` with each built-in strategy: by a new window
   (*cold*: every message is counted); by a window that pruned it before, with one new
   message (what the runtime does before every model call), as is, and after pruning
   another conversation; and as a conversation the window does not know but whose
   messages it counted (units grouped again). Target: under 10 ms.
2. **Growth of a conversation through the runtime.** An agent with one tool and a
   ``ContextWindow(max_tokens=600)`` talks for 10, 25, 50 and 100 turns (each turn: a tool
   call, its result, an answer; two model calls) through :class:`AgentRuntime` and the
   real ``openai`` SDK, answered by :class:`FakeLLM`. Linear overall cost means a constant
   cost per turn. The same conversation without a window is shown beside it: every call
   then sends the whole history, so its turns get dearer as the conversation grows.

Wall time (``time.perf_counter``) and CPU time (``time.process_time``) are both shown: on a
machine loaded by other processes, wall time includes waiting for a core; the conclusions
use CPU time.

    .venv/bin/python benchmarks/bench_conversation.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shlex
import ssl
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx2
import openai

from pytest_agentctx import (
    Agent,
    AgentRuntime,
    ContextWindow,
    FakeLLM,
    Message,
    OpenAIChatProvider,
    Pruned,
    SequentialIds,
    StepClock,
    ToolCall,
    tool,
)

STRATEGIES = ("oldest_first", "middle_out", "recent_turns")
PRUNE_SIZE = 10_000
PRUNE_TARGET_MS = 10.0
FULL_TURNS: tuple[int, ...] = (10, 25, 50, 100)
QUICK_TURNS: tuple[int, ...] = (10, 25)


@dataclass(frozen=True)
class Timing:
    wall_ms: float
    cpu_ms: float


def _timed(fn: Callable[[], Any]) -> tuple[Any, Timing]:
    wall, cpu = time.perf_counter(), time.process_time()
    value = fn()
    return value, Timing((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3)


def _median(timings: Sequence[Timing]) -> Timing:
    return Timing(
        statistics.median(t.wall_ms for t in timings), statistics.median(t.cpu_ms for t in timings)
    )


# -- 1. pruning a long conversation ------------------------------------------------------


def long_conversation(size: int = PRUNE_SIZE) -> list[Message]:
    """``size`` messages as the runtime builds them: tool rounds with their results."""
    messages = [Message(role="system", content="You are a support agent. " * 8)]
    turn = 0
    while len(messages) < size:
        turn += 1
        messages.append(Message(role="user", content=f"Where is order {turn}? " * 4))
        calls = [ToolCall(id=f"call_{turn}_a", name="lookup_order", arguments={"id": turn})]
        if turn % 3 == 0:  # every third turn, two calls in parallel
            calls.append(
                ToolCall(id=f"call_{turn}_b", name="lookup_customer", arguments={"order": turn})
            )
        messages.append(Message(role="assistant", tool_calls=calls))
        messages.extend(
            Message(
                role="tool",
                content=f"order {turn}: shipped on day {turn % 28 + 1}, carrier ACME. " * 2,
                tool_call_id=call.id,
                name=call.name,
            )
            for call in calls
        )
        messages.append(Message(role="assistant", content=f"Order {turn} has shipped. " * 3))
    return messages[:size]


@dataclass
class PruneRow:
    strategy: str
    cold: Timing
    warm_same: Timing
    warm_appended: Timing
    warm_interleaved: Timing
    warm_regrouped: Timing
    messages_after: int
    tokens_before: int
    tokens_after: int


def _window(strategy: str) -> ContextWindow:
    return ContextWindow(max_tokens=8_000, min_recent_turns=2, strategy=strategy)  # type: ignore[arg-type]


def measure_pruning(repeats: int, size: int = PRUNE_SIZE) -> list[PruneRow]:
    """Per strategy, the median of ``repeats`` rounds of: a new window's first prune
    (cold), the same list again, the list with one new message appended (what the runtime
    does before its next call), the list after the window pruned another conversation, and
    the list with its first message replaced by an equal copy (so that the window does not
    know the conversation: counts cached, units grouped again)."""
    messages = long_conversation(size)
    other = long_conversation(50)
    rows = []
    for strategy in STRATEGIES:
        timings: dict[str, list[Timing]] = {
            "cold": [],
            "same": [],
            "appended": [],
            "interleaved": [],
            "regrouped": [],
        }
        pruned: Pruned | None = None
        for round_ in range(repeats):
            window = _window(strategy)  # a new window has empty caches
            appended = [*messages, Message(role="user", content=f"And order {round_}?")]
            regrouped = [messages[0].model_copy(), *messages[1:]]
            gc.collect()
            pruned, cold = _timed(lambda w=window: w.prune(messages))  # type: ignore[misc]
            timings["cold"].append(cold)
            timings["same"].append(_timed(lambda w=window: w.prune(messages))[1])  # type: ignore[misc]
            timings["appended"].append(
                _timed(lambda w=window, a=appended: w.prune(a))[1]  # type: ignore[misc]
            )
            window.prune(other)
            timings["interleaved"].append(
                _timed(lambda w=window, a=appended: w.prune(a))[1]  # type: ignore[misc]
            )
            timings["regrouped"].append(
                _timed(lambda w=window, r=regrouped: w.prune(r))[1]  # type: ignore[misc]
            )
        assert pruned is not None
        assert pruned.within_limits
        rows.append(
            PruneRow(
                strategy,
                _median(timings["cold"]),
                _median(timings["same"]),
                _median(timings["appended"]),
                _median(timings["interleaved"]),
                _median(timings["regrouped"]),
                len(pruned.messages),
                pruned.tokens_before,
                pruned.tokens_after,
            )
        )
    return rows


# -- 2. a conversation through the runtime -----------------------------------------------


@tool
def lookup_order(order_id: str) -> str:
    """Status of an order."""
    return f"order {order_id}: shipped, carrier ACME, tracking {order_id}-XYZ."


@dataclass(frozen=True)
class TimedWindow(ContextWindow):
    """A ContextWindow that adds the CPU time of every prune to ``PRUNE_CPU``."""

    def prune(self, messages: Sequence[Message]) -> Pruned:
        started = time.process_time()
        try:
            return super().prune(messages)
        finally:
            PRUNE_CPU[0] += time.process_time() - started


PRUNE_CPU = [0.0]


@dataclass
class GrowthRow:
    turns: int
    windowed: bool
    total: Timing
    per_turn: list[Timing] = field(repr=False)
    prune_cpu_ms: float = 0.0
    messages: int = 0
    sent_last: int = 0

    def mean(self, part: slice = slice(None)) -> Timing:
        chosen = self.per_turn[part]
        return Timing(
            sum(t.wall_ms for t in chosen) / len(chosen),
            sum(t.cpu_ms for t in chosen) / len(chosen),
        )


async def _conversation(turns: int, windowed: bool, client: Any) -> GrowthRow:
    window = TimedWindow(max_tokens=600, min_recent_turns=2) if windowed else None
    agent = Agent(
        name="support",
        model="openai:gpt-4o-mini",
        system_prompt="You are a support agent. Look orders up before answering.",
        tools=[lookup_order],
        window=window,
    )
    runtime = AgentRuntime(
        clock=StepClock(),
        ids=SequentialIds(),
        providers={"openai": OpenAIChatProvider(client=client)},
    )
    PRUNE_CPU[0] = 0.0
    per_turn: list[Timing] = []
    with FakeLLM() as fake:
        for turn in range(1, turns + 1):
            fake.reply_tool_call("lookup_order", order_id=f"A{turn}")
            fake.reply(f"Order A{turn} has shipped with ACME; it should arrive soon.")
        result = None
        wall_0, cpu_0 = time.perf_counter(), time.process_time()
        for turn in range(1, turns + 1):
            question = f"Where is my order A{turn}? I ordered it a while ago."
            wall, cpu = time.perf_counter(), time.process_time()
            if result is None:
                result = await runtime.run(agent, question)
            else:
                result = await runtime.continue_conversation(result, question)
            per_turn.append(
                Timing((time.perf_counter() - wall) * 1e3, (time.process_time() - cpu) * 1e3)
            )
        total = Timing((time.perf_counter() - wall_0) * 1e3, (time.process_time() - cpu_0) * 1e3)
        fake.verify()
    assert result is not None
    return GrowthRow(
        turns,
        windowed,
        total,
        per_turn,
        PRUNE_CPU[0] * 1e3,
        len(result.context.get_all_messages()),
        len(fake.requests[-1].messages),
    )


async def _growth(sizes: Sequence[int]) -> list[GrowthRow]:
    tls = ssl.create_default_context()
    rows = []
    async with openai.AsyncOpenAI(
        api_key="sk-bench", http_client=httpx2.AsyncClient(verify=tls)
    ) as client:
        await _conversation(3, True, client)  # warm up imports and the SDK's first call
        for windowed in (True, False):
            for turns in sizes:
                gc.collect()
                rows.append(await _conversation(turns, windowed, client))
    return rows


def measure_growth(sizes: Sequence[int]) -> list[GrowthRow]:
    return asyncio.run(_growth(sizes))


# -- reporting -----------------------------------------------------------------------------


@dataclass
class Results:
    quick: bool
    repeats: int
    pruning: list[PruneRow]
    growth: list[GrowthRow]
    facts: list[tuple[str, str]]

    def to_json(self) -> dict[str, Any]:
        return {
            "pruning": [asdict(row) for row in self.pruning],
            "growth": [
                {**asdict(row), "per_turn": [asdict(t) for t in row.per_turn]}
                for row in self.growth
            ],
            "facts": dict(self.facts),
        }


def _ms(timing: Timing) -> str:
    return f"{timing.wall_ms:,.2f} / {timing.cpu_ms:,.2f}"


def markdown(results: Results) -> str:
    lines = [
        f"### Pruning a {PRUNE_SIZE:,}-message conversation "
        f"(ContextWindow(max_tokens=8_000, min_recent_turns=2); median of {results.repeats})",
        "",
        "Times are wall / CPU in ms. *Cold*: the first prune by a new window (it counts every "
        "message). *+1 message*: the same conversation with one new message, pruned by the "
        "window that pruned it before (what the runtime does before every model call). "
        "*Same list*: the same list again. *Interleaved*: the +1 list again after the window "
        "pruned another conversation (a window keeps the layouts of 16). *Regrouped*: a "
        "conversation the window does not know whose messages it counted before (counts "
        "cached, units grouped again). "
        f"Target: under {PRUNE_TARGET_MS:.0f} ms.",
        "",
        "| strategy | cold | +1 message | same list | interleaved | regrouped | messages kept "
        "| tokens before → after |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for prune in results.pruning:
        lines.append(
            f"| {prune.strategy} | {_ms(prune.cold)} | {_ms(prune.warm_appended)} "
            f"| {_ms(prune.warm_same)} | {_ms(prune.warm_interleaved)} "
            f"| {_ms(prune.warm_regrouped)} | {prune.messages_after:,} "
            f"| {prune.tokens_before:,} → {prune.tokens_after:,} |"
        )
    lines += [
        "",
        "### A conversation through the runtime (FakeLLM, openai SDK; one turn = a tool "
        "call, its result, an answer: two model calls)",
        "",
        "Times are wall / CPU in ms. Per turn: the mean over all turns, over the first 10 and "
        "over the last 10. The window, ContextWindow(max_tokens=600, min_recent_turns=2), "
        "fills up after about 8 turns; from then on every call sends about the same number "
        "of messages.",
        "",
        "| window | turns | messages | sent in last call | total | per turn (all) "
        "| first 10 turns | last 10 turns | prune CPU (total) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in results.growth:
        lines.append(
            f"| {'ContextWindow' if row.windowed else 'none'} | {row.turns} | {row.messages:,} "
            f"| {row.sent_last} | {_ms(row.total)} | {_ms(row.mean())} "
            f"| {_ms(row.mean(slice(0, 10)))} | {_ms(row.mean(slice(-10, None)))} "
            f"| {row.prune_cpu_ms:,.2f} |"
        )
    for windowed in (True, False):
        rows = [row for row in results.growth if row.windowed == windowed]
        first, last = rows[0], rows[-1]
        ratio = last.total.cpu_ms / first.total.cpu_ms
        tails = ", ".join(
            f"{row.turns} turns {row.mean(slice(-10, None)).cpu_ms:,.1f} ms" for row in rows
        )
        tens = " · ".join(
            f"{last.mean(slice(i, i + 10)).cpu_ms:,.1f}" for i in range(0, last.turns, 10)
        )
        lines += [
            "",
            f"{'With' if windowed else 'Without'} a window: total CPU at {last.turns} turns over "
            f"{first.turns} turns = **{ratio:.1f}x** (linear: {last.turns / first.turns:.1f}x, "
            f"quadratic: {(last.turns / first.turns) ** 2:.0f}x). CPU per turn over the last "
            f"10 turns of each run: {tails}. The {last.turns}-turn run, CPU per turn by tens "
            f"of turns (ms): {tens}.",
        ]
    lines += ["", "### Machine and run", "", "| | |", "|---|---|"]
    lines += [f"| {key} | {value} |" for key, value in results.facts]
    return "\n".join(lines)


def _command() -> str:
    python = Path(sys.executable)
    script = Path(sys.argv[0]).resolve()
    shown = []
    for path in (python, script):
        try:
            shown.append(str(path.relative_to(Path.cwd())))
        except ValueError:
            shown.append(str(path))
    return shlex.join([*shown, *sys.argv[1:]])


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _load() -> str:
    try:
        return " ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def run(*, quick: bool = False) -> Results:
    """Run both measurements (small ones with ``quick``)."""
    started = time.perf_counter()
    facts = [
        ("date", datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")),
        ("command", f"`{_command()}`"),
        ("python", f"{platform.python_implementation()} {platform.python_version()}"),
        ("platform", platform.platform()),
        ("cpu", f"{_cpu_model()}, {os.cpu_count()} logical CPUs"),
        *((name, _version(name)) for name in ("pytest-agentctx", "pydantic", "openai")),
    ]
    load_before = _load()
    repeats = 3 if quick else 7
    pruning = measure_pruning(repeats)
    growth = measure_growth(QUICK_TURNS if quick else FULL_TURNS)
    facts += [
        ("load average (1, 5, 15 min) before / after", f"{load_before} / {_load()}"),
        ("wall time of the run", f"{time.perf_counter() - started:.0f} s"),
    ]
    return Results(quick, repeats, pruning, growth, facts)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer turns and repeats")
    parser.add_argument("--json", action="store_true", help="print JSON instead of Markdown")
    args = parser.parse_args(argv)
    results = run(quick=args.quick)
    print(json.dumps(results.to_json(), indent=2) if args.json else markdown(results))


if __name__ == "__main__":
    main()

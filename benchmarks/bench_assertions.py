"""Assertions and snapshots, side by side with syrupy's amber and dirty-equals.

Run it from the repository root; it prints a Markdown table::

    .venv/bin/python benchmarks/bench_assertions.py            # the issue's sizes
    .venv/bin/python benchmarks/bench_assertions.py --quick    # smaller, for a smoke run

Every figure is the best of several runs, in CPU time of this process; the snapshot and
partial-match rows time ours and the other library in alternation and give the median ratio
of the pairs. The
data is one synthetic run: N iterations, each an assistant message with three tool calls
and the three tool results (4 messages, 3 tool calls), with token usage in the metadata.

Targets:

1. a snapshot assertion of 1,000 iterations at least 2x faster than syrupy's default amber
   extension on the same data (serialize, read the stored snapshot, compare);
2. the failing diff of a one-message change in 1,000 iterations: under 50 ms and under
   15 lines;
3. ``matches`` linear in the size of the context, unordered matching included, and no
   slower than dirty-equals on the same partial pattern.
"""

from __future__ import annotations

import argparse
import platform
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib.metadata import version
from pathlib import Path
from typing import Any

from dirty_equals import IsList, IsPartialDict
from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.amber import AmberSnapshotExtension
from syrupy.terminal import disable_color

from pytest_agentctx import AgentContext, ToolCall, ToolResult, Unordered, matches
from pytest_agentctx.assertions.snapshots.extension import AgentSnapshotExtension
from pytest_agentctx.context._seq import Seq

T0 = datetime(2025, 1, 1, tzinfo=UTC)
TOOLS = ("search", "get_weather", "book")


def build(iterations: int) -> AgentContext:
    """A run of ``iterations`` iterations of 4 messages and 3 tool calls each."""
    ctx = AgentContext.new("Plan a trip to Rome", system_prompt="You plan trips.", at=T0)
    tick = 0
    for i in range(iterations):
        usage = {"input_tokens": 100 + i, "output_tokens": 20, "total_tokens": 120 + i}
        ctx = ctx.with_iteration_metadata({"model": "gpt-4o-mini", "usage": usage})
        calls = [
            ToolCall(id=f"call_{i}_{j}", name=name, arguments={"query": f"q{i}-{j}", "page": j})
            for j, name in enumerate(TOOLS)
        ]
        tick += 1
        ctx = ctx.add_assistant_message(None, calls, at=T0 + timedelta(seconds=tick))
        results = [
            ToolResult(tool_call_id=c.id, name=c.name, content=f"result {i} of {c.name}")
            for c in calls
        ]
        tick += 1
        ctx = ctx.add_tool_results(results, at=T0 + timedelta(seconds=tick))
    return ctx.add_assistant_message("Booked.", at=T0 + timedelta(seconds=tick + 1))


def change_one_message(ctx: AgentContext, index: int) -> AgentContext:
    """The same run with the content of one tool message changed."""
    iteration = ctx.iterations[index]
    messages = list(iteration.messages)
    messages[1] = messages[1].model_copy(update={"content": "a different result"})
    changed = iteration.model_copy(update={"messages": Seq(messages)})
    iterations = list(ctx.iterations)
    iterations[index] = changed
    return ctx.model_copy(update={"iterations": Seq(iterations)})


def _cpu_ms(fn: Callable[[], Any]) -> float:
    start = time.process_time()
    fn()
    return (time.process_time() - start) * 1000


def paired(ours: Callable[[], Any], theirs: Callable[[], Any], repeat: int) -> dict[str, Any]:
    """``ours`` and ``theirs`` timed in alternation, ``repeat`` times each (CPU ms).

    On a machine whose speed drifts, timing one side's runs and then the other's compares two
    different machines; alternating puts each of our runs next to one of theirs. Gives the
    best of each side, and the ratio theirs / ours of each pair (the median is the headline:
    a pair's two runs are milliseconds apart).
    """
    pairs = [(_cpu_ms(ours), _cpu_ms(theirs)) for _ in range(repeat)]
    ratios = sorted(t / o for o, t in pairs)
    return {
        "ours": min(o for o, _ in pairs),
        "theirs": min(t for _, t in pairs),
        "ratios": ratios,
        "median_ratio": statistics.median(ratios),
    }


def best(fn: Callable[[], Any], repeat: int) -> float:
    """The shortest of ``repeat`` runs of ``fn``, in milliseconds of CPU time.

    CPU time (``time.process_time``) rather than wall time, so that other processes on a
    busy machine do not count; the garbage collector runs as it would in a test.
    """
    return min(_cpu_ms(fn) for _ in range(repeat))


# -- snapshots ---------------------------------------------------------------------------


class _Stored:
    """One stored snapshot of one extension: write it, then assert against it."""

    def __init__(self, extension: Any, directory: Path, name: str, data: Any) -> None:
        self.extension = extension
        self.name = name
        suffix = type(extension).file_extension
        self.location = str(directory / f"{name}.{suffix}")
        collection = SnapshotCollection(location=self.location)
        collection.add(Snapshot(name=name, data=extension.serialize(data)))
        type(extension).write_snapshot_collection(snapshot_collection=collection)
        self.reads = 0

    def recall(self) -> Any:
        self.reads += 1  # a new session id each time: amber caches reads per session
        return self.extension.read_snapshot_data_from_location(
            snapshot_location=self.location, snapshot_name=self.name, session_id=str(self.reads)
        )

    def assert_equal(self, data: Any) -> bool:
        return bool(self.extension.serialize(data) == self.recall())

    def failing_diff(self, data: Any) -> list[str]:
        serialized = self.extension.serialize(data)
        stored = self.recall()
        assert serialized != stored
        with disable_color():
            return ["[+ received] == [- snapshot]", *self.extension.diff_lines(serialized, stored)]


def snapshot_rows(iterations: int, repeat: int) -> list[list[str]]:
    ctx = build(iterations)
    changed = change_one_message(ctx, iterations // 2)
    with tempfile.TemporaryDirectory() as tmp:
        ours = _Stored(AgentSnapshotExtension(), Path(tmp), "test_run", ctx)
        amber = _Stored(AmberSnapshotExtension(), Path(tmp), "test_run", ctx)
        assert ours.assert_equal(ctx)
        assert amber.assert_equal(ctx)
        passing = paired(
            lambda: ours.assert_equal(ctx), lambda: amber.assert_equal(ctx), repeat * 3
        )
        ours_ms, amber_ms = passing["ours"], passing["theirs"]
        failing = paired(
            lambda: ours.failing_diff(changed), lambda: amber.failing_diff(changed), repeat
        )
        ours_diff_ms, amber_diff_ms = failing["ours"], failing["theirs"]
        ours_lines = len(ours.failing_diff(changed)) + 1  # + the "re-run" hint line
        amber_lines = len(amber.failing_diff(changed))
        new_text, old_text = ours.extension.serialize(changed), ours.recall()
        serialize_ms = best(lambda: ours.extension.serialize(changed), repeat)
        read_ms = best(ours.recall, repeat)
        with disable_color():
            diff_ms = best(lambda: list(ours.extension.diff_lines(new_text, old_text)), repeat)
    speedup = passing["median_ratio"]
    low, high = passing["ratios"][0], passing["ratios"][-1]
    return [
        [
            f"snapshot assert, {iterations:,} iterations (passing)",
            f"{ours_ms:.0f} ms",
            f"{amber_ms:.0f} ms (amber)",
            f"{speedup:.1f}x faster (median of {len(passing['ratios'])} pairs; "
            f"{low:.1f}x to {high:.1f}x; of the best times {amber_ms / ours_ms:.1f}x)",
            ">= 2x faster",
            "met" if speedup >= 2 else "NOT met",
        ],
        [
            f"failing snapshot diff, one message changed in {iterations:,} iterations",
            f"{ours_diff_ms:.0f} ms, {ours_lines} lines",
            f"{amber_diff_ms:.0f} ms, {amber_lines} lines (amber)",
            f"{failing['median_ratio']:.1f}x faster",
            "< 50 ms, < 15 lines",
            ("met" if ours_diff_ms < 50 else "time NOT met")
            + ("" if ours_lines < 15 else ", lines NOT met"),
        ],
        [
            "  of which: serializing the run / reading the snapshot / the diff of the two texts",
            f"{serialize_ms:.0f} ms / {read_ms:.0f} ms / {diff_ms:.0f} ms",
            "",
            "",
            "",
            "",
        ],
    ]


# -- matching ----------------------------------------------------------------------------


def partial_patterns(iterations: int) -> tuple[Any, Any]:
    """The same partial pattern, as our plain data and as dirty-equals types."""
    ours = {
        "current_iteration": iterations + 1,
        "iterations": [
            {
                "number": i + 1,
                "tool_calls": [{"name": name} for name in TOOLS],
                "metadata": {"model": "gpt-4o-mini"},
            }
            for i in range(iterations)
        ]
        + [{"number": iterations + 1}],
    }
    dirty = IsPartialDict(
        current_iteration=iterations + 1,
        iterations=IsList(
            *[
                IsPartialDict(
                    number=i + 1,
                    tool_calls=IsList(*[IsPartialDict(name=name) for name in TOOLS]),
                    metadata=IsPartialDict(model="gpt-4o-mini"),
                )
                for i in range(iterations)
            ],
            IsPartialDict(number=iterations + 1),
        ),
    )
    return ours, dirty


def matching_rows(sizes: list[int], repeat: int) -> list[list[str]]:
    rows = []
    for iterations in sizes:
        ctx = build(iterations)
        dumped = ctx.model_dump()
        ours, dirty = partial_patterns(iterations)
        assert matches(ctx, ours)
        assert dirty == dumped
        timed = paired(
            lambda: matches(ctx, ours),  # noqa: B023
            lambda: dirty == dumped,  # noqa: B023
            repeat * 3,
        )
        ours_ms, dirty_ms = timed["ours"], timed["theirs"]
        ours_dumped_ms = best(lambda: matches(dumped, ours), repeat)  # noqa: B023
        dump_ms = best(ctx.model_dump, repeat)
        per = 1000 / iterations
        ratio = timed["median_ratio"]
        rows.append(
            [
                f"partial match, {iterations:,} iterations",
                f"{ours_ms:.1f} ms ({ours_ms * per:.1f} µs/it); "
                f"on the dump {ours_dumped_ms:.1f} ms",
                f"{dirty_ms:.1f} ms ({dirty_ms * per:.1f} µs/it), + model_dump {dump_ms:.0f} ms",
                f"{ratio:.2f}x faster (median of {len(timed['ratios'])} pairs)",
                "linear, <= dirty-equals",
                "met" if ratio >= 1 else "NOT met",
            ]
        )
    return rows


def unordered_rows(sizes: list[int], dirty_limit: int, repeat: int) -> list[list[str]]:
    rows = []
    for iterations in sizes:
        ctx = build(iterations)
        calls = ctx.all_tool_calls
        dumped = [call.model_dump() for call in calls]
        expected: list[dict[str, Any]] = [
            {"name": c.name, "arguments": {"query": c.arguments["query"]}} for c in calls
        ]
        random.Random(iterations).shuffle(expected)
        ours = Unordered(*expected)
        assert matches(calls, ours)
        ours_ms = best(lambda: matches(calls, ours), repeat)  # noqa: B023
        items = len(calls)
        if iterations <= dirty_limit:
            dirty = IsList(
                *[
                    IsPartialDict(name=e["name"], arguments=IsPartialDict(**e["arguments"]))
                    for e in expected
                ],
                check_order=False,
            )
            assert dirty == dumped
            dirty_ms = best(lambda: dirty == dumped, 1)  # noqa: B023
            theirs = f"{dirty_ms:.0f} ms ({dirty_ms * 1000 / items:.0f} µs/item)"
            ratio = f"{dirty_ms / ours_ms:.0f}x faster"
            verdict = "met" if ours_ms <= dirty_ms else "NOT met"
        else:
            theirs, ratio, verdict = "not run (quadratic)", "", "see growth"
        rows.append(
            [
                f"unordered match, {items:,} tool calls shuffled",
                f"{ours_ms:.1f} ms ({ours_ms * 1000 / items:.1f} µs/item)",
                theirs,
                ratio,
                "linear, <= dirty-equals",
                verdict,
            ]
        )
    return rows


def table(rows: list[list[str]]) -> str:
    header = ["measurement", "pytest-agentctx", "other library", "ratio", "target", "result"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer repeats")
    options = parser.parse_args()
    repeat = 2 if options.quick else 7
    snapshot_size = 200 if options.quick else 1000
    match_sizes = [100, 300] if options.quick else [100, 1000, 10000]
    unordered_sizes = [50, 100] if options.quick else [100, 200, 400, 1000, 3000]
    dirty_limit = 100 if options.quick else 400

    rows = snapshot_rows(snapshot_size, repeat)
    rows += matching_rows(match_sizes, repeat)
    rows += unordered_rows(unordered_sizes, dirty_limit, repeat)
    print(
        f"Python {platform.python_version()} on {platform.machine()}, "
        f"pytest-agentctx {version('pytest-agentctx')}, syrupy {version('syrupy')}, "
        f"dirty-equals {version('dirty-equals')}; CPU time, best of {repeat} runs.\n"
    )
    print(table(rows))


if __name__ == "__main__":
    main()

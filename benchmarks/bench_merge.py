"""What ``pytest-agentctx report merge`` costs on a sharded suite.

A suite of 10,000 agent tests split into 100 CI shards of 100 tests each: every shard's
report is written the way ``--agent-report`` writes it (each test's record built by
:func:`build_record` from its runs, with each run's whole context: three iterations of a
tool loop with the model's metadata and token usage, as the runtime records them; one test
in four has a cassette entry, one in ten a second run). The timed step is the whole
command, ``main(["report", "merge", OUT, FOLDER])``, in this process: reading and checking
the 100 files, merging, summing and writing the merged report. The reports are generated
once, before any timer starts; the figures are the median wall-clock and CPU times of the
rounds (the target: under 1 s; on a busy machine the CPU time is the steadier figure).

    .venv/bin/python benchmarks/bench_merge.py            # 100 shards x 100 tests, 5 rounds
    .venv/bin/python benchmarks/bench_merge.py --quick    # 10 shards x 100 tests, 2 rounds
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pytest_agentctx import AgentContext, ToolCall, ToolResult
from pytest_agentctx.cli.main import main
from pytest_agentctx.context.figures import RunRecord
from pytest_agentctx.reports.records import ReportCollector, build_record, dumps_report

AT = datetime(2025, 1, 1, tzinfo=UTC)


def context(test: int, run: int) -> AgentContext:
    """A tool loop of three iterations (two tool calls, then the answer), as the runtime
    records it: timed by a stepping clock, each iteration with its model and usage."""
    clock = iter(AT + timedelta(seconds=s) for s in range(100))
    ctx = AgentContext.new(f"Weather in city {test} (run {run})?", at=next(clock))
    for step in range(2):
        call = ToolCall(id=f"call_{step}", name="get_weather", arguments={"city": f"c{test}"})
        ctx = ctx.with_iteration_metadata(
            {"model": "gpt-4o-mini", "usage": {"input_tokens": 120 + test, "output_tokens": 20}},
            at=next(clock),
        )
        ctx = ctx.add_assistant_message(None, [call], at=next(clock))
        result = ToolResult(tool_call_id=call.id, name="get_weather", content="18°C and sunny")
        ctx = ctx.add_tool_results([result], at=next(clock))
    ctx = ctx.with_iteration_metadata(
        {"model": "gpt-4o-mini", "usage": {"input_tokens": 200 + test, "output_tokens": 30}},
        at=next(clock),
    )
    return ctx.add_assistant_message(f"It is 18°C and sunny in c{test}.", at=next(clock))


def shard_report(shard: int, tests: int) -> str:
    """The text ``--agent-report`` writes for shard ``shard`` of ``tests`` tests."""
    collector = ReportCollector()
    for index in range(tests):
        number = shard * tests + index
        nodeid = f"tests/test_weather_{shard:03}.py::test_city[{number}]"
        runs = [
            RunRecord("weather", "runtime", context(number, run))
            for run in range(1 + (number % 10 == 0))
        ]
        cassette: dict[str, Any] | None = None
        if number % 4 == 0:
            cassette = {
                "path": f"cassettes/tests/test_weather_{shard:03}/test_city[{number}].json",
                "mode": "none",
                "status": "replayed",
                "interactions": 3,
                "unused": [],
                "shared": False,
            }
        record = build_record(runs=runs, cassette=cassette)
        for phase in ("passed", "passed", "passed"):
            collector.add(nodeid, phase)
        collector.add(nodeid, "passed", record=record)
    report = collector.build()
    for test in report["tests"]:
        if test["cassette"] is not None:
            test["cassette"].pop("shared", None)
    return dumps_report(report)


def run(*, shards: int, tests: int, rounds: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        inputs = Path(folder) / "shards"
        inputs.mkdir()
        started = time.perf_counter()
        size = 0
        for shard in range(shards):
            text = shard_report(shard, tests)
            size += len(text.encode())
            (inputs / f"shard-{shard:03}.json").write_text(text, encoding="utf-8")
        print(
            f"generated {shards} shard reports x {tests} tests ({size / 1e6:.1f} MB) in "
            f"{time.perf_counter() - started:.1f} s"
        )
        output = Path(folder) / "merged.json"
        times, cpu = [], []
        for _ in range(rounds):
            started, started_cpu = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):
                code = main(["report", "merge", str(output), str(inputs)])
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            assert code == 0, f"merge exited {code}"
        merged_size = output.stat().st_size / 1e6
        print(
            f"report merge: median {statistics.median(times):.3f} s, best {min(times):.3f} s "
            f"(CPU time: median {statistics.median(cpu):.3f} s) over {rounds} rounds "
            f"({shards * tests} tests, merged report {merged_size:.1f} MB)"
        )


def cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="10 shards, 2 rounds")
    args = parser.parse_args(argv)
    if args.quick:
        run(shards=10, tests=100, rounds=2)
    else:
        run(shards=100, tests=100, rounds=5)


if __name__ == "__main__":
    cli()

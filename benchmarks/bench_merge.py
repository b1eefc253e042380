"""What ``pytest-agentctx report merge`` costs on a sharded suite.

A suite of 10,000 agent tests split into 100 CI shards of 100 tests each: every shard's
report is written the way ``--agent-report`` writes it (each test's record built by
:func:`build_record` from its runs, with each run's whole context: three iterations of a
tool loop with the model's metadata and token usage, as the runtime records them; one test
in four has a cassette entry, one in ten a second run). The timed step is the whole
command, ``main(["report", "merge", *FILES, "-o", OUT])``, in this process: reading and checking
the 100 files, merging, summing and writing the merged report. The reports are generated
once, before any timer starts; the figures are the median wall-clock and CPU times of the
rounds (the target: under 1 s; on a busy machine the CPU time is the steadier figure).

Side by side, in the same run: the tool a user merges shard results with today,
junitparser's ``merge`` (``junitparser merge shard-*.xml merged.xml``, called in this
process as its command does), over the JUnit XML the same 100 shards write with
``--junitxml``: one ``<testcase>`` per test, with the ``agentctx.*`` properties the plugin
adds. It merges test outcomes only; ``report merge`` also carries every run's iterations,
messages and figures. The ratio is report merge's median over junitparser's; the rounds of
the two are interleaved.

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
from xml.sax.saxutils import quoteattr

from junitparser import cli as junitparser_cli

from pytest_agentctx import AgentContext, ToolCall, ToolResult
from pytest_agentctx.cli.main import main
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.record import build_record, junit_properties
from pytest_agentctx.reports.schema import CassetteEntry, Record
from pytest_agentctx.reports.session_report import ReportCollector, dumps_report

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


def test_record(shard: int, number: int) -> Record:
    """The record of test ``number`` of shard ``shard``, as the plugin builds it."""
    runs = [
        RunRecord("weather", "runtime", context(number, run))
        for run in range(1 + (number % 10 == 0))
    ]
    cassette: CassetteEntry | None = None
    if number % 4 == 0:
        cassette = {
            "path": f"cassettes/tests/test_weather_{shard:03}/test_city[{number}].json",
            "mode": "none",
            "status": "replayed",
            "interactions": 3,
            "unused": [],
            "shared": False,
        }
    return build_record(runs=runs, cassette=cassette)


def shard_report(shard: int, tests: int) -> str:
    """The text ``--agent-report`` writes for shard ``shard`` of ``tests`` tests."""
    collector = ReportCollector()
    for index in range(tests):
        number = shard * tests + index
        nodeid = f"tests/test_weather_{shard:03}.py::test_city[{number}]"
        record = test_record(shard, number)
        for phase in ("passed", "passed", "passed"):
            collector.add(nodeid, phase)
        collector.add(nodeid, "passed", record=record)
    report = collector.build()
    for test in report["tests"]:
        if test["cassette"] is not None:
            test["cassette"].pop("shared", None)
    return dumps_report(report)


def shard_junit(shard: int, tests: int) -> str:
    """The JUnit XML ``--junitxml`` writes for the same shard: pytest's layout, one test case
    per test with the plugin's ``agentctx.*`` properties."""
    cases = []
    for index in range(tests):
        number = shard * tests + index
        properties = "".join(
            f"<property name={quoteattr(name)} value={quoteattr(str(value))} />"
            for name, value in junit_properties(test_record(shard, number))
        )
        cases.append(
            f'<testcase classname="tests.test_weather_{shard:03}" '
            f'name="test_city[{number}]" time="0.012"><properties>{properties}</properties>'
            "</testcase>"
        )
    return (
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
        f'<testsuite name="pytest" errors="0" failures="0" skipped="0" tests="{tests}" '
        f'time="1.2" timestamp="2025-01-01T00:00:00" hostname="ci-{shard}">'
        f"{''.join(cases)}</testsuite></testsuites>"
    )


def timed(steps: list[Any], rounds: int) -> list[tuple[list[float], list[float]]]:
    """Wall-clock and CPU seconds of ``rounds`` calls of each of ``steps`` (each returns an
    exit code), the rounds interleaved (one call of each step per round), so a change in the
    machine's load affects every step alike."""
    measured: list[tuple[list[float], list[float]]] = [([], []) for _ in steps]
    for _ in range(rounds):
        for step, (times, cpu) in zip(steps, measured, strict=True):
            started, started_cpu = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):
                code = step()
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
            assert code == 0, f"{step} exited {code}"
    return measured


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
        xml_inputs = sorted(inputs.glob("*.json"))
        for shard in range(shards):
            (inputs / f"shard-{shard:03}.xml").write_text(
                shard_junit(shard, tests), encoding="utf-8"
            )
        output = Path(folder) / "merged.json"
        xml_output = Path(folder) / "merged.xml"
        xml_paths = [str(path.with_suffix(".xml")) for path in xml_inputs]
        json_paths = [str(path) for path in xml_inputs]
        [(times, cpu), (xml_times, xml_cpu)] = timed(
            [
                lambda: main(["report", "merge", *json_paths, "-o", str(output)]),
                # junitparser's command function has no annotations
                lambda: junitparser_cli.merge(xml_paths, str(xml_output)),  # type: ignore[no-untyped-call]
            ],
            rounds,
        )
        merged_size = output.stat().st_size / 1e6
        print(
            f"report merge: median {statistics.median(times):.3f} s, best {min(times):.3f} s "
            f"(CPU time: median {statistics.median(cpu):.3f} s) over {rounds} rounds "
            f"({shards * tests} tests, merged report {merged_size:.1f} MB)"
        )
        print(
            f"junitparser merge (JUnit XML of the same tests): median "
            f"{statistics.median(xml_times):.3f} s, best {min(xml_times):.3f} s (CPU time: "
            f"median {statistics.median(xml_cpu):.3f} s, merged XML "
            f"{xml_output.stat().st_size / 1e6:.1f} MB)"
        )
        print(
            "ratio report merge / junitparser merge (median wall): "
            f"{statistics.median(times) / statistics.median(xml_times):.2f}"
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

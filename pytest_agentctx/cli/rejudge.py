"""``pytest-agentctx rejudge``: judges given now, run over recorded agent runs.

The runs are the conversations capture rebuilds from the agent-role interactions of the
cassettes of a folder, of one cassette file, or of the tests of a JSON report. Each judge
(a ``[[judge]]`` table of a TOML file, or ``--rubric`` with ``--judge-model``) is asked once
per run, live, with the role ``judge``; the agent is not run and none of its recorded calls
is sent. The verdicts are written to a JSON file and shown as a table; exit code 1 when a
verdict fails.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx._untrusted import LimitExceeded, read_untrusted
from pytest_agentctx.cli.config import IniOptions
from pytest_agentctx.evals.judge import DEFAULT_THRESHOLD
from pytest_agentctx.evals.rejudge import (
    JudgeSpec,
    RecordedRun,
    RejudgeError,
    RunVerdict,
    make_judge,
    parse_judges,
    rejudge,
    runs_of,
)
from pytest_agentctx.redaction.redactor import Redactor
from pytest_agentctx.traffic.cassettes.store import load_cassette
from pytest_agentctx.traffic.errors import CassetteFormatError

Print = Callable[[str], None]
CASSETTE_SUFFIXES = (".json", ".yaml", ".yml")
#: The version of the verdicts file's layout.
VERDICTS_VERSION = 1


def add_parser(commands: Any) -> None:
    """The ``rejudge`` command's arguments."""
    parser = commands.add_parser(
        "rejudge", help="run judges over the recorded agent runs of cassettes or a report"
    )
    parser.add_argument(
        "source", metavar="SOURCE", help="a cassette folder, a cassette file or a JSON report"
    )
    parser.add_argument(
        "--judges",
        metavar="JUDGES.toml",
        help="the judges: [[judge]] name, rubric, model, threshold",
    )
    parser.add_argument("--rubric", metavar="TEXT", help="one judge's rubric (with --judge-model)")
    parser.add_argument("--rubric-file", metavar="FILE", help="one judge's rubric, from a file")
    parser.add_argument(
        "--judge-model", metavar="PROVIDER:MODEL", help="its model, e.g. openai:gpt-4o-mini"
    )
    parser.add_argument(
        "--threshold",
        metavar="SCORE",
        type=float,
        default=DEFAULT_THRESHOLD,
        help=f"its lowest passing score (default {DEFAULT_THRESHOLD})",
    )
    parser.add_argument("--judge-name", metavar="NAME", default="judge", help="its name")
    parser.add_argument(
        "-o", "--output", metavar="VERDICTS.json", required=True, help="the verdicts to write"
    )


def _judges(args: argparse.Namespace) -> list[JudgeSpec]:
    judges: list[JudgeSpec] = []
    if args.judges:
        path = Path(args.judges)
        try:
            text = read_untrusted(path).decode("utf-8")
        except (LimitExceeded, UnicodeDecodeError) as exc:
            raise RejudgeError(f"--judges: {path}: {exc}") from None
        judges += parse_judges(text, where=str(path), base=path.parent)
    rubric = args.rubric
    if args.rubric_file:
        if rubric is not None:
            raise RejudgeError("give --rubric or --rubric-file, not both.")
        rubric = Path(args.rubric_file).read_text(encoding="utf-8")
    if rubric is not None or args.judge_model is not None:
        judges.append(
            make_judge(args.judge_name, rubric, args.judge_model, args.threshold, where="--rubric")
        )
    if not judges:
        raise RejudgeError(
            "no judge given; expected --judges JUDGES.toml or --rubric TEXT --judge-model "
            "PROVIDER:MODEL, e.g. pytest-agentctx rejudge cassettes/ --rubric 'The answer is "
            "polite.' --judge-model openai:gpt-4o-mini -o verdicts.json"
        )
    names = [judge.name for judge in judges]
    if len(set(names)) != len(names):
        raise RejudgeError(f"judge names {names}: each judge needs its own name (--judge-name).")
    return judges


def _is_report(path: Path) -> bool:
    if path.suffix != ".json":
        return False
    try:
        data = json.loads(read_untrusted(path))
    except (LimitExceeded, ValueError):
        return False
    return isinstance(data, dict) and "tests" in data and "interactions" not in data


def _cassette_runs(path: Path, shown: str, tests: str = "") -> list[RecordedRun]:
    """The runs of one cassette; ``tests``: the report's tests of it, for runs whose
    cassette does not name the test that recorded them."""
    try:
        interactions = load_cassette(path)
    except CassetteFormatError as exc:
        raise RejudgeError(
            f"{exc} (rejudge reads every .json, .yaml and .yml file of a folder as a "
            "cassette: give the folder that holds only cassettes)"
        ) from None
    runs = runs_of(shown, interactions)
    return [replace(run, test=run.test or tests) for run in runs]


def _report_cassettes(report_path: Path, rootdir: Path) -> list[tuple[Path, str, str]]:
    from pytest_agentctx.reports.session_report import load_report

    report = load_report(report_path)
    found: dict[str, Path] = {}
    tests: dict[str, list[str]] = {}
    for test in report["tests"]:
        entry = test.get("cassette")
        if not entry:
            continue
        tests.setdefault(entry["path"], []).append(test["nodeid"])
        if entry["path"] in found:
            continue
        given = Path(entry["path"])
        candidates = (
            [given] if given.is_absolute() else [rootdir / given, report_path.parent / given]
        )
        path = next((each for each in candidates if each.is_file()), None)
        if path is None:
            raise RejudgeError(
                f"{report_path}: test {test['nodeid']} has the cassette {entry['path']}, which "
                f"is not under {rootdir} nor beside the report; run the command from the "
                "project's folder (the one pytest ran in)."
            )
        found[entry["path"]] = path
    return [(path, shown, ", ".join(tests[shown])) for shown, path in sorted(found.items())]


def recorded_runs(source: str, rootdir: Path) -> list[RecordedRun]:
    """The recorded agent runs of ``source``: a folder, a cassette file or a report."""
    path = Path(source)
    if path.is_dir():
        files = sorted(
            each for each in path.rglob("*") if each.suffix in CASSETTE_SUFFIXES and each.is_file()
        )
        cassettes = [(each, each.relative_to(path).as_posix(), "") for each in files]
    elif path.is_file():
        cassettes = (
            _report_cassettes(path, rootdir) if _is_report(path) else [(path, path.name, "")]
        )
    else:
        raise RejudgeError(
            f"{source}: no such folder or file; expected a cassette folder (e.g. cassettes/), "
            "a cassette file or a JSON report (pytest --agent-report=report.json)."
        )
    runs = [run for found in cassettes for run in _cassette_runs(*found)]
    if not runs:
        raise RejudgeError(
            f"{source}: no recorded agent run in {len(cassettes)} cassette(s); record some "
            "first (pytest --agent-record), or give the folder they are in."
        )
    return runs


def _table(verdicts: Sequence[RunVerdict]) -> list[str]:
    rows = [
        (
            "passed" if each.verdict.passed else "FAILED",
            each.verdict.judge,
            f"{each.verdict.score:.2f}/{each.verdict.threshold:.2f}",
            each.run.label,
        )
        for each in verdicts
    ]
    head = ("verdict", "judge", "score", "run")
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(3)]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in (head, *rows)
    ]


def verdicts_document(
    source: str, judges: Sequence[JudgeSpec], runs: int, verdicts: Sequence[RunVerdict]
) -> dict[str, object]:
    """The verdicts file's content."""
    failed = sum(not each.verdict.passed for each in verdicts)
    return {
        "version": VERDICTS_VERSION,
        "source": source,
        "judges": [
            {
                "name": judge.name,
                "rubric_id": judge.rubric_id,
                "rubric": judge.rubric,
                "model": judge.model,
                "threshold": judge.threshold,
            }
            for judge in judges
        ],
        "runs": runs,
        "passed": len(verdicts) - failed,
        "failed": failed,
        "verdicts": [each.to_dict() for each in verdicts],
    }


def run_rejudge(
    args: argparse.Namespace,
    ini: IniOptions,
    redactor: Redactor,
    out: Print,
) -> int:
    """Judge every recorded run of ``args.source``; write and print the verdicts; the exit
    code (1 when a verdict failed)."""
    judges = _judges(args)
    runs = recorded_runs(args.source, ini.rootdir)
    verdicts = rejudge(runs, judges)
    document = verdicts_document(args.source, judges, len(runs), verdicts)
    text = json.dumps(redactor.json(document), indent=2, sort_keys=True, ensure_ascii=False)
    atomic_write_text(Path(args.output), text + "\n")
    for line in _table(verdicts):
        out(line)
    out(
        f"agentctx rejudge: {len(runs)} run(s), {len(judges)} judge(s), {len(verdicts)} "
        f"verdict(s): {document['passed']} passed, {document['failed']} failed; written to "
        f"{args.output}"
    )
    return 1 if document["failed"] else 0

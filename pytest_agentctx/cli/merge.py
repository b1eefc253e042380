"""``pytest-agentctx report merge``: the JSON reports of CI shards as one report.

Each shard of a suite split across machines (pytest-split, a CI matrix) writes its own
``--agent-report``; :func:`merge_reports` makes of them the report one session running
every test would have written: the tests in node id order, the summary summed by the
session's own code (:func:`~pytest_agentctx.reports.records.assemble_report`), shared
cassettes judged over every test that used them, and ``summary.gate`` the gate over the
merged tests without a baseline (run ``pytest-agentctx gate`` for a baseline). The result
does not depend on the order of the inputs.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.gate import evaluate_gate
from pytest_agentctx.reports.records import (
    REPORT_FORMAT,
    REPORT_VERSION,
    assemble_report,
    check_report,
)

__all__ = ["expand_inputs", "merge_reports", "read_reports"]

_WRITE = "Each shard writes one with: pytest --agent-report=PATH"


def expand_inputs(inputs: Iterable[str], *, output: Path | None = None) -> list[Path]:
    """The report files that ``inputs`` name: files, folders (their ``*.json`` files) and
    glob patterns; ``output`` is left out (merging into a folder of the inputs)."""
    found: list[Path] = []
    for text in inputs:
        path = Path(text)
        if path.is_dir():
            matches = sorted(path.glob("*.json"))
            where = f"folder {text} has no *.json file"
        elif any(ch in text for ch in "*?["):
            matches = sorted(Path(name) for name in glob.glob(text, recursive=True))
            where = f"pattern {text!r} matches no file"
        else:
            matches = [path]
            where = ""
        if not matches:
            raise ReportError(f"report merge: {where}. {_WRITE}, then merge those files.")
        found.extend(matches)
    skip = output.resolve() if output is not None else None
    unique = {path.resolve(): path for path in found if path.resolve() != skip}
    if not unique:
        raise ReportError(
            "report merge: no input report besides the output file. Give the shards' "
            "reports: pytest-agentctx report merge merged.json shard-*.json"
        )
    return [unique[key] for key in sorted(unique)]


def _read(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReportError(f"Report {path} does not exist. {_WRITE}.") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReportError(f"Report {path} cannot be read ({exc}). {_WRITE}.") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"Report {path} is not JSON ({exc.msg}, line {exc.lineno}): expected a report "
            f"written by pytest-agentctx. {_WRITE}."
        ) from None
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            f"{path} is not a pytest-agentctx report (format {found!r}, expected "
            f"{REPORT_FORMAT!r}): leave it out of the inputs. {_WRITE}."
        )
    return data


def read_reports(paths: Sequence[Path]) -> list[tuple[Path, dict[str, Any]]]:
    """Each report with its path, all of one format version (this package's)."""
    read = [(path, _read(path)) for path in paths]
    versions: dict[str, list[str]] = {}
    for path, data in read:
        versions.setdefault(repr(data.get("version")), []).append(str(path))
    if len(versions) > 1:
        listed = "; ".join(
            f"version {version}: {', '.join(names)}" for version, names in sorted(versions.items())
        )
        raise ReportError(
            f"report merge: the reports have different format versions ({listed}). Reports "
            f"of one run have one version: write every shard's report again with the same "
            f"pytest-agentctx (this one writes version {REPORT_VERSION}), then merge them."
        )
    return [(path, check_report(data, path)) for path, data in read]


def _tests(reports: Sequence[tuple[Path, Mapping[str, Any]]]) -> list[dict[str, Any]]:
    tests: dict[str, dict[str, Any]] = {}
    origin: dict[str, Path] = {}
    for path, report in reports:
        for test in report["tests"]:
            nodeid = test["nodeid"]
            if nodeid in tests and tests[nodeid] != test:
                first, second = sorted((str(origin[nodeid]), str(path)))
                raise ReportError(
                    f"report merge: test {nodeid} is in {first} and in {second} with "
                    "different results. Each test must run in one shard only: check how the "
                    "suite is split (pytest-split's --splits/--group, -k, paths) so that no "
                    "test runs twice, or leave out the report of the shard that should not "
                    "have run it."
                )
            tests.setdefault(nodeid, test)
            origin.setdefault(nodeid, path)
    return [json.loads(json.dumps(tests[nodeid])) for nodeid in sorted(tests)]


def _judge_shared_cassettes(tests: Sequence[dict[str, Any]]) -> None:
    """Judge again the cassettes several tests used (a shared cassette: each test's own
    has its own path) over every test: a recording is unused only if none used it.

    Each shard judged over its own tests; in a report, a shared cassette is ``unused``
    only from that judgement (a test's own check never calls a shared one unused), so
    ``replayed`` and ``unused`` are both the replay the session's collector judges."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for test in tests:
        cassette = test["cassette"]
        if cassette is not None:
            groups.setdefault(cassette["path"], []).append(cassette)
    for cassettes in groups.values():
        if len(cassettes) < 2:
            continue
        common = set(cassettes[0]["unused"])
        for cassette in cassettes[1:]:
            common &= set(cassette["unused"])
        for cassette in cassettes:
            cassette["unused"] = sorted(common)
            if cassette["status"] in ("replayed", "unused"):
                cassette["status"] = "unused" if common else "replayed"


def _gate_enabled(report: Mapping[str, Any]) -> bool:
    summary = report.get("summary")
    gate = summary.get("gate") if isinstance(summary, Mapping) else None
    return isinstance(gate, Mapping) and gate.get("enabled") is True


def merge_reports(reports: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[str, Any]:
    """One report of the tests of every report in ``reports`` (see the module's docstring).

    Raises :class:`ReportError` for a test in two reports with different entries.
    """
    tests = _tests(reports)
    _judge_shared_cassettes(tests)
    merged = assemble_report(tests)
    result = evaluate_gate(merged)
    merged["summary"]["gate"] = {
        "enabled": any(_gate_enabled(report) for _, report in reports),
        "passed": result.passed,
        "failures": list(result.failures),
    }
    return merged

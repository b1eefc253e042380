"""``pytest-agentctx cassettes check``: what in a cassette folder no longer earns its keep.

Four kinds of findings, each listed with what to do:

- *unused cassette files*: files under the folder that no test of a full run's report
  used, and that no test of it maps to by its node id (a skipped test keeps its cassette);
- *unused interactions*: recordings no test replayed (each test's ``unused`` list in the
  report; a shared cassette's are those no test that used it replayed);
- *old cassettes*: older than ``agent_cassette_max_age`` days (or ``--max-age``), by the
  file's modification time: cassettes store no time of recording;
- *retired models*: interactions whose request names a model its provider has retired
  (:mod:`.retired`).

The first two need the JSON report of a run of the whole suite (``--report``).
"""

from __future__ import annotations

import datetime as dt
import re
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pytest_agentctx.cli.retired import retirement_of
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.options import CassetteSettings
from pytest_agentctx.traffic.cassettes.per_test import cassette_path
from pytest_agentctx.traffic.cassettes.store import load_cassette
from pytest_agentctx.traffic.errors import CassetteFormatError

CASSETTE_SUFFIXES = (".json", ".yaml", ".yml")
_MODEL_IN_PATH = re.compile(r"/models/([^/:]+):")
_DAY = 86400.0


@dataclass(frozen=True)
class CheckOptions:
    """What to check: the cassette folder, the rootdir the report's paths are relative to,
    the report (``None``: no unused checks), the age limit in days (``None``: none), the
    table of retired models and today's date."""

    directory: Path
    rootdir: Path
    report: Mapping[str, Any] | None
    report_path: str | None
    max_age_days: float | None
    retired: Mapping[str, dt.date]
    today: dt.date
    now: float = field(default_factory=time.time)


@dataclass
class CheckResult:
    """The printed lines and the number of findings."""

    lines: list[str] = field(default_factory=list)
    findings: int = 0

    def section(self, title: str, items: Sequence[str], advice: str) -> None:
        self.lines.append(f"{title}: {len(items)}")
        self.lines.extend(f"  {item}" for item in items)
        if items:
            self.lines.append(f"  -> {advice}")
        self.findings += len(items)


def cassette_files(directory: Path) -> list[Path]:
    """Every cassette file under ``directory``, sorted: anything named like one but a
    folder (a FIFO or a link to a device is listed, to be reported as unreadable)."""
    return sorted(
        path
        for path in directory.rglob("*")
        if path.suffix in CASSETTE_SUFFIXES and not path.is_dir()
    )


def model_of(interaction: Interaction) -> str | None:
    """The model an interaction's request names: its body's ``model``, or the
    ``models/<name>:`` of its URL (Gemini, Vertex AI)."""
    body = interaction.request_body
    if body and isinstance(body.get("json"), Mapping):
        model = body["json"].get("model")
        if isinstance(model, str) and model:
            return model
    found = _MODEL_IN_PATH.search(urlsplit(interaction.url).path)
    return found.group(1) if found else None


def _shown(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _mapped_paths(report: Mapping[str, Any], options: CheckOptions) -> set[Path]:
    """The cassette files the report's tests used, and those its tests map to by node id."""
    paths: set[Path] = set()
    for test in report["tests"]:
        cassette = test.get("cassette")
        if cassette is not None:
            paths.add((options.rootdir / cassette["path"]).resolve())
        parts = test["nodeid"].split("::")
        if len(parts) < 2:
            continue
        for extension in CASSETTE_SUFFIXES:
            settings = CassetteSettings(directory=options.directory, extension=extension)
            path = cassette_path(
                settings,
                rootpath=options.rootdir,
                module_path=options.rootdir / parts[0],
                test_name=parts[-1],
                class_name=".".join(parts[1:-1]) or None,
                override=None,
            )
            paths.add(path.resolve())
    return paths


def _unused_interactions(report: Mapping[str, Any]) -> list[str]:
    by_path: dict[str, tuple[list[int], list[str]]] = {}
    for test in report["tests"]:
        cassette = test.get("cassette")
        if cassette is None or not cassette.get("unused"):
            continue
        _, tests = by_path.setdefault(cassette["path"], (list(cassette["unused"]), []))
        tests.append(test["nodeid"])
    return [
        f"{path} {', '.join(f'#{i}' for i in unused)} (not replayed by {', '.join(tests)})"
        for path, (unused, tests) in sorted(by_path.items())
    ]


def _scan(files: Sequence[Path], options: CheckOptions) -> Iterator[tuple[str, str]]:
    """(kind, finding) for the old, retired and unreadable cassettes."""
    for path in files:
        shown = _shown(path, options.rootdir)
        if options.max_age_days is not None and path.exists():  # not a broken link
            age = (options.now - path.stat().st_mtime) / _DAY
            if age > options.max_age_days:
                yield "old", f"{shown}: {age:.0f} days old"
        try:
            interactions = load_cassette(path)
        except CassetteFormatError as exc:
            yield "unreadable", str(exc)
            continue
        for index, interaction in enumerate(interactions):
            model = model_of(interaction)
            retired = retirement_of(model, options.retired) if model else None
            if retired is not None and retired <= options.today:
                yield "retired", f"{shown} #{index}: {model}, retired on {retired}"


def check_cassettes(options: CheckOptions) -> CheckResult:
    """Every finding about the cassettes under ``options.directory`` (see the module)."""
    result = CheckResult()
    files = cassette_files(options.directory) if options.directory.is_dir() else []
    folder = _shown(options.directory, options.rootdir)
    result.lines.append(f"pytest-agentctx cassettes check: {folder} ({len(files)} cassette files)")
    report = options.report
    if report is not None:
        used = _mapped_paths(report, options)
        unused_files = [_shown(p, options.rootdir) for p in files if p.resolve() not in used]
        result.section(
            "unused cassette files (no test of the report uses them)",
            unused_files,
            "delete them, or run the whole suite for the report if tests are missing from it",
        )
        result.section(
            "unused interactions (no test replayed them)",
            _unused_interactions(report),
            'record the tests again: pytest --agent-record "<node id>"',
        )
    found: dict[str, list[str]] = {"old": [], "retired": [], "unreadable": []}
    for kind, finding in _scan(files, options):
        found[kind].append(finding)
    if options.max_age_days is not None:
        result.section(
            f"older than {options.max_age_days:g} days (by file modification time)",
            found["old"],
            'record them again (pytest --agent-record "<node id>") to check the provider '
            "still answers the same way",
        )
    result.section(
        "retired models (the provider no longer answers them)",
        found["retired"],
        'move the agent to a current model and record again: pytest --agent-record "<node id>"',
    )
    result.section(
        "unreadable cassettes",
        found["unreadable"],
        "fix or delete them (each line says what is wrong)",
    )
    if report is None:
        result.lines.append(
            "not checked: unused files and interactions (give --report REPORT.json, the "
            "report of a run of the whole suite: pytest --agent-report=REPORT.json)"
        )
    if options.max_age_days is None:
        result.lines.append(
            "not checked: age (set agent_cassette_max_age in the pytest ini file, or give "
            "--max-age DAYS)"
        )
    skipped = sum(line.startswith("not checked:") for line in result.lines)
    clean = (
        f"no findings in the checks that ran ({skipped} not checked, above)"
        if skipped
        else "no findings: cassettes are clean"
    )
    result.lines.append(f"{result.findings} finding(s)" if result.findings else clean)
    return result

"""``pytest-agentctx report merge``: the JSON reports of CI shards as one report.

Each shard of a suite split across machines (pytest-split, a CI matrix) writes its own
``--agent-report``; :func:`merge_reports` makes of them the report one session running
every test would have written: the tests in node id order, the summary summed by the
session's own code (:func:`~pytest_agentctx.reports.session_report.assemble_report`), shared
cassettes judged over every test that used them, and ``summary.gate`` the gate over the
merged tests without a baseline (run ``pytest-agentctx gate`` for a baseline). The result
does not depend on the order of the inputs.

Speed: a report is mostly its runs' contexts, which the merge does not read. A report in
the layout the plugin writes is split at its tests (:func:`split_report`): each test's own
fields are parsed, its runs are not, and its text goes to the output unchanged; a report in
any other layout is parsed whole and its tests written as the plugin writes them.
"""

from __future__ import annotations

import glob
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentctx._untrusted import LimitExceeded, load_json, refuse_constant
from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.gate import evaluate_gate
from pytest_agentctx.reports.session_report import (
    READABLE_VERSIONS,
    REPORT_FORMAT,
    REPORT_VERSION,
    assemble_report,
    check_report,
    dumps_report,
    judged_digests,
    report_bytes,
    report_json,
)

_WRITE = "Each shard writes one with: pytest --agent-report=PATH"


def expand_inputs(inputs: Iterable[str], *, output: Path | None = None) -> list[Path]:
    """The report files that ``inputs`` name: files, folders (their ``*.json`` files) and
    glob patterns. ``output`` is left out where a folder or a pattern matches it (merging
    into a folder of the inputs, again); named as an input file, it is refused, since
    writing it would lose that report's tests."""
    found: list[Path] = []
    for text in inputs:
        path = Path(text)
        if output is not None and path.resolve() == output.resolve() and not path.is_dir():
            raise ReportError(
                f"report merge: the output {output} is also an input; merging into it would "
                "replace that report and lose its tests. Write the merged report to a new "
                f"file: pytest-agentctx report merge {' '.join(inputs)} -o merged.json"
            )
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
            "reports: pytest-agentctx report merge 'shard-*.json' -o merged.json"
        )
    return [unique[key] for key in sorted(unique)]


def _read(path: Path) -> Any:
    """``path`` split (see :func:`split_report`) when it is a report the plugin wrote, or
    else its whole parsed JSON; read within the limits of :mod:`pytest_agentctx._untrusted`
    (see :func:`~pytest_agentctx.reports.session_report.load_report`)."""
    data = report_bytes(path, _WRITE)
    split = split_report(data)
    if split is not None:
        return split
    return report_json(data, path, _WRITE)


def _refuse_other_formats(path: Path, data: Any) -> None:
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            f"{path} is not a pytest-agentctx report (format {found!r}, expected "
            f"{REPORT_FORMAT!r}): leave it out of the inputs. {_WRITE}."
        )


@dataclass
class Entry:
    """One test of a report: ``light``, the entry with its runs left out (``[]`` when it
    made none, ``[null]`` otherwise: all the merge and the gate without a baseline read
    of them), and its UTF-8 text in the report (``raw``, as the plugin wrote it) or the
    whole entry (``full``)."""

    light: dict[str, Any]
    raw: bytes | None = None
    full: dict[str, Any] | None = None

    def whole(self) -> dict[str, Any]:
        if self.full is None:
            assert self.raw is not None
            where = f"the entry of {self.light.get('nodeid')!r}"
            try:
                self.full = load_json(self.raw, where)
            except LimitExceeded as exc:
                raise ReportError(f"Report {exc}") from None
            except ValueError as exc:
                raise ReportError(
                    f"Report {where} is not a report's strict JSON ({exc}). {_WRITE}."
                ) from None
        return self.full

    def rendered(self) -> bytes:
        """The entry's text in the tests list of a report, as :func:`dumps_report` puts it."""
        if self.raw is None:
            data = json.dumps(self.whole(), sort_keys=True, indent=2, ensure_ascii=False)
            self.raw = "\n".join(f"    {line}" for line in data.split("\n")).encode()
        return self.raw


@dataclass
class Shard:
    """One input report: its path, its top-level fields but the tests, and its tests."""

    path: Path
    header: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)


_TESTS_OPEN = b'\n  "tests": [\n'
_TESTS_CLOSE = b'\n  ],\n  "version": '
_ENTRY_OPEN = b"    {\n"
_ENTRY_CLOSE = b"\n    }"
_BETWEEN = b"\n    },\n    {\n"
_RUNS = b'\n      "runs": '
_STATS = b'\n      "stats": '


def _light(data: bytes, start: int, end: int) -> dict[str, Any] | None:
    """The entry between ``start`` (its ``{``) and ``end`` (after its ``}``), runs left out."""
    runs = data.find(_RUNS, start, end)
    stats = data.find(_STATS, runs, end)
    if runs < 0 or stats < 0:
        return None
    made = b"[]," if data[runs + len(_RUNS) : stats] == b"[]," else b"[null],"
    try:
        light = _strict(data[start:runs] + _RUNS + made + data[stats:end])
    except (ValueError, RecursionError):  # read whole, for the error that says what
        return None
    return light if isinstance(light, dict) else None


def _strict(data: bytes) -> Any:
    return json.loads(data, parse_constant=refuse_constant)


def split_report(data: bytes) -> tuple[dict[str, Any], list[Entry]] | None:
    """A report as :func:`dumps_report` writes it, read without parsing the runs' contexts
    (most of its bytes): its top-level fields and its tests, each with its text. ``None``
    for any other layout (read it whole). The runs' text is copied as written."""
    start = data.find(_TESTS_OPEN)
    end = data.rfind(_TESTS_CLOSE)
    if start < 0 or end < start:
        return None
    try:
        header = _strict(data[:start].rstrip().removesuffix(b",") + b"\n}")
        header.update(_strict(b"{" + data[end + len(b"\n  ],") :]))
    except (ValueError, RecursionError, AttributeError):
        return None
    cursor = start + len(_TESTS_OPEN)
    if not data.startswith(_ENTRY_OPEN, cursor) or not data.endswith(_ENTRY_CLOSE, 0, end):
        return None
    entries = []
    while True:
        following = data.find(_BETWEEN, cursor, end)
        stop = end if following < 0 else following + len(_ENTRY_CLOSE)
        light = _light(data, cursor + len(_ENTRY_OPEN) - 2, stop)
        if light is None:
            return None
        entries.append(Entry(light, raw=data[cursor:stop]))
        if following < 0:
            return header, entries
        cursor = following + len(b"\n    },\n")


_SUMMED = ("runs", "tool_calls", "input_tokens", "output_tokens", "duration_s", "models")


def _merge_problem(test: Mapping[str, Any]) -> str | None:
    """What the merge needs of a test beyond what :func:`check_report` checks."""
    if test.get("outcome") not in ("passed", "failed", "skipped"):
        return f"has outcome {test.get('outcome')!r}, expected passed, failed or skipped"
    if test.get("suite") not in ("unit", "integration"):
        return f"has suite {test.get('suite')!r}, expected unit or integration"
    missing = [name for name in (*_SUMMED, "cost_usd") if name not in test["stats"]]
    if missing:
        return f"has no {', '.join(f'stats.{name}' for name in missing)}"
    cassette = test.get("cassette")
    if cassette is not None and not (
        isinstance(cassette, Mapping) and {"path", "status", "unused"} <= cassette.keys()
    ):
        return "has a cassette without path, status and unused"
    return None


def _shard(path: Path, data: Any) -> Shard:
    if isinstance(data, tuple):
        header, entries = data
        check_report({**header, "tests": [entry.light for entry in entries]}, path)
    else:
        report = check_report(data, path)
        header = {key: value for key, value in report.items() if key != "tests"}
        entries = [Entry(test, full=test) for test in report["tests"]]
    for position, entry in enumerate(entries):
        problem = _merge_problem(entry.light)
        if problem:
            raise ReportError(
                f"Report {path}: tests[{position}] ({entry.light['nodeid']}) {problem}. {_WRITE}."
            )
    return Shard(path, header, entries)


def read_reports(paths: Sequence[Path]) -> list[Shard]:
    """Each report with its path, all of one format version (this package's)."""
    read = [(path, _read(path)) for path in paths]
    versions: dict[str, list[str]] = {}
    for path, data in read:
        header = data[0] if isinstance(data, tuple) else data
        _refuse_other_formats(path, header)
        versions.setdefault(repr(header.get("version")), []).append(str(path))
    if len(versions) > 1:
        listed = "; ".join(
            f"version {version}: {', '.join(names)}" for version, names in sorted(versions.items())
        )
        raise ReportError(
            f"report merge: the reports have different format versions ({listed}). Reports "
            f"of one run have one version: write every shard's report again with the same "
            f"pytest-agentctx (this one writes version {REPORT_VERSION}), then merge them."
        )
    for path, data in read:
        header = data[0] if isinstance(data, tuple) else data
        if header.get("version") not in READABLE_VERSIONS:
            raise ReportError(
                f"report merge: {path} has format version {header.get('version')!r}; this "
                f"pytest-agentctx reads versions {' and '.join(map(str, READABLE_VERSIONS))} "
                f"(it writes version {REPORT_VERSION}). Write every shard's report again with "
                "this pytest-agentctx (pytest --agent-report=PATH), then merge them."
            )
    return [_shard(path, data) for path, data in read]


def _same(one: Entry, other: Entry) -> bool:
    if one.raw is not None and one.raw == other.raw:
        return True
    return one.whole() == other.whole()


def _tests(shards: Sequence[Shard]) -> list[Entry]:
    tests: dict[str, Entry] = {}
    origin: dict[str, Path] = {}
    for shard in shards:
        for entry in shard.entries:
            nodeid = entry.light["nodeid"]
            known = tests.get(nodeid)
            if known is not None and not _same(known, entry):
                first, second = sorted((str(origin[nodeid]), str(shard.path)))
                raise ReportError(
                    f"report merge: test {nodeid} is in {first} and in {second} with "
                    "different results. Each test must run in one shard only: check how the "
                    "suite is split (pytest-split's --splits/--group, -k, paths) so that no "
                    "test runs twice, or leave out the report of the shard that should not "
                    "have run it."
                )
            tests.setdefault(nodeid, entry)
            origin.setdefault(nodeid, shard.path)
    return [tests[nodeid] for nodeid in sorted(tests)]


def _judge_shared_cassettes(entries: Sequence[Entry]) -> None:
    """Judge again the cassettes several tests used (a shared cassette: each test's own
    has its own path) over every test: a recording is unused only if none used it.

    Each shard judged over its own tests; in a report, a shared cassette is ``unused``
    only from that judgement (a test's own check never calls a shared one unused), so
    ``replayed`` and ``unused`` are both the replay the session's collector judges. An
    entry whose cassette changes gets new dicts: the inputs are left as they are."""
    groups: dict[str, list[Entry]] = {}
    for entry in entries:
        cassette = entry.light.get("cassette")
        if cassette is not None:
            groups.setdefault(cassette["path"], []).append(entry)
    for group in groups.values():
        if len(group) < 2:
            continue
        common = set(group[0].light["cassette"]["unused"])
        for entry in group[1:]:
            common &= set(entry.light["cassette"]["unused"])
        for entry in group:
            cassette = dict(entry.light["cassette"])
            cassette["unused"] = sorted(common)
            digests = judged_digests(cassette.pop("digests", None), common)
            if digests:
                cassette["digests"] = digests
            if cassette["status"] in ("replayed", "unused"):
                cassette["status"] = "unused" if common else "replayed"
            if cassette != entry.light["cassette"]:
                whole = {**entry.whole(), "cassette": cassette}
                entry.light = {**entry.light, "cassette": cassette}
                entry.full, entry.raw = whole, None


def _gate_enabled(header: Mapping[str, Any]) -> bool:
    summary = header.get("summary")
    gate = summary.get("gate") if isinstance(summary, Mapping) else None
    return isinstance(gate, Mapping) and gate.get("enabled") is True


def _price_data(shards: Sequence[Shard]) -> Any:
    """The price data the shards priced their calls with, the same in every shard that
    says (else their dollars do not add up: an error)."""
    found: dict[str, Any] = {}
    for shard in shards:
        summary = shard.header.get("summary")
        data = summary.get("price_data") if isinstance(summary, Mapping) else None
        if data is not None:
            found.setdefault(json.dumps(data, sort_keys=True), data)
    if len(found) > 1:
        shown = " and ".join(sorted(found))
        raise ReportError(
            f"The reports priced their calls with different price data ({shown}): their "
            "dollars do not add up. Pin the price data for every shard (the "
            "agent_price_data ini option: pytest-agentctx prices pin prints its line) and "
            "run the shards again."
        )
    return next(iter(found.values()), None)


def _merge(shards: Sequence[Shard]) -> tuple[dict[str, Any], list[Entry]]:
    entries = [
        Entry(entry.light, entry.raw, entry.full) for entry in _tests(shards)
    ]  # copies: the shared cassettes' judgement changes them
    _judge_shared_cassettes(entries)
    merged = assemble_report([entry.light for entry in entries])
    priced = _price_data(shards)
    if priced is not None:
        merged["summary"]["price_data"] = priced
    result = evaluate_gate(merged)
    merged["summary"]["gate"] = result.to_dict(
        enabled=any(_gate_enabled(shard.header) for shard in shards)
    )
    return merged, entries


def merge_reports(reports: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[str, Any]:
    """One report of the tests of every report in ``reports`` (see the module's docstring).

    Raises :class:`ReportError` for a test in two reports with different entries.
    """
    shards = [_shard(path, dict(report)) for path, report in reports]
    merged, entries = _merge(shards)
    merged["tests"] = [entry.whole() for entry in entries]
    return merged


def merged_text(shards: Sequence[Shard]) -> tuple[bytes, int]:
    """The UTF-8 text of the merged report of ``shards`` (the bytes :func:`dumps_report`
    gives for :func:`merge_reports`' result; each unchanged test's text copied from its
    input) and its number of tests."""
    merged, entries = _merge(shards)
    merged["tests"] = []
    head = dumps_report(merged).encode()
    if not entries:
        return head, 0
    before, _, after = head.partition(b'\n  "tests": [],\n')
    pieces = [before, _TESTS_OPEN]
    for entry in entries:
        pieces += (entry.rendered(), b",\n")
    pieces[-1] = b"\n  ],\n"
    pieces.append(after)
    return b"".join(pieces), len(entries)

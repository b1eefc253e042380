"""The session's JSON report: a test's cassette entry (:func:`cassette_entry`) and the
figures of each repetition (:func:`per_run_figures`), the collector that gathers every
test's record into the report (:class:`ReportCollector`, :func:`assemble_report`), the
report file written and read back (:func:`dumps_report`, :func:`write_report`,
:func:`load_report`, :func:`check_report`) and its line of totals (:func:`summary_line`).
The terminal table is :mod:`.table`'s.

How the figures travel: the process that runs a test (the only process, or a pytest-xdist
worker) turns the test's runs, cassette, budget and repeat figures into its *record*
(:func:`~.record.build_record`) and attaches it to the test's teardown report as the
attribute :data:`~.record.RECORD_ATTRIBUTE`; pytest-xdist serialises report attributes with
the report, so the record reaches the controller unchanged. The process that reports
gathers every test's reports in a :class:`ReportCollector` and builds one report dict in
the schema of ``--agent-report`` (format :data:`REPORT_FORMAT`, version
:data:`REPORT_VERSION`): the same dict, and the same bytes (:func:`dumps_report`), with or
without ``-n``. The terminal table, the HTML page and the gate all read that dict.

No wall-clock data goes into a report: durations are those of the runs' contexts, whose
clocks are deterministic. Tests are ordered by node id and keys are sorted.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx._untrusted import LimitExceeded, load_json, read_untrusted
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.reports.errors import ReportError
from pytest_agentctx.reports.figures import PriceTable, RunStats, run_stats
from pytest_agentctx.reports.pricing import dated_cassettes, price_data_words
from pytest_agentctx.reports.record import (
    build_record,
    is_agent_test,
    is_measured,
    record_from_json,
)
from pytest_agentctx.traffic.cassettes.defaults import RecordMode

if TYPE_CHECKING:
    from pytest_agentctx.reports.schema import (
        CassetteEntry,
        CassetteStatus,
        PerRunEntry,
        Record,
        ReportEntry,
        StatsEntry,
    )
    from pytest_agentctx.traffic.cassettes import Cassette

#: The ``format`` field of every report.
REPORT_FORMAT = "pytest-agentctx-report"
#: The version of the report schema this package writes. Version 2 gives the gate's
#: findings as records (``summary.gate.records``); version 1 listed them as lines only.
REPORT_VERSION = 2
#: The versions this package reads: a report of version 1 (its tests are the same) still
#: serves as a baseline and as the input of ``pytest-agentctx gate``, ``report html`` and
#: ``report merge``; the gate's records are computed again from its tests.
READABLE_VERSIONS = (1, 2)
#: What happened to a test's cassette: ``replayed`` (answered every request from the file),
#: ``recorded`` (the test's traffic went to the network and was recorded), ``live`` (it went
#: to the network under ``--agent-live`` and no cassette was read or written), ``discarded``
#: (recorded, but the test failed, so the recording was not kept: ``--agent-record-failing``
#: keeps it), ``unsaved`` (recorded, but the file could not be written: the previous version
#: is kept), ``stale`` (the
#: agent sent requests the cassette cannot answer, or left recordings unused and failed for
#: it), ``unused`` (recordings left unused where that is allowed), ``missing`` (no file).
CASSETTE_STATUSES: tuple[CassetteStatus, ...] = (
    "replayed",
    "recorded",
    "live",
    "discarded",
    "unsaved",
    "stale",
    "unused",
    "missing",
)

_OUTCOME_RANK = {"passed": 0, "skipped": 1, "failed": 2}


# -- on the process that runs the test -------------------------------------------------


def _relative(path: Path, rootpath: Path) -> str:
    try:
        return path.resolve().relative_to(rootpath.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def cassette_entry(
    cassette: Cassette,
    *,
    rootpath: Path,
    judged: bool,
    saved: bool,
    unsaved: bool = False,
    discarded: bool = False,
    live: bool = False,
) -> CassetteEntry:
    """The report entry of a test's cassette after the test ran.

    ``judged``: the test body passed, so recordings it left unused count against the
    cassette (a failing test stops early and leaves some unused for that reason alone).
    ``saved``: the cassette file was written by this test; ``unsaved``: writing it failed
    (the test fails for it, and the report must not say ``recorded``); ``discarded``: the test
    recorded but failed, so its recording was not kept; ``live``: the test ran under
    ``--agent-live``, against the network, with no cassette. A cassette shared by several
    tests (``@pytest.mark.agent(cassette=...)``) is never ``unused`` on its own: the
    collector decides from every test that used it (the ``shared`` key, dropped from the
    report).
    """
    unused = cassette.unused() if judged and cassette.replays and not cassette.misses else []
    status: CassetteStatus
    if live:
        status = "live"
    elif unsaved:
        status = "unsaved"
    elif discarded:
        status = "discarded"
    elif cassette.recorded or saved or cassette.mode is RecordMode.REWRITE:
        status = "recorded"
    elif cassette.misses:
        status = "stale" if cassette.existed else "missing"
    elif not cassette.existed:
        status = "missing"
    elif unused and not cassette.shared:
        fails = cassette.mode is RecordMode.NONE and not cassette.allow_unused
        status = "stale" if fails and not cassette.eased_unused else "unused"
    else:
        status = "replayed"
    entry: CassetteEntry = {
        "path": _relative(cassette.path, rootpath),
        "mode": cassette.mode.value,
        "status": status,
        "interactions": len(cassette.loaded) + len(cassette.new_interactions),
        "unused": unused,
        "shared": cassette.shared,
    }
    if unused:  # what `pytest-agentctx cassettes prune` checks the file against
        from pytest_agentctx.traffic.cassettes.prune import request_digest

        entry["digests"] = {str(i): request_digest(cassette.loaded[i]) for i in unused}
    day = cassette.recording_day()
    if day is not None:
        entry["recorded_on"] = day
    if cassette.eased_misses or cassette.eased_unused:
        entry["eased"] = {
            "until": cassette.migration_until,
            "misses": cassette.eased_misses,
            "unused": cassette.eased_unused,
        }
    return entry


def per_run_figures(
    parts: Sequence[Sequence[RunRecord]], prices: PriceTable | None = None
) -> list[PerRunEntry]:
    """The figures of each repetition of an ``agent_repeat`` test (``parts``: the runs of
    each), which the baseline comparison reads per run: iterations, tool calls, tokens and
    the tool trajectory."""
    figures: list[PerRunEntry] = []
    for part in parts:
        stats = RunStats.total(run_stats(run, prices=prices) for run in part)
        figures.append(
            {
                "iterations": stats.iterations,
                "tool_calls": stats.tool_calls,
                "total_tokens": stats.total_tokens,
                "trajectory": list(stats.trajectory),
            }
        )
    return figures


# -- on the process that reports -------------------------------------------------------


def _stats_of(data: StatsEntry) -> RunStats:
    return RunStats(
        runs=int(data["runs"]),
        iterations=int(data["iterations"]),
        tool_calls=int(data["tool_calls"]),
        input_tokens=int(data["input_tokens"]),
        output_tokens=int(data["output_tokens"]),
        cost_usd=None if data["cost_usd"] is None else float(data["cost_usd"]),
        duration_s=float(data["duration_s"]),
        models=tuple(data["models"]),
        trajectory=tuple(data["trajectory"]),
        mcp_calls=int(data.get("mcp_calls", 0)),
        uncached_input_tokens=int(data.get("uncached_input_tokens", 0)),
        cache_read_tokens=int(data.get("cache_read_tokens", 0)),
        cache_write_tokens=int(data.get("cache_write_tokens", 0)),
        reasoning_tokens=int(data.get("reasoning_tokens", 0)),
        unpriced=tuple(data.get("unpriced", ())),
    )


class ReportCollector:
    """Gathers the reports of every test (from this process or from xdist workers) and
    builds the session's report dict."""

    def __init__(self) -> None:
        self._outcomes: dict[str, str] = {}
        self._records: dict[str, Record] = {}
        self._integration: dict[str, bool] = {}

    def add(
        self,
        nodeid: str,
        outcome: str,
        *,
        record: Mapping[str, object] | None = None,
        keywords: Collection[str] = (),
    ) -> None:
        """Take one report (setup, call or teardown) of test ``nodeid``: the worst outcome
        of its phases is the test's, and its record comes with the teardown report.
        Outcomes other than passed, failed and skipped (a plugin's ``rerun``) are ignored.
        The record comes as JSON data (it may have crossed from a pytest-xdist worker) and
        is taken back as the :class:`~.schema.Record` it was built as."""
        if outcome not in _OUTCOME_RANK:
            return
        known = self._outcomes.get(nodeid)
        if known is None or _OUTCOME_RANK[outcome] > _OUTCOME_RANK[known]:
            self._outcomes[nodeid] = outcome
        if nodeid not in self._integration:
            self._integration[nodeid] = "integration" in keywords
        if record is not None:
            self._records[nodeid] = record_from_json(record)

    def __len__(self) -> int:
        return len(self._outcomes)

    def build(self) -> dict[str, Any]:
        """The report, as the JSON data the report file, the table, the HTML page and the
        gate read (``summary.gate`` says the gate is off until one is evaluated)."""
        tests = [self._entry(nodeid) for nodeid in sorted(self._outcomes)]
        _judge_shared_cassettes(tests)
        for test in tests:
            cassette = test["cassette"]
            if cassette is not None:
                cassette.pop("shared", None)
        return assemble_report(tests)

    def _entry(self, nodeid: str) -> ReportEntry:
        record = self._records.get(nodeid)
        if record is None:  # a test whose worker crashed: its outcome is all there is
            integration = self._integration.get(nodeid, False)
            record = build_record(runs=(), suite="integration" if integration else "unit")
        copy: Record = json.loads(json.dumps(record))  # the same record, for the report to change
        entry: ReportEntry = {
            "nodeid": nodeid,
            "outcome": self._outcomes[nodeid],
            "suite": copy["suite"],
            "cassette": copy["cassette"],
            "budget": copy["budget"],
            "repeat": copy["repeat"],
            "stats": copy["stats"],
            "runs": copy["runs"],
            "failure": copy.get("failure"),
        }
        if not is_measured(copy):
            entry["measured"] = False
        if "mcp_contract" in copy:
            entry["mcp_contract"] = copy["mcp_contract"]
        if "verdicts" in copy:
            entry["verdicts"] = copy["verdicts"]
        if "role_runs" in copy:
            entry["role_runs"] = copy["role_runs"]
            entry["role_stats"] = copy.get("role_stats", {})
        if "transcripts" in copy:
            entry["transcripts"] = copy["transcripts"]
        return entry


def assemble_report(tests: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The report of ``tests`` (report entries in node id order): their summary (counts by
    outcome and suite, the figures of all runs together) and ``summary.gate`` off. The one
    way a session sums its tests, used by the session and by ``pytest-agentctx report
    merge``."""
    totals = RunStats.total(_stats_of(test["stats"]) for test in tests)
    counts = {name: 0 for name in ("passed", "failed", "skipped", "unit", "integration")}
    for test in tests:
        counts[test["outcome"]] += 1
        counts[test["suite"]] += 1
    return {
        "format": REPORT_FORMAT,
        "version": REPORT_VERSION,
        "summary": {
            "tests": len(tests),
            **counts,
            "stats": totals.to_dict(),
            "gate": {"enabled": False, "passed": True, "failures": [], "records": []},
        },
        "tests": list(tests),
    }


def _judge_shared_cassettes(tests: list[ReportEntry]) -> None:
    """A shared cassette's recordings are unused only if no test that used it used them."""
    groups: dict[str, list[CassetteEntry]] = {}
    for test in tests:
        cassette = test["cassette"]
        if cassette is not None and cassette.get("shared"):
            groups.setdefault(cassette["path"], []).append(cassette)
    for cassettes in groups.values():
        common = set(cassettes[0]["unused"])
        for cassette in cassettes[1:]:
            common &= set(cassette["unused"])
        for cassette in cassettes:
            cassette["unused"] = sorted(common)
            digests = judged_digests(cassette.pop("digests", None), common)
            if digests:
                cassette["digests"] = digests
            if common and cassette["status"] == "replayed":
                cassette["status"] = "unused"


def judged_digests(
    digests: Mapping[str, str] | None, unused: Collection[int]
) -> dict[str, str] | None:
    """The request digests of the recordings ``unused`` only, once a cassette's unused
    list was judged again over the tests that share it (``None`` when there are none)."""
    if not digests or not unused:
        return None
    return {str(i): digests[str(i)] for i in sorted(unused) if str(i) in digests}


def dumps_report(report: Mapping[str, object]) -> str:
    """The report as JSON text: keys sorted, two-space indents, a final newline."""
    return json.dumps(report, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def write_report(path: Path, report: Mapping[str, object]) -> None:
    """Write the JSON report to ``path`` atomically (a reader never sees half a file)."""
    atomic_write_text(path, dumps_report(report))


_WRITE_ONE = "Write one with: pytest --agent-report=PATH"


def load_report(path: str | Path) -> dict[str, Any]:
    """Read a report written by ``--agent-report``, checking its format and version.

    It is read as untrusted input, within the limits of :mod:`pytest_agentctx._untrusted`
    (a regular file of at most ``file_bytes``, nested at most ``depth`` deep, strict JSON:
    no ``NaN`` or ``Infinity``, no number of more digits than Python reads). Raises
    :class:`ReportError` naming the file and what is wrong with it.
    """
    where = Path(path)
    missing = f"{_WRITE_ONE} (for a baseline, on the branch you compare against) and pass that file"
    data = report_bytes(where, _WRITE_ONE, missing=missing)
    return check_report(report_json(data, where, _WRITE_ONE), where)


def report_bytes(where: Path, advice: str, *, missing: str | None = None) -> bytes:
    """The bytes of the report file ``where``, read as untrusted input; a
    :class:`ReportError` naming it and ``advice`` (how to write one) when it cannot be read,
    or ``missing`` instead of ``advice`` when it does not exist."""
    try:
        return read_untrusted(where)
    except FileNotFoundError:
        raise ReportError(f"Report {where} does not exist. {missing or advice}.") from None
    except LimitExceeded as exc:
        raise ReportError(f"Report {exc}") from None
    except OSError as exc:
        raise ReportError(
            f"Report {where} cannot be read ({exc.strerror or exc}). {advice}."
        ) from None


def report_json(data: bytes, where: str | Path, advice: str) -> object:
    """``data``, the bytes of the report ``where``, parsed as strict JSON within the limits;
    a :class:`ReportError` naming it and ``advice`` (how to write one) when it is not."""
    try:
        return load_json(data, str(where))
    except LimitExceeded as exc:
        raise ReportError(f"Report {exc}") from None
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"Report {where} is not JSON ({exc.msg}, line {exc.lineno}): expected a report "
            f"written by pytest-agentctx. {advice}."
        ) from None
    except ValueError as exc:  # not UTF-8, NaN or Infinity, a number of too many digits
        raise ReportError(
            f"Report {where} is not a report's strict JSON ({exc}): expected a report "
            f"written by pytest-agentctx. {advice}."
        ) from None


def check_report(data: object, where: str | Path) -> dict[str, Any]:
    """``data`` (a report read from JSON) if it is a report of this version with the fields
    the gate reads; a :class:`ReportError` naming ``where`` and what is wrong otherwise."""
    if not isinstance(data, dict) or data.get("format") != REPORT_FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise ReportError(
            f"Report {where} is not a pytest-agentctx report (format {found!r}, expected "
            f"{REPORT_FORMAT!r}). {_WRITE_ONE}."
        )
    if data.get("version") not in READABLE_VERSIONS:
        raise ReportError(
            f"Report {where} has version {data.get('version')!r}; this pytest-agentctx reads "
            f"versions {' and '.join(map(str, READABLE_VERSIONS))} and writes version "
            f"{REPORT_VERSION}. Write it again with this version: pytest --agent-report=PATH "
            "(for a baseline, on the branch you compare against), or read it with the "
            "pytest-agentctx that wrote it."
        )
    tests = data.get("tests")
    if not isinstance(tests, list):
        raise ReportError(f"Report {where}: 'tests' is not a list. {_WRITE_ONE}.")
    for position, test in enumerate(tests):
        problem = _test_problem(test)
        if problem:
            raise ReportError(f"Report {where}: tests[{position}] {problem}. {_WRITE_ONE}.")
    return data


_STAT_FIELDS = {"iterations": int, "total_tokens": int, "trajectory": list}


def _test_problem(test: object) -> str | None:
    if not isinstance(test, dict) or not isinstance(test.get("nodeid"), str):
        return "has no 'nodeid'"
    stats = test.get("stats")
    if not isinstance(stats, dict):
        return f"({test['nodeid']}) has no 'stats'"
    for name, kind in _STAT_FIELDS.items():
        if not isinstance(stats.get(name), kind):
            return f"({test['nodeid']}) has no {kind.__name__} 'stats.{name}'"
    return None


# -- the terminal ----------------------------------------------------------------------


def _money(cost: float | None) -> str:
    return "n/a" if cost is None else f"${cost:.6f}"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _statuses(tests: Iterable[Mapping[str, Any]]) -> str:
    counts = {status: 0 for status in CASSETTE_STATUSES}
    for test in tests:
        if test["cassette"] is not None:
            counts[test["cassette"]["status"]] += 1
    return ", ".join(f"{counts[s]} {s}" for s in CASSETTE_STATUSES if counts[s])


def summary_line(report: Mapping[str, Any]) -> str | None:
    """One line of totals over the agent tests, or ``None`` when there are none."""
    agents = [test for test in report["tests"] if is_agent_test(test)]
    if not agents:
        return None
    stats = RunStats.total(_stats_of(test["stats"]) for test in agents)
    line = (
        f"agentctx: {_plural(len(agents), 'agent test')}, {_plural(stats.runs, 'run')}, "
        f"{_plural(stats.iterations, 'iteration')}, {_plural(stats.tool_calls, 'tool call')}, "
        f"{_plural(stats.total_tokens, 'token')}, cost {_money(stats.cost_usd)}"
    )
    priced = report.get("summary", {}).get("price_data")
    if isinstance(priced, Mapping) and stats.cost_usd:
        line += f" ({price_data_words(priced, dated_cassettes(agents), hint=True)})"
    statuses = _statuses(agents)
    if statuses:
        line = f"{line}; cassettes: {statuses}"
    if any(test["cassette"] and test["cassette"]["status"] == "discarded" for test in agents):
        line += (
            " (a failing test's recording is not kept: fix the test and record again, or "
            "keep it with --agent-record-failing)"
        )
    from pytest_agentctx.reports.migration import eased_note

    eased = eased_note(report)
    if eased:
        line += f"; {eased}"
    unmeasured = sum(not is_measured(test) for test in agents)
    if unmeasured:
        line += (
            f"; {unmeasured} not measured (runs captured from traffic are measured for a "
            "budget, --agent-report, --agent-gate or --agent-baseline)"
        )
    return line

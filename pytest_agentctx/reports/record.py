"""One test's record: :func:`build_record` makes it in the process that runs the test, and
what is read from it there: whether it is an agent test's (:func:`is_agent_test`), whether
its figures were measured (:func:`is_measured`) and its JUnit properties
(:func:`junit_properties`). The record's entries are typed in :mod:`.schema`; it crosses to
the process that reports as the JSON data it is (:func:`record_from_json` takes it back);
the session's report is :mod:`.session_report`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, cast

if TYPE_CHECKING:
    from pytest_agentctx.context.model import AgentContext
    from pytest_agentctx.context.runs import RunRecord
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.reports.figures import PriceTable
    from pytest_agentctx.reports.schema import (
        BudgetEntry,
        CassetteEntry,
        FailureEntry,
        McpCallEntry,
        Record,
        RepeatEntry,
        RunEntry,
        StatsEntry,
        Suite,
        TranscriptEntry,
    )

#: Name of the teardown report attribute that carries a test's record.
RECORD_ATTRIBUTE = "agentctx"


_Entry = TypeVar("_Entry", bound=Mapping[str, object])


def _plain(value: _Entry | None) -> _Entry | None:
    """A copy of ``value`` as plain JSON data, the form it has after a trip through
    pytest-xdist and back from a report file (the record owns it: the stash's entry may
    change after the record is made)."""
    if value is None:
        return None
    copy: _Entry = json.loads(json.dumps(value))  # the same entry: JSON data in, JSON out
    return copy


def build_record(
    *,
    runs: Sequence[RunRecord],
    suite: Suite = "unit",
    cassette: CassetteEntry | None = None,
    budget: BudgetEntry | None = None,
    repeat: RepeatEntry | None = None,
    prices: PriceTable | None = None,
    contexts: bool = True,
    measured: bool = True,
    redactor: Redactor | None = None,
    failure: FailureEntry | None = None,
    mcp_contract: Mapping[str, Sequence[Mapping[str, object]]] | None = None,
    verdicts: Sequence[Mapping[str, object]] = (),
    role_runs: Sequence[RunRecord] = (),
    transcripts: Sequence[TranscriptEntry] = (),
) -> Record:
    """The JSON-ready record of one test: its suite, cassette, budget, repeat figures, the
    stats of every run and of all of them, (with ``contexts``) each run's context, and why
    it failed (``failure``: :func:`~pytest_agentctx.reports.failure_entry.failure_entry`, or
    ``None``). A run that made MCP tool calls lists them (``mcp_calls``), and the MCP
    servers' tool contract (``mcp_contract``: each server's tools) is kept when given.
    The verdicts of its judges (``verdicts``) and the runs made under other roles than the
    agent's (``role_runs``, with each role's totals in ``role_stats``) are kept apart from
    its runs and stats, which budgets and the gate read, and so are the simulated users'
    conversations (``transcripts``).

    ``measured=False`` says the test's runs were captured from its traffic but not rebuilt,
    because nothing in the session reads them (no budget, report file, gate or baseline):
    its figures are then unknown, not zero, and the record says so (``"measured": false``).

    With a ``redactor`` (the test's, the one its cassette uses), every string of the record
    (contexts, run names, models, tool names, keys) is scrubbed of its secrets, in the
    process that ran the test: the JSON report, the HTML page, the JUnit properties and
    the gate read the record, never the runs themselves.
    """
    entries: list[RunEntry] = []
    total = no_runs_stats()  # a test without runs (most) needs no run figures loaded
    if runs:
        from pytest_agentctx.reports.figures import RunStats, call_entries, run_stats

        totals: list[RunStats] = []
        for run in runs:
            stats = run_stats(run, prices=prices)
            totals.append(stats)
            entry: RunEntry = {
                "name": run.name,
                "source": run.source,
                "stats": stats.to_dict(),
            }
            priced_calls = call_entries(run.context, prices)
            if priced_calls:
                entry["calls"] = priced_calls
            if contexts:
                entry["context"] = run.context.model_dump(mode="json")
            calls = mcp_call_entries(run.context)
            if calls:
                entry["mcp_calls"] = calls
            entries.append(entry)
        total = RunStats.total(totals).to_dict()
    record: Record = {
        "suite": suite,
        "cassette": _plain(cassette),
        "budget": _plain(budget),
        "repeat": _plain(repeat),
        "stats": total,
        "runs": entries,
        "failure": _plain(failure),
    }
    if not measured:
        record["measured"] = False
    if verdicts:
        record["verdicts"] = [dict(verdict) for verdict in verdicts]
    if role_runs:
        record["role_runs"], record["role_stats"] = _role_entries(role_runs, prices, contexts)
    if mcp_contract:
        record["mcp_contract"] = json.loads(json.dumps(mcp_contract, default=str))
    if transcripts:
        record["transcripts"] = json.loads(json.dumps(list(transcripts)))
    if redactor is not None:
        from pytest_agentctx.context.scrub import redact

        return redact(record, redactor)
    return record


def _role_entries(
    runs: Sequence[RunRecord], prices: PriceTable | None, contexts: bool
) -> tuple[list[RunEntry], dict[str, StatsEntry]]:
    """The entries of the runs of other roles, and each role's totals."""
    from pytest_agentctx.reports.figures import RunStats, run_stats

    entries: list[RunEntry] = []
    by_role: dict[str, list[RunStats]] = {}
    for run in runs:
        stats = run_stats(run, prices=prices)
        by_role.setdefault(run.role, []).append(stats)
        entry: RunEntry = {
            "name": run.name,
            "source": run.source,
            "stats": stats.to_dict(),
            "role": run.role,
        }
        if contexts:
            entry["context"] = run.context.model_dump(mode="json")
        entries.append(entry)
    return entries, {role: RunStats.total(stats).to_dict() for role, stats in by_role.items()}


def mcp_call_entries(context: AgentContext) -> list[McpCallEntry]:
    """The MCP tool calls of a run, from its iterations' ``metadata["mcp"]``."""
    entries: list[McpCallEntry] = []
    for iteration in context.iterations:
        calls = iteration.metadata.get("mcp")
        if isinstance(calls, str) or not isinstance(calls, Sequence):
            continue
        for call in calls:
            if not isinstance(call, Mapping):
                continue
            error = call.get("error")
            message = error.get("message") if isinstance(error, Mapping) else None
            call_id = call.get("tool_call_id")
            entries.append(
                {
                    "server": str(call.get("server", "")),
                    "tool": str(call.get("tool", "")),
                    "iteration": iteration.number,
                    "tool_call_id": call_id if isinstance(call_id, str) else None,
                    "is_error": call.get("is_error") is True,
                    "error": None if error is None else str(message or error),
                }
            )
    return entries


def no_runs_stats() -> StatsEntry:
    """The figures of no run: ``RunStats().to_dict()``, written out (a unit test keeps the
    two equal)."""
    return {
        "runs": 0,
        "iterations": 0,
        "tool_calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "total_tokens": 0,
        "cost_usd": 0.0,
        "duration_s": 0.0,
        "models": [],
        "trajectory": [],
    }


def record_json(record: Record) -> dict[str, object]:
    """``record`` as the JSON data a teardown report carries to the process that reports
    (through pytest-xdist when there are workers), where :func:`record_from_json` takes it
    back."""
    return dict(record)


def record_from_json(data: Mapping[str, object]) -> Record:
    """``data`` (a record as it came on a teardown report, from this process or a
    pytest-xdist worker) as the :class:`~.schema.Record` it was built as, once its shape is
    checked: a :class:`TypeError` names what is missing or of the wrong kind."""
    for name, kinds in _RECORD_FIELDS.items():
        if not isinstance(data.get(name), kinds):
            raise TypeError(f"not a test's record: {name!r} is {type(data.get(name)).__name__}")
    return cast("Record", dict(data))


#: The fields of a record and the kinds of their values (``None``: no entry of that kind).
_RECORD_FIELDS: dict[str, type | tuple[type, ...]] = {
    "suite": str,
    "cassette": (dict, type(None)),
    "budget": (dict, type(None)),
    "repeat": (dict, type(None)),
    "stats": dict,
    "runs": list,
    "failure": (dict, type(None)),
}


def is_agent_test(entry: Mapping[str, object]) -> bool:
    """Whether a record or report entry is an agent test's: it made runs, had a cassette,
    or its runs were captured but not measured."""
    return (
        bool(entry.get("runs"))
        or bool(entry.get("verdicts"))
        or entry.get("cassette") is not None
        or entry.get("measured") is False
    )


def is_measured(entry: Mapping[str, object]) -> bool:
    """Whether the figures of a record or report entry were measured (see
    :func:`build_record`); reports written by ``--agent-report`` always are."""
    return entry.get("measured", True) is not False


def _verdict_properties(record: Record) -> list[tuple[str, object]]:
    """One ``agentctx.verdict`` per verdict (``rubric_id score/threshold passed|failed``)
    and, per other role, its cost (``agentctx.<role>_cost_usd``) when known."""
    properties: list[tuple[str, object]] = []
    for verdict in record.get("verdicts", []):
        outcome = "passed" if verdict.get("passed") else "failed"
        properties.append(
            (
                "agentctx.verdict",
                f"{verdict.get('rubric_id')} {verdict.get('score')}/{verdict.get('threshold')} "
                f"{outcome}",
            )
        )
    for role, stats in sorted(record.get("role_stats", {}).items()):
        if stats.get("cost_usd") is not None:
            properties.append((f"agentctx.{role}_cost_usd", f"{stats['cost_usd']:.8f}"))
    return properties


def _mcp_properties(record: Record) -> list[tuple[str, object]]:
    """``agentctx.mcp_calls`` (how many), one ``agentctx.mcp_call`` per call (``server tool``
    and ``isError`` or ``error: <message>``) and one ``agentctx.mcp_contract`` per server
    (``server: tool, tool``)."""
    properties: list[tuple[str, object]] = []
    calls = [call for run in record["runs"] for call in run.get("mcp_calls", [])]
    if calls:
        properties.append(("agentctx.mcp_calls", len(calls)))
    for call in calls:
        text = f"{call['server']} {call['tool']}"
        if call["is_error"]:
            text += " isError"
        if call["error"] is not None:
            text += f" error: {call['error']}"
        properties.append(("agentctx.mcp_call", text))
    for server, tools in record.get("mcp_contract", {}).items():
        names = ", ".join(str(tool.get("name", "?")) for tool in tools)
        properties.append(("agentctx.mcp_contract", f"{server}: {names}"))
    return properties


def transcript_line(transcript: TranscriptEntry) -> str:
    """A simulated conversation in one line: who, how many turns, why it stopped."""
    why = transcript["stopped_because"]
    if transcript.get("done_reason"):
        why += f" ({transcript['done_reason']})"
    return f"{transcript['persona']}: {transcript['turns']} turn(s), stopped: {why}"


def junit_properties(data: Mapping[str, object]) -> list[tuple[str, object]]:
    """The JUnit XML properties of an agent test (none for other tests): iterations, tool
    calls, total tokens, cost in US dollars (when every model has a price), its MCP tool
    calls and MCP servers' tool contract (:func:`_mcp_properties`), one
    ``agentctx.transcript`` per simulated conversation (:func:`transcript_line`), the
    cassette's status, and, when it failed, its failure as one line (the whole text is in
    the test case's ``<failure>`` or ``<error>`` element, where pytest writes it)."""
    if not is_agent_test(data):
        return []
    record = record_from_json(data)
    stats = record["stats"]
    properties: list[tuple[str, object]] = [
        ("agentctx.iterations", stats["iterations"]),
        ("agentctx.tool_calls", stats["tool_calls"]),
        ("agentctx.tokens", stats["total_tokens"]),
    ]
    if stats["cost_usd"] is not None:
        properties.append(("agentctx.cost_usd", f"{stats['cost_usd']:.8f}"))
    for name in ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens"):
        if stats.get(name):
            properties.append((f"agentctx.{name}", stats.get(name)))
    properties += _mcp_properties(record)
    properties += [
        ("agentctx.transcript", transcript_line(transcript))
        for transcript in record.get("transcripts", [])
    ]
    if record["cassette"] is not None:
        properties.append(("agentctx.cassette", record["cassette"]["status"]))
    properties += _verdict_properties(record)
    from pytest_agentctx.reports.failure_entry import failure_line

    failure = failure_line(record.get("failure"))
    if failure is not None:
        properties.append(("agentctx.failure", failure))
    return properties

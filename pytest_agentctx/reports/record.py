"""One test's record, built in the process that runs the test (:func:`build_record`), and
what is read from a record there: whether it is an agent test's (:func:`is_agent_test`),
whether its figures were measured (:func:`is_measured`) and its JUnit properties
(:func:`junit_properties`). The session's report, built from the records in the process
that reports, is :mod:`.records`'s; this module is apart so that a session of tests that
use nothing of the plugin records them without importing the report's machinery.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from pytest_agentctx.context.runs import RunRecord
    from pytest_agentctx.redaction.redactor import Redactor
    from pytest_agentctx.reports.figures import PriceTable

__all__ = [
    "RECORD_ATTRIBUTE",
    "build_record",
    "is_agent_test",
    "is_measured",
    "junit_properties",
    "no_runs_stats",
]

#: Name of the teardown report attribute that carries a test's record.
RECORD_ATTRIBUTE = "agentctx"


def _plain(value: Any) -> Any:
    """``value`` as plain JSON data (tuples become lists), the form it has after a trip
    through pytest-xdist and back from a report file."""
    return None if value is None else json.loads(json.dumps(value))


def build_record(
    *,
    runs: Sequence[RunRecord],
    suite: Literal["unit", "integration"] = "unit",
    cassette: Mapping[str, Any] | None = None,
    budget: Mapping[str, Any] | None = None,
    repeat: Mapping[str, Any] | None = None,
    prices: PriceTable | None = None,
    contexts: bool = True,
    measured: bool = True,
    redactor: Redactor | None = None,
    failure: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON-ready record of one test: its suite, cassette, budget, repeat figures, the
    stats of every run and of all of them, (with ``contexts``) each run's context, and why
    it failed (``failure``: :func:`~pytest_agentctx.reports.failure_entry.failure_entry`, or
    ``None``).

    ``measured=False`` says the test's runs were captured from its traffic but not rebuilt,
    because nothing in the session reads them (no budget, report file, gate or baseline):
    its figures are then unknown, not zero, and the record says so (``"measured": false``).

    With a ``redactor`` (the test's, the one its cassette uses), every string of the record
    (contexts, run names, models, tool names, keys) is scrubbed of its secrets, in the
    process that ran the test: the JSON report, the HTML page, the JUnit properties and
    the gate read the record, never the runs themselves.
    """
    entries: list[dict[str, Any]] = []
    total = no_runs_stats()  # a test without runs (most) needs no run figures loaded
    if runs:
        from pytest_agentctx.reports.figures import RunStats, run_stats

        totals: list[RunStats] = []
        for run in runs:
            stats = run_stats(run, prices=prices)
            totals.append(stats)
            entry: dict[str, Any] = {
                "name": run.name,
                "source": run.source,
                "stats": stats.to_dict(),
            }
            if contexts:
                entry["context"] = run.context.model_dump(mode="json")
            entries.append(entry)
        total = RunStats.total(totals).to_dict()
    record = {
        "suite": suite,
        "cassette": _plain(dict(cassette)) if cassette is not None else None,
        "budget": _plain(budget),
        "repeat": _plain(repeat),
        "stats": total,
        "runs": entries,
        "failure": _plain(failure),
    }
    if not measured:
        record["measured"] = False
    if redactor is not None:
        from pytest_agentctx.context.scrub import redact

        return redact(record, redactor)
    return record


def no_runs_stats() -> dict[str, Any]:
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


def is_agent_test(entry: Mapping[str, Any]) -> bool:
    """Whether a record or report entry is an agent test's: it made runs, had a cassette,
    or its runs were captured but not measured."""
    return (
        bool(entry.get("runs"))
        or entry.get("cassette") is not None
        or entry.get("measured") is False
    )


def is_measured(entry: Mapping[str, Any]) -> bool:
    """Whether the figures of a record or report entry were measured (see
    :func:`build_record`); reports written by ``--agent-report`` always are."""
    return entry.get("measured", True) is not False


def junit_properties(record: Mapping[str, Any]) -> list[tuple[str, object]]:
    """The JUnit XML properties of an agent test (none for other tests): iterations, tool
    calls, total tokens, cost in US dollars (when every model has a price), the
    cassette's status, and, when it failed, its failure as one line (the whole text is in
    the test case's ``<failure>`` or ``<error>`` element, where pytest writes it)."""
    if not is_agent_test(record):
        return []
    stats = record["stats"]
    properties: list[tuple[str, object]] = [
        ("agentctx.iterations", stats["iterations"]),
        ("agentctx.tool_calls", stats["tool_calls"]),
        ("agentctx.tokens", stats["total_tokens"]),
    ]
    if stats["cost_usd"] is not None:
        properties.append(("agentctx.cost_usd", f"{stats['cost_usd']:.8f}"))
    if record.get("cassette") is not None:
        properties.append(("agentctx.cassette", record["cassette"]["status"]))
    from pytest_agentctx.reports.failure_entry import failure_line

    failure = failure_line(record.get("failure"))
    if failure is not None:
        properties.append(("agentctx.failure", failure))
    return properties

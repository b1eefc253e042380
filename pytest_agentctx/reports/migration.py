"""What the migration period (``agent_migration_until``) let pass, read from a report: the
tests that passed although their cassette left recordings unused or missed requests
their code caught (each cassette entry's ``eased``), as the terminal's section lists them
(:func:`eased_lines`) and as the line of totals counts them (:func:`eased_note`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def eased_tests(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """The node id and cassette entry of each test the migration period let pass."""
    return [
        (str(test["nodeid"]), test["cassette"])
        for test in report["tests"]
        if isinstance(test.get("cassette"), Mapping) and test["cassette"].get("eased")
    ]


def _counted(count: int, one: str, many: str) -> str:
    return f"{count} {one if count == 1 else many}"


def _until(tests: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    return ", ".join(sorted({str(cassette["eased"]["until"]) for _, cassette in tests}))


def eased_note(report: Mapping[str, Any]) -> str | None:
    """The part of the line of totals that says how many tests the migration period let
    pass, and until when (``None``: none)."""
    tests = eased_tests(report)
    if not tests:
        return None
    return (
        f"{_counted(len(tests), 'test', 'tests')} let pass under agent_migration_until "
        f"(until {_until(tests)})"
    )


def eased_lines(report: Mapping[str, Any], *, report_path: str | None) -> list[str]:
    """The lines of the terminal's section: each test the migration period let pass, what
    it let pass with its count and the cassette, then what to run before the period ends."""
    tests = eased_tests(report)
    if not tests:
        return []
    lines = []
    misses = []
    for nodeid, cassette in tests:
        eased = cassette["eased"]
        what = []
        if eased.get("unused"):
            what.append(_counted(int(eased["unused"]), "unused recording", "unused recordings"))
        if eased.get("misses"):
            what.append(_counted(int(eased["misses"]), "caught miss", "caught misses"))
            misses.append(nodeid)
        lines.append(f"{nodeid}: {', '.join(what)} in {cassette['path']}")
    report_arg = report_path or "agentctx-report.json"
    written = "" if report_path else f"pytest --agent-report={report_arg}, then "
    lines.append(f"These pass until {_until(tests)} (agent_migration_until), then fail:")
    lines.append(f"  list them: {written}pytest-agentctx cassettes unused {report_arg}")
    lines.append(f"  drop the unused recordings: pytest-agentctx cassettes prune {report_arg}")
    if misses:
        lines.append('  re-record the tests with misses: pytest --agent-record "TEST_ID"')
    return lines

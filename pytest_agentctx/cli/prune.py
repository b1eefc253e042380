"""``pytest-agentctx cassettes unused`` and ``cassettes prune``: the dead interactions a
report lists, listed, then dropped from their cassette files without re-recording.

A report written by ``--agent-report`` (or merged from shards: a recording is then
unused only if no shard's test used it) gives, for each test's cassette, the recordings
the test left unused, by index, with a digest of each one's request (``digests``), and
what the migration period (``agent_migration_until``) let pass (``eased``).
``cassettes unused`` lists them per cassette file, and the tests whose caught misses
were let pass (those need re-recording: nothing can be dropped for a miss).
``cassettes prune`` drops them (:mod:`pytest_agentctx.traffic.cassettes.prune`): every
file is checked against the report before any is written, so a file changed since the
report is refused, with nothing pruned; ``--dry-run`` prints the plan only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentctx.exceptions import UsageError
from pytest_agentctx.reports.session_report import load_report

Print = Callable[[str], None]

#: The command that writes a report with what prune needs.
_WRITE = "pytest --agent-report={report}"


@dataclass
class DeadRecordings:
    """The unused recordings of one cassette file: its path as the report gives it, each
    unused position with its request digest, and the tests that left them unused."""

    path: str
    digests: dict[int, str]
    tests: list[str] = field(default_factory=list)


@dataclass
class Findings:
    """What a report lists: the unused recordings by cassette file, and the tests whose
    caught misses the migration period let pass (node id, cassette path, count)."""

    dead: list[DeadRecordings]
    misses: list[tuple[str, str, int]]


def _digests(test: Mapping[str, Any], report: str) -> dict[int, str]:
    cassette = test["cassette"]
    digests = cassette.get("digests")
    unused = cassette["unused"]
    if not isinstance(digests, Mapping) or any(str(i) not in digests for i in unused):
        raise UsageError(
            f"Report {report} lists unused recordings of {cassette['path']} (test "
            f"{test['nodeid']}) without the digests of their requests: it was written by an "
            "older pytest-agentctx, and prune needs them to check the file is still the one "
            f"the report saw. Write it again: {_WRITE.format(report=report)}, then run "
            f"pytest-agentctx cassettes prune {report}."
        )
    return {int(i): str(digests[str(i)]) for i in unused}


def findings(report: Mapping[str, Any], where: str) -> Findings:
    """The unused recordings and let-pass misses ``report`` (read from ``where``) lists;
    a recording of a cassette several tests used is unused only if all of them left it."""
    by_path: dict[str, DeadRecordings] = {}
    misses: list[tuple[str, str, int]] = []
    for test in report["tests"]:
        cassette = test.get("cassette")
        if not isinstance(cassette, Mapping):
            continue
        eased = cassette.get("eased")
        if isinstance(eased, Mapping) and eased.get("misses"):
            misses.append((test["nodeid"], cassette["path"], int(eased["misses"])))
        digests = _digests(test, where) if cassette.get("unused") else {}
        known = by_path.get(cassette["path"])
        if known is None:
            by_path[cassette["path"]] = DeadRecordings(cassette["path"], digests, [test["nodeid"]])
        else:
            known.digests = {i: d for i, d in known.digests.items() if i in digests}
            known.tests.append(test["nodeid"])
    dead = [by_path[path] for path in sorted(by_path) if by_path[path].digests]
    return Findings(dead, misses)


def _positions(positions: Mapping[int, str] | tuple[int, ...]) -> str:
    return ", ".join(f"#{i}" for i in sorted(positions))


def list_unused(report_path: str, out: Print) -> int:
    """Print what ``cassettes unused`` lists; 1 when there is anything, else 0."""
    found = findings(load_report(report_path), report_path)
    total = sum(len(dead.digests) for dead in found.dead)
    out(f"unused recordings: {total} in {len(found.dead)} cassette(s)")
    for dead in found.dead:
        out(f"  {dead.path} {_positions(dead.digests)} (not replayed by {', '.join(dead.tests)})")
    if found.dead:
        out(
            f"  -> drop them: pytest-agentctx cassettes prune {report_path} (--dry-run shows "
            "the plan first)"
        )
    out(f"caught misses let pass: {len(found.misses)} test(s)")
    for nodeid, path, count in found.misses:
        out(f"  {nodeid}: {count} miss(es) in {path}")
    if found.misses:
        out('  -> re-record each: pytest --agent-record "TEST_ID"')
    return 1 if found.dead or found.misses else 0


def _file_of(dead: DeadRecordings, rootdir: Path, report: str) -> Path:
    path = Path(dead.path)
    path = path if path.is_absolute() else rootdir / path
    if not path.is_file():
        raise UsageError(
            f"Cassette {dead.path} that report {report} lists (relative to the rootdir "
            f"{rootdir}) is not there: expected the file {path}. If it moved, run the suite "
            f"again with --agent-report={report} and prune with that report; run "
            "pytest-agentctx from the project's folder."
        )
    return path


def prune(
    report_path: str, *, rootdir: Path, secret_env: Sequence[str], dry_run: bool, out: Print
) -> int:
    """Drop the unused recordings ``report_path`` lists from their files (none with
    ``dry_run``), the cassette paths relative to ``rootdir``, what is kept scrubbed of
    the default secrets and ``secret_env``'s; every file is checked before any is written.
    Returns the exit code."""
    from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV
    from pytest_agentctx.traffic.cassettes.prune import apply_prune, plan_prune
    from pytest_agentctx.traffic.cassettes.redact import Redactor

    found = findings(load_report(report_path), report_path)
    if not found.dead:
        out(f"nothing to prune: report {report_path} lists no unused recordings.")
        return 0
    plans = [
        plan_prune(_file_of(dead, rootdir, report_path), dead.digests, report=report_path)
        for dead in found.dead
    ]
    verb = "would drop" if dry_run else "dropped"
    redactor = Redactor(env=(*DEFAULT_SECRET_ENV, *secret_env))
    dropped = 0
    for dead, plan in zip(found.dead, plans, strict=True):
        if not dry_run:
            apply_prune(plan, redactor, report=report_path)
        dropped += len(plan.dropped)
        kept = len(plan.interactions) - len(plan.dropped)
        out(f"{dead.path}: {verb} {_positions(plan.dropped)} ({kept} kept)")
    if dry_run:
        out(
            f"{dropped} interaction(s) in {len(plans)} cassette(s) would be dropped; nothing "
            f"changed (--dry-run). Prune them: pytest-agentctx cassettes prune {report_path}"
        )
    else:
        out(
            f"pruned {dropped} interaction(s) from {len(plans)} cassette(s). Next: run the "
            "suite again (pytest) and review the change (git diff)."
        )
    return 0

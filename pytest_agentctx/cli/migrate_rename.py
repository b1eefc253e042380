"""``pytest-agentctx migrate --rename OLD.json NEW.json``: a migrated suite's cassettes moved
from the names pytest-recording or pytest-vcr gave them to the package's own.

The two reports say where each test's cassette is: ``OLD.json`` from a run under
``agent_cassette_names = pytest-recording`` (or ``pytest-vcr``), ``NEW.json`` from a run
under the package's names, where each test missed its file and its entry names the path it
looked for (docs/migrating.md, "Moving to the package's own names"). Each file one test
used moves to that test's new path; a file several tests shared, a move onto a file that
exists, and a file that is gone are left where they are, each said with what to do.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_agentctx.reports.session_report import load_report

Print = Callable[[str], None]


@dataclass
class RenamePlan:
    """The moves ``(from, to)``, relative to the rootdir, and what is left to the user."""

    moves: list[tuple[str, str]] = field(default_factory=list)
    left: list[str] = field(default_factory=list)


def _paths(report: Mapping[str, Any]) -> dict[str, str]:
    return {
        str(test["nodeid"]): str(test["cassette"]["path"])
        for test in report.get("tests", [])
        if isinstance(test.get("cassette"), dict) and test["cassette"].get("path")
    }


def plan_renames(old: Mapping[str, Any], new: Mapping[str, Any], root: Path) -> RenamePlan:
    """Which files move where, from the two reports' test entries."""
    before, after = _paths(old), _paths(new)
    users: dict[str, list[str]] = {}
    for nodeid, path in before.items():
        users.setdefault(path, []).append(nodeid)
    plan = RenamePlan()
    for path, nodeids in sorted(users.items()):
        targets = {after[nodeid] for nodeid in nodeids if nodeid in after}
        if not targets or targets == {path}:
            continue
        if len(nodeids) > 1:
            plan.left.append(
                f"{path} is shared by {len(nodeids)} tests ({', '.join(sorted(nodeids)[:3])}"
                f"{', ...' if len(nodeids) > 3 else ''}): mark them "
                f'@pytest.mark.agent(cassette="{path}") instead of moving it'
            )
            continue
        target = targets.pop()
        if (root / target).exists():
            plan.left.append(f"{target} exists already: {path} not moved; remove one of them")
        elif not (root / path).is_file():
            plan.left.append(
                f"{path} ({nodeids[0]}) is not there: record the test again, "
                f'pytest --agent-record=missing "{nodeids[0]}"'
            )
        else:
            plan.moves.append((path, target))
    return plan


def run_rename(old: str, new: str, root: Path, *, dry_run: bool, out: Print) -> int:
    """Move the files (or, with ``dry_run``, print the moves); 1 when some are left."""
    plan = plan_renames(load_report(old), load_report(new), root)
    for source, target in plan.moves:
        if not dry_run:
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            (root / source).rename(root / target)
        out(f"{'would move' if dry_run else 'moved'} {source} -> {target}")
    out(f"{len(plan.moves)} cassette(s) {'to move' if dry_run else 'moved'}")
    if plan.left:
        out(f"left for you ({len(plan.left)}):")
        for line in plan.left:
            out(f"  {line}")
    if dry_run:
        out("dry run: nothing moved. Run it without --dry-run to move the files.")
    elif plan.moves:
        out("next: pytest  (each test replays its moved file under the package's names)")
    return 1 if plan.left else 0

"""``pytest-agentctx migrate``: a pytest-recording, pytest-vcr or vcrpy suite switched to
this plugin in one step (docs/migrating.md).

The command finds the pytest configuration pytest uses for the project
(:mod:`.migrate_config`), tells which tool the suite uses from its options, its Python
files (:mod:`.migrate_scan`), its dependency files and the installed plugins, and writes
into the configuration:

- ``agent_cassette_names``: the tests find their cassettes where that tool put them;
- ``agent_cassette_format = vcr``: a test recorded again writes vcrpy's YAML, as before;
- ``agent_migration_until``: 30 days in which unused recordings and caught misses are
  reported without failing;
- ``addopts``: ``--block-network`` dropped (replaying blocks the network), the old record
  mode moved to ``agent_record_mode``, and ``-p no:recording`` (``-p no:vcr``) so the old
  plugin can stay installed, turned off.

It then prints what it could not do, each with its file, line and what to write instead.
``--dry-run`` prints the same plan and the edits as a diff, and writes nothing. A second run
changes nothing: an option already set is kept. ``--convert-json`` also rewrites the
project's vcrpy cassettes in JSON (:mod:`.migrate_convert`).
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import importlib.metadata
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentctx._files import atomic_write_text
from pytest_agentctx.cli.migrate_config import ConfigFile, load_config
from pytest_agentctx.cli.migrate_scan import RECORDING, VCR, VCRPY, Evidence, Finding, scan
from pytest_agentctx.exceptions import UsageError

#: How long unused recordings and caught misses are reported without failing.
MIGRATION_DAYS = 30
TOOLS = (RECORDING, VCR, VCRPY)
#: The name of each plugin's pytest11 entry point, for ``-p no:NAME``.
ENTRY_POINTS = {RECORDING: "recording", VCR: "vcr"}
#: vcrpy's record modes as this package's.
RECORD_MODES = {"once": "missing", "new_episodes": "new", "all": "rewrite", "rewrite": "rewrite"}
_RECORD_OPTIONS = ("--record-mode", "--vcr-record", "--vcr-record-mode")
_OPTIONS = {
    "--record-mode": RECORDING,
    "--block-network": RECORDING,
    "--allowed-hosts": RECORDING,
    "--disable-recording": RECORDING,
    "--vcr-record": VCR,
    "--vcr-record-mode": VCR,
    "--disable-vcr": VCR,
}
_KEPT_OPTIONS = {
    "--allowed-hosts": "its regexes cannot be translated: list the host names (wildcards "
    "and addresses allowed) in the ini option agent_allowed_hosts, then remove it",
    "--disable-recording": "runs the tests without cassettes: pytest --agent-live does that "
    "for agent tests; remove it",
    "--disable-vcr": "runs the tests without cassettes: pytest --agent-live does that for "
    "agent tests; remove it",
}
_DEPENDENCY_FILES = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "Pipfile")
_DEPENDENCY_NAMES = {
    RECORDING: re.compile(r"pytest[-_]recording", re.IGNORECASE),
    VCR: re.compile(r"pytest[-_]vcr\b", re.IGNORECASE),
}

Print = Callable[[str], None]


@dataclass
class Plan:
    """What the command does to a project: the tool, the edited configuration, what each
    edit is for, what it leaves to the user."""

    tool: str
    why: list[str]
    config: ConfigFile
    done: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.config.text != self.config.original


def _shown(path: Path) -> str:
    """``path`` relative to the current folder when it is under it."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _option(token: str) -> str:
    return token.split("=", 1)[0]


def _option_evidence(config: ConfigFile) -> list[Evidence]:
    line = config.line_of("addopts") or 0
    return [
        Evidence(_OPTIONS[_option(token)], config.path, line, f"addopts {_option(token)}")
        for token in config.tokens("addopts")
        if _option(token) in _OPTIONS
    ]


def _dependency_evidence(root: Path) -> list[Evidence]:
    found: list[Evidence] = []
    paths = [root / name for name in _DEPENDENCY_FILES] + sorted(root.glob("requirements*.txt"))
    for path in paths:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in enumerate(lines, 1):
            for tool, pattern in _DEPENDENCY_NAMES.items():
                if pattern.search(text):
                    found.append(Evidence(tool, path, number, text.strip()))
    return found


def _installed() -> list[str]:
    tools = []
    for tool in (RECORDING, VCR):
        try:
            importlib.metadata.distribution(tool)
        except importlib.metadata.PackageNotFoundError:
            continue
        tools.append(tool)
    return tools


def _where(item: Evidence) -> str:
    return f"{_shown(item.path)}:{item.line}: {item.what}"


def _only(evidence: Sequence[Evidence]) -> str | None:
    tools = {item.tool for item in evidence}
    return tools.pop() if len(tools) == 1 else None


def detect(evidence: Sequence[Evidence], root: Path) -> tuple[str, list[str]]:
    """The tool the suite uses, and the lines that show it."""
    specific = [item for item in evidence if not item.marker and item.tool != VCRPY]
    if {item.tool for item in specific} == {RECORDING, VCR}:
        lines = [_where(item) for item in specific[:6]]
        raise UsageError(
            "the project shows both pytest-recording and pytest-vcr ("
            + "; ".join(lines)
            + "); expected one of them. Say which the suite runs under: "
            "pytest-agentctx migrate --from pytest-recording (or --from pytest-vcr)."
        )
    tool = _only(specific)
    if tool is not None:
        return tool, [_where(item) for item in specific[:3]]
    markers = [item for item in evidence if item.marker]
    if markers:
        dependencies = _dependency_evidence(root)
        tool = _only(dependencies)
        if tool is not None:
            return tool, [_where(markers[0]), _where(dependencies[0])]
        installed = _installed()
        if len(installed) == 1:
            return installed[0], [_where(markers[0]), f"{installed[0]} is installed"]
        raise UsageError(
            f"the tests use the vcr marker ({_where(markers[0])}), which pytest-recording "
            "and pytest-vcr both read, and nothing else tells which of the two the suite "
            "runs under; expected one of them installed or listed in the project's "
            "dependencies. Say which: pytest-agentctx migrate --from pytest-recording "
            "(or --from pytest-vcr)."
        )
    plain = [item for item in evidence if item.tool == VCRPY]
    if plain:
        return VCRPY, [_where(item) for item in plain[:3]]
    raise UsageError(
        f"no use of vcrpy found in {_shown(root)}: expected tests marked @pytest.mark.vcr, "
        "a vcr_config fixture, vcr.use_cassette or pytest-recording's/pytest-vcr's options "
        "in the pytest configuration. Run the command in the folder of the suite that "
        "uses them (pytest-agentctx migrate PATH), or give the tool: --from pytest-recording, "
        "--from pytest-vcr or --from vcrpy."
    )


def _addopts_filter(plan: Plan, modes: list[str]) -> Callable[[Sequence[str]], set[int]]:
    def drop(tokens: Sequence[str]) -> set[int]:
        doomed: set[int] = set()
        for index, token in enumerate(tokens):
            name = _option(token)
            if token == "--block-network":
                doomed.add(index)
                plan.done.append(
                    "--block-network removed from addopts: a replaying test has the "
                    "network blocked already"
                )
            elif name in _RECORD_OPTIONS:
                value = token.partition("=")[2]
                doomed.add(index)
                if not value and index + 1 < len(tokens):
                    value = tokens[index + 1]
                    doomed.add(index + 1)
                modes.append(value)
                plan.done.append(f"{name} {value} removed from addopts")
        return doomed

    return drop


def _kept_options(plan: Plan) -> None:
    config = plan.config
    line = config.line_of("addopts")
    if line is None:
        return
    for token in config.tokens("addopts"):
        advice = _KEPT_OPTIONS.get(_option(token))
        if advice is not None:
            finding = Finding(config.path, line, config.lines[line - 1].strip(), "")
            plan.findings.append(
                Finding(finding.path, line, finding.code, f"{_option(token)}: {advice}")
            )


def _settings(plan: Plan, modes: list[str], today: dt.date) -> list[tuple[str, str]]:
    config, tool = plan.config, plan.tool
    wanted: list[tuple[str, str, str]] = []
    if tool != VCRPY:
        wanted.append(
            (
                "agent_cassette_names",
                tool,
                f"each test finds its cassette where {tool} put it, and tests marked "
                "@pytest.mark.vcr are agent tests",
            )
        )
    wanted.append(
        (
            "agent_cassette_format",
            "vcr",
            "a test recorded again writes vcrpy's YAML beside the old files",
        )
    )
    mode = RECORD_MODES.get(modes[-1]) if modes else None
    if mode is not None:
        wanted.append(("agent_record_mode", mode, f"the record mode {modes[-1]} of vcrpy"))
    until = (today + dt.timedelta(days=MIGRATION_DAYS)).isoformat()
    wanted.append(
        (
            "agent_migration_until",
            until,
            "until then unused recordings and caught misses are reported, not failed",
        )
    )
    added: list[tuple[str, str]] = []
    for key, value, why in wanted:
        line = config.line_of(key)
        if line is None:
            added.append((key, value))
            plan.done.append(f"{key} = {value}: {why}")
            continue
        current = config.lines[line - 1].split("=", 1)[-1].strip().strip("\"'")
        if current != value and key != "agent_migration_until":
            plan.findings.append(
                Finding(
                    config.path,
                    line,
                    config.lines[line - 1].strip(),
                    f"kept as it is; the migration writes {key} = {value} ({why})",
                )
            )
    return added


def plan_migration(directory: Path, source: str | None, today: dt.date) -> Plan:
    """What ``migrate`` does to the project in ``directory``, its edits made in memory."""
    config = load_config(directory)
    root = config.path.parent
    found = scan(root)
    evidence = [*_option_evidence(config), *found.evidence]
    if source is None:
        tool, why = detect(evidence, root)
    else:
        tool, why = source, ["--from " + source]
    plan = Plan(tool=tool, why=why, config=config, findings=list(found.findings))
    modes: list[str] = []
    add: list[str] = []
    entry_point = ENTRY_POINTS.get(tool)
    tokens = config.tokens("addopts")
    if entry_point is not None and f"no:{entry_point}" not in _plugin_args(tokens):
        add = ["-p", f"no:{entry_point}"]
        plan.done.append(
            f"-p no:{entry_point} added to addopts: {tool} stays installed, turned off; "
            f"uninstall it once the suite passes, then remove -p no:{entry_point}"
        )
    missing = not config.edit_tokens("addopts", _addopts_filter(plan, modes), add)
    _kept_options(plan)
    settings = _settings(plan, modes, today)
    if missing and add:
        settings.insert(0, ("addopts", " ".join(add)))
    if settings:
        config.add(settings, "pytest-agentctx migrate (docs/migrating.md)")
    return plan


def _plugin_args(tokens: Sequence[str]) -> set[str]:
    names = set()
    for index, token in enumerate(tokens):
        if token == "-p" and index + 1 < len(tokens):
            names.add(tokens[index + 1])
        elif token.startswith("-p") and len(token) > 2:
            names.add(token[2:])
    return names


def _report(plan: Plan, dry_run: bool, out: Print, converted: bool = False) -> None:
    config = plan.config
    name = _shown(config.path)
    out(f"pytest-agentctx migrate: a {plan.tool} suite ({'; '.join(plan.why)})")
    if plan.changed:
        for line in difflib.unified_diff(
            config.original.splitlines(), config.text.splitlines(), name, name, lineterm=""
        ):
            out(line)
        verb = "would change" if dry_run else "changed"
        out(f"{verb} {name}:")
        for line in plan.done:
            out(f"  {line}")
    else:
        out(f"{name}: nothing to change (already migrated)")
    if plan.findings:
        out(f"left for you ({len(plan.findings)}): change these lines by hand")
        for finding in sorted(plan.findings, key=lambda f: (str(f.path), f.line)):
            out(f"  {_shown(finding.path)}:{finding.line}: {finding.code}")
            out(f"    -> {finding.advice}")
    if dry_run:
        out("dry run: nothing written. Run it without --dry-run to make these edits.")
    out("next:")
    out("  pytest  (the suite, replaying the old cassettes: the same tests pass)")
    out("  pytest --agent-report=agent-report.json")
    out(
        "  pytest-agentctx cassettes prune agent-report.json  (drops the recordings no "
        "test replayed, before agent_migration_until)"
    )
    if not converted:
        out(
            "  pytest-agentctx migrate --convert-json  (rewrites the vcrpy cassettes as the "
            "same documents in JSON, which vcrpy still reads: a faster first read)"
        )
    out(
        "  later, the package's own cassette names: pytest-agentctx migrate --rename "
        "OLD.json NEW.json (docs/migrating.md, 'Moving to the package's own names later')"
    )


def run_migrate(args: argparse.Namespace, out: Print) -> int:
    """``pytest-agentctx migrate [DIR] [--from TOOL] [--dry-run] [--convert-json]
    [--rename OLD NEW]``: 0
    when everything was done, 1 when lines are left to change by hand."""
    directory = Path(args.directory or os.curdir)
    if args.rename:
        from pytest_agentctx.cli.migrate_rename import run_rename

        old, new = args.rename
        root = load_config(directory).path.parent
        return run_rename(old, new, root, dry_run=args.dry_run, out=out)
    plan = plan_migration(directory, args.source, dt.date.today())
    if plan.changed and not args.dry_run:
        atomic_write_text(plan.config.path, plan.config.text)
    convert = getattr(args, "convert_json", False)
    if convert:
        from pytest_agentctx.cli.config import find_ini
        from pytest_agentctx.cli.migrate_convert import convert_cassettes

        secret_env = find_ini(plan.config.path.parent).lines("agent_secret_env")
        convert_cassettes(
            plan.config.path.parent, dry_run=args.dry_run, out=out, secret_env=secret_env
        )
    _report(plan, args.dry_run, out, convert)
    return 1 if plan.findings else 0

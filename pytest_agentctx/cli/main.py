"""The ``pytest-agentctx`` command: reports and cassettes outside a pytest session.

``report merge``, ``report html``, ``gate``, ``cassettes check``, ``cassettes show``,
``cassettes unused``, ``cassettes prune``, ``migrate``, ``mcp import`` and ``rejudge``
(docs/cli.md).
Exit codes: 0 clean, 1 findings (a failed gate, failed tests, cassette findings), 2 a usage
error (bad arguments, a file that is not a report or a cassette, or one past a limit). Every
line it prints passes the package's redactor, then :func:`~pytest_agentctx._untrusted.visible`:
the reports and cassettes it reads may come from strangers, and their control characters are
shown as escapes, never sent to the terminal. The files are read within the limits of
:mod:`pytest_agentctx._untrusted`, raised by the same ini options as in a pytest session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_agentctx._files import atomic_write_bytes, atomic_write_text
from pytest_agentctx._untrusted import (
    LIMIT_OPTIONS,
    LimitExceeded,
    limits_from,
    read_untrusted,
    use_limits,
    visible,
)
from pytest_agentctx.cli.config import IniOptions, find_ini
from pytest_agentctx.exceptions import AgentCtxError, UsageError
from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV, Redactor

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2
PROG = "pytest-agentctx"

Print = Callable[[str], None]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Reports and cassettes of pytest-agentctx, outside a pytest session. "
        "Exit codes: 0 clean, 1 findings, 2 usage error.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    report = commands.add_parser("report", help="merge JSON reports, render the HTML page")
    actions = report.add_subparsers(dest="action", required=True, metavar="ACTION")
    merge = actions.add_parser("merge", help="merge the JSON reports of shards into one")
    merge.add_argument(
        "inputs", metavar="IN", nargs="+", help="reports: files, folders or glob patterns"
    )
    merge.add_argument(
        "-o", "--output", metavar="OUT.json", required=True, help="the merged report to write"
    )
    html = actions.add_parser("html", help="the HTML page of a JSON report")
    html.add_argument("input", metavar="IN.json")
    html.add_argument("-o", "--output", metavar="OUT.html", required=True)
    gate = commands.add_parser("gate", help="the gate of --agent-gate over a report")
    gate.add_argument("input", metavar="IN.json")
    gate.add_argument("--baseline", metavar="OLD.json", help="a report to compare with")
    for name, text in (
        ("tokens", "allowed change of tokens: 10 (percent) or ignore"),
        ("iterations", "allowed change of iterations: 0 or ignore"),
        ("trajectory", "allowed change of trajectory: exact, unordered or ignore"),
        ("level", "significance level of a pass rate drop (paired): 0.05"),
        ("margin", "points the pass rate may drop before a significant drop fails: 2"),
        ("flips", "report, or fail: a pass that fails now fails the gate"),
    ):
        gate.add_argument(
            f"--baseline-{name}", metavar="VALUE", help=f"{text} (ini: agent_baseline_{name})"
        )
    cassettes = commands.add_parser("cassettes", help="check, show or prune cassettes")
    actions = cassettes.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser("check", help="unused, old and retired-model cassettes")
    check.add_argument(
        "directory", metavar="DIR", nargs="?", help="the cassette folder (ini: agent_cassette_dir)"
    )
    check.add_argument("--report", metavar="REPORT.json", help="the report of a full run")
    check.add_argument(
        "--max-age", metavar="DAYS", help="oldest age allowed (ini: agent_cassette_max_age)"
    )
    check.add_argument(
        "--retired-models",
        metavar="FILE",
        help="more retired models, 'model = YYYY-MM-DD' a line (ini: agent_retired_models)",
    )
    unused = actions.add_parser(
        "unused", help="the unused recordings and let-pass misses a report lists"
    )
    unused.add_argument("report", metavar="REPORT.json", help="a report (--agent-report)")
    prune = actions.add_parser(
        "prune", help="drop the unused recordings a report lists from their cassettes"
    )
    prune.add_argument("report", metavar="REPORT.json", help="a report (--agent-report)")
    prune.add_argument(
        "--dry-run", action="store_true", help="print what would be dropped, change nothing"
    )
    show = actions.add_parser("show", help="print one cassette readably")
    show.add_argument("path", metavar="PATH")
    migrate = commands.add_parser(
        "migrate", help="switch a pytest-recording, pytest-vcr or vcrpy suite to the plugin"
    )
    migrate.add_argument(
        "directory", metavar="DIR", nargs="?", help="the project's folder (default: here)"
    )
    migrate.add_argument(
        "--from",
        dest="source",
        choices=("pytest-recording", "pytest-vcr", "vcrpy"),
        help="the tool the suite uses (default: found in the project)",
    )
    migrate.add_argument(
        "--dry-run", action="store_true", help="print the plan and the edits, write nothing"
    )
    migrate.add_argument(
        "--convert-json",
        action="store_true",
        help="also rewrite the vcrpy cassettes as the same documents in JSON, which vcrpy "
        "still reads and the plugin reads faster (those holding bytes stay YAML)",
    )
    migrate.add_argument(
        "--rename",
        nargs=2,
        metavar=("OLD.json", "NEW.json"),
        help="move the cassettes from the old tool's names (OLD.json's paths) to the "
        "package's (NEW.json's): docs/migrating.md",
    )
    from pytest_agentctx.cli.mcp_import import add_parser as add_mcp

    add_mcp(commands)
    from pytest_agentctx.cli.rejudge import add_parser as add_rejudge

    add_rejudge(commands)
    from pytest_agentctx.cli.prices import add_parser as add_prices

    add_prices(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command with ``argv`` (the process's arguments); return its exit code."""
    args = _parser().parse_args(argv)
    ini = IniOptions(rootdir=Path.cwd())
    redactor = Redactor(env=DEFAULT_SECRET_ENV)
    try:
        ini = find_ini()
        redactor = Redactor(env=(*DEFAULT_SECRET_ENV, *ini.lines("agent_secret_env")))
        use_limits(limits_from({name: ini.get(name) for name in LIMIT_OPTIONS.values()}))

        def out(line: str) -> None:
            print(visible(redactor.text(line)))

        return _run(args, ini, redactor, out)
    except (AgentCtxError, OSError) as exc:
        text = str(exc) if isinstance(exc, AgentCtxError) else _os_error(exc)
        print(visible(redactor.text(f"{PROG}: error: {text}")), file=sys.stderr)
        return EXIT_USAGE


def _os_error(exc: OSError) -> str:
    where = f" {exc.filename}" if exc.filename else ""
    return (
        f"cannot use{where}: {exc.strerror or exc}. Give a path that exists and is "
        "writable (or readable, for an input), then run the command again."
    )


def _run(args: argparse.Namespace, ini: IniOptions, redactor: Redactor, out: Print) -> int:
    if args.command == "mcp":
        from pytest_agentctx.cli.mcp_import import run_mcp_import

        return run_mcp_import(args, ini.lines("agent_secret_env"), out)
    if args.command == "prices":
        from pytest_agentctx.cli.prices import run_prices

        return run_prices(args, ini.get("agent_price_data").strip() or None, out)
    if args.command == "rejudge":
        from pytest_agentctx.cli.rejudge import run_rejudge

        return run_rejudge(args, ini, redactor, out)
    if args.command == "migrate":
        from pytest_agentctx.cli.migrate import run_migrate

        return run_migrate(args, out)
    if args.command == "report" and args.action == "merge":
        return _merge(args, out)
    if args.command == "report":
        return _html(args, out)
    if args.command == "gate":
        from pytest_agentctx.cli.gate import run_gate

        return run_gate(args, ini, out)
    if args.action == "check":
        return _check(args, ini, out)
    if args.action in ("unused", "prune"):
        from pytest_agentctx.cli.prune import list_unused, prune

        if args.action == "unused":
            return list_unused(args.report, out)
        secret_env = ini.lines("agent_secret_env")
        return prune(
            args.report, rootdir=ini.rootdir, secret_env=secret_env, dry_run=args.dry_run, out=out
        )
    from pytest_agentctx.cli.show import show_cassette

    for line in show_cassette(Path(args.path)):
        out(line)
    return EXIT_OK


def _merge(args: argparse.Namespace, out: Print) -> int:
    from pytest_agentctx.cli.merge import expand_inputs, merged_text, read_reports

    output = Path(args.output)
    paths = expand_inputs(args.inputs, output=output)
    data, tests = merged_text(read_reports(paths))
    atomic_write_bytes(output, data)
    out(f"{PROG}: merged {len(paths)} report(s), {tests} test(s), into {output}")
    return EXIT_OK


def _html(args: argparse.Namespace, out: Print) -> int:
    from pytest_agentctx.reports.html import render_html
    from pytest_agentctx.reports.session_report import load_report

    report = load_report(args.input)
    atomic_write_text(Path(args.output), render_html(report))
    out(f"{PROG}: HTML page of {args.input} written to {args.output}")
    return EXIT_OK


def _max_age(args: argparse.Namespace, ini: IniOptions) -> float | None:
    text, where = args.max_age, "--max-age"
    if text is None:
        text, where = ini.get("agent_cassette_max_age"), "agent_cassette_max_age"
    if not text.strip():
        return None
    try:
        days = float(text)
    except ValueError:
        days = -1.0
    if not days >= 0:
        raise UsageError(
            f"{where} = {text!r}: expected a number of days of 0 or more, e.g. 90. Fix it and "
            "run the command again."
        )
    return days


def _check(args: argparse.Namespace, ini: IniOptions, out: Print) -> int:
    from pytest_agentctx.cli.check import CheckOptions, check_cassettes
    from pytest_agentctx.cli.retired import RETIRED_MODELS, parse_retired
    from pytest_agentctx.reports.session_report import load_report

    retired = dict(RETIRED_MODELS)
    retired.update(parse_retired(ini.lines("agent_retired_models"), where="agent_retired_models"))
    if args.retired_models:
        path = Path(args.retired_models)
        try:
            text = read_untrusted(path).decode("utf-8")
        except (LimitExceeded, UnicodeDecodeError) as exc:
            raise UsageError(f"--retired-models: {path}: {exc}") from None
        retired.update(parse_retired(text.splitlines(), where=str(path)))
    if args.directory:
        directory = Path(args.directory)
    else:
        directory = Path(ini.get("agent_cassette_dir", "cassettes") or "cassettes")
        directory = directory if directory.is_absolute() else ini.rootdir / directory
    if not directory.is_dir():
        raise UsageError(
            f"cassette folder {directory} does not exist; expected the folder of the "
            "cassettes: pytest-agentctx cassettes check DIR (or set agent_cassette_dir)."
        )
    options = CheckOptions(
        directory=directory,
        rootdir=ini.rootdir,
        report=load_report(args.report) if args.report else None,
        report_path=args.report,
        max_age_days=_max_age(args, ini),
        retired=retired,
        today=dt.datetime.now(dt.UTC).date(),
    )
    result = check_cassettes(options)
    for line in result.lines:
        out(line)
    return EXIT_FINDINGS if result.findings else EXIT_OK

"""The session's cassette options: :class:`CassetteSettings` (the ini options under the
command line, checked), the record modes' names (:func:`parse_mode`), ``--agent-record``'s
optional MODE (:func:`normalise_record_args`) and which tests are agent tests
(:func:`is_agent_test`). A test's own options, over these, are in :mod:`.per_test`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from pytest_agentctx.traffic.cassettes.defaults import DEFAULT_IGNORED_FIELDS, RecordMode
from pytest_agentctx.traffic.errors import CassetteConfigError

if TYPE_CHECKING:
    from datetime import date

#: Fixtures whose use makes a test an agent test (its HTTP traffic goes to a cassette).
AGENT_FIXTURES = frozenset(
    {"agent_runtime", "agent_cassette", "agent_context", "agent_judge", "agent_simulated_user"}
)


def parse_mode(value: str, *, where: str) -> RecordMode:
    """A record mode from its name, or a clear error naming where it came from."""
    try:
        return RecordMode(value.strip().lower())
    except ValueError:
        choices = ", ".join(mode.value for mode in RecordMode)
        raise CassetteConfigError(
            f"{where}: record mode {value!r} does not exist; choose one of {choices} "
            "(e.g. pytest --agent-record=missing)."
        ) from None


class CassetteSettings(NamedTuple):
    """Session-wide cassette settings (command line over ini). A named tuple, not a
    dataclass: the plugin reads it at start-up, and a dataclass costs every pytest run the
    compiling of its generated methods."""

    directory: Path
    mode: RecordMode = RecordMode.NONE
    mode_from_command_line: bool = False
    #: ``--agent-live`` without ``--agent-record``: every agent test talks to the network
    #: (mode ``rewrite``) and no cassette is written.
    live: bool = False
    all_tests: bool = False
    allow_unused: bool = False
    allowed_hosts: tuple[str, ...] = ()
    ignore_fields: tuple[str, ...] = DEFAULT_IGNORED_FIELDS
    extension: str = ".json"
    #: How new cassettes are written: ``native`` (the package's format) or ``vcr`` (vcrpy's).
    style: str = "native"
    secret_env: tuple[str, ...] = ()
    record_failing: bool = False
    run_id: str = ""
    #: pytest's verbosity (``-v``: 1, ``-vv``: 2): how much a cassette miss shows.
    verbosity: int = 0
    #: Whether unset provider API keys get placeholders while a test replays only or uses
    #: ``fake_llm`` (``agent_placeholder_keys``).
    placeholder_keys: bool = True
    #: Whose cassette names tests use (``agent_cassette_names``): ``agentctx`` (the
    #: package's), ``pytest-recording`` or ``pytest-vcr`` (see :mod:`.vcr_names`).
    names: str = "agentctx"
    #: ``agent_ignore_hosts``: the hosts (and ``host/path`` prefixes) whose requests no
    #: cassette sees, at all times (see :mod:`pytest_agentctx.traffic.ignore`).
    ignore_hosts: tuple[str, ...] = ()

    @property
    def vcr_names(self) -> bool:
        """Whether tests use pytest-recording's or pytest-vcr's names (and the ``vcr``
        marker makes a test an agent test)."""
        return self.names != "agentctx"

    #: ``agent_migration_until`` as written (``YYYY-MM-DD``), or ``""`` when not set.
    migration_until: str = ""
    #: Whether the run's local date is on or before :attr:`migration_until`: unused
    #: recordings and misses the code caught are then reported, not failed on.
    migrating: bool = False
    #: The UTC day (``YYYY-MM-DD``) the session started: the day its recordings are dated,
    #: read before any test freezes the clock (``""``: each cassette's own day).
    day: str = ""

    @classmethod
    def build(
        cls,
        *,
        rootpath: Path,
        directory: str,
        cli_mode: str | None,
        ini_mode: str,
        all_tests: bool,
        allow_unused: bool,
        allowed_hosts: Iterable[str],
        ignore_fields: Iterable[str],
        cassette_format: str,
        secret_env: Iterable[str],
        record_failing: bool,
        run_id: str,
        verbosity: int = 0,
        live: bool = False,
        placeholder_keys: bool = True,
        names: str = "agentctx",
        ignore_hosts: Iterable[str] = (),
        migration_until: str = "",
        today: date | None = None,
        day: str = "",
    ) -> CassetteSettings:
        """The settings from the option values (``day``: the session's; ``""``: each
        cassette's own); a bad value raises :class:`CassetteError` naming the option, the
        value and a right one."""
        fmt = cassette_format.strip().lower()
        if fmt not in ("json", "yaml", "vcr"):
            raise CassetteConfigError(
                f"agent_cassette_format = {cassette_format!r}; expected json, yaml or vcr "
                "(vcrpy's YAML), e.g. agent_cassette_format = yaml. Fix it in your pytest ini "
                "file."
            )
        if not directory.strip():
            raise CassetteConfigError(
                f"agent_cassette_dir = {directory!r}; expected a folder (relative to the "
                "rootdir, or absolute), e.g. agent_cassette_dir = cassettes. Fix it in your "
                "pytest ini file or give --agent-cassette-dir DIR."
            )
        hosts = tuple(allowed_hosts)
        for host in hosts:
            problem = host_problem(host)
            if problem:
                raise CassetteConfigError(
                    f"agent_allowed_hosts: {host!r} {problem}; expected one host per line (a "
                    "name, a *.wildcard or an address), e.g. api.example.com. Fix it in your "
                    "pytest ini file."
                )
        mode = parse_mode(cli_mode, where="--agent-record") if cli_mode else None
        live = live and mode is None  # with --agent-record, live tests also record
        if live:
            mode = RecordMode.REWRITE
        path = Path(directory)
        naming = names.strip().lower() or "agentctx"
        if naming != "agentctx":
            from pytest_agentctx.traffic.cassettes.vcr_names import parse_naming

            naming = parse_naming(names)
        until, migrating = migration_period(migration_until, today=today)
        return cls(
            directory=path if path.is_absolute() else rootpath / path,
            mode=mode or parse_mode(ini_mode or "none", where="agent_record_mode"),
            mode_from_command_line=mode is not None,
            live=live,
            all_tests=all_tests,
            allow_unused=allow_unused,
            allowed_hosts=hosts,
            ignore_fields=(*DEFAULT_IGNORED_FIELDS, *ignore_fields),
            day=day,
            extension=".yaml" if fmt == "vcr" else f".{fmt}",
            style="vcr" if fmt == "vcr" else "native",
            secret_env=_secret_env(secret_env),
            record_failing=record_failing,
            run_id=run_id,
            verbosity=verbosity,
            placeholder_keys=placeholder_keys,
            names=naming,
            ignore_hosts=_ignore_hosts(ignore_hosts),
            migration_until=until,
            migrating=migrating,
        )


def _ignore_hosts(entries: Iterable[str]) -> tuple[str, ...]:
    """The ``agent_ignore_hosts`` entries, each checked (see
    :func:`pytest_agentctx.traffic.ignore.entry_problem`)."""
    checked = tuple(entry.strip() for entry in entries)
    if not checked:
        return ()
    from pytest_agentctx.traffic.ignore import entry_problem

    for entry in checked:
        problem = entry_problem(entry)
        if problem:
            raise CassetteConfigError(
                f"agent_ignore_hosts: {entry!r} {problem}; expected one entry per line: a "
                "host name, a *.wildcard, an address, or one of these and a path prefix, "
                "e.g. huggingface.co or api.example.com/v1/models. Fix it in your pytest ini "
                "file."
            )
    return checked


def migration_period(value: str, *, today: date | None = None) -> tuple[str, bool]:
    """``agent_migration_until`` checked: the date as written (``""`` when not set) and
    whether ``today`` (the local date of the run by default) is on or before it; a value
    that is not a ``YYYY-MM-DD`` date raises :class:`CassetteConfigError` naming it."""
    text = value.strip()
    if not text:
        return "", False
    import datetime
    import re

    try:
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            raise ValueError(text)
        until = datetime.date.fromisoformat(text)
    except ValueError:
        raise CassetteConfigError(
            f"agent_migration_until = {value!r} is not a date; expected YYYY-MM-DD (the last "
            "day unused recordings and caught misses do not fail tests), e.g. "
            "agent_migration_until = 2026-12-31. Fix it in your pytest ini file."
        ) from None
    return text, (today or datetime.date.today()) <= until


def _secret_env(names: Iterable[str]) -> tuple[str, ...]:
    """The ``agent_secret_env`` names, refusing a line that cannot be a variable's name
    (such as ``NAME=value``, whose value is not shown): it would redact nothing."""
    checked = tuple(names)
    for name in checked:
        if "=" in name or not name.strip() or any(ch.isspace() for ch in name.strip()):
            shown = f"{name.partition('=')[0]}=..." if "=" in name else name
            raise CassetteConfigError(
                f"agent_secret_env: {shown!r} is not the name of an environment variable; "
                "expected one name per line, e.g. agent_secret_env = MY_SERVICE_TOKEN (its "
                "value is then redacted). Fix it in your pytest ini file."
            )
    return checked


def host_problem(host: str) -> str | None:
    """Why ``host`` can never match an allowed host (hosts are compared without scheme,
    path or port), or ``None``."""
    if "/" in host:
        return "is a URL or has a path: give the host name only"
    if any(ch.isspace() for ch in host.strip()):
        return "has spaces: give one host per entry"
    if host.count(":") == 1:
        return "has a port: give the host alone (every port of an allowed host is allowed)"
    return None


def normalise_record_args(args: list[str]) -> None:
    """``--agent-record`` takes an optional MODE: rewrite ``--agent-record PATH`` in ``args``
    (in place) to ``--agent-record=rewrite PATH``, so ``pytest --agent-record tests/x.py``
    (and the command the miss message prints) records that test instead of taking the path
    for a mode."""
    modes = {mode.value for mode in RecordMode}
    for index, arg in enumerate(args[:-1]):
        following = args[index + 1]
        if arg == "--agent-record" and not following.startswith("-") and following not in modes:
            args[index] = "--agent-record=rewrite"


def is_agent_test(fixturenames: Iterable[str], *, marked: bool, settings: CassetteSettings) -> bool:
    """Whether a test's HTTP traffic goes to a cassette: every test with ``agent_all_tests``,
    one marked ``agent``, or one using an agent fixture (:data:`AGENT_FIXTURES`); never one
    using ``fake_llm``, whose fake model answers its requests."""
    fixtures = set(fixturenames)
    if "fake_llm" in fixtures:
        return False
    return settings.all_tests or marked or bool(fixtures & AGENT_FIXTURES)


def period_ended(until: str, migrating: bool, command: str | None) -> str:
    """What the failure of a suite whose migration period (``agent_migration_until``:
    ``until``, still running when ``migrating``) ended adds: that it ended, and what to do:
    re-record the test with ``command`` (a miss), or, with ``None``, drop the unused
    recordings."""
    if not until or migrating:
        return ""
    fix = (
        f"re-record the test ({command})"
        if command is not None
        else "drop the unused recordings (pytest --agent-report=agentctx-report.json, then "
        "pytest-agentctx cassettes prune agentctx-report.json)"
    )
    return (
        f"\nThe migration period of agent_migration_until ended on {until}, so this fails "
        f"again: {fix}, or move agent_migration_until to a later date in your pytest ini file."
    )

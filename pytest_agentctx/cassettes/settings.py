"""The cassette options of a session and of one test, read and checked in one place."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..exceptions import CassetteError
from .defaults import DEFAULT_IGNORED_FIELDS, RecordMode

if TYPE_CHECKING:
    import pytest

    from .network import NetworkGuard
    from .session import Cassette

__all__ = [
    "AGENT_FIXTURES",
    "CONFIG_KEYS",
    "MARKER_OPTIONS",
    "CassetteSettings",
    "TestOptions",
    "build_cassette",
    "cassette_config",
    "cassette_path",
    "is_agent_test",
    "normalise_record_args",
    "parse_mode",
]

#: Keyword options of ``@pytest.mark.agent(...)`` that the cassettes understand.
MARKER_OPTIONS = ("cassette", "allow_unused", "record_mode", "allowed_hosts", "match_ignore")

#: Keys of the dict the ``agent_cassette_config`` fixture returns.
CONFIG_KEYS = ("match_ignore", "body_hook", "allowed_hosts", "redact_values", "directory")

#: Fixtures whose use makes a test an agent test (its HTTP traffic goes to a cassette).
AGENT_FIXTURES = frozenset({"agent_runtime", "agent_cassette", "agent_context"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]=,+]")


def parse_mode(value: str, *, where: str) -> RecordMode:
    """A record mode from its name, or a clear error naming where it came from."""
    try:
        return RecordMode(value.strip().lower())
    except ValueError:
        choices = ", ".join(mode.value for mode in RecordMode)
        raise CassetteError(
            f"{where}: record mode {value!r} does not exist; choose one of {choices} "
            "(e.g. pytest --agent-record=missing)."
        ) from None


@dataclass(frozen=True)
class CassetteSettings:
    """Session-wide cassette settings (command line over ini)."""

    directory: Path
    mode: RecordMode = RecordMode.NONE
    mode_from_command_line: bool = False
    all_tests: bool = False
    allow_unused: bool = False
    allowed_hosts: tuple[str, ...] = ()
    ignore_fields: tuple[str, ...] = DEFAULT_IGNORED_FIELDS
    extension: str = ".json"
    secret_env: tuple[str, ...] = ()
    record_failing: bool = False
    run_id: str = ""

    @classmethod
    def from_config(cls, config: pytest.Config) -> CassetteSettings:
        """The settings of a pytest session: its ``--agent-*`` options over its ini options.

        The run id is the xdist run's (the same on every worker) or a new one. Raises
        :class:`CassetteError` for a bad value (the plugin makes it a usage error).
        """
        workerinput = getattr(config, "workerinput", None)
        run_id = workerinput["testrunuid"] if workerinput else os.urandom(16).hex()
        return cls.build(
            rootpath=config.rootpath,
            directory=config.getoption("agent_cassette_dir")
            or str(config.getini("agent_cassette_dir")),
            cli_mode=config.getoption("agent_record"),
            ini_mode=str(config.getini("agent_record_mode")),
            all_tests=bool(config.getini("agent_all_tests")),
            allow_unused=bool(config.getini("agent_allow_unused")),
            allowed_hosts=[str(h) for h in config.getini("agent_allowed_hosts")],
            ignore_fields=[str(f) for f in config.getini("agent_match_ignore")],
            cassette_format=str(config.getini("agent_cassette_format")),
            secret_env=[str(e) for e in config.getini("agent_secret_env")],
            record_failing=bool(config.getoption("agent_record_failing")),
            run_id=run_id,
        )

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
    ) -> CassetteSettings:
        fmt = cassette_format.strip().lower()
        if fmt not in ("json", "yaml"):
            raise CassetteError(
                f"agent_cassette_format = {cassette_format!r}; expected json or yaml."
            )
        mode = parse_mode(cli_mode, where="--agent-record") if cli_mode else None
        path = Path(directory)
        return cls(
            directory=path if path.is_absolute() else rootpath / path,
            mode=mode or parse_mode(ini_mode or "none", where="agent_record_mode"),
            mode_from_command_line=mode is not None,
            all_tests=all_tests,
            allow_unused=allow_unused,
            allowed_hosts=tuple(allowed_hosts),
            ignore_fields=(*DEFAULT_IGNORED_FIELDS, *ignore_fields),
            extension=f".{fmt}",
            secret_env=tuple(secret_env),
            record_failing=record_failing,
            run_id=run_id,
        )


@dataclass(frozen=True)
class TestOptions:
    """Per-test options from ``@pytest.mark.agent(...)`` laid over the session settings."""

    __test__ = False  # not a test class, although its name starts with "Test"

    cassette: str | None = None
    allow_unused: bool = False
    mode: RecordMode = RecordMode.NONE
    allowed_hosts: tuple[str, ...] = ()
    ignore_fields: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def resolve(
        cls, settings: CassetteSettings, marker_kwargs: Mapping[str, Any], *, where: str
    ) -> TestOptions:
        mode = settings.mode
        if "record_mode" in marker_kwargs and not settings.mode_from_command_line:
            mode = parse_mode(str(marker_kwargs["record_mode"]), where=where)
        cassette = marker_kwargs.get("cassette")
        if cassette is not None and (not isinstance(cassette, str) or not cassette.strip()):
            raise CassetteError(
                f"{where}: cassette={cassette!r}; give a file name such as "
                "cassette='weather_shared' (relative to the cassette directory) or a path."
            )
        hosts = marker_kwargs.get("allowed_hosts", ())
        fields = marker_kwargs.get("match_ignore", ())
        for name, value in (("allowed_hosts", hosts), ("match_ignore", fields)):
            if isinstance(value, str) or not all(isinstance(v, str) for v in value):
                raise CassetteError(
                    f"{where}: {name}={value!r}; expected a list of strings, e.g. {name}=['...']."
                )
        return cls(
            cassette=cassette,
            allow_unused=bool(marker_kwargs.get("allow_unused", settings.allow_unused)),
            mode=mode,
            allowed_hosts=(*settings.allowed_hosts, *hosts),
            ignore_fields=(*settings.ignore_fields, *fields),
            extra={k: v for k, v in marker_kwargs.items() if k not in MARKER_OPTIONS},
        )

    def with_mode(self, mode: RecordMode) -> TestOptions:
        return replace(self, mode=mode)


def cassette_path(
    settings: CassetteSettings,
    *,
    rootpath: Path,
    module_path: Path,
    test_name: str,
    class_name: str | None,
    override: str | None,
    directory: Path | None = None,
) -> Path:
    """Where a test's cassette lives.

    By default ``<dir>/<module path without .py>/<Class.>test_name<ext>``; a marker's
    ``cassette=`` names a shared file relative to ``<dir>`` (or an absolute path).
    ``directory`` (from ``agent_cassette_config``) keeps a folder's cassettes beside its
    tests: ``<directory>/<module name without .py>/<Class.>test_name<ext>``.
    """
    if override:
        path = Path(override)
        if not path.suffix:
            path = path.with_suffix(settings.extension)
        return path if path.is_absolute() else settings.directory / path
    if directory is not None:
        folder = (directory if directory.is_absolute() else rootpath / directory) / (
            module_path.stem
        )
    else:
        try:
            relative = module_path.relative_to(rootpath)
        except ValueError:
            relative = Path(module_path.name)
        folder = settings.directory / relative.with_suffix("")
    name = f"{class_name}.{test_name}" if class_name else test_name
    return folder / f"{_UNSAFE.sub('_', name)}{settings.extension}"


def cassette_config(value: Any, *, where: str) -> dict[str, Any]:
    """Check what an ``agent_cassette_config`` fixture returned; ``directory`` as a Path.

    Unknown keys are refused (a misspelt key would otherwise be ignored without a word).
    """
    if not isinstance(value, Mapping):
        raise CassetteError(
            f"{where}: agent_cassette_config returned {type(value).__name__} {value!r}; "
            f"expected a dict with any of {', '.join(CONFIG_KEYS)}. Fix the fixture's return."
        )
    unknown = sorted(str(key) for key in value if key not in CONFIG_KEYS)
    if unknown:
        raise CassetteError(
            f"{where}: agent_cassette_config has unknown keys {unknown}; the known keys are "
            f"{', '.join(CONFIG_KEYS)}. Fix the spelling in the fixture."
        )
    config = dict(value)
    directory = config.get("directory")
    if directory is not None:
        if not isinstance(directory, (str, Path)) or not str(directory):
            raise CassetteError(
                f"{where}: agent_cassette_config directory={directory!r}; expected a folder "
                "path (str or Path), e.g. Path(__file__).parent / 'cassettes'."
            )
        config["directory"] = Path(directory)
    return config


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


def build_cassette(
    path: Path,
    *,
    settings: CassetteSettings,
    options: TestOptions,
    config: Mapping[str, Any],
    test_id: str,
) -> tuple[Cassette, NetworkGuard | None]:
    """The cassette of test ``test_id`` at ``path`` (not started), and, when it replays,
    the guard that blocks the network but for the allowed hosts.

    ``options`` are the test's marker options, ``config`` what its
    ``agent_cassette_config`` fixture gave (checked by :func:`cassette_config`).
    """
    from .network import NetworkGuard
    from .redact import DEFAULT_SECRET_ENV, Redactor
    from .session import Cassette

    redactor = Redactor(
        env=(*DEFAULT_SECRET_ENV, *settings.secret_env),
        extra_values=tuple(str(v) for v in config.get("redact_values", ())),
    )
    body_hook = config.get("body_hook")
    cassette = Cassette(
        path,
        mode=options.mode,
        test_id=test_id,
        redactor=redactor,
        ignored_fields=(*options.ignore_fields, *config.get("match_ignore", ())),
        body_hook=body_hook if callable(body_hook) else None,
        allow_unused=options.allow_unused,
        shared=options.cassette is not None,
        run_id=settings.run_id,
    )
    guard = (
        NetworkGuard(
            (*options.allowed_hosts, *config.get("allowed_hosts", ())),
            reason=f"replaying {path.name}",
        )
        if cassette.mode is RecordMode.NONE
        else None
    )
    return cassette, guard

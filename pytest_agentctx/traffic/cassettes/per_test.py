"""One test's cassette: its options, its path, and building, checking and saving it.

The options of a test (its ``agent`` marker, :class:`TestOptions`, and what its
``agent_cassette_config`` fixture returns, :func:`cassette_config`) are read and checked
over the session's (:class:`~.options.CassetteSettings`); :func:`cassette_path` says where
its cassette lives, :func:`build_cassette` makes it (with the guard that keeps a replaying
test offline), and :func:`call_failure`, :func:`verify_call` and :func:`save_recordings`
are what the plugin does with it after the test's call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from pytest_agentctx.traffic.cassettes.defaults import RecordMode
from pytest_agentctx.traffic.cassettes.options import (
    CassetteSettings,
    host_problem,
    parse_mode,
)
from pytest_agentctx.traffic.errors import (
    CassetteConfigError,
    CassetteError,
    CassetteFormatError,
    CassetteMiss,
    NetworkBlocked,
    UnscopedRequest,
)

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.matcher import BodyHook
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard
    from pytest_agentctx.traffic.cassettes.session import Cassette
    from pytest_agentctx.traffic.cassettes.vcr_config import RequestFilters
    from pytest_agentctx.traffic.cassettes.vcr_matchers import Matcher

#: The keyword options of ``@pytest.mark.agent(...)``: every option the plugin reads from
#: the marker (each configures the test's cassette). Any other option is refused, and so
#: are positional arguments.
MARKER_OPTIONS = (
    "cassette",
    "allow_unused",
    "record_mode",
    "allowed_hosts",
    "match_ignore",
    "ignore_hosts",
)

#: Keys of the dict the ``agent_cassette_config`` fixture returns; any other is refused.
CONFIG_KEYS = (
    "match_ignore",
    "body_hook",
    "allowed_hosts",
    "redact_values",
    "directory",
    "ignore_hosts",
    "match_on",
)

#: A right value of each marker option and config key, for the error messages.
_EXAMPLES = {
    "cassette": "'weather_shared'",
    "allow_unused": "True",
    "record_mode": "'missing'",
    "allowed_hosts": "['api.example.com', '*.internal.example']",
    "match_ignore": "['metadata.run_id']",
    "body_hook": "without_dates",
    "redact_values": "['tenant-7f3a9c']",
    "directory": "Path(__file__).parent / 'cassettes'",
    "ignore_hosts": "['huggingface.co', 'localhost']",
    "match_on": "['method', 'uri', same_form_fields]",
}

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-\[\]=,+]")


def _a(value: object) -> str:
    """``a str``, ``an int``: the type of ``value`` with its article."""
    name = type(value).__name__
    return f"{'an' if name[:1] in 'aeiou' else 'a'} {name}"


@dataclass(frozen=True)
class _Source:
    """Where an option came from (a test's ``agent`` marker or its ``agent_cassette_config``),
    to word the errors about it."""

    where: str
    marker: bool

    def error(self, key: str, shown: str, problem: str, expected: str) -> CassetteConfigError:
        if self.marker:
            given = f"@pytest.mark.agent({key}={shown})"
            example = f"@pytest.mark.agent({key}={_EXAMPLES[key]})"
            fix = "Fix the marker."
        else:
            given = f"agent_cassette_config {key}={shown}"
            example = f"{{'{key}': {_EXAMPLES[key]}}}"
            fix = "Fix what the agent_cassette_config fixture returns."
        return CassetteConfigError(
            f"{self.where}: {given} {problem}; expected {expected}, e.g. {example}. {fix}"
        )

    def unknown(self, keys: Iterable[object], known: tuple[str, ...]) -> CassetteConfigError:
        import difflib

        names = sorted(str(key) for key in keys)
        close = [m for name in names for m in difflib.get_close_matches(name, known, n=1)]
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        first = close[0] if close else known[0]
        if self.marker:
            return CassetteConfigError(
                f"{self.where}: @pytest.mark.agent has no option {', '.join(map(repr, names))}"
                f"{hint}; its options are {', '.join(known)}, e.g. "
                f"@pytest.mark.agent({first}={_EXAMPLES[first]}). Fix the marker."
            )
        return CassetteConfigError(
            f"{self.where}: agent_cassette_config has unknown keys {names}{hint}; the known keys "
            f"are {', '.join(known)}, e.g. {{'{first}': {_EXAMPLES[first]}}}. Fix the spelling "
            "in the fixture."
        )

    def strings(self, key: str, value: object, *, secret: bool = False) -> tuple[str, ...]:
        """``value`` of option ``key`` as a tuple of strings (``None``: none), or an error
        naming the test, the key, the value (not shown when ``secret``) and a right one."""
        if value is None:
            return ()
        expected = _EXPECTED_STRINGS[key]
        shown = "<not shown>" if secret else repr(value)
        if not isinstance(value, list | tuple):
            size = f" of {len(value)} characters" if secret and isinstance(value, str) else ""
            raise self.error(key, shown, f"is {_a(value)}{size}", expected)
        for item in value:
            problem = _item_problem(key, item, secret=secret)
            if problem:
                raise self.error(key, shown, problem, expected)
        return tuple(value)


#: What each list option holds, for the error messages.
_EXPECTED_STRINGS = {
    "allowed_hosts": "a list or tuple of hosts (names, *.wildcards or addresses, without "
    "scheme, path or port)",
    "match_ignore": "a list or tuple of dotted body paths (non-empty strings)",
    "redact_values": "a list or tuple of the secret strings, each of 8 or more characters",
    "ignore_hosts": "a list or tuple of hosts (names, *.wildcards or addresses, each "
    "optionally followed by a /path prefix; without scheme or port)",
}


def _item_problem(key: str, item: object, *, secret: bool) -> str | None:
    """Why ``item`` cannot be an entry of list option ``key``, or ``None``."""
    from pytest_agentctx.redaction.redactor import MIN_SECRET

    if not isinstance(item, str):
        return f"holds {'a value' if secret else repr(item)}, {_a(item)}"
    if not item.strip():
        return "holds an empty string"
    if secret and len(item) < MIN_SECRET:
        return (
            f"holds a value of {len(item)} characters (not shown); values shorter than "
            f"{MIN_SECRET} characters are never redacted, as they would redact ordinary words"
        )
    if key == "allowed_hosts":
        problem = host_problem(item)
        return f"holds {item!r}, which {problem}" if problem else None
    if key == "ignore_hosts":
        from pytest_agentctx.traffic.ignore import entry_problem

        problem = entry_problem(item)
        return f"holds {item!r}, which {problem}" if problem else None
    return None


def marker_options(
    markers: Iterable[tuple[Sequence[object], Mapping[str, object]]], *, where: str
) -> dict[str, object]:
    """The options of a test's ``agent`` markers from their ``(args, kwargs)``, closest first
    (as ``item.iter_markers`` gives them): the closest marker's value of an option wins.

    Positional arguments are refused with a :class:`CassetteError` naming ``where``: the
    marker's options are named (:data:`MARKER_OPTIONS`).
    """
    merged: dict[str, object] = {}
    for args, kwargs in reversed(list(markers)):
        if args:
            raise CassetteConfigError(
                f"{where}: @pytest.mark.agent({', '.join(map(repr, args))}) has positional "
                f"arguments; the marker takes named options only ({', '.join(MARKER_OPTIONS)}), "
                "e.g. @pytest.mark.agent(cassette='weather_shared'). Name the option in the "
                "marker."
            )
        merged.update(kwargs)
    return merged


@dataclass(frozen=True)
class TestOptions:
    """Per-test options from ``@pytest.mark.agent(...)`` laid over the session settings."""

    __test__ = False  # not a test class, although its name starts with "Test"

    cassette: str | None = None
    allow_unused: bool = False
    mode: RecordMode = RecordMode.NONE
    allowed_hosts: tuple[str, ...] = ()
    ignore_fields: tuple[str, ...] = ()
    #: The marker's own ``ignore_hosts`` (the session's apply at all times, on their own).
    ignore_hosts: tuple[str, ...] = ()

    @classmethod
    def resolve(
        cls, settings: CassetteSettings, marker_kwargs: Mapping[str, object], *, where: str
    ) -> TestOptions:
        """The options of the test ``where`` from its marker's ``marker_kwargs``.

        Every option is checked (also those the command line overrides, so a test is read
        the same way replaying and recording); ``None`` leaves an option unset. An unknown
        option or a value of the wrong type raises :class:`CassetteError` naming the test,
        the option, the value given and a right one (with a "did you mean" for a misspelt
        option).
        """
        source = _Source(where, marker=True)
        unknown = [key for key in marker_kwargs if key not in MARKER_OPTIONS]
        if unknown:
            raise source.unknown(unknown, MARKER_OPTIONS)
        cassette = marker_kwargs.get("cassette")
        if cassette is not None and (not isinstance(cassette, str) or not cassette.strip()):
            problem = "is empty" if isinstance(cassette, str) else f"is {_a(cassette)}"
            expected = "a file name (relative to the cassette directory) or a path"
            raise source.error("cassette", repr(cassette), problem, expected)
        allow_unused = marker_kwargs.get("allow_unused")
        if allow_unused is not None and not isinstance(allow_unused, bool):
            problem = f"is {_a(allow_unused)}"
            raise source.error("allow_unused", repr(allow_unused), problem, "True or False")
        return cls(
            cassette=cassette if isinstance(cassette, str) else None,
            allow_unused=allow_unused if isinstance(allow_unused, bool) else settings.allow_unused,
            mode=_marker_mode(settings, marker_kwargs.get("record_mode"), source),
            allowed_hosts=(
                *settings.allowed_hosts,
                *source.strings("allowed_hosts", marker_kwargs.get("allowed_hosts")),
            ),
            ignore_fields=(
                *settings.ignore_fields,
                *source.strings("match_ignore", marker_kwargs.get("match_ignore")),
            ),
            ignore_hosts=source.strings("ignore_hosts", marker_kwargs.get("ignore_hosts")),
        )

    def with_mode(self, mode: RecordMode) -> TestOptions:
        return replace(self, mode=mode)


def _marker_mode(settings: CassetteSettings, value: object, source: _Source) -> RecordMode:
    """The test's record mode: the command line's, else the marker's ``record_mode``, else
    the session's (the marker's value is checked in every case)."""
    if value is None:
        return settings.mode
    if not isinstance(value, str):
        choices = ", ".join(mode.value for mode in RecordMode)
        raise source.error("record_mode", repr(value), f"is {_a(value)}", f"one of {choices}")
    mode = parse_mode(value, where=source.where)
    return settings.mode if settings.mode_from_command_line else mode


def cassette_path(
    settings: CassetteSettings,
    *,
    rootpath: Path,
    module_path: Path,
    test_name: str,
    class_name: str | None,
    override: str | None,
    directory: Path | None = None,
    redact: Callable[[str], str] | None = None,
    tool_path: Path | None = None,
) -> Path:
    """Where a test's cassette lives.

    By default ``<dir>/<module path without .py>/<Class.>test_name<ext>``, the name made
    by :func:`~pytest_agentctx.redaction.names.file_stem`: the characters other than
    letters, digits and ``_.-[]=,+`` become ``_`` and the secrets ``redact`` replaces
    ``REDACTED``; a name changed so (or longer than 200 characters) ends with ``~`` and
    a digest of the test's name, one file per test. A marker's
    ``cassette=`` names a shared file relative to ``<dir>`` (or an absolute path).
    ``directory`` (from ``agent_cassette_config``) keeps a folder's cassettes beside its
    tests: ``<directory>/<module name without .py>/<Class.>test_name<ext>``.
    ``tool_path``, the path pytest-recording or pytest-vcr gives the test (with
    ``agent_cassette_names``: see :mod:`.vcr_names`), is its path unless a marker's
    ``cassette=`` names one.
    """
    if override:
        path = Path(override)
        if not path.suffix:
            path = path.with_suffix(settings.extension)
        return path if path.is_absolute() else settings.directory / path
    if tool_path is not None:
        return tool_path
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
    from pytest_agentctx.redaction.names import file_stem

    return folder / f"{file_stem(name, _slug, redact=redact)}{settings.extension}"


def _slug(name: str) -> str:
    """``name`` with each character a file name should not hold replaced by ``_``."""
    return _UNSAFE.sub("_", name)


class CassetteConfig(TypedDict, total=False):
    """What an ``agent_cassette_config`` fixture returned, checked (:func:`cassette_config`):
    the keys it gave a value (not ``None``)."""

    match_ignore: tuple[str, ...]
    body_hook: BodyHook | Mapping[str, BodyHook]
    allowed_hosts: tuple[str, ...]
    redact_values: tuple[str, ...]
    directory: Path
    ignore_hosts: tuple[str, ...]
    #: vcrpy's matchers: built-in names and functions (see :mod:`.vcr_matchers`).
    match_on: tuple[str | Matcher, ...]


def cassette_config(
    value: object, *, where: str, matchers: Mapping[str, Matcher] | None = None
) -> CassetteConfig:
    """Check what an ``agent_cassette_config`` fixture returned for the test ``where``.

    Unknown keys are refused (a misspelt key would otherwise be ignored without a word), and
    so is a value of the wrong type: ``match_ignore``, ``allowed_hosts`` and
    ``redact_values`` must be lists or tuples of strings (``redact_values``' of 8 or more
    characters), ``body_hook`` a callable or a mapping of media types and body kinds to
    callables (see :class:`~.matcher.BodyHooks`), ``match_on`` a list or tuple of vcrpy's
    built-in matcher names (or names of ``matchers``, those a suite registered with
    ``vcr.register_matcher``) and matcher functions, ``directory`` a folder path; ``None``
    leaves a key unset. The errors are :class:`CassetteError` naming the test, the key,
    the value given (never a ``redact_values`` value) and a right one. The lists come back
    as tuples and ``directory`` as a :class:`Path`.
    """
    source = _Source(where, marker=False)
    if not isinstance(value, Mapping):
        raise CassetteConfigError(
            f"{where}: agent_cassette_config returned {type(value).__name__} {value!r}; "
            f"expected a dict with any of {', '.join(CONFIG_KEYS)}. Fix the fixture's return."
        )
    unknown = [key for key in value if key not in CONFIG_KEYS]
    if unknown:
        raise source.unknown(unknown, CONFIG_KEYS)
    given = {key: item for key, item in value.items() if item is not None}
    config: CassetteConfig = {}
    if "match_ignore" in given:
        config["match_ignore"] = source.strings("match_ignore", given["match_ignore"])
    if "allowed_hosts" in given:
        config["allowed_hosts"] = source.strings("allowed_hosts", given["allowed_hosts"])
    if "ignore_hosts" in given:
        config["ignore_hosts"] = source.strings("ignore_hosts", given["ignore_hosts"])
    if "redact_values" in given:
        config["redact_values"] = source.strings(
            "redact_values", given["redact_values"], secret=True
        )
    body_hook = given.get("body_hook")
    if body_hook is not None:
        config["body_hook"] = _body_hook(body_hook, source)
    if "match_on" in given:
        config["match_on"] = _match_on(given["match_on"], source, matchers)
    directory = given.get("directory")
    if directory is not None:
        if not isinstance(directory, str | Path) or not str(directory):
            problem = "is empty" if isinstance(directory, str) else f"is {_a(directory)}"
            raise source.error("directory", repr(directory), problem, "a folder path (str or Path)")
        config["directory"] = Path(directory)
    return config


_HOOK_EXPECTED = (
    "a function that takes a JSON request body and returns a normalised copy (or None), or "
    "a dict of media types ('multipart/form-data', 'text/*', '*/*') or body kinds (json, "
    "form, multipart, text, bytes) to such functions"
)


def _body_hook(value: object, source: _Source) -> BodyHook | Mapping[str, BodyHook]:
    """A checked ``body_hook``: a callable, or a mapping of names to callables."""
    from pytest_agentctx.traffic.cassettes.bodykinds import BODY_KINDS

    if callable(value) and not isinstance(value, Mapping):
        return value
    if not isinstance(value, Mapping):
        raise source.error(
            "body_hook", repr(value), f"is {_a(value)}, not callable", _HOOK_EXPECTED
        )
    for name, hook in value.items():
        lowered = str(name).strip().lower() if isinstance(name, str) else ""
        if not lowered or ("/" not in lowered and lowered not in BODY_KINDS):
            raise source.error(
                "body_hook",
                repr(value),
                f"has the key {name!r}, which is neither a media type nor a body kind",
                _HOOK_EXPECTED,
            )
        if not callable(hook):
            raise source.error(
                "body_hook",
                repr(value),
                f"maps {name!r} to {_a(hook)}, not callable",
                _HOOK_EXPECTED,
            )
    return dict(value)


_MATCH_ON_EXPECTED = (
    "a list or tuple of vcrpy's matcher names (method, uri, scheme, host, port, path, "
    "query, headers, body, raw_body) and matcher functions f(r1, r2)"
)


def _match_on(
    value: object, source: _Source, matchers: Mapping[str, Matcher] | None
) -> tuple[str | Matcher, ...]:
    """A checked ``match_on``: its names are vcrpy's built-in ones or in ``matchers``."""
    from pytest_agentctx.traffic.cassettes.vcr_matchers import BUILTIN, unknown_name

    if not isinstance(value, list | tuple):
        raise source.error("match_on", repr(value), f"is {_a(value)}", _MATCH_ON_EXPECTED)
    for item in value:
        if isinstance(item, str):
            if item not in BUILTIN and item not in (matchers or {}):
                raise CassetteConfigError(unknown_name(item, matchers, where=source.where))
        elif not callable(item):
            raise source.error(
                "match_on", repr(value), f"holds {item!r}, {_a(item)}", _MATCH_ON_EXPECTED
            )
    return tuple(value)


def build_cassette(
    path: Path,
    *,
    settings: CassetteSettings,
    options: TestOptions,
    config: CassetteConfig,
    test_id: str,
    filters: RequestFilters | None = None,
    matchers: Mapping[str, Matcher] | None = None,
) -> tuple[Cassette, NetworkGuard | None]:
    """The cassette of test ``test_id`` at ``path`` (not started), and, when it replays,
    the guard that blocks the network but for the allowed hosts.

    ``options`` are the test's marker options, ``config`` what its
    ``agent_cassette_config`` fixture gave (checked by :func:`cassette_config`), ``filters``
    the request filters of its ``vcr_config`` (see :meth:`~.redact.Redactor.use_filters`),
    ``matchers`` the matchers a suite registered with ``vcr.register_matcher``, by name,
    for the names of ``match_on`` that are not vcrpy's built-in ones.
    """
    from pytest_agentctx.redaction.redactor import DEFAULT_SECRET_ENV
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard
    from pytest_agentctx.traffic.cassettes.redact import Redactor
    from pytest_agentctx.traffic.cassettes.session import Cassette

    redactor = Redactor(
        env=(*DEFAULT_SECRET_ENV, *settings.secret_env),
        extra_values=config.get("redact_values", ()),
    )
    if filters:
        redactor.use_filters(filters)
    match_on = config.get("match_on")
    if match_on is not None:
        from pytest_agentctx.traffic.cassettes.vcr_matchers import resolve

        resolved = resolve(match_on, matchers, where=test_id)
    cassette = Cassette(
        path,
        mode=options.mode,
        test_id=test_id,
        redactor=redactor,
        ignored_fields=(*options.ignore_fields, *config.get("match_ignore", ())),
        body_hook=config.get("body_hook"),
        allow_unused=options.allow_unused,
        shared=options.cassette is not None,
        run_id=settings.run_id,
        verbosity=settings.verbosity,
        style=settings.style,
        match_on=resolved if match_on is not None else None,
        migration_until=settings.migration_until,
        migrating=settings.migrating,
        day=settings.day,
    )
    guard = (
        NetworkGuard(
            (*options.allowed_hosts, *config.get("allowed_hosts", ())),
            reason=f"replaying {path.name}",
        )
        if cassette.replays_only
        else None
    )
    return cassette, guard


def call_failure(
    cassette: Cassette | None, guard: NetworkGuard | None, redact: Callable[[str], str]
) -> CassetteMiss | CassetteFormatError | NetworkBlocked | UnscopedRequest | None:
    """Why a test's call failed, when its traffic explains it: a request no concurrent run
    owned (:class:`UnscopedRequest`), else a replayed response its client could not read
    (:class:`CassetteFormatError`), else one its cassette had no recording for
    (:class:`CassetteMiss`, the first miss), else a connection its guard refused
    (:class:`NetworkBlocked`); ``redact`` scrubs the message of the test's secrets."""
    if cassette is not None and cassette.refused:
        return UnscopedRequest(redact(str(cassette.refused[0])))
    if cassette is not None and cassette.unreadable:
        return cassette.unreadable[0]
    if cassette is not None and cassette.misses:
        return CassetteMiss(redact(cassette.miss_message(cassette.misses[0])))
    if guard is not None and guard.blocked:
        return NetworkBlocked(redact(guard.message(guard.blocked[0])))
    return None


def verify_call(cassette: Cassette | None, guard: NetworkGuard | None) -> None:
    """After a test's call passed: finish the streams the agent stopped reading (while its
    client is open), then fail on a request no concurrent run owned or the cassette missed,
    a connection the guard refused, and recordings left unused (the misses and unused
    recordings only counted while ``agent_migration_until``'s period runs: see
    :meth:`~.session.Cassette.check`)."""
    __tracebackhide__ = True  # the messages say it all: pytest shows no frame of this
    if cassette is not None:
        cassette.finish_streams()
    if cassette is not None and (cassette.misses or cassette.refused):
        cassette.check()
    if guard is not None:
        guard.verify()
    if cassette is not None:
        cassette.check()


def save_recordings(
    cassette: Cassette, settings: CassetteSettings, *, call_passed: bool | None
) -> tuple[bool, CassetteError | None]:
    """Save what ``cassette`` recorded when the test's call phase passed (``call_passed``;
    None when it did not run), or failed under ``--agent-record-failing``. Gives whether it
    was saved, and the error that kept it from being saved (a read-only or full disk: the
    old cassette is kept)."""
    if not cassette.records or call_passed is None or settings.live:
        return False, None
    if not (call_passed or settings.record_failing):
        return False, None
    try:
        return cassette.save(settings.run_id), None
    except CassetteError as exc:
        return False, exc

"""What pytest-recording and pytest-vcr leave in a project once they are uninstalled or
disabled (``-p no:recording``), accepted instead of breaking the run:

* their options in the command line or ``addopts`` (``--record-mode``, ``--block-network``,
  ``--allowed-hosts``, ``--disable-recording``; ``--vcr-record``, ``--disable-vcr``) are
  taken out before pytest parses them and mapped to this package's (``--record-mode=once``
  to ``--agent-record=missing``...), each with a line at the end of the output saying what
  it became (a line, not a warning: suites run with ``filterwarnings = error``)
  (:func:`pytest_load_initial_conftests`, :func:`rewrite_leftovers`);
* a ``pytest_recording_configure(config, vcr)`` hook in a ``conftest.py`` gets its hookspec
  (else pytest stops on an unknown hook) and is called once, with a :class:`VcrShim` whose
  ``register_matcher`` keeps the matchers ``vcr_config``'s ``match_on`` may name
  (:func:`configure`).

While a tool is loaded it owns its options and hook, and none of this applies to it. The
tool's cassette names are another feature (``agent_cassette_names``, in ``cassettes``);
under them, the tool being loaded too is a usage error: both would answer the same tests.

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .keys import CASSETTE_SETTINGS_KEY, VCR_LEFTOVERS_KEY, VCR_MATCHERS_KEY

#: pytest-recording's options, and whether each takes a value.
RECORDING_OPTIONS = {
    "--record-mode": True,
    "--block-network": False,
    "--allowed-hosts": True,
    "--disable-recording": False,
}
#: pytest-vcr's options, and whether each takes a value.
VCR_OPTIONS = {"--vcr-record": True, "--vcr-record-mode": True, "--disable-vcr": False}


class Leftovers:
    """What the tools' options became: the lines printed at the end, and the hosts
    ``--allowed-hosts`` allows (added to ``agent_allowed_hosts``). A plain class: made at
    start-up."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.allowed_hosts: tuple[str, ...] = ()


def _loaded(config: pytest.Config) -> tuple[bool, bool]:
    """Whether pytest-recording and pytest-vcr are loaded (not uninstalled nor blocked)."""
    manager = config.pluginmanager
    return manager.has_plugin("recording"), manager.has_plugin("vcr")


def pytest_load_initial_conftests(early_config: pytest.Config, args: list[str]) -> None:
    """Take the options of the tools that are not loaded out of ``args`` (the command line
    with ``addopts``), mapped to this package's (:func:`rewrite_leftovers`)."""
    recording, vcr = _loaded(early_config)
    known = {**({} if recording else RECORDING_OPTIONS), **({} if vcr else VCR_OPTIONS)}
    if not any(arg.split("=", 1)[0] in known for arg in args):
        return
    try:
        early_config.stash[VCR_LEFTOVERS_KEY] = rewrite_leftovers(args, known)
    except ValueError as exc:
        raise pytest.UsageError(str(exc)) from None


def rewrite_leftovers(args: list[str], known: dict[str, bool]) -> Leftovers:
    """Take the options of ``known`` (name -> takes a value) out of ``args`` (in place),
    adding what each maps to; raises :class:`ValueError` for a value that maps to nothing."""
    from pytest_agentctx.traffic.cassettes.defaults import RecordMode
    from pytest_agentctx.traffic.cassettes.vcr_config import VCR_RECORD_MODES, regex_host

    leftovers = Leftovers()
    kept: list[str] = []
    found: list[tuple[str, str | None]] = []
    position = 0
    while position < len(args):
        arg = args[position]
        name, equals, value = arg.partition("=")
        if name not in known or arg == "--":
            kept.append(arg)
            position += 1
            if arg == "--":
                kept.extend(args[position:])
                break
            continue
        if known[name] and not equals and position + 1 < len(args):
            position += 1
            value = args[position]
        found.append((name, value if known[name] else None))
        position += 1
    agent_record = any(arg.startswith("--agent-record") and "failing" not in arg for arg in kept)
    for name, given in found:
        tool = "pytest-vcr" if name in VCR_OPTIONS else "pytest-recording"
        value = "" if given is None else given
        said = f"{name}={given}" if given is not None else name
        head = f"agentctx: {said} ({tool}'s, which is not loaded) is deprecated:"
        if name in ("--record-mode", "--vcr-record", "--vcr-record-mode"):
            mode = VCR_RECORD_MODES.get(str(value).strip().lower())
            if mode is None:
                raise ValueError(
                    f"{said}: expected one of {', '.join(VCR_RECORD_MODES)} (vcrpy's record "
                    f"modes); better, use --agent-record=MODE (rewrite, missing, new) and "
                    f"remove {name} from the command line or addopts."
                )
            if mode is RecordMode.NONE:
                leftovers.lines.append(f"{head} replaying is the default; remove it.")
            elif agent_record:
                leftovers.lines.append(f"{head} ignored, --agent-record is given; remove it.")
            else:
                kept.append(f"--agent-record={mode.value}")
                agent_record = True
                leftovers.lines.append(
                    f"{head} read as --agent-record={mode.value}; use that instead."
                )
        elif name == "--block-network":
            leftovers.lines.append(
                f"{head} agent tests never reach the network while they replay; remove it."
            )
        elif name == "--allowed-hosts":
            hosts = [regex_host(pattern) for pattern in str(value).split(",") if pattern]
            if None in hosts:
                raise ValueError(
                    f"{said}: a regex that names no single host or domain; list the hosts in "
                    "the ini option agent_allowed_hosts (names, *.wildcards, addresses) and "
                    "remove --allowed-hosts from the command line or addopts."
                )
            leftovers.allowed_hosts += tuple(host for host in hosts if host)
            leftovers.lines.append(
                f"{head} read as agent_allowed_hosts = {' '.join(leftovers.allowed_hosts)}; "
                "put them in that ini option instead."
            )
        else:  # --disable-recording, --disable-vcr
            kept.append("--agent-live")
            leftovers.lines.append(
                f"{head} read as --agent-live (agent tests reach the network, no cassette "
                "is read or written); use that instead."
            )
    args[:] = kept
    return leftovers


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What the tools' options left in the command line or ``addopts`` became (at the end
    of the output, where ``-q`` shows it too)."""
    leftovers = terminalreporter.config.stash.get(VCR_LEFTOVERS_KEY, None)
    if leftovers is None or hasattr(terminalreporter.config, "workerinput"):
        return
    for line in leftovers.lines:
        terminalreporter.write_line(line)


class _RecordingSpec:
    """pytest-recording's hookspec, added when it is not loaded."""

    @pytest.hookspec
    def pytest_recording_configure(self, config: pytest.Config, vcr: object) -> None:
        """Register vcrpy matchers (``vcr.register_matcher``) for ``vcr_config``'s
        ``match_on``."""


def configure(config: pytest.Config) -> None:
    """Under pytest-recording's or pytest-vcr's names, refuse the tool being loaded too;
    without pytest-recording, accept and call a ``pytest_recording_configure`` hook."""
    recording, vcr = _loaded(config)
    settings = config.stash.get(CASSETTE_SETTINGS_KEY, None)
    if settings is not None and settings.vcr_names and (recording or vcr):
        tool, block = ("pytest-recording", "recording") if recording else ("pytest-vcr", "vcr")
        raise pytest.UsageError(
            f"agent_cassette_names = {settings.names}, and {tool} is loaded too: both would "
            f"record and replay the tests marked vcr. Add -p no:{block} to addopts in your "
            f"pytest ini file (or uninstall {tool})."
        )
    if recording:
        return
    manager = config.pluginmanager
    caller = getattr(manager.hook, "pytest_recording_configure", None)
    if caller is None or caller.spec is None:  # a plugin loaded later adds its own then
        manager.add_hookspecs(_RecordingSpec)
        caller = manager.hook.pytest_recording_configure
    if caller.get_hookimpls():
        matchers = config.stash.setdefault(VCR_MATCHERS_KEY, {})
        caller(config=config, vcr=VcrShim(matchers))


class VcrShim:
    """What a ``pytest_recording_configure`` hook gets for ``vcr`` when pytest-recording is
    not loaded: ``register_matcher`` keeps the matcher for ``vcr_config``'s ``match_on``;
    any other use stops the session, saying what to do instead."""

    def __init__(self, matchers: dict[str, Callable[..., object]]) -> None:
        self._matchers = matchers

    def register_matcher(self, name: str, matcher: Callable[..., object]) -> None:
        if not isinstance(name, str) or not callable(matcher):
            raise pytest.UsageError(
                f"pytest_recording_configure: vcr.register_matcher({name!r}, {matcher!r}); "
                "expected a name and a function (request, recorded) -> bool, e.g. "
                "vcr.register_matcher('body_fields', match_body_fields). Fix the call in "
                "conftest.py."
            )
        self._matchers[name] = matcher

    def __getattr__(self, name: str) -> Callable[..., object]:
        if name.startswith("__"):
            raise AttributeError(name)
        instead = {
            "register_serializer": "pytest-agentctx reads and writes vcrpy's YAML itself "
            "(agent_cassette_format = vcr writes it)",
            "register_persister": "pytest-agentctx reads and writes the cassette files itself",
        }.get(name, "pytest-agentctx takes the vcrpy options it honours from vcr_config")
        raise pytest.UsageError(
            f"pytest_recording_configure uses vcr.{name}, which pytest-agentctx does not "
            f"offer (pytest-recording is not loaded; only vcr.register_matcher is): "
            f"{instead}. Remove that line from the hook in conftest.py."
        )

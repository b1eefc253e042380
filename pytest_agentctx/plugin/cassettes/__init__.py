"""The hooks and fixtures of cassettes: each agent test's traffic recorded or replayed, and
the network guard.

At configure time the session's cassette settings (:func:`cassette_settings`) and secrets
are read (:func:`configure`). The autouse ``_agentctx_cassette`` fixture gives an agent test
its cassette (and, when it replays, a guard that keeps it offline), captures its runs from
the cassette, and saves what it recorded once the test passed; ``agent_cassette`` and
``agent_cassette_config`` are the fixtures tests see. After the call, a failure the traffic
explains is named, and a passing test is checked for misses, refused connections and unused
recordings (:func:`pytest_runtest_call`). What runs an agent test's cassette is in the private
``_run`` module, imported for the session's first agent test; the logic is the traffic
layer's (:mod:`pytest_agentctx.traffic.cassettes.per_test`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Generator, Iterator
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.traffic.cassettes.options import CassetteSettings, is_agent_test
from pytest_agentctx.traffic.errors import CassetteConfigError, CassetteError

from .. import capture
from ..keys import (
    CASSETTE_KEY,
    CASSETTE_SETTINGS_KEY,
    GUARD_KEY,
    READ_CACHE_KEY,
    SECRETS_KEY,
    VCR_LEFTOVERS_KEY,
    session_day,
)

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes import Cassette
    from pytest_agentctx.traffic.ignore import IgnoreRule


def configure(config: pytest.Config) -> None:
    """The session's cassette settings, and its secrets: the active redactor between tests
    (the one active before, an outer session's, is kept to restore)."""
    try:
        config.stash[CASSETTE_SETTINGS_KEY] = cassette_settings(config)
    except CassetteError as exc:
        raise pytest.UsageError(str(exc)) from None
    from pytest_agentctx.redaction.active import SessionSecrets, set_active

    secrets = SessionSecrets(config.stash[CASSETTE_SETTINGS_KEY].secret_env)
    config.stash[SECRETS_KEY] = secrets
    secrets.outer = set_active(secrets)  # the redactor is made when first asked for
    config.pluginmanager.register(LateRequests(config), "agentctx-late-requests")
    ignored = IgnoredRequests(config)
    ignore_hosts = config.stash[CASSETTE_SETTINGS_KEY].ignore_hosts
    # a session inside another (pytester) has its own, none included: the outer's are put
    # back when it ends (a plain session without any loads nothing for them)
    if ignore_hosts or "pytest_agentctx.traffic.ignore" in sys.modules:
        from pytest_agentctx.traffic import ignore

        ignored.outer = ignore.use_session(ignore_hosts)
    config.pluginmanager.register(ignored, "agentctx-ignored-requests")


def cassette_settings(config: pytest.Config) -> CassetteSettings:
    """The cassette settings of a pytest session: its ``--agent-*`` options over its ini
    options (:meth:`CassetteSettings.build`).

    The run id is the xdist run's (the same on every worker) or a new one. Raises
    :class:`CassetteError` for a bad value (:func:`configure` makes it a usage error).
    """
    workerinput = getattr(config, "workerinput", None)
    run_id = str(workerinput["testrunuid"]) if workerinput else os.urandom(16).hex()
    return CassetteSettings.build(
        rootpath=config.rootpath,
        directory=config.getoption("agent_cassette_dir")
        or str(config.getini("agent_cassette_dir")),
        cli_mode=config.getoption("agent_record"),
        ini_mode=str(config.getini("agent_record_mode")),
        all_tests=_ini_bool(config, "agent_all_tests"),
        allow_unused=_ini_bool(config, "agent_allow_unused"),
        allowed_hosts=[
            *(str(h) for h in config.getini("agent_allowed_hosts")),
            *_leftover_hosts(config),
        ],
        ignore_fields=[str(f) for f in config.getini("agent_match_ignore")],
        cassette_format=str(config.getini("agent_cassette_format")),
        secret_env=[str(e) for e in config.getini("agent_secret_env")],
        record_failing=bool(config.getoption("agent_record_failing")),
        run_id=run_id,
        verbosity=config.get_verbosity(),
        live=bool(config.getoption("agent_live", False)),
        placeholder_keys=_ini_bool(config, "agent_placeholder_keys"),
        names=str(config.getini("agent_cassette_names")),
        ignore_hosts=[str(h) for h in config.getini("agent_ignore_hosts")],
        migration_until=str(config.getini("agent_migration_until")),
        day=session_day(config).isoformat(),
    )


def _leftover_hosts(config: pytest.Config) -> tuple[str, ...]:
    """The hosts a leftover ``--allowed-hosts`` of pytest-recording allows (see
    :mod:`..vcr_compat`)."""
    leftovers = config.stash.get(VCR_LEFTOVERS_KEY, None)
    return () if leftovers is None else leftovers.allowed_hosts


def agent_marked(item: pytest.Item, settings: CassetteSettings) -> bool:
    """Whether ``item`` is marked an agent test: ``agent``, or, with pytest-recording's or
    pytest-vcr's names (``agent_cassette_names``), ``vcr``."""
    if item.get_closest_marker("agent") is not None:
        return True
    return settings.vcr_names and item.get_closest_marker("vcr") is not None


def _ini_bool(config: pytest.Config, name: str) -> bool:
    """A ``bool`` ini option, or a :class:`CassetteError` naming it (pytest's own error
    says only ``invalid truth value``)."""
    try:
        return bool(config.getini(name))
    except (ValueError, pytest.UsageError) as exc:
        raise CassetteConfigError(
            f"{name}: {exc}; expected true or false, e.g. {name} = true. Fix it in your "
            "pytest ini file."
        ) from None


#: xdist workeroutput key: the messages of the late requests a worker refused.
LATE_OUTPUT = "agentctx_late_requests"


def take_late(test_id: str | None = None) -> list[str]:
    """The messages of the late requests refused since last asked (see
    :func:`pytest_agentctx.traffic.scopes.take_late`): all, or those of test ``test_id``.
    A session whose tests never intercepted a request never loads the scopes."""
    scopes = sys.modules.get("pytest_agentctx.traffic.scopes")
    if scopes is None:
        return []
    return [str(late.error) for late in scopes.take_late(test_id)]


def release_leftovers() -> None:
    """When the session ends: the threads its tests left running are forgotten and the
    transport's patches taken off (see
    :func:`pytest_agentctx.traffic.transport.release_leftovers`), so a session run inside
    another (pytester) leaves the outer one as it was."""
    transport = sys.modules.get("pytest_agentctx.traffic.transport")
    if transport is not None:
        transport.release_leftovers()


class LateRequests:
    """The requests refused because the test whose work (a task, a thread) made them had
    ended: reported on that test while its teardown can still fail (see
    :mod:`..reports`), else when the session ends, where they fail the session (its exit
    status is not 0) with a section naming each one. An xdist worker hands its own to the
    controller."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.messages: list[str] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        self.messages.extend(str(message) for message in output.get(LATE_OUTPUT, ()))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.messages.extend(take_late())
        release_leftovers()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[LATE_OUTPUT] = list(self.messages)
        elif self.messages and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.messages or hasattr(self.config, "workerinput"):
            return
        terminalreporter.section("agentctx: late requests refused", red=True, bold=True)
        for message in self.messages:
            terminalreporter.write_line(message)
        terminalreporter.write_line(
            f"{len(self.messages)} late request(s) refused: the session fails for them."
        )


#: The title of the section listing the ignored requests not sent.
IGNORED_SECTION = "agentctx: ignored requests not sent"
#: xdist workeroutput key: the ignored requests a worker did not send between tests.
IGNORED_OUTPUT = "agentctx_ignored_requests"


def list_not_sent(item: pytest.Item, report: pytest.TestReport) -> None:
    """The ignored requests the test ``item`` did not send, in a section of its teardown
    ``report`` (which :class:`IgnoredRequests` lists at the end of the session)."""
    not_sent = take_not_sent(item.nodeid)
    if not_sent:
        report.sections.append((IGNORED_SECTION, "\n".join(not_sent)))


def take_not_sent(test_id: str | None = None) -> list[str]:
    """The ignored requests not sent since last asked (see
    :func:`pytest_agentctx.traffic.ignore.take_not_sent`): all, or those of test ``test_id``."""
    ignore = sys.modules.get("pytest_agentctx.traffic.ignore")
    if ignore is None:
        return []
    return [entry.text for entry in ignore.take_not_sent(test_id)]


class IgnoredRequests:
    """The ignored requests (``agent_ignore_hosts``, ``ignore_hosts``) the client got a
    connection error for, as the network was blocked: they fail nothing, but are listed in
    a section of their test's report (:func:`list_not_sent`), and at the end of the session
    (each with ``-v``, a count without), with those made between tests."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        #: (test id or "", the requests), as the reports gave them.
        self.listed: list[tuple[str, str]] = []
        #: The session rules of an outer session, put back when this one ends.
        self.outer: tuple[IgnoreRule, ...] | None = None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == "teardown":
            self.listed += [
                (report.nodeid, text) for title, text in report.sections if title == IGNORED_SECTION
            ]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: object, error: object) -> None:
        output = getattr(node, "workeroutput", {}) or {}
        self.listed += [("", str(text)) for text in output.get(IGNORED_OUTPUT, ())]

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        between = take_not_sent()
        workeroutput = getattr(self.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[IGNORED_OUTPUT] = between
        else:
            self.listed += [("", text) for text in between]

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if not self.listed or hasattr(self.config, "workerinput"):
            return
        count = sum(len(text.splitlines()) for _, text in self.listed)
        terminalreporter.section(IGNORED_SECTION)
        if self.config.get_verbosity() >= 1:
            for test_id, text in self.listed:
                for line in text.splitlines():
                    terminalreporter.write_line(f"{test_id or 'between tests'}: {line}")
        terminalreporter.write_line(
            f"{count} ignored request(s) not sent: the network was blocked (a test replayed or "
            "used fake_llm) and their hosts are not allowed; the client got its connection "
            "error and no test failed for it."
            + ("" if self.config.get_verbosity() >= 1 else " pytest -v lists them.")
        )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self.outer is not None:
            from pytest_agentctx.traffic import ignore

            ignore.restore_session(self.outer)


def pytest_unconfigure(config: pytest.Config) -> None:
    """The redactor active before this session (an outer session's) is active again. The
    run's cassette markers are removed (by the xdist controller once its workers ended)."""
    secrets = config.stash.get(SECRETS_KEY, None)
    if secrets is not None:
        from pytest_agentctx.redaction.active import set_active

        set_active(secrets.outer)
    if READ_CACHE_KEY in config.stash:  # an agent test set the read cache's folder up
        from pytest_agentctx.traffic.cassettes.readcache import use_folder

        use_folder(*config.stash[READ_CACHE_KEY])  # an outer session's, or none
    settings = config.stash.get(CASSETTE_SETTINGS_KEY, None)
    cassettes_used = any(
        f"pytest_agentctx.traffic.cassettes.{name}" in sys.modules for name in ("store", "runs")
    )
    if (
        settings is not None
        and not hasattr(config, "workerinput")
        and (cassettes_used or config.pluginmanager.has_plugin("dsession"))
    ):
        from pytest_agentctx.traffic.cassettes.runs import end_runs

        end_runs(settings.run_id)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """A failed call the test's traffic explains raises :class:`CassetteMiss` or
    :class:`NetworkBlocked`; a passed one is verified (:func:`verify_call`).

    The error the agent got (the SDK's, for the error response of a miss) is shown as its
    cause with ``-vv`` only: the message says what happened, and the SDK's frames would
    bury it."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    try:
        result = yield
    except BaseException as exc:
        cassette, guard = item.stash.get(CASSETTE_KEY, None), item.stash.get(GUARD_KEY, None)
        if cassette is not None or guard is not None:  # else the traffic explains nothing
            from pytest_agentctx.traffic.cassettes.per_test import call_failure

            error = call_failure(cassette, guard, lambda text: capture.redacted(item, text))
            if error is not None:
                raise error from (exc if item.config.get_verbosity() >= 2 else None)
        raise
    cassette, guard = item.stash.get(CASSETTE_KEY, None), item.stash.get(GUARD_KEY, None)
    if cassette is not None or guard is not None:  # else there is nothing to verify
        from pytest_agentctx.traffic.cassettes.per_test import verify_call

        verify_call(cassette, guard)
    return result


@pytest.fixture(autouse=True)
def _agentctx_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette | None]:
    item = request.node
    settings = request.config.stash[CASSETTE_SETTINGS_KEY]
    fixtures = getattr(item, "fixturenames", ())
    if not isinstance(item, pytest.Item) or not is_agent_test(
        fixtures, marked=agent_marked(item, settings), settings=settings
    ):
        if (
            isinstance(item, pytest.Item)
            and "fake_llm" not in fixtures
            and item.get_closest_marker("agent_budget") is not None
        ):
            capture.redactor_for(request)
            for _ in capture.record_traffic(item):
                yield None
            return
        yield None
        return
    from ._run import run_cassette

    yield from run_cassette(request, item, settings)


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """Override to configure this package's cassettes for a folder or module, like
    pytest-recording's ``vcr_config``: ``match_ignore`` (dotted body paths),
    ``body_hook`` (a function normalising JSON request bodies before matching, or a dict
    of them by media type or body kind), ``match_on`` (vcrpy's matcher names and
    functions, replacing the package's matching), ``allowed_hosts``, ``redact_values``
    (more literal secrets), ``directory`` (a folder for these tests' cassettes, e.g.
    one beside them) and ``ignore_hosts`` (hosts and ``host/path`` prefixes whose requests
    are never recorded nor replayed)."""
    return {}


@pytest.fixture
def agent_cassette(_agentctx_cassette: Cassette | None) -> Cassette:
    """The test's cassette: its path, mode and interactions, recorded or replayed."""
    if _agentctx_cassette is None:
        raise CassetteConfigError(
            "agent_cassette is not available in a test that uses fake_llm: the fake model "
            "answers its requests, so it has no cassette. Remove one of the two fixtures."
        )
    return _agentctx_cassette

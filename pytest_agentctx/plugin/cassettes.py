"""Cassettes: each agent test's traffic recorded or replayed, and the network guard.

At configure time the session's cassette settings and secrets are read
(:func:`pytest_configure`). The autouse ``_agentctx_cassette`` fixture gives an agent test
its cassette (and, when it replays, a guard that keeps it offline), captures its runs from
the cassette, and saves what it recorded once the test passed; ``agent_cassette`` and
``agent_cassette_config`` are the fixtures tests see. After the call, a failure the traffic
explains is named, and a passing test is checked for misses, refused connections and unused
recordings (:func:`pytest_runtest_call`). The logic is the traffic layer's
(:mod:`pytest_agentctx.traffic.cassettes.settings`).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_agentctx.traffic.cassettes.options import CassetteSettings, is_agent_test
from pytest_agentctx.traffic.errors import CassetteConfigError, CassetteError

from . import capture
from .keys import (
    CASSETTE_ENTRY_KEY,
    CASSETTE_KEY,
    CASSETTE_SETTINGS_KEY,
    GUARD_KEY,
    REPEAT_INDEX_KEY,
    REPORT_KEY,
    SECRETS_KEY,
    STALE_KEY,
)

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard


def pytest_configure(config: pytest.Config) -> None:
    """The session's cassette settings, and its secrets: the active redactor between tests
    (the one active before, an outer session's, is kept to restore)."""
    try:
        config.stash[CASSETTE_SETTINGS_KEY] = CassetteSettings.from_config(config)
    except CassetteError as exc:
        raise pytest.UsageError(str(exc)) from None
    from pytest_agentctx.redaction.active import SessionSecrets, set_active

    secrets = SessionSecrets(config.stash[CASSETTE_SETTINGS_KEY].secret_env)
    config.stash[SECRETS_KEY] = secrets
    secrets.outer = set_active(secrets)  # the redactor is made when first asked for


def pytest_unconfigure(config: pytest.Config) -> None:
    """The redactor active before this session (an outer session's) is active again. The
    run's cassette markers are removed (by the xdist controller once its workers ended)."""
    secrets = config.stash.get(SECRETS_KEY, None)
    if secrets is not None:
        from pytest_agentctx.redaction.active import set_active

        set_active(secrets.outer)
    settings = config.stash.get(CASSETTE_SETTINGS_KEY, None)
    cassettes_used = "pytest_agentctx.traffic.cassettes.store" in sys.modules
    if (
        settings is not None
        and not hasattr(config, "workerinput")
        and (cassettes_used or config.pluginmanager.has_plugin("dsession"))
    ):
        from pytest_agentctx.traffic.cassettes.store import end_runs

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
            from pytest_agentctx.traffic.cassettes.settings import call_failure

            error = call_failure(cassette, guard, lambda text: capture.redacted(item, text))
            if error is not None:
                raise error from (exc if item.config.get_verbosity() >= 2 else None)
        raise
    cassette, guard = item.stash.get(CASSETTE_KEY, None), item.stash.get(GUARD_KEY, None)
    if cassette is not None or guard is not None:  # else there is nothing to verify
        from pytest_agentctx.traffic.cassettes.settings import verify_call

        verify_call(cassette, guard)
    return result


@pytest.fixture
def agent_cassette_config() -> dict[str, object]:
    """Override to configure this package's cassettes for a folder or module, like
    pytest-recording's ``vcr_config``: ``match_ignore`` (dotted body paths),
    ``body_hook`` (a function normalising request bodies before matching),
    ``allowed_hosts``, ``redact_values`` (more literal secrets) and ``directory`` (a
    folder for these tests' cassettes, e.g. one beside them)."""
    return {}


@pytest.fixture(autouse=True)
def _agentctx_cassette(request: pytest.FixtureRequest) -> Iterator[Cassette | None]:
    item = request.node
    settings = request.config.stash[CASSETTE_SETTINGS_KEY]
    fixtures = getattr(item, "fixturenames", ())
    if not isinstance(item, pytest.Item) or not is_agent_test(
        fixtures, marked=item.get_closest_marker("agent") is not None, settings=settings
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
    from pytest_agentctx.traffic.cassettes.settings import (
        TestOptions,
        build_cassette,
        cassette_config,
        cassette_path,
        marker_options,
    )

    try:  # a bad marker option or config value is an error of this test, naming it
        marks = [(marker.args, marker.kwargs) for marker in item.iter_markers("agent")]
        options = TestOptions.resolve(
            settings, marker_options(marks, where=item.nodeid), where=item.nodeid
        )
        config = cassette_config(
            request.getfixturevalue("agent_cassette_config"), where=item.nodeid
        )
    except CassetteError as exc:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"{type(exc).__name__}: {exc}", pytrace=False) from None
    cls = getattr(item, "cls", None)
    path = cassette_path(
        settings,
        rootpath=request.config.rootpath,
        module_path=Path(str(item.path)),
        test_name=item.name,
        class_name=cls.__name__ if cls is not None else None,
        override=options.cassette,
        directory=config.get("directory"),
    )
    repetition = item.stash.get(REPEAT_INDEX_KEY, None)
    if repetition is not None:  # agent_repeat: one cassette per repetition
        from .repetition import repeat_cassette_path

        path = repeat_cassette_path(path, repetition)
    # The cassette's redactor is the test's: it also knows what earlier tests learned.
    secrets = request.config.stash[SECRETS_KEY]
    own_secrets = config.get("redact_values", ())
    cassette, guard = build_cassette(
        path,
        settings=settings,
        options=options,
        config={**config, "redact_values": (*own_secrets, *secrets.learned)},
        test_id=item.nodeid,
    )
    capture.use_redactor(item, cassette.redactor)
    item.stash[CASSETTE_KEY] = cassette
    item.stash[GUARD_KEY] = guard
    capture.capture_runs(item, lambda: cassette.seen_log)
    with contextlib.ExitStack() as keys:
        if cassette.replays_only:
            # No request reaches a provider and nothing is written: unset provider keys get
            # placeholders, so a CI job without keys builds the SDKs' clients.
            from pytest_agentctx.doubles.fake_llm import placeholder_keys

            keys.enter_context(placeholder_keys())
            # Nor is a TLS connection opened: the clients the test builds load their
            # certificates only if a request of theirs goes to the network.
            from pytest_agentctx.traffic import lazy_tls

            keys.enter_context(lazy_tls.installed())
        cassette.start()
        if guard is not None:
            guard.start()
        try:
            yield cassette
        finally:
            if guard is not None:
                guard.stop()
            cassette.stop()
            item.stash[CASSETTE_KEY] = None
            item.stash[GUARD_KEY] = None
            secrets.absorb(cassette.redactor, own_secrets)  # what it learned, for later tests
    _end_cassette(item, cassette, settings)


def _end_cassette(item: pytest.Item, cassette: Cassette, settings: CassetteSettings) -> None:
    """After the test: save what ``cassette`` recorded (:func:`save_recordings`) and keep
    its report entry; a cassette that could not be saved fails the test's teardown."""
    from pytest_agentctx.traffic.cassettes.settings import save_recordings

    call = item.stash.get(REPORT_KEY, {}).get("call")
    saved, unsaved = save_recordings(
        cassette, settings, call_passed=None if call is None else call.passed
    )
    judged = bool(call and call.passed) or item.stash.get(STALE_KEY, False)
    from pytest_agentctx.reports.records import cassette_entry

    item.stash[CASSETTE_ENTRY_KEY] = cassette_entry(  # for the reports
        cassette,
        rootpath=item.config.rootpath,
        judged=judged,
        saved=saved,
        unsaved=unsaved is not None,
        # a failing test's recording, not kept (--agent-record-failing keeps it)
        discarded=cassette.recorded
        and bool(call and not call.passed)
        and not saved
        and not settings.live,
        live=settings.live,
    )
    if unsaved is not None:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"{type(unsaved).__name__}: {unsaved}", pytrace=False)


@pytest.fixture
def agent_cassette(_agentctx_cassette: Cassette | None) -> Cassette:
    """The test's cassette: its path, mode and interactions, recorded or replayed."""
    if _agentctx_cassette is None:
        raise CassetteConfigError(
            "agent_cassette is not available in a test that uses fake_llm: the fake model "
            "answers its requests, so it has no cassette. Remove one of the two fixtures."
        )
    return _agentctx_cassette


def fake_llm_guard(request: pytest.FixtureRequest) -> NetworkGuard:
    """The guard that keeps a fake_llm test offline, allowing the hosts that
    ``agent_allowed_hosts``, the ``agent`` marker and ``agent_cassette_config`` allow."""
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard
    from pytest_agentctx.traffic.cassettes.settings import TestOptions, cassette_config

    marker_kwargs: dict[str, object] = {}
    for marker in reversed(list(request.node.iter_markers("agent"))):
        marker_kwargs.update(marker.kwargs)
    where = request.node.nodeid
    settings = request.config.stash[CASSETTE_SETTINGS_KEY]
    options = TestOptions.resolve(settings, marker_kwargs, where=where)
    config = cassette_config(request.getfixturevalue("agent_cassette_config"), where=where)
    return NetworkGuard.for_fake_llm((*options.allowed_hosts, *config.get("allowed_hosts", ())))

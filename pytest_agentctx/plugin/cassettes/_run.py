"""A test's cassette while it runs (:func:`run_cassette`, what the package's autouse
fixture runs for an agent test): built from the test's options, started with its
network guard, its runs captured, and what it recorded saved once the test passed
(:func:`_end_cassette`); and the guard of a ``fake_llm`` test (:func:`fake_llm_guard`).
Imported by the package's autouse fixture for the session's first agent test.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, cast

import pytest

from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.errors import CassetteError

from .. import capture
from ..keys import (
    CASSETTE_ENTRY_KEY,
    CASSETTE_KEY,
    CASSETTE_SETTINGS_KEY,
    GUARD_KEY,
    READ_CACHE_KEY,
    REPEAT_INDEX_KEY,
    REPORT_KEY,
    SECRETS_KEY,
    STALE_KEY,
    VCR_MATCHERS_KEY,
)

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes import Cassette, NetworkGuard
    from pytest_agentctx.traffic.cassettes.options import CassetteSettings
    from pytest_agentctx.traffic.cassettes.per_test import CassetteConfig, TestOptions

    from ._vcr import VcrTest


def _use_read_cache(config: pytest.Config) -> None:
    """YAML cassettes read from now on are kept, converted, in pytest's cache folder (none
    under ``-p no:cacheprovider``); the setting before (an outer session's) is kept for
    ``pytest_unconfigure`` to restore."""
    from pytest_agentctx.traffic.cassettes.readcache import FOLDER_NAME, use_folder

    cache = getattr(config, "cache", None)
    folder = None if cache is None else functools.partial(cache.mkdir, FOLDER_NAME)
    config.stash[READ_CACHE_KEY] = use_folder(folder, config.rootpath)


def _clear_killed_writes(settings: CassetteSettings) -> None:
    """Remove what writes killed in an earlier run (``kill -9``, a CI timeout) left in the
    cassette folder, all of it: the temporary files whose process no longer runs (see
    :func:`~pytest_agentctx._files.remove_stale_temporaries`), even beside cassettes this
    run does not load."""
    from pytest_agentctx.traffic.cassettes.runs import sweep_tree

    sweep_tree(settings.directory)


def run_cassette(
    request: pytest.FixtureRequest, item: pytest.Item, settings: CassetteSettings
) -> Iterator[Cassette]:
    """The cassette of the agent test ``item`` while it runs (a fixture's generator)."""
    if READ_CACHE_KEY not in request.config.stash:  # the session's first agent test
        _use_read_cache(request.config)
        _clear_killed_writes(settings)
    from pytest_agentctx.traffic.cassettes.per_test import (
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
        matchers = request.config.stash.get(VCR_MATCHERS_KEY, {})  # vcr.register_matcher's
        config = cassette_config(
            request.getfixturevalue("agent_cassette_config"), where=item.nodeid, matchers=matchers
        )
        tool = None
        if settings.vcr_names:  # pytest-recording's or pytest-vcr's names and vcr_config
            tool, options, config = _vcr_options(request, item, settings, options, config, marks)
    except CassetteError as exc:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"{type(exc).__name__}: {exc}", pytrace=False) from None
    cls = getattr(item, "cls", None)
    secrets = request.config.stash[SECRETS_KEY]
    own_secrets = config.get("redact_values", ())
    # no secret in the file's name: the session's and the test's own are redacted there
    names = secrets.for_test(own_secrets) if own_secrets else secrets.redactor
    tool_path = None if tool is None else tool.path(names.text)
    path = cassette_path(
        settings,
        rootpath=request.config.rootpath,
        module_path=Path(str(item.path)),
        test_name=item.name,
        class_name=cls.__name__ if cls is not None else None,
        override=options.cassette,
        directory=config.get("directory"),
        redact=names.text,
        tool_path=tool_path,
    )
    repetition = item.stash.get(REPEAT_INDEX_KEY, None)
    if repetition is not None:  # agent_repeat: one cassette per repetition
        from ..repeat._runs import repeat_cassette_path

        path = repeat_cassette_path(path, repetition)
    # The cassette's redactor is the test's: it also knows what earlier tests learned.
    cassette, guard = build_cassette(
        path,
        settings=settings,
        options=options,
        config={**config, "redact_values": (*own_secrets, *secrets.learned)},
        test_id=item.nodeid,
        filters=None if tool is None else tool.options.filters,
        matchers=matchers,
    )
    capture.use_redactor(item, cassette.redactor)
    item.stash[CASSETTE_KEY] = cassette
    item.stash[GUARD_KEY] = guard
    capture.capture_runs(item, lambda: cassette.seen_log)
    with contextlib.ExitStack() as keys:
        if cassette.replays_only:
            # No request reaches a provider and nothing is written: unset provider keys get
            # placeholders (unless agent_placeholder_keys is off), so a CI job without keys
            # builds the SDKs' clients.
            if settings.placeholder_keys:
                from pytest_agentctx.doubles.fake_llm import placeholder_keys

                keys.enter_context(placeholder_keys())
            # Nor is a TLS connection opened: the clients the test builds load their
            # certificates only if a request of theirs goes to the network.
            from pytest_agentctx.traffic import lazy_tls

            keys.enter_context(lazy_tls.installed())
        own_ignored = (*options.ignore_hosts, *config.get("ignore_hosts", ()))
        if own_ignored or settings.ignore_hosts:  # its ignored requests not sent are its own
            from pytest_agentctx.traffic import ignore

            keys.enter_context(ignore.during_test(item.nodeid, own_ignored))
        scopes.hold()  # to the session's end: a late request is refused between tests too
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


def _vcr_options(
    request: pytest.FixtureRequest,
    item: pytest.Item,
    settings: CassetteSettings,
    options: TestOptions,
    config: CassetteConfig,
    marks: list[tuple[tuple[object, ...], Mapping[str, object]]],
) -> tuple[VcrTest, TestOptions, CassetteConfig]:
    """Under pytest-recording's or pytest-vcr's names: the test's cassette folder and name,
    and its ``vcr_config`` laid under its own options (its ``agent`` marker and
    ``agent_cassette_config`` win)."""
    from ._vcr import vcr_test

    vcr = vcr_test(request, item, settings)
    wanted = vcr.options
    marked_mode = any(kwargs.get("record_mode") is not None for _, kwargs in marks)
    if wanted.record_mode is not None and not settings.mode_from_command_line and not marked_mode:
        options = options.with_mode(wanted.record_mode)
    if wanted.allowed_hosts:
        options = replace(options, allowed_hosts=(*options.allowed_hosts, *wanted.allowed_hosts))
    merged = cast("CassetteConfig", {**wanted.config, **config})
    vcr_secrets = cast("tuple[str, ...]", wanted.config.get("redact_values", ()))
    if vcr_secrets:  # filter_sensitive_data's, with agent_cassette_config's own
        merged["redact_values"] = (*vcr_secrets, *config.get("redact_values", ()))
    return vcr, options, merged


def _end_cassette(item: pytest.Item, cassette: Cassette, settings: CassetteSettings) -> None:
    """After the test: save what ``cassette`` recorded (:func:`save_recordings`) and keep
    its report entry; a cassette that could not be saved fails the test's teardown."""
    from pytest_agentctx.traffic.cassettes.per_test import save_recordings

    call = item.stash.get(REPORT_KEY, {}).get("call")
    if REPEAT_INDEX_KEY in item.stash:  # a repetition's failure is part of the rate: kept
        settings = settings._replace(record_failing=True)
    saved, unsaved = save_recordings(
        cassette, settings, call_passed=None if call is None else call.passed
    )
    judged = bool(call and call.passed) or item.stash.get(STALE_KEY, False)
    from pytest_agentctx.reports.session_report import cassette_entry

    item.stash[CASSETTE_ENTRY_KEY] = cassette_entry(  # for the reports
        cassette,
        rootpath=item.config.rootpath,
        judged=judged,
        saved=saved,
        unsaved=unsaved is not None,
        # a failing test's recording, not kept (--agent-record-failing keeps it, and a
        # repeated test keeps every repetition's)
        discarded=cassette.recorded
        and bool(call and not call.passed)
        and not saved
        and not settings.live,
        live=settings.live,
    )
    if unsaved is not None:  # the message says it all: no frames of the plugin
        raise pytest.fail.Exception(f"{type(unsaved).__name__}: {unsaved}", pytrace=False)


def _fake_llm_options(
    request: pytest.FixtureRequest,
) -> tuple[CassetteSettings, TestOptions, CassetteConfig]:
    """A fake_llm test's session settings, its ``agent`` markers' options (the closest
    marker's value of an option winning) and its checked ``agent_cassette_config``."""
    from pytest_agentctx.traffic.cassettes.per_test import TestOptions, cassette_config

    marker_kwargs: dict[str, object] = {}
    for marker in reversed(list(request.node.iter_markers("agent"))):
        marker_kwargs.update(marker.kwargs)
    where = request.node.nodeid
    settings = request.config.stash[CASSETTE_SETTINGS_KEY]
    options = TestOptions.resolve(settings, marker_kwargs, where=where)
    config = cassette_config(
        request.getfixturevalue("agent_cassette_config"),
        where=where,
        matchers=request.config.stash.get(VCR_MATCHERS_KEY, {}),
    )
    return settings, options, config


def fake_llm_guard(request: pytest.FixtureRequest) -> NetworkGuard:
    """The guard that keeps a fake_llm test offline, allowing the hosts that
    ``agent_allowed_hosts``, the ``agent`` marker and ``agent_cassette_config`` allow."""
    from pytest_agentctx.traffic.cassettes.network import NetworkGuard

    _, options, config = _fake_llm_options(request)
    return NetworkGuard.for_fake_llm((*options.allowed_hosts, *config.get("allowed_hosts", ())))


def fake_llm_ignoring(request: pytest.FixtureRequest) -> contextlib.AbstractContextManager[None]:
    """While a fake_llm test runs: its own ``ignore_hosts`` (marker, ``agent_cassette_config``)
    are ignored, and the ignored requests not sent are its own, as a cassette test's."""
    settings, options, config = _fake_llm_options(request)
    own = (*options.ignore_hosts, *config.get("ignore_hosts", ()))
    if not own and not settings.ignore_hosts:
        return contextlib.nullcontext()
    from pytest_agentctx.traffic import ignore

    return ignore.during_test(request.node.nodeid, own)

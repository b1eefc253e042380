"""Prompt caches: the prefix check of a test's model calls and its declared breakpoints.

Every test whose traffic is captured (a cassette, the fake model, ``agent_context``) has its
model calls checked after its call phase (:func:`pytest_runtest_call`): each call of a
conversation must start with the blocks of the call before it (tools, system, messages;
:mod:`pytest_agentctx.traffic.capture.cacheprefix`), or the provider's prompt cache misses.
The check is on unless the ``agent_cache_prefix`` ini option is ``off`` or the test is
marked ``agent_cache_exempt(reason=...)``; ``agent_cache(breakpoints=[...])`` asks that the
Anthropic and Bedrock calls carry a cache marker on those parts. A bad marker is an error of
its test, read before its fixtures run (:func:`pytest_runtest_setup`).

Imported as Python compiles it, not rewritten by pytest (``PYTEST_DONT_REWRITE``: see
:mod:`pytest_agentctx.plugin`).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from pytest_agentctx.traffic.errors import CacheMarkerError

from .capture import redacted
from .keys import CACHE_PREFIX_KEY, CACHE_SPEC_KEY, CAPTURED_KEY, REPEAT_ERROR_KEY


def configure(config: pytest.Config) -> None:
    """Read the ``agent_cache_prefix`` ini option (``check``, the default, or ``off``). The
    capture package loads only to word the error of another value: a session of plain
    tests imports none of it."""
    value = str(config.getini("agent_cache_prefix"))
    if value.strip().lower() in ("", "check", "off"):
        config.stash[CACHE_PREFIX_KEY] = value.strip().lower() != "off"
        return
    from pytest_agentctx.traffic.capture.cachechecks import prefix_setting

    try:
        config.stash[CACHE_PREFIX_KEY] = prefix_setting(value)
    except CacheMarkerError as exc:
        raise pytest.UsageError(str(exc)) from None


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Read the test's cache markers before its fixtures run: an ``agent_cache_exempt``
    marker without a reason, or a bad ``agent_cache`` marker, is an error of the test."""
    __tracebackhide__ = True  # the message says it all: no frames of the plugin
    if REPEAT_ERROR_KEY in item.stash:
        return  # a bad agent_repeat marker: its error (the repeat hook's) is the test's
    exempt = [(m.args, m.kwargs) for m in item.iter_markers("agent_cache_exempt")]
    declared = [(m.args, m.kwargs) for m in item.iter_markers("agent_cache")]
    check = item.config.stash.get(CACHE_PREFIX_KEY, True)
    if not exempt and not declared:  # nothing to read: the capture package stays unloaded
        if check:
            item.stash[CACHE_SPEC_KEY] = (True, ())
        return
    from pytest_agentctx.traffic.capture.cachechecks import declared_breakpoints, exemption

    try:
        reason = exemption(exempt, item.nodeid)
        parts = declared_breakpoints(declared, item.nodeid)
    except CacheMarkerError as exc:
        raise CacheMarkerError(str(exc)) from None
    item.stash[CACHE_SPEC_KEY] = (check and reason is None, parts)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """After a test that passed, check its model calls' prompt-cache prefixes and declared
    breakpoints; a test that failed keeps its own failure."""
    __tracebackhide__ = True  # it passes the test's failure on: no frame of the plugin
    result = yield
    message = _cache_failure(item)
    if message is not None:
        pytest.fail(redacted(item, message), pytrace=False)
    return result


def _cache_failure(item: pytest.Item) -> str | None:
    spec = item.stash.get(CACHE_SPEC_KEY, None)
    runs = item.stash.get(CAPTURED_KEY, None)
    if spec is None or (runs is None and not spec[1]):
        return None  # no traffic captured: no call to check (declared breakpoints aside)
    check, parts = spec
    if not check and not parts:
        return None
    from pytest_agentctx.traffic.capture.cachechecks import cache_failure
    from pytest_agentctx.traffic.capture.cacheprefix import calls_of

    calls = calls_of(runs.exchanges) if runs is not None else []
    return cache_failure(calls, item.nodeid, check=check, parts=parts)

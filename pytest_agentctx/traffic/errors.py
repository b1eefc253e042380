"""Errors of the traffic layer: wire formats, capture, cassettes (files that cannot be
read or written, requests with no recording, stale recordings, and blocked connections),
and requests no concurrent run owns.
"""

from __future__ import annotations

from pytest_agentctx.exceptions import (
    AgentAssertionError,
    AgentCtxError,
    RunError,
    UsageError,
    publish,
)

__all__ = [
    "CodecError",
    "CaptureError",
    "NotOneConversation",
    "CacheMarkerError",
    "CassetteError",
    "CassetteConfigError",
    "CassetteFormatError",
    "CassetteWriteError",
    "CassetteMiss",
    "PartialRecording",
    "StaleCassette",
    "NetworkBlocked",
    "UnscopedRequest",
]


class CodecError(RunError):
    """Wire-format JSON that does not have the shape its codec expects."""


class CaptureError(UsageError):
    """Traffic that capture cannot read: a cassette file, or something that is no exchange."""


class NotOneConversation(CaptureError):
    """``agent_context.context`` was asked for the one conversation of a test that had none,
    or several (the message lists them; index ``agent_context.contexts`` instead)."""


class CacheMarkerError(UsageError):
    """An ``agent_cache_exempt`` marker without a reason, an ``agent_cache`` marker that
    names no breakpoint or an unknown part, or an ``agent_cache_prefix`` ini value other
    than ``check`` or ``off``."""


class CassetteError(AgentCtxError):
    """A problem with recording or replaying HTTP traffic. Its message quotes cassettes
    (URLs, bodies, file names) that may come from strangers: control characters in it are
    shown as escapes (:func:`~pytest_agentctx._untrusted.visible`), wherever it is printed."""

    def __init__(self, *args: object) -> None:
        if len(args) == 1 and isinstance(args[0], str):
            from pytest_agentctx._untrusted import visible

            args = (visible(args[0]),)
        super().__init__(*args)


class CassetteConfigError(CassetteError, UsageError):
    """A cassette setting that cannot work: an ini option, a ``@pytest.mark.agent`` option,
    what ``agent_cassette_config`` returned, or a fixture used where no cassette exists. The
    message names the setting, what was expected, and where to fix it."""


class CassetteFormatError(CassetteError, UsageError):
    """A cassette file that cannot be read: bad YAML/JSON or an unknown structure."""


class CassetteWriteError(CassetteError, RunError):
    """A cassette that could not be saved: a read-only folder, a full disk, a file where
    its folder should be. The message names the cassette and the reason, and says what to
    do; the previous version of the cassette is kept as it was.
    """


class CassetteMiss(CassetteError, AgentAssertionError):
    """A request that the cassette holds no (unused) recording for.

    It is also an :class:`AssertionError`: the test fails rather than errors.
    """


class PartialRecording(CassetteError, AgentAssertionError):
    """A streamed response recorded in part, replayed past where its recording stops.

    While recording, the agent stopped reading the stream without closing it, and the rest
    could not be read when the test ended (an async stream, or one that did not end in
    time): the cassette holds what was read. Replaying it, the agent read further. It is
    also an :class:`AssertionError`: the test fails rather than errors.
    """


class StaleCassette(CassetteError, AgentAssertionError):
    """Recorded interactions that the test never used: the agent's requests drifted."""


class NetworkBlocked(CassetteError, RunError, ConnectionError):
    """A connection, a datagram or a DNS lookup to a host that is not loopback or allowed,
    while a test runs offline (replaying a cassette, or with ``fake_llm``).

    It is also a :class:`ConnectionError`, so HTTP libraries report it as one.
    """


class UnscopedRequest(UsageError):
    """A request made in a context that no active interceptor (cassette, fake model) was
    started in, while several concurrent runs each have their own: typically a thread
    started without the run's context (``threading.Thread``, ``ThreadPoolExecutor.submit``,
    ``loop.run_in_executor``) under ``asyncio.gather``. Which run's interceptor should
    answer it cannot be told, so it is not sent; the message names the request and the
    runs, and says how to run the work in its run's context (``asyncio.to_thread``,
    ``contextvars.copy_context().run``). Every active interceptor keeps it, and a cassette
    fails its test with it even when the client swallowed the error.

    Also a late request: one made by work a test left running (an asyncio task, a thread)
    after the test's scope ended. It is not sent, nor recorded into the cassette of the
    test running then; the message names the request and the test that started the work,
    and the test runner reports it on that test, or fails the session with it.
    """


publish(globals())

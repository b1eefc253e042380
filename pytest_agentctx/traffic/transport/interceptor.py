"""The :class:`Interceptor`, which routes HTTP requests to a handler while started, and the
patching of the client libraries it starts and stops.

While at least one interceptor is active, every client of
:mod:`pytest_agentctx.traffic.clients` is patched (``httpx2``, ``httpx``, ``urllib3``,
``aiohttp``): each request goes through :func:`~.dispatch.dispatch_sync` or
:func:`~.dispatch.dispatch_async`.
"""

from __future__ import annotations

import threading
from types import TracebackType

from pytest_agentctx.traffic import scopes
from pytest_agentctx.traffic.errors import UnscopedRequest
from pytest_agentctx.traffic.transport.wire import Handler

#: Guards starting and stopping interceptors, and the patching. Which interceptors a
#: request is offered is the scopes' (:mod:`pytest_agentctx.traffic.scopes`), read without it.
_lock = threading.RLock()
#: Whether the clients are patched.
_installed = False


def _install() -> None:
    global _installed
    # imported here: the clients import the libraries they patch (aiohttp, urllib3)
    from pytest_agentctx.traffic.clients import PATCHERS

    _installed = True
    for install, _ in PATCHERS:
        install()


def _uninstall() -> None:
    global _installed
    from pytest_agentctx.traffic.clients import PATCHERS

    for _, uninstall in reversed(PATCHERS):
        uninstall()
    _installed = False


def release_leftovers() -> None:
    """A session ended: forget its leftover threads, unpatch if no interceptor is active."""
    with _lock:
        scopes.forget_orphans()
        if _installed and not scopes.scopes():
            _uninstall()


class Interceptor:
    """Routes HTTP requests to ``handler`` while started (also a context manager).

    It answers for the context it was started in (:mod:`contextvars`): the requests made
    there, and in the contexts copied from it afterwards (the asyncio tasks created there,
    ``asyncio.to_thread``), see :mod:`pytest_agentctx.traffic.scopes`. Stopped, from any
    context, it answers no more. A request made in a context with none of its own (a
    thread) goes to the one chain of interceptors active, or is refused with
    :class:`UnscopedRequest` when several concurrent scopes are active; :attr:`refused`
    keeps those refusals.

    A ``witness`` handler is also offered the requests another tool in the test answers
    (:func:`~.dispatch.answered_by_another_tool`): it must pass them on, and may keep a copy
    of what the test saw. Other handlers never see them.
    """

    def __init__(self, handler: Handler, *, witness: bool = False) -> None:
        self.handler = handler
        self.witness = witness
        self._active = False
        #: The requests refused while it was active because no scope owned them (made in
        #: a thread without a run's context while concurrent runs each had their own):
        #: its owner fails the test with the first (a cassette's :meth:`check`).
        self.refused: list[UnscopedRequest] = []

    @property
    def active(self) -> bool:
        return self._active

    def start(self) -> None:
        """Answer the requests of the current context (and those copied from it) from now."""
        with _lock:
            if self._active:
                return
            if scopes.enter(self) and not _installed:
                try:
                    _install()
                except BaseException:
                    scopes.leave(self)
                    raise
            self._active = True

    def stop(self) -> None:
        """Answer no more requests, whichever context stops it."""
        with _lock:
            if not self._active:
                return
            self._active = False
            # a thread a test left running keeps the patches: its requests are refused
            if scopes.leave(self) and not scopes.pending():
                _uninstall()

    def __enter__(self) -> Interceptor:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

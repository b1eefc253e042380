"""Interception of HTTP client libraries other than ``httpx2``/``httpx``.

Each module here patches one library while an interceptor is active
(:class:`~pytest_agentctx.traffic.transport.Interceptor`): it converts the library's
request to an ``httpx2`` request, hands it to
:func:`~pytest_agentctx.traffic.transport.dispatch_sync` or
:func:`~pytest_agentctx.traffic.transport.dispatch_async` with a function that sends it
through the library's own code, and converts the ``httpx2`` response it gets back into the
library's response. The cassettes and the fake model therefore see one kind of request,
whatever client made it.

:data:`PATCHERS` lists the ``(install, uninstall)`` pairs, in the order they are installed;
a library that is not installed has none.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

__all__ = ["PATCHERS"]

#: ``(install, uninstall)`` of each client library patched along with httpx2 and httpx.
PATCHERS: list[tuple[Callable[[], None], Callable[[], None]]] = []

# This package is imported when the first interceptor starts (never by importing
# pytest_agentctx); aiohttp is imported then, when it is installed.
if importlib.util.find_spec("aiohttp") is not None:
    from pytest_agentctx.traffic.clients import aiohttp as _aiohttp

    PATCHERS.append((_aiohttp.install, _aiohttp.uninstall))

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
a library that is not installed has none. A library is imported when its patch is first
installed (when the first interceptor starts), not when this package is.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable

__all__ = ["CLIENT_EXTENSION", "PATCHERS"]

#: The request extension naming the client library a request came through (``"requests"``),
#: which a cassette's miss message shows.
CLIENT_EXTENSION = "agentctx_client"

#: ``(install, uninstall)`` of each client library patched along with httpx2 and httpx.
PATCHERS: list[tuple[Callable[[], None], Callable[[], None]]] = []


def _urllib3_version() -> int:
    """urllib3's major version, 0 when it is not installed."""
    if importlib.util.find_spec("urllib3") is None:
        return 0
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("urllib3").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return 0


def _install_urllib3() -> None:
    from pytest_agentctx.traffic.clients import urllib3

    urllib3.install()


def _uninstall_urllib3() -> None:
    from pytest_agentctx.traffic.clients import urllib3

    urllib3.uninstall()


# urllib3 2 and later (requests sends through it): see .urllib3 for why not 1.26.
if _urllib3_version() >= 2:
    PATCHERS.append((_install_urllib3, _uninstall_urllib3))

# This package is imported when the first interceptor starts (never by importing
# pytest_agentctx); aiohttp is imported then, when it is installed.
if importlib.util.find_spec("aiohttp") is not None:
    from pytest_agentctx.traffic.clients import aiohttp as _aiohttp

    PATCHERS.append((_aiohttp.install, _aiohttp.uninstall))

"""The client libraries whose requests the interceptors see, and :data:`PATCHERS`, the
``(install, uninstall)`` pair of each, in the order they are installed.

Each module here patches one library while an interceptor is active
(:class:`~pytest_agentctx.traffic.transport.Interceptor`): ``httpx`` (``httpx2`` and
``httpx``), ``urllib3`` (and so ``requests``), ``botocore`` (above urllib3),
``aiohttp``, and the mcp SDK's stdio servers (``mcp_stdio``). It hands each request, as a
:class:`~pytest_agentctx.traffic.transport.wire.WireRequest` (an ``httpx2`` request for
the libraries other than httpx), to
:func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_sync` or
:func:`~pytest_agentctx.traffic.transport.dispatch.dispatch_async` with a function that
sends it through the library's own code, and converts the response it gets back into the
library's response. The cassettes and the fake model therefore see one kind of request,
whatever client made it.

A library that is not installed has no patcher.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable

from pytest_agentctx.traffic.clients import httpx as _httpx

#: ``(install, uninstall)`` of each client library, in the order they are installed.
PATCHERS: list[tuple[Callable[[], None], Callable[[], None]]] = [(_httpx.install, _httpx.uninstall)]


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


def _install_botocore() -> None:
    # Only once botocore sends: importing it costs a test that never uses it a tenth of a
    # second, and until it is patched its requests are the urllib3 interceptor's.
    if "botocore.httpsession" in sys.modules:
        from pytest_agentctx.traffic.clients import botocore

        botocore.install()


def _uninstall_botocore() -> None:
    if "pytest_agentctx.traffic.clients.botocore" in sys.modules:  # never installed else
        from pytest_agentctx.traffic.clients import botocore

        botocore.uninstall()


# urllib3 2 and later (requests sends through it): see .urllib3 for why not 1.26.
if _urllib3_version() >= 2:
    PATCHERS.append((_install_urllib3, _uninstall_urllib3))
    # botocore sends through urllib3; answered above it (see .botocore) once it is imported.
    if importlib.util.find_spec("botocore") is not None:
        PATCHERS.append((_install_botocore, _uninstall_botocore))

if importlib.util.find_spec("aiohttp") is not None:
    from pytest_agentctx.traffic.clients import aiohttp as _aiohttp

    PATCHERS.append((_aiohttp.install, _aiohttp.uninstall))

# the mcp SDK's stdio servers (see .mcp_stdio), once the SDK's stdio client is imported
if importlib.util.find_spec("mcp") is not None:
    from pytest_agentctx.traffic.clients import mcp_stdio as _mcp_stdio

    PATCHERS.append((_mcp_stdio.install, _mcp_stdio.uninstall))

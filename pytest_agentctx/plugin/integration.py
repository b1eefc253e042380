"""How the integration tests run: after the other tests, and one at a time under xdist.

Which tests are integration tests, and which of them run, is the ``suites`` module's: it
marks and deselects them at collection. This module puts the ones that run last
(:func:`pytest_collection_modifyitems`) and, on an xdist worker, runs each under the
session's integration lock (:func:`pytest_runtest_protocol`).
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from .keys import SUITE_SCOPE_KEY
from .suites import integration_last, serial_lock


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Sorted integration tests run after the other tests (after any other plugin's
    reordering); with no such test the order is left as it is."""
    scope = config.stash[SUITE_SCOPE_KEY]
    if any(scope.integration(item) for item in items):
        items[:] = integration_last(items, scope.integration)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """On an xdist worker, a sorted integration test runs under the session's integration
    lock, so integration tests run one at a time even where xdist_group cannot group them
    (pytest 9 with pytest-xdist 3.8: pytest-dev/pytest-xdist#1386)."""
    workerinput = getattr(item.config, "workerinput", None)
    if workerinput is None or not item.config.stash[SUITE_SCOPE_KEY].integration(item):
        return (yield)
    with serial_lock(str(workerinput["testrunuid"])):
        return (yield)

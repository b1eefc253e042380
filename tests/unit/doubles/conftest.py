"""Fixtures of the unit tests of the test doubles: a running loopback provider."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_agentctx import LoopbackProvider


@pytest.fixture
def provider() -> Iterator[LoopbackProvider]:
    with LoopbackProvider() as running:
        yield running

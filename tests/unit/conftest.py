"""Fixtures shared by the unit tests of several layers: a started fake model and the id of
an ended process."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from pytest_agentctx import FakeLLM


@pytest.fixture
def fake() -> Iterator[FakeLLM]:
    with FakeLLM() as started:
        yield started


@pytest.fixture(scope="module")
def dead_pid() -> int:
    """The id of a process that has ended."""
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        check=True,
        capture_output=True,
        text=True,
    )
    return int(child.stdout)

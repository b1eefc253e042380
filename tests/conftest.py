"""Shared set-up of the test suite: real pytest runs through ``pytester``."""

from __future__ import annotations

import pytest

INI = """
[pytest]
asyncio_mode = auto
asyncio_default_fixture_loop_scope = function
filterwarnings = error
"""


@pytest.fixture
def agent_pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A pytester with an ini for async tests and no provider keys in the environment.

    When the suite itself runs under xdist, inner runs must not believe they are workers.
    """
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENAI_BASE_URL",
        "ANTHROPIC_BASE_URL",
        "PYTEST_XDIST_WORKER",
        "PYTEST_XDIST_WORKER_COUNT",
        "PYTEST_XDIST_TESTRUNUID",
    ):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini(INI)
    return pytester

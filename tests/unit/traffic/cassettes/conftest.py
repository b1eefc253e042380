"""Fixtures of the cassette unit tests: a loopback HTTP server and an SDK client on it, a
cassette's path, and the cassette files parsed from their text."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import openai
import pytest
from cassette_support import TLS, Loopback

from pytest_agentctx.traffic.cassettes import store
from pytest_agentctx.traffic.cassettes.fileformat import Interaction


@pytest.fixture
def loopback() -> Iterator[Loopback]:
    """A scripted HTTP server on 127.0.0.1, stopped and closed after the test."""
    server = Loopback()
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def openai_client(loopback: Loopback) -> AsyncIterator[openai.AsyncOpenAI]:
    """The real async openai SDK pointed at the loopback server, without retries."""
    async with openai.AsyncOpenAI(
        api_key="sk-unit-test-key-000",
        base_url=f"{loopback.url}/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(verify=TLS, trust_env=False),
    ) as client:
        yield client


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "cassettes" / "test_agent" / "test_weather.json"


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the cassette files parsed (not served from the cache) from now on."""
    names: list[str] = []
    real = store.parse_cassette

    def counting(text: str, path: Path) -> list[Interaction]:
        names.append(path.name)
        return real(text, path)

    monkeypatch.setattr(store, "parse_cassette", counting)
    return names

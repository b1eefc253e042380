"""Fixtures of the cassette unit tests: a loopback HTTP server and an SDK client on it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import httpx2
import openai
import pytest
from cassette_support import TLS, Loopback


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

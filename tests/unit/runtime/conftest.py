"""Fixtures of the runtime's unit tests: the SDK providers, and a runtime on them with a
step clock and sequential ids."""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from pytest_agentctx import (
    AgentRuntime,
    AnthropicMessagesProvider,
    OpenAIChatProvider,
    OpenAIResponsesProvider,
    SequentialIds,
    StepClock,
)

_TLS = ssl.create_default_context()


@pytest.fixture
async def providers() -> AsyncIterator[dict[str, Any]]:
    """Both SDK providers, their clients built with an API key (and a shared TLS context)."""
    async with (
        openai.AsyncOpenAI(
            api_key="sk-test", http_client=httpx2.AsyncClient(verify=_TLS)
        ) as openai_client,
        anthropic.AsyncAnthropic(
            api_key="sk-ant-test", http_client=httpx2.AsyncClient(verify=_TLS)
        ) as anthropic_client,
    ):
        yield {
            "openai": OpenAIChatProvider(client=openai_client),
            "openai-responses": OpenAIResponsesProvider(client=openai_client),
            "anthropic": AnthropicMessagesProvider(client=anthropic_client),
        }


@pytest.fixture
def runtime(providers) -> AgentRuntime:
    return AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers=providers)

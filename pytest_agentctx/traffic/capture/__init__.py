"""Capture: the iteration context of any agent, rebuilt from its LLM traffic.

An agent written on the raw ``openai``/``anthropic`` SDKs or on a framework (pydantic-ai,
openai-agents, LangChain...) sends model calls over HTTP. Capture reads those exchanges
(replayed from a cassette, recorded, answered by the fake model, or live) through the same
wire-format codecs the runtime uses and rebuilds one :class:`~pytest_agentctx.AgentContext`
per conversation, so every assertion, snapshot, budget and report works unchanged.

* :class:`CapturedRuns`: the contexts (``.contexts``, ``.context``) and the other
  exchanges (``.non_llm``); the ``agent_context`` fixture is one.
* :func:`capture_contexts`: a context manager that captures live traffic anywhere.
* :func:`build_contexts` and :func:`contexts_from_cassette`: contexts from a list of
  exchanges, or from a cassette file.
"""

from __future__ import annotations

from .exchange import (
    Exchange as Exchange,
    TrafficRecorder as TrafficRecorder,
)
from .runs import (
    CapturedRuns as CapturedRuns,
    build_contexts as build_contexts,
    capture_contexts as capture_contexts,
    contexts_from_cassette as contexts_from_cassette,
)

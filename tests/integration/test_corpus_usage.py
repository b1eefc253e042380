"""The cache and reasoning breakdown capture reads from real recorded responses equals the
figures in the files (the provider's own fields, quoted beside each row).

Anthropic and Bedrock report their uncached input apart from the cache reads and writes;
OpenAI (chat completions and Responses, and OpenRouter's chat completions) and Gemini count
the cached tokens inside their input, and the reasoning inside the output (Gemini's
thoughts apart from it). Files without a non-zero figure of a format were looked for in the
public test suites and copied in (``corpus/MANIFEST.md``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentctx import contexts_from_cassette

pytestmark = pytest.mark.integration

OWN_CORPUS = Path(__file__).resolve().parent / "corpus"
SHARED_CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"

CASES = [
    pytest.param(
        OWN_CORPUS / "pydantic-ai__anthropic_cache_marker_moves_code_execution_files.yaml",
        0,
        1,
        # input_tokens 10, cache_read_input_tokens 4332, cache_creation_input_tokens 4513
        # (ephemeral_5m_input_tokens 4513), output_tokens 211, service_tier standard
        {
            "input_tokens": 10 + 4332 + 4513,
            "output_tokens": 211,
            "total_tokens": 10 + 4332 + 4513 + 211,
            "uncached_input_tokens": 10,
            "cache_read_tokens": 4332,
            "cache_write_tokens": 4513,
        },
        id="anthropic-cache-read-and-write",
    ),
    pytest.param(
        OWN_CORPUS / "openllmetry__anthropic_prompt_caching.yaml",
        1,
        1,
        # input_tokens 4, cache_read_input_tokens 1163, output_tokens 202
        {
            "input_tokens": 1167,
            "output_tokens": 202,
            "total_tokens": 1369,
            "uncached_input_tokens": 4,
            "cache_read_tokens": 1163,
        },
        id="anthropic-cache-read",
    ),
    pytest.param(
        OWN_CORPUS / "pydantic-ai__bedrock_converse_cache_point_moves.yaml",
        0,
        2,
        # inputTokens 3, cacheReadInputTokens 1712, cacheWriteInputTokens 236
        # (cacheDetails: 236 with ttl 5m), outputTokens 121, totalTokens 2072
        {
            "input_tokens": 3 + 1712 + 236,
            "output_tokens": 121,
            "total_tokens": 2072,
            "uncached_input_tokens": 3,
            "cache_read_tokens": 1712,
            "cache_write_tokens": 236,
        },
        id="bedrock-converse-cache-read-and-write",
    ),
    pytest.param(
        OWN_CORPUS / "pydantic-ai__openrouter_chat_cache_marker_moves_tools.yaml",
        0,
        2,
        # prompt_tokens 2649, prompt_tokens_details: cached_tokens 2569,
        # cache_write_tokens 79; completion_tokens 100
        {
            "input_tokens": 2649,
            "output_tokens": 100,
            "total_tokens": 2749,
            "uncached_input_tokens": 2649 - 2569 - 79,
            "cache_read_tokens": 2569,
            "cache_write_tokens": 79,
        },
        id="openai_chat-cached-and-cache-write-tokens",
    ),
    pytest.param(
        OWN_CORPUS / "openllmetry__azure_openai_chat_deployment_200_404.yaml",
        0,
        1,
        # prompt_tokens 11, completion_tokens 203, completion_tokens_details:
        # reasoning_tokens 192
        {"input_tokens": 11, "output_tokens": 203, "total_tokens": 214, "reasoning_tokens": 192},
        id="openai_chat-reasoning-tokens",
    ),
    pytest.param(
        OWN_CORPUS / "pydantic-ai__openai_responses_web_search_two_turns.yaml",
        0,
        1,
        # input_tokens 9299, input_tokens_details.cached_tokens 8448, output_tokens 577,
        # output_tokens_details.reasoning_tokens 512, service_tier default
        {
            "input_tokens": 9299,
            "output_tokens": 577,
            "total_tokens": 9876,
            "uncached_input_tokens": 9299 - 8448,
            "cache_read_tokens": 8448,
            "reasoning_tokens": 512,
        },
        id="openai_responses-cached-and-reasoning-tokens",
    ),
    pytest.param(
        OWN_CORPUS / "pydantic-ai__openai_responses_stream_flex_tier_reasoning.yaml",
        0,
        1,
        # response.completed: input_tokens 53 (cached_tokens 0), output_tokens 469
        # (reasoning_tokens 448), service_tier flex
        {
            "input_tokens": 53,
            "output_tokens": 469,
            "total_tokens": 522,
            "reasoning_tokens": 448,
            "service_tier": "flex",
        },
        id="openai_responses-stream-flex-tier",
    ),
    pytest.param(
        OWN_CORPUS / "pydantic-ai__gemini_cached_content_and_thoughts.yaml",
        0,
        1,
        # promptTokenCount 17713, cachedContentTokenCount 17379, candidatesTokenCount 68,
        # thoughtsTokenCount 821, totalTokenCount 18602, serviceTier standard
        {
            "input_tokens": 17713,
            "output_tokens": 68 + 821,
            "total_tokens": 18602,
            "uncached_input_tokens": 17713 - 17379,
            "cache_read_tokens": 17379,
            "reasoning_tokens": 821,
        },
        id="gemini-cached-content-and-thoughts",
    ),
    pytest.param(
        SHARED_CORPUS / "crewai__openai_chat_error_400_then_200.yaml",
        0,
        1,
        # prompt_tokens 14, completion_tokens 84 (reasoning_tokens 64)
        {"input_tokens": 14, "output_tokens": 84, "total_tokens": 98, "reasoning_tokens": 64},
        id="shared-openai_chat-reasoning-tokens",
    ),
]


@pytest.mark.parametrize(("path", "conversation", "number", "usage"), CASES)
def test_the_usage_capture_reads_from_a_recording_equals_its_figures(
    path, conversation, number, usage
):
    if not path.exists():
        pytest.skip(f"{path} is not there (the shared corpus is checked out beside the repo)")
    context = contexts_from_cassette(path)[conversation]
    iteration = next(item for item in context.iterations if item.number == number)

    assert iteration.metadata["usage"] == usage


@pytest.mark.parametrize(
    "path",
    [
        OWN_CORPUS / "langchain-cohere__cohere_v2_chat_thinking_tool_call_gzip.yaml",
        OWN_CORPUS / "openllmetry__ollama_api_chat_tool_result.yaml",
    ],
    ids=["cohere", "ollama"],
)
def test_cohere_and_ollama_recordings_have_no_breakdown(path):
    (context,) = contexts_from_cassette(path)

    assert {tuple(iteration.metadata["usage"]) for iteration in context.iterations} == {
        ("input_tokens", "output_tokens", "total_tokens")
    }

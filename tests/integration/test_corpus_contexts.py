"""Every cassette of the compatibility corpora yields the contexts of its conversations.

The shared corpus (``shared/corpus/`` beside the checkout) holds 36 vcrpy cassettes
recorded against the real APIs by pydantic-ai, simonw/llm, crewAI, LangSmith, OpenLLMetry,
OpenInference and OpenTelemetry; this repository's own ``corpus/`` beside this file holds
more, from pydantic-ai and OpenLLMetry: Azure OpenAI, OpenAI-compatible providers under
their own paths (Groq, Mistral, Together, OpenRouter, Ollama, DeepSeek), prompt caching,
server tools, background responses, compaction and errors. Each ``MANIFEST.md`` names the
source of every file. Capture reads each one (:func:`contexts_from_cassette`) and the
contexts are compared with a reviewed snapshot under
``__snapshots__/test_corpus_contexts/``; the files that once showed a defect of capture
are checked field by field too. A file that holds no agent conversation is listed in
:data:`NO_CONVERSATION` with the reason, and the test checks that reason.
``pytest --snapshot-update tests/integration/test_corpus_contexts.py`` rewrites the
snapshots after a reviewed change of capture.
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

import pytest

from pytest_agentctx import AgentContext, CapturedRuns, contexts_from_cassette

pytestmark = pytest.mark.integration

CORPUS = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
FILES = sorted(CORPUS.glob("*.yaml"))
SKIP_REASON = (
    f"the cassette corpus is not at {CORPUS}; it is checked out as shared/corpus beside "
    "the repository (as in CI)"
)
PARAMS = [pytest.param(path, id=path.name) for path in FILES] or [
    pytest.param(None, id="corpus", marks=pytest.mark.skip(reason=SKIP_REASON))
]
#: This repository's own corpus (always present).
OWN_CORPUS = Path(__file__).resolve().parent / "corpus"
OWN_PARAMS = [
    pytest.param(path, id=f"own-{path.name}") for path in sorted(OWN_CORPUS.glob("*.yaml"))
]

#: Files without an agent conversation, and why (the test checks the reason holds).
NO_CONVERSATION = {
    "openllmetry__openai_assistants_polling_25_gzip.yaml": (
        "OpenAI Assistants API: the client creates an assistant, a thread, a message and a "
        "run, then polls the run; the model is called on OpenAI's side, never on the wire"
    ),
}
#: The endpoints that make up each file of NO_CONVERSATION.
NO_CONVERSATION_PATHS = {
    "openllmetry__openai_assistants_polling_25_gzip.yaml": ("/v1/assistants", "/v1/threads"),
}
#: Exchanges that are no model call, per file (the rest of the corpus has none).
NON_LLM = {
    "langsmith__openai_anthropic_mixed_24_gzip.yaml": {"/v1/embeddings": 10},
    "langsmith__openai_embeddings_chat_53.yaml": {"/v1/embeddings": 10},
    "openllmetry__openai_agents_responses_stream_11.yaml": {"/v1/traces/ingest": 4},
    # the own corpus: the endpoints beside a model endpoint, and other APIs
    "pydantic-ai__anthropic_cache_marker_moves_code_execution_files.yaml": {
        "/v1/files": 1,
        "/v1/files/file_011CcaGpPS2JA1AMya8VxEMh": 1,
    },
    "pydantic-ai__anthropic_count_tokens_endpoint.yaml": {"/v1/messages/count_tokens": 1},
    "pydantic-ai__openai_responses_input_tokens_endpoint.yaml": {"/v1/responses/input_tokens": 1},
    "pydantic-ai__openai_responses_compact_endpoint.yaml": {"/v1/responses/compact": 1},
    "pydantic-ai__openai_responses_background_retrieval.yaml": {
        "/v1/responses/resp_0e6b15873828668f00698b9df63cb08196a7f29ecc4788d6b6": 1
    },
}
#: Why those exchanges are no model call, where it is not "not a model endpoint".
NON_LLM_REASONS = {
    "pydantic-ai__openai_responses_compact_endpoint.yaml": [
        "compacts the history of conversation 1"
    ],
    "pydantic-ai__openai_responses_background_retrieval.yaml": [
        "a poll of background response "
        "resp_0e6b15873828668f00698b9df63cb08196a7f29ecc4788d6b6 (in_progress)"
    ],
}


@pytest.mark.parametrize(
    "path",
    [
        p
        for p in PARAMS
        if p.values[0] is None or cast(Path, p.values[0]).name not in NO_CONVERSATION
    ]
    + OWN_PARAMS,
)
def test_cassette_yields_the_snapshotted_contexts(path: Path, agent_snapshot) -> None:
    runs = contexts_from_cassette(path)

    assert runs.contexts
    assert all(isinstance(context, AgentContext) for context in runs.contexts)
    assert runs.contexts == agent_snapshot


@pytest.mark.parametrize("path", PARAMS + OWN_PARAMS)
def test_cassette_lists_its_other_exchanges(path: Path) -> None:
    runs = contexts_from_cassette(path)

    counts: dict[str, int] = {}
    for exchange in runs.non_llm:
        counts[exchange.path] = counts.get(exchange.path, 0) + 1
    if path.name in NO_CONVERSATION_PATHS:
        assert counts
        assert all(p.startswith(NO_CONVERSATION_PATHS[path.name]) for p in counts)
    else:
        assert counts == NON_LLM.get(path.name, {})
    expected = NON_LLM_REASONS.get(path.name, ["not a model endpoint"] * len(runs.non_llm))
    assert runs.non_llm_reasons == expected


@pytest.mark.parametrize("name", sorted(NO_CONVERSATION))
def test_a_file_without_conversation_has_no_model_call(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(SKIP_REASON)

    runs = contexts_from_cassette(path)

    assert runs.contexts == []
    assert len(runs.non_llm) == len(runs.exchanges) == 25


def test_capture_of_the_corpus_is_the_same_every_time() -> None:
    files = FILES + [cast(Path, param.values[0]) for param in OWN_PARAMS]
    first = [[c.model_dump_json() for c in contexts_from_cassette(path).contexts] for path in files]
    second = [
        [c.model_dump_json() for c in contexts_from_cassette(path).contexts] for path in files
    ]

    assert first == second


# -- the defects real traffic showed, checked field by field ------------------------------


def _own(name: str) -> CapturedRuns:
    return contexts_from_cassette(OWN_CORPUS / name)


def _shape(runs: CapturedRuns) -> list[list[list[str]]]:
    """The roles of each iteration's messages, per context."""
    return [[[m.role for m in it.messages] for it in c.iterations] for c in runs.contexts]


@pytest.mark.parametrize(
    ("name", "shape"),
    [
        # OpenRouter chat completions: the marker on the system blocks, the newest message
        # and the last tool; the tool result's call was a sub-agent's start before
        (
            "pydantic-ai__openrouter_chat_cache_marker_moves_tools.yaml",
            [
                [["system", "user", "assistant", "tool"], ["assistant"]],
                [["system", "user", "assistant"]],
            ],
        ),
        # Anthropic: the marker moves from the first user turn's text block to the next one
        (
            "pydantic-ai__anthropic_cache_marker_moves_code_execution_files.yaml",
            [[["system", "user", "assistant"], ["user", "assistant"]]],
        ),
        # a string turned into a marked text block, and back to a string on the next call
        (
            "pydantic-ai__openrouter_chat_cache_marker_string_to_block.yaml",
            [[["system", "user", "assistant"], ["user", "assistant"]]],
        ),
        # Bedrock Converse: a cachePoint block moves from the first message to the newest
        (
            "pydantic-ai__bedrock_converse_cache_point_moves.yaml",
            [
                [
                    ["system", "user", "user", "user", "user", "user", "assistant"],
                    ["user", "assistant"],
                ]
            ],
        ),
    ],
)
def test_a_moved_cache_marker_keeps_the_conversation_whole(name, shape) -> None:
    runs = _own(name)

    assert _shape(runs) == shape
    assert all("subagents" not in it.metadata for c in runs.contexts for it in c.iterations)


@pytest.mark.parametrize(
    "name",
    [
        "pydantic-ai__deepseek_responses_bare_path_tool.yaml",
        "pydantic-ai__deepseek_responses_bare_path_tool_stream.yaml",
    ],
)
def test_responses_at_a_bare_path_are_model_calls(name) -> None:
    runs = _own(name)

    assert [e.path for e in runs.exchanges] == ["/responses", "/responses"]
    assert runs.non_llm == []
    first, second = runs.context.iterations
    assert first.metadata["provider"] == "openai-responses"
    assert [(c.name, dict(c.arguments)) for c in first.tool_calls] == [
        ("get_temperature", {"city": "Tokyo"})
    ]
    assert [m.role for m in first.messages] == ["user", "assistant", "tool"]
    assert "21.0" in (second.messages[0].content or "")


def test_an_azure_deployment_path_is_a_model_call_and_a_filtered_reply_has_no_text() -> None:
    runs = _own("openllmetry__azure_openai_chat_deployment_content_filter.yaml")

    assert runs.non_llm == []
    filtered = runs.contexts[0].iterations[0]
    assert filtered.metadata["stop_reason"] == "content_filter"
    assert [(m.role, m.content) for m in filtered.messages] == [
        ("user", "Tell me a joke about opentelemetry"),
        ("assistant", None),
    ]
    assert [c.iterations[0].metadata["stop_reason"] for c in runs.contexts[1:]] == ["stop"] * 3


def test_the_text_blocks_of_a_user_turn_stay_apart() -> None:
    runs = _own("pydantic-ai__anthropic_user_turn_two_text_blocks.yaml")

    assert [(m.role, m.content) for m in runs.context.iterations[0].messages[3:5]] == [
        (
            "user",
            "<system>From now on, every suggestion must include explicit type "
            "annotations.</system>",
        ),
        ("user", "Review it again."),
    ]


def test_texts_a_server_tool_stands_between_are_paragraphs_and_the_tool_is_listed() -> None:
    iteration = _own("pydantic-ai__anthropic_tool_search_text_blocks.yaml").context.iterations[0]

    assert [m.content for m in iteration.messages[:2]] == [
        "Find the exchange-rate tool.",
        "Acknowledge the available exchange-rate tool without calling it.",
    ]
    reply = iteration.messages[2].content or ""
    assert reply.startswith("I'll search for the exchange-rate tool.\n\nI found the exchange-rate")
    assert [(t["name"], t["input"]) for t in iteration.metadata["server_tools"]] == [
        ("tool_search_tool_bm25", {"query": "exchange rate currency conversion"})
    ]
    assert iteration.tool_calls == []


@pytest.mark.parametrize(
    ("name", "searches"),
    [
        (
            "pydantic-ai__anthropic_web_search_two_turns.yaml",
            [["San Francisco weather today"], ["Mexico City weather today"]],
        ),
        (
            "pydantic-ai__openai_responses_web_search_two_turns.yaml",
            [["weather: San Francisco, CA"], ["weather: Mexico City, Mexico"]],
        ),
        (
            "pydantic-ai__groq_chat_compound_web_search.yaml",
            [["What is the weather in San Francisco today?"]],
        ),
    ],
)
def test_a_web_search_the_provider_ran_is_a_server_tool_of_its_iteration(name, searches) -> None:
    context = _own(name).context

    assert [
        [tool["input"]["query"] for tool in it.metadata["server_tools"]]
        for it in context.iterations
    ] == searches
    assert all(it.tool_calls == [] for it in context.iterations)


def test_a_background_response_gets_its_reply_from_the_retrieval_that_finds_it_done() -> None:
    runs = _own("pydantic-ai__openai_responses_background_retrieval.yaml")

    assert _shape(runs) == [[["user", "assistant", "tool"], ["assistant"]]]
    assert runs.context.final_output == (
        "The weather in Paris is currently sunny with a temperature of 72°F."
    )


def test_a_compacted_history_sent_back_continues_its_conversation() -> None:
    runs = _own("pydantic-ai__openai_responses_compact_endpoint.yaml")

    assert [[m.content for m in it.messages] for it in runs.context.iterations] == [
        ["You are a helpful math assistant. Give short answers.", "What is 2+2?", "2 + 2 = 4."],
        ["And 3+3?", "3 + 3 = 6."],
        ["And 5+5?", "5 + 5 = 10"],
    ]


def test_the_text_parts_of_a_responses_user_message_stay_apart() -> None:
    runs = _own("pydantic-ai__openrouter_responses_two_runs.yaml")

    for context in runs.contexts:
        catalogue, question, answer = context.iterations[0].messages
        assert (catalogue.role, question.role, answer.role) == ("user", "user", "assistant")
        assert (catalogue.content or "").endswith("catalogued under subject heading 5.")
        assert (question.content, answer.content) == ("Reply with exactly: OK", "OK")

"""Every cassette of the compatibility corpus yields the contexts of its conversations.

The corpus (``shared/corpus/`` beside the checkout; its ``MANIFEST.md`` names the source of
every file) holds 36 vcrpy cassettes recorded against the real APIs by pydantic-ai,
simonw/llm, crewAI, LangSmith, OpenLLMetry, OpenInference and OpenTelemetry. Capture reads
each one (:func:`contexts_from_cassette`) and the contexts are compared with a reviewed
snapshot under ``__snapshots__/test_corpus_contexts/``. A file that holds no agent
conversation is listed in :data:`NO_CONVERSATION` with the reason, and the test checks
that reason. ``pytest --snapshot-update tests/integration/test_corpus_contexts.py``
rewrites the snapshots after a reviewed change of capture.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agentctx import AgentContext, contexts_from_cassette

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
}


@pytest.mark.parametrize(
    "path", [p for p in PARAMS if p.values[0] is None or p.values[0].name not in NO_CONVERSATION]
)
def test_cassette_yields_the_snapshotted_contexts(path: Path, agent_snapshot) -> None:
    runs = contexts_from_cassette(path)

    assert runs.contexts
    assert all(isinstance(context, AgentContext) for context in runs.contexts)
    assert runs.contexts == agent_snapshot


@pytest.mark.parametrize("path", PARAMS)
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
    assert set(runs.non_llm_reasons) <= {"not a model endpoint"}


@pytest.mark.parametrize("name", sorted(NO_CONVERSATION))
def test_a_file_without_conversation_has_no_model_call(name: str) -> None:
    path = CORPUS / name
    if not path.exists():
        pytest.skip(SKIP_REASON)

    runs = contexts_from_cassette(path)

    assert runs.contexts == []
    assert len(runs.non_llm) == len(runs.exchanges) == 25


@pytest.mark.skipif(not FILES, reason=SKIP_REASON)
def test_capture_of_the_corpus_is_the_same_every_time() -> None:
    first = [[c.model_dump_json() for c in contexts_from_cassette(path).contexts] for path in FILES]
    second = [
        [c.model_dump_json() for c in contexts_from_cassette(path).contexts] for path in FILES
    ]

    assert first == second

"""Unit tests for pytest_agentctx.runtime.retrieval: the VectorSearch protocol and
the in-memory store."""

from __future__ import annotations

import re
from typing import Any

import pytest

from pytest_agentctx.assertions.patterns.base import AnyOf, Regex
from pytest_agentctx.runtime.errors import VectorStoreError
from pytest_agentctx.runtime.retrieval import (
    Document,
    InMemoryVectorStore,
    SearchCall,
    SearchResult,
    VectorSearch,
    tokenize,
)


def seeded() -> InMemoryVectorStore:
    return InMemoryVectorStore().add(
        "kb",
        [
            Document("refunds", "Refunds take five days.", {"lang": "en", "topic": "billing"}),
            Document("shipping", "Shipping takes two days.", {"lang": "en", "topic": "orders"}),
            Document("remboursements", "Les remboursements prennent cinq jours.", {"lang": "fr"}),
        ],
    )


async def ranked(store: InMemoryVectorStore, query: str, **options: Any) -> list[tuple[str, float]]:
    options.setdefault("top_k", 10)
    return [(r.source_id, r.score) for r in await store.search("kb", query, **options)]


# -- documents and results ----------------------------------------------------------------


def test_document_metadata_is_a_read_only_copy() -> None:
    metadata = {"lang": "en"}
    document = Document("a", "text", metadata)
    metadata["lang"] = "fr"

    with pytest.raises(TypeError):
        document.metadata["lang"] = "de"  # type: ignore[index]
    assert document.metadata == {"lang": "en"}


def test_document_without_an_id_is_refused_with_an_example() -> None:
    with pytest.raises(VectorStoreError, match=r"Document\(id=''\).*'faq-1'"):
        Document("", "text")


def test_document_with_non_text_is_refused() -> None:
    with pytest.raises(VectorStoreError, match="text is int 3; expected a string"):
        Document("a", 3)  # type: ignore[arg-type]


def test_document_with_non_mapping_metadata_is_refused() -> None:
    with pytest.raises(VectorStoreError, match="metadata is list; expected a mapping"):
        Document("a", "text", ["en"])  # type: ignore[arg-type]


def test_documents_and_results_can_be_hashed() -> None:
    document = Document("a", "text", {"lang": "en"})

    assert len({document, Document("a", "text", {"lang": "en"}), SearchResult(document, 1.0)}) == 2


def test_a_single_document_can_be_added_without_a_list() -> None:
    # add() takes one Document as well, which its annotation (an iterable) leaves out
    store = InMemoryVectorStore().add("kb", Document("a", "text"))  # type: ignore[arg-type]

    assert [d.id for d in store.documents("kb")] == ["a"]


def test_search_result_source_id_is_the_document_id() -> None:
    assert SearchResult(Document("faq-1", "text"), 0.5).source_id == "faq-1"


@pytest.mark.parametrize("score", [-0.1, 1.5, True])
def test_search_result_score_outside_zero_to_one_is_refused(score: float) -> None:
    with pytest.raises(VectorStoreError, match=r"expected a number from 0 to 1.*normalise"):
        SearchResult(Document("a", "text"), score)


def test_in_memory_store_satisfies_the_vector_search_protocol() -> None:
    assert isinstance(InMemoryVectorStore(), VectorSearch)


# -- scores -------------------------------------------------------------------------------


def test_tokens_are_casefolded_words_of_any_script() -> None:
    assert tokenize("Réunion, STRASSE und straße: 42_b!") == [
        "réunion",
        "strasse",
        "und",
        "strasse",
        "42_b",
    ]


async def test_score_is_the_cosine_of_word_counts_rounded_to_six_digits() -> None:
    # query {refunds, take, days}; refunds {refunds, take, five, days}: 3 / (sqrt 3 * 2)
    assert await ranked(seeded(), "refunds take days") == [
        ("refunds", 0.866025),
        ("shipping", 0.288675),
        ("remboursements", 0.0),
    ]


async def test_same_words_in_the_same_proportions_score_one() -> None:
    assert (await ranked(seeded(), "days FIVE take refunds", top_k=1)) == [("refunds", 1.0)]


async def test_equal_scores_are_ordered_by_document_id() -> None:
    store = InMemoryVectorStore().add(
        "kb", [Document("b", "apple pie"), Document("c", "apple tart"), Document("a", "apple")]
    )

    assert await ranked(store, "pie tart") == [("b", 0.5), ("c", 0.5), ("a", 0.0)]


async def test_the_same_search_gives_the_same_results_every_time() -> None:
    store = seeded()

    runs = [await ranked(store, "how long do refunds take") for _ in range(3)]

    assert runs[0] == runs[1] == runs[2]


async def test_a_query_without_words_scores_every_document_zero() -> None:
    assert [score for _, score in await ranked(seeded(), "?!")] == [0.0, 0.0, 0.0]


# -- top_k, min_relevance, filters --------------------------------------------------------


async def test_top_k_keeps_the_best_documents() -> None:
    assert await ranked(seeded(), "refunds take days", top_k=1) == [("refunds", 0.866025)]


async def test_min_relevance_drops_documents_scoring_below_it() -> None:
    assert await ranked(seeded(), "refunds take days", min_relevance=0.3) == [("refunds", 0.866025)]


async def test_min_relevance_keeps_a_document_scoring_exactly_it() -> None:
    assert await ranked(seeded(), "refunds take days", min_relevance=0.288675) == [
        ("refunds", 0.866025),
        ("shipping", 0.288675),
    ]


async def test_filters_keep_documents_with_equal_metadata_values() -> None:
    assert await ranked(seeded(), "days", filters={"topic": "orders"}) == [("shipping", 0.5)]


async def test_every_filter_key_must_match() -> None:
    assert await ranked(seeded(), "days", filters={"lang": "en", "topic": "nothing"}) == []


async def test_a_document_without_the_filter_key_never_matches() -> None:
    assert [
        i for i, _ in await ranked(seeded(), "days", filters={"topic": AnyOf("billing", "x")})
    ] == ["refunds"]


async def test_a_filter_value_may_be_a_pattern() -> None:
    found = await ranked(seeded(), "days", filters={"lang": Regex(r"f.")})

    assert [source_id for source_id, _ in found] == ["remboursements"]


# -- the ledger ---------------------------------------------------------------------------


async def test_every_search_is_recorded_with_its_results() -> None:
    store = seeded()

    await store.search("kb", "refunds", top_k=1, filters={"lang": "en"})

    match store.searches:
        case [SearchCall(collection="kb", query="refunds", top_k=1, min_relevance=0.0) as call]:
            assert (call.source_ids, dict(call.filters or {})) == (["refunds"], {"lang": "en"})
        case other:
            pytest.fail(f"unexpected searches: {other!r}")


# -- errors -------------------------------------------------------------------------------


async def test_an_unknown_collection_lists_the_known_ones() -> None:
    store = seeded().add("faq", [Document("q1", "question")])

    with pytest.raises(
        VectorStoreError,
        match=re.escape("Unknown collection 'docs'; the store holds: 'faq', 'kb'. Seed it"),
    ):
        await store.search("docs", "anything", top_k=1)


async def test_an_empty_store_says_it_holds_no_collection_yet() -> None:
    with pytest.raises(VectorStoreError, match="holds: none yet"):
        await InMemoryVectorStore().search("kb", "anything", top_k=1)


@pytest.mark.parametrize("top_k", [0, -1, 1.5, True])
async def test_top_k_below_one_or_not_a_whole_number_is_refused(top_k: Any) -> None:
    with pytest.raises(VectorStoreError, match=rf"top_k={top_k!r}; expected a whole number"):
        await seeded().search("kb", "days", top_k=top_k)


@pytest.mark.parametrize("min_relevance", [-0.01, 1.01, "0.5"])
async def test_min_relevance_outside_zero_to_one_is_refused(min_relevance: Any) -> None:
    with pytest.raises(VectorStoreError, match="expected a number from 0 to 1"):
        await seeded().search("kb", "days", top_k=1, min_relevance=min_relevance)


async def test_a_query_that_is_not_text_is_refused() -> None:
    with pytest.raises(VectorStoreError, match="query is int 3; expected a string"):
        await seeded().search("kb", 3, top_k=1)  # type: ignore[arg-type]


async def test_filters_that_are_not_a_mapping_are_refused() -> None:
    with pytest.raises(VectorStoreError, match="expected a mapping of metadata keys"):
        await seeded().search("kb", "days", top_k=1, filters=["lang"])  # type: ignore[arg-type]


def test_adding_an_id_twice_to_a_collection_is_refused() -> None:
    with pytest.raises(VectorStoreError, match=r"already holds a document 'refunds'.*remove"):
        seeded().add("kb", [Document("refunds", "again")])


def test_a_batch_with_a_duplicate_id_adds_nothing() -> None:
    store = InMemoryVectorStore()

    with pytest.raises(VectorStoreError, match="already holds a document 'a'"):
        store.add("kb", [Document("a", "one"), Document("a", "two")])
    assert store.documents("kb") == []


def test_adding_something_else_than_documents_is_refused_with_an_example() -> None:
    with pytest.raises(VectorStoreError, match=r"got str 'text'; expected Document objects"):
        InMemoryVectorStore().add("kb", ["text"])  # type: ignore[list-item]


# -- managing documents -------------------------------------------------------------------


def test_remove_then_add_replaces_a_document() -> None:
    store = seeded()

    store.remove("kb", "refunds")
    store.add("kb", [Document("refunds", "Refunds take ten days.")])

    assert [d.text for d in store.documents("kb") if d.id == "refunds"] == [
        "Refunds take ten days."
    ]


def test_removing_an_unknown_document_lists_the_ids() -> None:
    with pytest.raises(VectorStoreError, match="its ids: refunds, remboursements, shipping"):
        seeded().remove("kb", "nope")


def test_collections_can_be_seeded_at_construction_and_are_listed_sorted() -> None:
    store = InMemoryVectorStore({"z": [Document("1", "x")], "a": [Document("2", "y")]})

    assert (store.collections, repr(store)) == (["a", "z"], "InMemoryVectorStore({a: 1, z: 1})")

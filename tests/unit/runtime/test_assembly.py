"""Unit tests for pytest_agentctx.runtime.assembly: context sources, their validation, assembly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional, TypedDict

import pytest
from pydantic import BaseModel

from pytest_agentctx.assertions.patterns.base import ANY
from pytest_agentctx.assertions.patterns.report import matches
from pytest_agentctx.runtime.assembly import (
    AssembledContext,
    FromRetrieval,
    FromState,
    Segment,
    Text,
    assemble,
    validate_sources,
)
from pytest_agentctx.runtime.errors import (
    AgentDefinitionError,
    ContextAssemblyError,
    ContextAssemblyFailed,
    VectorStoreError,
)
from pytest_agentctx.runtime.retrieval import Document, InMemoryVectorStore


@dataclass
class Customer:
    name: str
    plan: str


@dataclass
class Ticket:
    customer: Customer
    question: str
    notes: dict[str, Any] = field(default_factory=dict)
    previous: Ticket | None = None
    legacy: Optional[Customer] = None  # noqa: UP045 - the older spelling is tested

    @property
    def owner(self) -> Customer:
        return self.customer


class Account(BaseModel):
    owner: str
    tier: str


class Session(BaseModel):
    account: Account
    query: str


class Order(TypedDict):
    number: str
    status: str


class Bag(TypedDict):
    order: Order


def ticket(**changes: Any) -> Ticket:
    values: dict[str, Any] = {
        "customer": Customer("Ada", "pro"),
        "question": "how long do refunds take",
    }
    return Ticket(**{**values, **changes})


def store() -> InMemoryVectorStore:
    return InMemoryVectorStore().add(
        "kb",
        [
            Document("refunds", "Refunds take five days.", {"lang": "en"}),
            Document("shipping", "Shipping takes two days.", {"lang": "en"}),
        ],
    )


# -- sources: checks when they are written ------------------------------------------------


@pytest.mark.parametrize("path", ["", "customer..plan", "1st", "customer.plan.", "a-b", 3])
def test_from_state_path_must_be_dotted_names(path: Any) -> None:
    with pytest.raises(ContextAssemblyError, match="is not an attribute path"):
        FromState(path)


def test_context_assembly_error_is_an_agent_definition_error() -> None:
    assert issubclass(ContextAssemblyError, AgentDefinitionError)


def test_an_empty_label_is_refused() -> None:
    with pytest.raises(ContextAssemblyError, match=r"label=' '; expected a non-empty string"):
        FromState("customer", label=" ")


def test_from_retrieval_with_both_query_and_query_from_is_refused() -> None:
    with pytest.raises(ContextAssemblyError, match="was given both of query= and query_from="):
        FromRetrieval("kb", query="refunds", query_from="question")


def test_from_retrieval_with_neither_query_nor_query_from_is_refused() -> None:
    with pytest.raises(ContextAssemblyError, match="was given neither of query= and"):
        FromRetrieval("kb")


@pytest.mark.parametrize("top_k", [0, -3, 2.0, True])
def test_from_retrieval_top_k_must_be_a_whole_number_of_at_least_one(top_k: Any) -> None:
    with pytest.raises(ContextAssemblyError, match=rf"top_k={top_k!r}; expected a whole number"):
        FromRetrieval("kb", query="refunds", top_k=top_k)


@pytest.mark.parametrize("min_relevance", [-0.1, 1.1, "0.5", False])
def test_from_retrieval_min_relevance_must_be_from_zero_to_one(min_relevance: Any) -> None:
    with pytest.raises(ContextAssemblyError, match="expected a number from 0 to 1"):
        FromRetrieval("kb", query="refunds", min_relevance=min_relevance)


def test_from_retrieval_query_from_must_be_a_path() -> None:
    with pytest.raises(ContextAssemblyError, match=r"query_from='ticket question'"):
        FromRetrieval("kb", query_from="ticket question")


def test_from_retrieval_needs_a_collection_name() -> None:
    with pytest.raises(ContextAssemblyError, match="expected the non-empty name of a collection"):
        FromRetrieval("", query="refunds")


def test_from_retrieval_literal_query_must_be_text() -> None:
    with pytest.raises(ContextAssemblyError, match="query=3; expected text"):
        FromRetrieval("kb", query=3)  # type: ignore[arg-type]


def test_from_retrieval_filters_must_map_keys_to_values() -> None:
    with pytest.raises(ContextAssemblyError, match="filters=\\['en'\\]; expected a mapping"):
        FromRetrieval("kb", query="x", filters=["en"])  # type: ignore[arg-type]


def test_from_retrieval_filters_are_a_read_only_copy() -> None:
    filters = {"lang": "en"}
    source = FromRetrieval("kb", query="x", filters=filters)
    filters["lang"] = "fr"

    assert source.filters == {"lang": "en"}


def test_sources_can_be_hashed_even_with_filters() -> None:
    sources = {
        FromRetrieval("kb", query="x", filters={"lang": "en"}),
        FromRetrieval("kb", query="x", filters={"lang": "en"}),
        FromState("customer"),
        Text("Be brief."),
    }

    assert len(sources) == 3


def test_text_must_be_a_string() -> None:
    with pytest.raises(ContextAssemblyError, match="expected a string; use FromState"):
        Text(42)  # type: ignore[arg-type]


# -- validate_sources ---------------------------------------------------------------------


def test_validate_sources_returns_the_sources_as_a_tuple() -> None:
    sources: list[FromState | FromRetrieval | Text] = [
        FromState("customer.plan"),
        Text("Be brief."),
    ]

    assert validate_sources(sources, Ticket) == (FromState("customer.plan"), Text("Be brief."))


def test_a_path_missing_from_the_state_type_names_the_type_and_its_attributes() -> None:
    with pytest.raises(
        ContextAssemblyError,
        match=r"FromState\('customer.plann'\): state.customer \(Customer\) has no "
        r"attribute 'plann'. Its attributes: name, plan.",
    ):
        validate_sources([FromState("customer.plann")], Ticket)


def test_a_query_from_path_is_checked_against_the_state_type() -> None:
    with pytest.raises(ContextAssemblyError, match=r"query_from='questions'\).*no attribute"):
        validate_sources([FromRetrieval("kb", query_from="questions")], Ticket)


@pytest.mark.parametrize("path", ["previous.customer.plan", "legacy.name"])
def test_optional_attributes_are_checked_through(path: str) -> None:
    assert validate_sources([FromState(path)], Ticket) == (FromState(path),)


@pytest.mark.parametrize("path", ["previous.customer.plann", "legacy.nam"])
def test_a_bad_name_below_an_optional_attribute_is_refused(path: str) -> None:
    with pytest.raises(ContextAssemblyError, match="has no attribute"):
        validate_sources([FromState(path)], Ticket)


def test_a_property_is_an_attribute_and_its_return_type_is_checked_through() -> None:
    with pytest.raises(ContextAssemblyError, match=r"state\.owner \(Customer\) has no"):
        validate_sources([FromState("owner.plann")], Ticket)


def test_a_path_through_a_property_is_accepted() -> None:
    assert validate_sources([FromState("owner.plan")], Ticket) == (FromState("owner.plan"),)


def test_paths_below_a_type_without_annotations_are_not_checked() -> None:
    assert validate_sources([FromState("notes.anything.at.all")], Ticket) == (
        FromState("notes.anything.at.all"),
    )


def test_pydantic_model_fields_are_checked() -> None:
    with pytest.raises(ContextAssemblyError, match=r"state\.account \(Account\).*owner, tier"):
        validate_sources([FromState("account.plan")], Session)


def test_typed_dict_keys_are_checked() -> None:
    with pytest.raises(ContextAssemblyError, match=r"state\.order \(Order\).*number, status"):
        validate_sources([FromState("order.state")], Bag)


def test_without_a_state_type_only_the_syntax_is_checked() -> None:
    assert validate_sources([FromState("anything.goes")]) == (FromState("anything.goes"),)


def test_a_plain_string_source_gets_a_hint_to_wrap_it_in_text() -> None:
    with pytest.raises(ContextAssemblyError, match=r"\[1\] is str 'Be brief.'.*Text\('...'\)"):
        validate_sources([FromState("customer"), "Be brief."])  # type: ignore[list-item]


def test_a_single_source_instead_of_a_list_is_refused() -> None:
    with pytest.raises(ContextAssemblyError, match="must be a list, got FromState"):
        validate_sources(FromState("customer"))  # type: ignore[arg-type]


# -- assemble -----------------------------------------------------------------------------


async def test_assembled_text_has_one_heading_per_segment_in_order() -> None:
    context = await assemble(
        [
            FromState("customer.plan", label="Plan"),
            FromRetrieval("kb", query_from="question", top_k=1),
            Text("Answer in one sentence."),
        ],
        state=ticket(),
        store=store(),
    )

    assert context.text == (
        "## Plan\npro\n\n"
        "## kb\n[1] refunds (score 0.447)\nRefunds take five days.\n\n"
        "## Notes\nAnswer in one sentence."
    )


async def test_metadata_records_each_segment_and_each_result_with_score_and_rank() -> None:
    context = await assemble(
        [FromState("customer.plan"), FromRetrieval("kb", query="refunds take days", top_k=2)],
        state=ticket(),
        store=store(),
    )

    assert context.metadata() == {
        "segments": [
            {
                "kind": "state",
                "label": "customer.plan",
                "path": "customer.plan",
                "text": "pro",
                "chars": 3,
            },
            {
                "kind": "retrieval",
                "label": "kb",
                "collection": "kb",
                "query": "refunds take days",
                "results": [
                    {"collection": "kb", "source_id": "refunds", "score": 0.866025, "rank": 1},
                    {"collection": "kb", "source_id": "shipping", "score": 0.288675, "rank": 2},
                ],
                "chars": len(context.segments[1].text),
            },
        ],
        "chars": len(context.text),
    }


async def test_retrieval_passes_top_k_min_relevance_and_filters_to_the_store() -> None:
    vectors = store()

    await assemble(
        [FromRetrieval("kb", query="days", top_k=2, min_relevance=0.2, filters={"lang": "en"})],
        state=None,
        store=vectors,
    )

    assert matches(
        vectors.searches,
        [{"collection": "kb", "top_k": 2, "min_relevance": 0.2, "filters": {"lang": "en"}}],
    )


async def test_a_retrieval_without_results_says_so() -> None:
    context = await assemble(
        [FromRetrieval("kb", query="weather", min_relevance=0.5)], state=None, store=store()
    )

    assert (context.text, context.source_ids) == ("## kb\n(no documents found)", [])


async def test_state_values_that_are_not_text_are_rendered_as_json() -> None:
    context = await assemble(
        [FromState("customer"), FromState("notes")],
        state=ticket(notes={"b": 1, "a": [True, None]}),
        store=None,
    )

    assert [s.text for s in context.segments] == [
        '{"name": "Ada", "plan": "pro"}',
        '{"a": [true, null], "b": 1}',
    ]


async def test_a_mapping_state_is_read_by_key() -> None:
    context = await assemble(
        [FromState("order.status")], state={"order": {"status": "shipped"}}, store=None
    )

    assert context.segments == (Segment("state", "order.status", "shipped", path="order.status"),)


async def test_a_pydantic_state_is_read_by_attribute() -> None:
    state = Session(account=Account(owner="Ada", tier="gold"), query="refunds")

    context = await assemble([FromState("account.tier", label="Tier")], state=state, store=None)

    assert context.text == "## Tier\ngold"


async def test_no_sources_assemble_to_an_empty_context() -> None:
    context = await assemble([], state=None, store=None)

    assert (bool(context), context.text, context.metadata()) == (
        False,
        "",
        {"segments": [], "chars": 0},
    )


async def test_the_same_sources_assemble_the_same_bytes_every_time() -> None:
    sources: list[FromState | FromRetrieval | Text] = [
        FromState("customer"),
        FromRetrieval("kb", query_from="question"),
    ]

    texts = {(await assemble(sources, state=ticket(), store=store())).text for _ in range(3)}

    assert len(texts) == 1


# -- errors during a run ------------------------------------------------------------------


async def test_a_state_missing_an_attribute_at_run_time_names_what_it_has() -> None:
    with pytest.raises(
        ContextAssemblyFailed,
        match=r"FromState\('customer.tier'\): state.customer \(Customer\) has no attribute "
        r"'tier'; it has: name, plan.",
    ):
        await assemble([FromState("customer.tier")], state=ticket(), store=None)


async def test_a_none_on_the_way_stops_with_the_path_that_is_none() -> None:
    with pytest.raises(
        ContextAssemblyFailed, match=r"state.previous is None, so 'previous.question'"
    ):
        await assemble([FromState("previous.question")], state=ticket(), store=None)


async def test_a_missing_key_of_a_mapping_state_lists_its_keys() -> None:
    with pytest.raises(
        ContextAssemblyFailed, match=r"state \(dict\) has no attribute 'plan'; it has: tier"
    ):
        await assemble([FromState("plan")], state={"tier": "gold"}, store=None)


async def test_a_retrieval_source_without_a_store_says_how_to_give_one() -> None:
    with pytest.raises(
        ContextAssemblyFailed,
        match=r"FromRetrieval\('kb'\) needs a vector store.*fake_vector_store",
    ):
        await assemble([FromRetrieval("kb", query="refunds")], state=None, store=None)


async def test_a_query_from_the_state_that_is_not_text_is_refused() -> None:
    with pytest.raises(ContextAssemblyFailed, match=r"state.customer is a Customer, not text"):
        await assemble([FromRetrieval("kb", query_from="customer")], state=ticket(), store=store())


async def test_an_unknown_collection_error_of_the_store_propagates() -> None:
    with pytest.raises(VectorStoreError, match="Unknown collection 'docs'"):
        await assemble([FromRetrieval("docs", query="refunds")], state=None, store=store())


def test_an_assembled_context_can_be_built_from_segments() -> None:
    context = AssembledContext((Segment("text", "Style", "Be brief."),))

    assert (context.text, context.metadata()["segments"]) == (
        "## Style\nBe brief.",
        [{"kind": "text", "label": "Style", "text": "Be brief.", "chars": 9}],
    )


async def test_results_of_a_store_beyond_top_k_are_cut() -> None:
    class Generous:
        async def search(self, collection: str, query: str, **options: Any) -> list[Any]:
            vectors = store()
            return await vectors.search(collection, query, top_k=10)

    context = await assemble(
        [FromRetrieval("kb", query="days", top_k=1)], state=None, store=Generous()
    )

    assert matches(context.metadata()["segments"], [{"results": [{"rank": 1, "source_id": ANY}]}])

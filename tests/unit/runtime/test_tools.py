"""Unit tests for pytest_agentctx.runtime.tools: functions whose signature becomes the tool schema.

No ``from __future__ import annotations`` here: tools defined inside a test would then carry
string annotations that name test-local classes, which ``get_type_hints`` cannot resolve.
"""

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Optional

import pytest
from pydantic import BaseModel, Field, ValidationError

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY, ToolCall
from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.runtime.errors import ToolDefinitionError
from pytest_agentctx.runtime.tools import RunContext, Tool, render_tool_output, tool


def properties(t: Tool[Any]) -> dict[str, Any]:
    """The ``properties`` of a tool's JSON schema (the schema's values are ``object``)."""
    found = t.parameters["properties"]
    assert isinstance(found, dict)
    return found


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city.

    Args:
        city: The city's name.
        unit: "celsius" or
            "fahrenheit".

    Returns:
        A short report.
    """
    return f"18 degrees {unit} in {city}"


@tool
async def get_time(timezone: str) -> str:
    """The time in a timezone."""
    return f"12:00 in {timezone}"


@tool
def convert(amount: float, ctx: RunContext) -> str:
    """Convert an amount to the caller's currency."""
    return f"{amount} {ctx.deps['currency']} at iteration {ctx.iteration}"


@tool
async def greet(ctx: RunContext, name: str) -> str:
    return f"Hello {name}, from {ctx.actor}"


class Address(BaseModel):
    street: str
    number: int = 1


class Point:
    def __init__(self, x: int, y: int) -> None:
        self.x, self.y = x, y

    def __repr__(self) -> str:
        return f"Point({self.x}, {self.y})"


@dataclass
class Pair:
    left: int
    right: int


def run_context(**changes: Any) -> RunContext:
    values: dict[str, Any] = {
        "agent": "weather-agent",
        "iteration": 2,
        "tool_call": ToolCall(id="call_1", name="convert", arguments={"amount": 3}),
        "clock": StepClock(),
        "ids": SequentialIds(),
        "deps": {"currency": "EUR"},
    }
    return RunContext(**{**values, **changes})


# -- definition and schema ---------------------------------------------------------------


def test_tool_decorator_turns_a_function_into_a_tool_named_after_it() -> None:
    assert (isinstance(get_weather, Tool), get_weather.name, repr(get_weather)) == (
        True,
        "get_weather",
        "Tool(name='get_weather')",
    )


def test_schema_comes_from_the_signature_and_the_docstring_args() -> None:
    assert get_weather.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city's name."},
            "unit": {
                "type": "string",
                "default": "celsius",
                "description": '"celsius" or "fahrenheit".',
            },
        },
        "required": ["city"],
        "additionalProperties": False,
    }


def test_description_is_the_docstring_without_its_sections() -> None:
    assert get_weather.description == "Current weather for a city."


def test_description_keeps_every_summary_paragraph() -> None:
    @tool
    def search(query: str) -> str:
        """Search the web.

        Results come from a fake index.

        Returns:
            The best hit.
        """
        return query

    assert search.description == "Search the web.\n\nResults come from a fake index."


def test_docstring_argument_with_a_type_in_parentheses_gets_its_description() -> None:
    @tool
    def search(query: str, limit: int = 3) -> str:
        """Search.

        Arguments:
            query (str): What to look for.
            limit (int, optional): How many hits.
        """
        return query

    assert {name: p["description"] for name, p in properties(search).items()} == {
        "query": "What to look for.",
        "limit": "How many hits.",
    }


def test_tool_without_docstring_has_an_empty_description_and_bare_properties() -> None:
    @tool
    def add(a: int, b: int) -> int:
        return a + b

    assert (add.description, properties(add)) == (
        "",
        {"a": {"type": "integer"}, "b": {"type": "integer"}},
    )


def test_tool_without_parameters_has_an_empty_object_schema() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert ping.parameters == {"type": "object", "properties": {}, "additionalProperties": False}


def test_spec_holds_the_name_description_and_schema() -> None:
    assert get_time.spec == ToolSpec(
        name="get_time",
        description="The time in a timezone.",
        parameters={
            "type": "object",
            "properties": {"timezone": {"type": "string"}},
            "required": ["timezone"],
            "additionalProperties": False,
        },
    )


def test_optional_parameter_with_none_default_is_nullable_and_not_required() -> None:
    @tool
    def forecast(city: str, days: int | None = None) -> str:
        return city

    assert (properties(forecast)["days"], forecast.parameters["required"]) == (
        {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        ["city"],
    )


def test_typing_optional_parameter_gives_the_same_schema_as_a_union_with_none() -> None:
    @tool
    def forecast(city: str, days: Optional[int] = None) -> str:  # noqa: UP045 - tested form
        return city

    assert properties(forecast)["days"] == {
        "anyOf": [{"type": "integer"}, {"type": "null"}],
        "default": None,
    }


def test_annotated_field_constraints_and_description_reach_the_schema() -> None:
    @tool
    def forecast(days: Annotated[int, Field(ge=1, le=7, description="How many days.")]) -> str:
        return str(days)

    assert properties(forecast)["days"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 7,
        "description": "How many days.",
    }


def test_annotated_constraints_are_enforced_on_validation() -> None:
    @tool
    def forecast(days: Annotated[int, Field(ge=1, le=7)]) -> str:
        return str(days)

    with pytest.raises(ValidationError, match="less than or equal to 7"):
        forecast.validate_arguments({"days": 8})


def test_pydantic_model_parameter_is_described_in_defs_and_validated_into_the_model() -> None:
    @tool
    def deliver(to: Address) -> str:
        return to.street

    assert (
        properties(deliver)["to"],
        deliver.validate_arguments({"to": {"street": "Main"}}),
    ) == (
        {"$ref": "#/$defs/Address"},
        {"to": Address(street="Main", number=1)},
    )


@pytest.mark.parametrize("name", ["schema", "json", "copy", "model_dump", "_limit"])
def test_parameter_names_that_clash_with_pydantic_models_still_work(name: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"def lookup({name}: str) -> str:\n    return {name}", namespace)

    lookup = tool(namespace["lookup"])

    assert (properties(lookup), lookup.validate_arguments({name: "x"})) == (
        {name: {"type": "string"}},
        {name: "x"},
    )


def test_run_context_parameter_is_left_out_of_the_schema() -> None:
    assert (convert.context_param, properties(convert)) == (
        "ctx",
        {"amount": {"type": "number"}},
    )


def test_tool_name_and_description_can_be_given_to_the_decorator() -> None:
    @tool(name="weather-now", description="Weather, now.")
    def fetch(city: str) -> str:
        """Ignored docstring."""
        return city

    assert (fetch.name, fetch.description) == ("weather-now", "Weather, now.")


def test_an_empty_description_given_to_the_decorator_replaces_the_docstring() -> None:
    @tool(description="")
    def fetch(city: str) -> str:
        """Ignored docstring."""
        return city

    assert fetch.description == ""


def test_a_name_of_64_allowed_characters_is_accepted() -> None:
    name = "a-b_C9" + "x" * 58

    assert Tool(get_weather.fn, name=name).name == name


@pytest.mark.parametrize(
    "name",
    ["get weather", "get.weather", "météo", "x" * 65, "get_weather\n"],
    ids=["space", "dot", "non-ascii", "65 characters", "trailing newline"],
)
def test_tool_names_providers_refuse_are_rejected(name: str) -> None:
    with pytest.raises(
        ToolDefinitionError,
        match=re.escape(
            f"Tool name {name!r} is not allowed: providers accept 1 to 64 letters, digits, "
            "'_' or '-'. Pass @tool(name='...') with such a name."
        ),
    ):
        tool(name=name)(get_weather.fn)


def test_a_lambda_is_rejected_for_its_name() -> None:
    with pytest.raises(ToolDefinitionError, match=r"Tool name '<lambda>' is not allowed"):
        tool(lambda city: city)


def test_something_that_is_not_callable_is_rejected() -> None:
    with pytest.raises(ToolDefinitionError, match=r"@tool needs a function, got int: 3\."):
        tool(3)  # type: ignore[call-overload]


def test_var_positional_parameter_is_rejected() -> None:
    def search(*queries: str) -> str:
        return ""

    with pytest.raises(
        ToolDefinitionError,
        match=r"tool 'search' \(.*search'\) takes \*queries: str; a tool's schema needs named "
        r"parameters only\. Replace \*args/\*\*kwargs with explicit parameters\.",
    ):
        tool(search)


def test_var_keyword_parameter_is_rejected() -> None:
    def search(query: str, **options: str) -> str:
        return query

    with pytest.raises(ToolDefinitionError, match=r"takes \*\*options: str; a tool's schema needs"):
        tool(search)


def test_parameter_without_annotation_is_rejected() -> None:
    def search(query, limit: int = 3) -> str:
        return str(query)

    with pytest.raises(
        ToolDefinitionError,
        match=r"Parameter 'query' of tool 'search' \(.*\) has no type annotation; the schema "
        r"needs one, for example `query: str`\.",
    ):
        tool(search)


def test_annotation_that_cannot_be_resolved_is_rejected() -> None:
    def search(query: "Undefined") -> str:  # type: ignore[name-defined]  # noqa: F821
        return str(query)

    with pytest.raises(
        ToolDefinitionError,
        match=r"Cannot read the signature of tool 'search' .*name 'Undefined' is not defined\. "
        r"Make every annotation importable at module level\.",
    ):
        tool(search)


def test_two_run_context_parameters_are_rejected() -> None:
    def both(first: RunContext, second: RunContext) -> str:
        return ""

    with pytest.raises(
        ToolDefinitionError,
        match=r"has two RunContext parameters \('first' and 'second'\); keep one\.",
    ):
        tool(both)


# -- validation --------------------------------------------------------------------------


def test_validate_arguments_fills_in_defaults() -> None:
    assert get_weather.validate_arguments({"city": "Paris"}) == {
        "city": "Paris",
        "unit": "celsius",
    }


def test_validate_arguments_rejects_a_wrong_type_with_a_pydantic_error() -> None:
    with pytest.raises(ValidationError, match=r"city\n  Input should be a valid string"):
        get_weather.validate_arguments({"city": 42})


def test_validate_arguments_rejects_a_missing_required_argument() -> None:
    with pytest.raises(ValidationError, match=r"city\n  Field required"):
        get_weather.validate_arguments({"unit": "kelvin"})


def test_validate_arguments_forbids_extra_arguments() -> None:
    with pytest.raises(ValidationError, match=r"country\n  Extra inputs are not permitted"):
        get_weather.validate_arguments({"city": "Paris", "country": "FR"})


def test_validation_errors_are_value_errors() -> None:
    with pytest.raises(ValueError, match="Field required"):
        get_weather.validate_arguments({})


def test_validate_arguments_rejects_arguments_the_model_sent_as_invalid_json() -> None:
    with pytest.raises(
        ValueError,
        match=re.escape(
            "the arguments were not valid JSON: '{city: Paris'; send a JSON object that "
            "matches the tool's schema"
        ),
    ):
        get_weather.validate_arguments({INVALID_ARGUMENTS_KEY: "{city: Paris"})


# -- calling -----------------------------------------------------------------------------


async def test_sync_tool_is_not_async_and_invoke_returns_its_result() -> None:
    result = await get_weather.invoke({"city": "Paris"}, run_context())

    assert (get_weather.is_async, result) == (False, "18 degrees celsius in Paris")


async def test_async_tool_is_async_and_invoke_awaits_it() -> None:
    result = await get_time.invoke({"timezone": "UTC"}, run_context())

    assert (get_time.is_async, result) == (True, "12:00 in UTC")


async def test_invoke_injects_the_run_context_into_the_parameter_that_asks_for_it() -> None:
    assert await convert.invoke({"amount": 3}, run_context()) == "3.0 EUR at iteration 2"


async def test_invoke_injects_the_run_context_into_an_async_tool_as_first_parameter() -> None:
    assert await greet.invoke({"name": "Ada"}, run_context(actor="ops")) == "Hello Ada, from ops"


async def test_invoke_does_not_call_the_function_when_validation_fails() -> None:
    calls: list[int] = []

    @tool
    def record(n: int) -> int:
        calls.append(n)
        return n

    with pytest.raises(ValidationError, match="valid integer"):
        await record.invoke({"n": "many"}, run_context())
    assert calls == []


async def test_invoke_refuses_the_run_context_as_a_model_argument() -> None:
    with pytest.raises(ValidationError, match=r"ctx\n  Extra inputs are not permitted"):
        await convert.invoke({"amount": 3, "ctx": "forged"}, run_context())


async def test_call_validated_calls_with_the_given_arguments_and_the_run_context() -> None:
    assert await convert.call_validated({"amount": 1.5}, run_context()) == (
        "1.5 EUR at iteration 2"
    )


async def test_call_validated_does_not_change_the_given_arguments() -> None:
    arguments: dict[str, Any] = {"amount": 1.5}

    await convert.call_validated(arguments, run_context())

    assert arguments == {"amount": 1.5}


async def test_call_validated_awaits_an_awaitable_returned_by_a_sync_callable() -> None:
    async def later() -> str:
        return "done"

    @tool
    def deferred() -> Any:
        return later()

    assert await deferred.call_validated({}, run_context()) == "done"


def test_calling_the_tool_calls_the_function_directly() -> None:
    assert get_weather("Oslo", unit="kelvin") == "18 degrees kelvin in Oslo"


# -- render_tool_output ------------------------------------------------------------------


def test_render_tool_output_returns_a_str_unchanged() -> None:
    assert render_tool_output("18 degrees") == "18 degrees"


def test_render_tool_output_dumps_a_pydantic_model_as_json() -> None:
    assert render_tool_output(Address(street="Main", number=2)) == '{"street":"Main","number":2}'


def test_render_tool_output_dumps_a_dict_with_sorted_keys_at_every_level() -> None:
    value = {"b": {"z": 1, "a": 2}, "a": [3, {"y": 1, "x": 2}]}

    assert render_tool_output(value) == '{"a": [3, {"x": 2, "y": 1}], "b": {"a": 2, "z": 1}}'


@pytest.mark.parametrize(
    "value",
    [b"\x89PNG\r\n\x1a\n", {"image": b"\xff\xfe"}, [b"\x80"]],
    ids=["bytes", "in-a-dict", "in-a-list"],
)
def test_render_tool_output_refuses_bytes_that_are_not_text_naming_the_source(
    value: Any,
) -> None:
    with pytest.raises(ToolDefinitionError) as caught:
        render_tool_output(value, source="tool 'screenshot'")

    assert str(caught.value).startswith("Tool 'screenshot' returned bytes that are not UTF-8 text")
    assert "base64.b64encode(data).decode('ascii')" in str(caught.value)


def test_render_tool_output_gives_utf8_bytes_as_text() -> None:
    assert render_tool_output(b"18 degrees") == '"18 degrees"'


def test_render_tool_output_keeps_non_ascii_text() -> None:
    assert render_tool_output({"city": "Zürich"}) == '{"city": "Zürich"}'


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "null"),
        (3, "3"),
        (True, "true"),
        ([1, "a"], '[1, "a"]'),
        (datetime(2025, 1, 1, tzinfo=UTC), '"2025-01-01T00:00:00Z"'),
        (Pair(1, 2), '{"left": 1, "right": 2}'),
        ({"models": [Address(street="Main")]}, '{"models": [{"number": 1, "street": "Main"}]}'),
    ],
    ids=["none", "int", "bool", "list", "datetime", "dataclass", "nested model"],
)
def test_render_tool_output_dumps_other_json_values(value: Any, expected: str) -> None:
    assert render_tool_output(value) == expected


def test_render_tool_output_falls_back_to_the_repr_of_unknown_objects() -> None:
    assert render_tool_output({"where": Point(1, 2)}) == '{"where": "Point(1, 2)"}'

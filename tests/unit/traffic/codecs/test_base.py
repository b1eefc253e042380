"""Unit tests of pytest_agentctx.traffic.codecs.base: shared codec types, codec
lookup, arguments."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_agentctx.context.model import INVALID_ARGUMENTS_KEY
from pytest_agentctx.traffic.codecs import anthropic_messages, openai_chat, openai_responses
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    DecodedRequest,
    Usage,
    codec_for_path,
    get_codec,
    parse_arguments,
    require,
)
from pytest_agentctx.traffic.errors import CodecError

# -- Usage ---------------------------------------------------------------------------


def test_usage_total_tokens_is_input_plus_output():
    assert Usage(input_tokens=92, output_tokens=17).total_tokens == 109


def test_usage_defaults_to_zero_tokens():
    assert Usage() == Usage(input_tokens=0, output_tokens=0)


def test_usage_to_dict_has_input_output_and_total():
    assert Usage(input_tokens=92, output_tokens=17).to_dict() == {
        "input_tokens": 92,
        "output_tokens": 17,
        "total_tokens": 109,
    }


# -- Completion ----------------------------------------------------------------------


def test_completion_metadata_holds_model_stop_reason_and_usage():
    completion = Completion(
        content="YES",
        model="gpt-4o-mini-2024-07-18",
        usage=Usage(input_tokens=146, output_tokens=3),
        stop_reason="stop",
        response_id="chatcmpl-1",
    )

    assert completion.metadata() == {
        "model": "gpt-4o-mini-2024-07-18",
        "stop_reason": "stop",
        "usage": {"input_tokens": 146, "output_tokens": 3, "total_tokens": 149},
    }


def test_completion_metadata_lists_the_server_tools_the_provider_ran():
    search = {"id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris weather"}}
    completion = Completion(content="Sunny.", stop_reason="end_turn", server_tools=(search,))

    assert completion.metadata()["server_tools"] == [search]


def test_completion_metadata_leaves_usage_out_when_unknown():
    completion = Completion(content="YES", model="gpt-4o-mini", stop_reason="stop")

    assert completion.metadata() == {"model": "gpt-4o-mini", "stop_reason": "stop"}


def test_completion_defaults_to_an_empty_reply():
    assert Completion() == Completion(
        content=None,
        tool_calls=(),
        model=None,
        usage=None,
        stop_reason=None,
        response_id=None,
    )


# -- DecodedRequest ------------------------------------------------------------------


def test_decoded_request_defaults_to_no_tools_and_no_stream():
    request = DecodedRequest(model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}])

    match request:
        case DecodedRequest(model="gpt-4o-mini", tools=[], stream=False):
            pass
        case _:
            pytest.fail(f"unexpected defaults: {request!r}")


# -- get_codec -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("openai_chat", openai_chat),
        ("anthropic_messages", anthropic_messages),
        ("openai_responses", openai_responses),
    ],
)
def test_get_codec_returns_the_codec_module_of_that_name(name, module):
    assert get_codec(name) is module


def test_get_codec_unknown_name_lists_the_codecs():
    with pytest.raises(
        CodecError,
        match=r"No codec called 'mistral'; the codecs are "
        r"\['anthropic_messages', 'bedrock', 'gemini', 'openai_chat', 'openai_responses'\]\.$",
    ):
        get_codec("mistral")


@pytest.mark.parametrize(
    "name", ["openai_chat", "anthropic_messages", "openai_responses", "gemini", "bedrock"]
)
def test_every_codec_provides_its_name_and_the_four_functions(name):
    codec = get_codec(name)

    assert codec.name == name
    for function in ("encode_request", "decode_request", "decode_response", "encode_response"):
        assert callable(getattr(codec, function)), function


# -- codec_for_path ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/v1/chat/completions", "openai_chat"),
        ("/v1/chat/completions/", "openai_chat"),
        ("/api/v1/chat/completions", "openai_chat"),
        ("/openai/deployments/gpt-4o/chat/completions", "openai_chat"),
        ("/v1/messages", "anthropic_messages"),
        ("/v1/messages/", "anthropic_messages"),
        ("/gateway/anthropic/v1/messages", "anthropic_messages"),
        ("/v1/responses", "openai_responses"),
        ("/openai/v1/responses", "openai_responses"),
        # Azure OpenAI, gateways and proxies: the endpoint under any prefix, query ignored
        ("/openai/responses", "openai_responses"),
        ("/openai/responses?api-version=2025-04-01-preview", "openai_responses"),
        ("/proxy/openai/responses", "openai_responses"),
        ("/responses", "openai_responses"),
        ("/api/v1/responses", "openai_responses"),
        (
            "/openai/deployments/gpt-4o/chat/completions?api-version=2024-10-21",
            "openai_chat",
        ),
        ("/openai/v1/chat/completions", "openai_chat"),
        ("/v1beta/openai/chat/completions", "openai_chat"),
        ("/chat/completions", "openai_chat"),
        ("/anthropic/v1/messages", "anthropic_messages"),
        ("/v1/messages?beta=true", "anthropic_messages"),
        (
            "/v1/projects/p/locations/us-east5/publishers/anthropic/models/"
            "claude-sonnet-4@20250514:rawPredict",
            "anthropic_messages",
        ),
        (
            "/v1/projects/p/locations/global/publishers/anthropic/models/"
            "claude-haiku-4-5:streamRawPredict",
            "anthropic_messages",
        ),
        # AWS Bedrock runtime: the model id percent-encoded, or an inference profile's ARN
        ("/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse", "bedrock"),
        ("/model/amazon.nova-micro-v1%3A0/converse-stream", "bedrock"),
        ("/model/anthropic.claude-3-haiku-20240307-v1:0/invoke", "bedrock"),
        (
            "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.meta.llama3"
            "/invoke-with-response-stream",
            "bedrock",
        ),
    ],
)
def test_codec_for_path_finds_the_wire_format_of_a_model_endpoint(path, expected):
    codec = codec_for_path(path)

    assert codec is not None
    assert codec.name == expected


@pytest.mark.parametrize(
    "path",
    [
        "/v1/embeddings",
        "/v1/responses/resp_123",
        "/v1/responses/resp_123/cancel",
        "/v1/responses/resp_123/input_items",
        "/v1/responses/input_tokens",
        "/v1/responses/compact",
        "/openai/responses/resp_123?api-version=2025-04-01-preview",
        "/v1/conversations/conv_123/items",
        "/v1/completions",
        "/openai/deployments/gpt-4o/completions",
        "/openai/deployments/gpt-4o/embeddings",
        "/v1/chat/completions/chatcmpl-123",
        "/v1/survey_responses",
        "/v1/projects/p/locations/us-east5/publishers/anthropic/models/count-tokens:rawPredict",
        "/model/anthropic.claude-3-haiku-20240307-v1%3A0/count-tokens",
        "/guardrail/gr-1/version/1/apply",
        "/api/chat",
        "/v1/models",
        "/v1/messages/count_tokens",
        "/v1/messages/batches",
        "/v1/threads/thread_abc123/messages",
        "/v1/chat/completions/chatcmpl-123/messages",
        "/",
        "",
    ],
)
def test_codec_for_path_is_none_for_other_endpoints(path):
    assert codec_for_path(path) is None


# -- parse_arguments -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"country":"Crumpet"}', {"country": "Crumpet"}),
        ('{"population": 123124}', {"population": 123124}),
        ({"city": "Paris"}, {"city": "Paris"}),
        ("{}", {}),
        ("", {}),
        (None, {}),
    ],
)
def test_parse_arguments_reads_json_objects_and_mappings(raw, expected):
    assert parse_arguments(raw) == expected


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ('{"city": "Par', '{"city": "Par'),
        ("city=Paris", "city=Paris"),
        ("[1, 2]", "[1, 2]"),
        ('"Paris"', '"Paris"'),
        ("42", "42"),
        (["Paris"], '["Paris"]'),
        (42, "42"),
    ],
)
def test_parse_arguments_keeps_anything_but_an_object_as_invalid_raw_text(raw, kept):
    assert parse_arguments(raw) == {INVALID_ARGUMENTS_KEY: kept}


def test_parse_arguments_copies_a_mapping():
    original: dict[str, Any] = {"city": "Paris"}

    parsed = parse_arguments(original)
    parsed["city"] = "Lyon"

    assert original == {"city": "Paris"}


# -- require -------------------------------------------------------------------------


def test_require_returns_the_field_when_it_has_the_expected_type():
    body = {"choices": [{"index": 0}], "model": "gpt-4o-mini"}

    assert require(body, "choices", list, "here") == [{"index": 0}]


def test_require_accepts_any_of_several_types():
    assert require({"content": "text"}, "content", (str, list), "here") == "text"


def test_require_rejects_a_body_that_is_not_an_object():
    with pytest.raises(CodecError, match=r"^decode: expected a JSON object, got list\.$"):
        require([1, 2], "choices", list, "decode")


def test_require_names_the_missing_field_and_the_fields_present():
    body = {"error": {"message": "Incorrect API key provided"}, "type": "error"}

    with pytest.raises(
        CodecError,
        match=r"^decode: the JSON has no 'choices' field \(it has \['error', 'type'\]\)\. "
        r"Is this really a response of this wire format\?$",
    ):
        require(body, "choices", list, "decode")


def test_require_names_the_wrong_type_and_the_expected_one():
    with pytest.raises(CodecError, match=r"^decode: field 'choices' is a dict, expected list\.$"):
        require({"choices": {}}, "choices", list, "decode")


def test_require_names_an_abstract_expected_type():
    with pytest.raises(CodecError, match=r"field 'message' is a str, expected Mapping\.$"):
        require({"message": "hello"}, "message", Mapping, "decode")

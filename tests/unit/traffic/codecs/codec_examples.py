"""Examples of the codec contract (``test_codec_contract.py``): malformed bodies and streams
each codec refuses, with the message it says, and real recorded streams with the whole
reply each one is.

Each row names its codec (``openai_chat``, ``openai_responses``, ``anthropic_messages``,
``gemini``, ``cohere_chat``, ``ollama_chat``, ``bedrock``); a row's id starts with that
name. Ollama's streams are NDJSON, not server-sent events: its recorded streams are in
``RECORDED_NDJSON_STREAMS``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_agentctx import Completion, ToolCall, Usage
from pytest_agentctx.traffic.codecs import anthropic_messages, gemini, openai_chat
from pytest_agentctx.traffic.codecs.eventstream import event, exception
from pytest_agentctx.traffic.codecs.sse import SSEEvent

STREAMS = Path(__file__).parent / "streams"


# -- requests --------------------------------------------------------------------------

MALFORMED_REQUESTS = [
    pytest.param(
        "openai_chat",
        {"model": "gpt-4o-mini", "prompt": "hi"},
        r"openai_chat\.decode_request: the JSON has no 'messages' field",
        id="openai_chat-without-messages",
    ),
    pytest.param(
        "openai_chat",
        {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}, "hello"]},
        r"openai_chat\.decode_request: messages\[1\] is a str, expected a JSON object",
        id="openai_chat-message-not-an-object",
    ),
    pytest.param(
        "openai_responses",
        {"model": "gpt-4o", "messages": []},
        r"^openai_responses\.decode_request: the body has no 'input' field \(it has "
        r"\['messages', 'model'\]\)\. Is this a Responses request\?$",
        id="openai_responses-without-input",
    ),
    pytest.param(
        "anthropic_messages",
        {"model": "claude-haiku-4-5", "prompt": "Hi"},
        r"anthropic_messages\.decode_request: the JSON has no 'messages' field",
        id="anthropic_messages-without-messages",
    ),
    pytest.param(
        "anthropic_messages",
        {"model": "claude-haiku-4-5", "messages": ["Hi"]},
        r"anthropic_messages\.decode_request: messages\[0\] is a str, expected a JSON object",
        id="anthropic_messages-turn-not-an-object",
    ),
    pytest.param(
        "anthropic_messages",
        {"model": "claude-haiku-4-5", "messages": [{"role": "user", "content": [42]}]},
        r"anthropic_messages\.decode_request: messages\[0\]\.content holds a int",
        id="anthropic_messages-content-block-not-an-object",
    ),
    pytest.param("gemini", {"messages": []}, "no 'contents' field", id="gemini-without-contents"),
    pytest.param(
        "cohere_chat",
        {"model": "command-a-03-2025", "message": "hi"},
        r"^cohere_chat\.decode_request: the body has no 'messages' list \(it has "
        r"\['message', 'model'\]\)\. Is this a Cohere v2 chat request\?$",
        id="cohere_chat-v1-body-without-messages",
    ),
    pytest.param(
        "cohere_chat",
        {"model": "command-a-03-2025", "messages": ["hi"]},
        r"cohere_chat\.decode_request: messages\[0\] is a str, expected a JSON object",
        id="cohere_chat-message-not-an-object",
    ),
    pytest.param(
        "ollama_chat",
        {"messages": [{"role": "user", "content": "hi"}], "userId": "u1"},
        r"^ollama_chat\.decode_request: expected a 'model' string and a 'messages' list, the "
        r"body has \['messages', 'userId'\]\. Is this a request to Ollama's /api/chat\?$",
        id="ollama_chat-a-web-app-body-without-model",
    ),
    pytest.param(
        "ollama_chat",
        {"model": "llama3.1", "messages": [{"role": "user", "content": "hi"}, 3]},
        r"ollama_chat\.decode_request: messages\[1\] is a int, expected a JSON object",
        id="ollama_chat-message-not-an-object",
    ),
    pytest.param(
        "gemini",
        {"contents": [{"role": "user", "parts": ["hi"]}]},
        r"contents\[0\]: 'parts' is not a list of JSON objects",
        id="gemini-part-not-an-object",
    ),
    pytest.param(
        "bedrock",
        {"modelId": "m", "prompt": "Hi"},
        r"bedrock\.decode_request: the JSON has no 'messages' field",
        id="bedrock-without-messages",
    ),
    pytest.param(
        "bedrock",
        {"messages": [{"role": "user", "content": ["Hi"]}]},
        r"bedrock\.decode_request: messages\[0\]: 'content' is not a list of content blocks",
        id="bedrock-content-block-not-an-object",
    ),
]


# -- responses -------------------------------------------------------------------------

_CHAT_TEXT: dict[str, Any] = openai_chat.encode_response(
    Completion(content="YES"), response_id="chatcmpl-1"
)
_ANTHROPIC_TEXT = anthropic_messages.encode_response(Completion(content="Sunny."), response_id="m")


def _chat_with_message(message: dict[str, Any]) -> dict[str, Any]:
    return {**_CHAT_TEXT, "choices": [{**_CHAT_TEXT["choices"][0], "message": message}]}


MALFORMED_RESPONSES = [
    pytest.param(
        "openai_chat",
        # openinference: what OpenAI answers to a bad API key (status 401)
        {
            "error": {
                "message": "Incorrect API key provided: sk-fake-key.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        r"openai_chat\.decode_response: the JSON has no 'choices' field \(it has \['error'\]\)",
        id="openai_chat-error-body",
    ),
    pytest.param(
        "openai_chat",
        [_CHAT_TEXT],
        r"openai_chat\.decode_response: expected a JSON object, got list",
        id="openai_chat-not-an-object",
    ),
    pytest.param(
        "openai_chat",
        {"id": "chatcmpl-1", "choices": {"index": 0}},
        r"openai_chat\.decode_response: field 'choices' is a dict, expected list",
        id="openai_chat-choices-not-a-list",
    ),
    pytest.param(
        "openai_chat",
        {"id": "chatcmpl-1", "choices": []},
        r"openai_chat\.decode_response: 'choices' is empty; the response holds no reply",
        id="openai_chat-no-choices",
    ),
    pytest.param(
        "openai_chat",
        {"id": "chatcmpl-1", "choices": [{"index": 0, "finish_reason": "stop"}]},
        r"choices\[0\]: the JSON has no 'message' field \(it has \['finish_reason', 'index'\]\)",
        id="openai_chat-choice-without-message",
    ),
    pytest.param(
        "openai_chat",
        {"id": "chatcmpl-1", "choices": ["YES"]},
        r"choices\[0\]: expected a JSON object, got str",
        id="openai_chat-choice-not-an-object",
    ),
    pytest.param(
        "openai_chat",
        _chat_with_message({"role": "assistant", "content": None, "tool_calls": ["x"]}),
        r"message\.tool_calls\[0\]: expected a JSON object, got str",
        id="openai_chat-tool-call-not-an-object",
    ),
    pytest.param(
        "openai_chat",
        _chat_with_message({"role": "assistant", "content": None, "tool_calls": [{"id": "c"}]}),
        r"message\.tool_calls\[0\]: the JSON has no 'function' field \(it has \['id'\]\)",
        id="openai_chat-tool-call-without-function",
    ),
    pytest.param(
        "openai_responses",
        {"id": "resp_1", "status": "completed"},
        r"^openai_responses\.decode_response: the JSON has no 'output' field \(it has "
        r"\['id', 'status'\]\)\. Is this really a response of this wire format\?$",
        id="openai_responses-no-output",
    ),
    pytest.param(
        "openai_responses",
        {"output": "Hello"},
        r"^openai_responses\.decode_response: field 'output' is a str, expected list\.$",
        id="openai_responses-output-not-a-list",
    ),
    pytest.param(
        "anthropic_messages",
        # pydantic-ai: what Anthropic answers to a bad request (status 400)
        {
            "error": {
                "message": "This model does not support effort level 'xhigh'.",
                "type": "invalid_request_error",
            },
            "request_id": "req_011Ca7jT9AHpgXgdv8igm4z9",
            "type": "error",
        },
        r"anthropic_messages\.decode_response: the JSON has no 'content' field "
        r"\(it has \['error', 'request_id', 'type'\]\)",
        id="anthropic_messages-error-body",
    ),
    pytest.param(
        "anthropic_messages",
        [_ANTHROPIC_TEXT],
        r"anthropic_messages\.decode_response: expected a JSON object, got list",
        id="anthropic_messages-not-an-object",
    ),
    pytest.param(
        "anthropic_messages",
        {**_ANTHROPIC_TEXT, "content": "Sunny."},
        r"anthropic_messages\.decode_response: field 'content' is a str, expected list",
        id="anthropic_messages-content-not-a-list",
    ),
    pytest.param(
        "gemini", {"choices": []}, "no 'candidates' field", id="gemini-without-candidates"
    ),
    pytest.param(
        "gemini",
        {"candidates": []},
        "'candidates' holds no candidate object",
        id="gemini-no-candidate",
    ),
    pytest.param(
        "cohere_chat",
        # what Cohere answers to a bad request (status 400)
        {"id": "5b1f", "message": "invalid request: model 'command-z' not found"},
        r"^cohere_chat\.decode_response: field 'message' is a str, expected Mapping",
        id="cohere_chat-error-body",
    ),
    pytest.param(
        "cohere_chat",
        {"id": "c1", "finish_reason": "COMPLETE"},
        r"^cohere_chat\.decode_response: the JSON has no 'message' field",
        id="cohere_chat-without-message",
    ),
    pytest.param(
        "ollama_chat",
        # what Ollama answers for a model it does not have (status 404)
        {"error": "model 'llama9' not found"},
        r"^ollama_chat\.decode_response: the reply is an error: \"model 'llama9' not found\"\.$",
        id="ollama_chat-error-body",
    ),
    pytest.param(
        "ollama_chat",
        {"model": "llama3.1", "response": "Hi", "done": True},
        r"^ollama_chat\.decode_response: the JSON has no 'message' field",
        id="ollama_chat-generate-reply-without-message",
    ),
    pytest.param(
        "bedrock",
        [{"output": {}}],
        r"bedrock\.decode_response: expected a JSON object, got list",
        id="bedrock-not-an-object",
    ),
    pytest.param(
        "bedrock",
        {"output": {"message": {"role": "assistant", "content": "Hi"}}},
        r"bedrock\.decode_response: output\.message: 'content' is not a list of content blocks",
        id="bedrock-content-not-a-list",
    ),
    pytest.param(
        "bedrock",
        # what Bedrock answers to an unknown model (status 400), pydantic-ai's recording
        {"message": "The provided model identifier is invalid."},
        r"bedrock\.decode_response: the JSON has no 'output' field",
        id="bedrock-error-body",
    ),
]


# -- streams ---------------------------------------------------------------------------

# pydantic-ai's Google test cassettes (MIT: tests/models/cassettes/test_google/
# test_google_streaming_tool_call_thought_signature.yaml), Gemini 3 streaming: a function
# call with its thought signature, then an empty text part with the finish reason (the
# signature shortened).
GEMINI_SIGNED_CALL_STREAM = (
    b'data: {"candidates": [{"content": {"parts": [{"functionCall": {"name": "get_country",'
    b'"args": {}},"thoughtSignature": "Et8ECtwEAXLI2nyCB1jKZUE4ZxdH07XhZlpU7X7t"}],"role": '
    b'"model"},"index": 0}],"usageMetadata": {"promptTokenCount": 29,"candidatesTokenCount": '
    b'10,"totalTokenCount": 149,"promptTokensDetails": [{"modality": "TEXT","tokenCount": 29}],'
    b'"thoughtsTokenCount": 110},"modelVersion": "gemini-3-pro-preview","responseId": '
    b'"SVV8aY6uBqe6qtsPmJbEuAM"}\r\n\r\n'
    b'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},'
    b'"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 29,'
    b'"candidatesTokenCount": 10,"totalTokenCount": 149,"promptTokensDetails": [{"modality": '
    b'"TEXT","tokenCount": 29}],"thoughtsTokenCount": 110},"modelVersion": '
    b'"gemini-3-pro-preview","responseId": "SVV8aY6uBqe6qtsPmJbEuAM"}\r\n\r\n'
)
# The same conversation's answer: text in two chunks, the usage growing to the last one.
GEMINI_TEXT_STREAM = (
    b'data: {"candidates": [{"content": {"parts": [{"text": "The capital of Mexico"}],"role": '
    b'"model"},"index": 0}],"usageMetadata": {"promptTokenCount": 55,"candidatesTokenCount": 4,'
    b'"totalTokenCount": 59},"modelVersion": "gemini-3-pro-preview","responseId": '
    b'"S1V8aZK2NpGKqtsPvPuEqAw"}\r\n\r\n'
    b'data: {"candidates": [{"content": {"parts": [{"text": " is Mexico City."}],"role": '
    b'"model"},"index": 0}],"usageMetadata": {"promptTokenCount": 55,"candidatesTokenCount": 8,'
    b'"totalTokenCount": 63},"modelVersion": "gemini-3-pro-preview","responseId": '
    b'"S1V8aZK2NpGKqtsPvPuEqAw"}\r\n\r\n'
    b'data: {"candidates": [{"content": {"parts": [{"text": ""}],"role": "model"},'
    b'"finishReason": "STOP","index": 0}],"usageMetadata": {"promptTokenCount": 165,'
    b'"candidatesTokenCount": 8,"totalTokenCount": 173},"modelVersion": '
    b'"gemini-3-pro-preview","responseId": "S1V8aZK2NpGKqtsPvPuEqAw"}\r\n\r\n'
)


def _file(name: str) -> Callable[[], bytes]:
    return lambda: (STREAMS / name).read_bytes()


def _constant(raw: bytes) -> Callable[[], bytes]:
    return lambda: raw


# Real recorded streams (streams/README.md says where each comes from) and the whole
# reply each one is: the wire's name, the stream's bytes, the reply.
RECORDED_STREAMS: dict[str, tuple[str, Callable[[], bytes], Completion]] = {
    "openai_chat-tool-call": (
        "openai_chat",
        _file("openai_tool_call_chunks.sse"),
        Completion(
            tool_calls=(
                ToolCall(
                    id="call_WV6bvIiiSk0mp1W544x914V5",
                    name="get_weather",
                    arguments={"location": "Paris"},
                ),
            ),
            model="gpt-4o-2024-08-06",
            stop_reason="tool_calls",
            response_id="chatcmpl-DELDWLVTmeIzXWg5Ql3jKTXwWoo6O",
        ),
    ),
    "openai_chat-tool-call-with-usage": (
        "openai_chat",
        _file("openai_tool_call_with_usage.sse"),
        Completion(
            tool_calls=(
                ToolCall(
                    id="call_ZR5UUuTt3pf61kjwAJIYdVMj",
                    name="get_capital",
                    arguments={"country": "UK"},
                ),
            ),
            model="gpt-4o-mini-2024-07-18",
            usage=Usage(input_tokens=53, output_tokens=15),
            stop_reason="tool_calls",
            response_id="chatcmpl-Dx0XpqH8w09uBXwq1zFGYdETjtnEl",
        ),
    ),
    "openai_chat-text-with-usage": (
        "openai_chat",
        _file("openai_text_with_usage.sse"),
        Completion(
            content="The capital of the UK is London.",
            model="gpt-4o-mini-2024-07-18",
            usage=Usage(input_tokens=78, output_tokens=9),
            stop_reason="stop",
            response_id="chatcmpl-Dx0Xq5Xx9rHB2ehcHZCRDsnuymUXc",
        ),
    ),
    "openai_chat-text-latex": (
        "openai_chat",
        _file("openai_text_latex.sse"),
        Completion(
            content="The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).",
            model="gpt-4o-mini-2024-07-18",
            usage=Usage(input_tokens=87, output_tokens=26),
            stop_reason="stop",
            response_id="chatcmpl-BWlJCN7VZTtSHROczp0AbrjFGhRMA",
        ),
    ),
    "bedrock-text-and-tool-use": (
        "bedrock",
        _file("bedrock_converse_text_and_tool_use.eventstream"),
        Completion(
            content=(
                "<thinking> To find the temperature of the capital of France, I need to first "
                "determine the capital of France and then get the current temperature in that "
                'city. The capital of France is Paris. I will use the "get_temperature" tool '
                "to find the current temperature in Paris.</thinking>\n"
            ),
            tool_calls=(
                ToolCall(
                    id="tooluse_lAG_zP8QRHmSYOwZzzaCqA",
                    name="get_temperature",
                    arguments={"city": "Paris"},
                ),
            ),
            usage=Usage(input_tokens=471, output_tokens=91),
            stop_reason="tool_use",
        ),
    ),
    "bedrock-server-tool": (
        "bedrock",
        _file("bedrock_converse_server_tool.eventstream"),
        Completion(
            tool_calls=(
                ToolCall(
                    id="tooluse_ptgCcZ0uQu-UUMz0abqoWw",
                    name="final_result",
                    arguments={"result": 7006652.0},
                ),
            ),
            usage=Usage(input_tokens=1002, output_tokens=59),
            stop_reason="tool_use",
            server_tools=(
                {
                    "id": "tooluse_VQNZJRUFMoqZzszVsRd4og",
                    "name": "nova_code_interpreter",
                    "input": {"snippet": "1234 * 5678"},
                },
            ),
        ),
    ),
    "anthropic_messages-text-and-tool-use": (
        "anthropic_messages",
        _file("anthropic_text_and_tool_use.sse"),
        Completion(
            content="I'll help you find out the current temperature in San Francisco. "
            "I'll use the get_current_temperature function to retrieve this information.",
            tool_calls=(
                ToolCall(
                    id="toolu_01Lfr3kUnHMZApePPRWMv1uS",
                    name="get_current_temperature",
                    arguments={"city": "San Francisco"},
                ),
            ),
            model="claude-3-5-haiku-20241022",
            usage=Usage(input_tokens=351, output_tokens=85),
            stop_reason="tool_use",
            response_id="msg_01JCJXSfyzkcecJUydp157cS",
        ),
    ),
    "anthropic_messages-text-and-two-tool-uses": (
        "anthropic_messages",
        _file("anthropic_text_and_two_tool_uses.sse"),
        Completion(
            content="I'll check both the current weather and time in New York "
            "simultaneously right away!",
            tool_calls=(
                ToolCall(
                    id="toolu_01Mo5Ee5Yb7vrzaxSNS5DVuP",
                    name="get_weather",
                    arguments={"location": "New York, NY"},
                ),
                ToolCall(
                    id="toolu_01GDAGw1KUdi1DCPPprMKGHR",
                    name="get_time",
                    arguments={"timezone": "America/New_York"},
                ),
            ),
            model="claude-sonnet-4-6",
            usage=Usage(input_tokens=721, output_tokens=113),
            stop_reason="tool_use",
            response_id="msg_01JqiwuyYfmoZBJx1GLkqxLf",
        ),
    ),
    "anthropic_messages-two-tool-uses-without-input": (
        "anthropic_messages",
        _file("anthropic_two_tool_uses_without_input.sse"),
        Completion(
            tool_calls=(
                ToolCall(
                    id="toolu_01LtHJmixrs9NcWQkK8hu8hj",
                    name="pelican_name_generator",
                    arguments={},
                ),
                ToolCall(
                    id="toolu_01N8a4jWyf116qKTMqKKmjyt",
                    name="pelican_name_generator",
                    arguments={},
                ),
            ),
            model="claude-haiku-4-5-20251001",
            usage=Usage(input_tokens=542, output_tokens=62),
            stop_reason="tool_use",
            response_id="msg_01V2noLbAb2NgKnjaNw6Cn3w",
        ),
    ),
    "gemini-signed-function-call": (
        "gemini",
        _constant(GEMINI_SIGNED_CALL_STREAM),
        Completion(
            content=None,
            tool_calls=(
                ToolCall(
                    id=gemini.synthetic_call_id("get_country", {}, 0),
                    name="get_country",
                    arguments={},
                ),
            ),
            model="gemini-3-pro-preview",
            # the thinking tokens count as output
            usage=Usage(input_tokens=29, output_tokens=120, reasoning_tokens=110),
            stop_reason="STOP",
            response_id="SVV8aY6uBqe6qtsPmJbEuAM",
            reasoning=(
                {
                    "type": "gemini_signature",
                    "part": "functionCall",
                    "index": 0,
                    "thoughtSignature": "Et8ECtwEAXLI2nyCB1jKZUE4ZxdH07XhZlpU7X7t",
                },
            ),
        ),
    ),
    "gemini-text": (
        "gemini",
        _constant(GEMINI_TEXT_STREAM),
        Completion(
            # the text joined, the usage of the last chunk
            content="The capital of Mexico is Mexico City.",
            model="gemini-3-pro-preview",
            usage=Usage(input_tokens=165, output_tokens=8),
            stop_reason="STOP",
            response_id="S1V8aZK2NpGKqtsPvPuEqAw",
        ),
    ),
}


RECORDED_STREAMS.update(
    {
        "cohere_chat-tool-plan-and-tool-call": (
            "cohere_chat",
            _file("cohere_tool_plan_and_tool_call.sse"),
            Completion(
                # the tool plan stands for the text; the arguments joined from 16 pieces
                content="I will use the Person tool to create a person with the name Erick "
                "and age 27, and then relay this information to the user.",
                tool_calls=(
                    ToolCall(
                        id="Person_2fnrphbsnr66",
                        name="Person",
                        arguments={"name": "Erick", "age": 27},
                    ),
                ),
                usage=Usage(input_tokens=906, output_tokens=77),
                stop_reason="TOOL_CALL",
                response_id="35c028fc-0223-47b6-8fae-ebd3255e9a63",
            ),
        ),
    }
)
# Real recorded NDJSON streams (Ollama), in the same form.
RECORDED_NDJSON_STREAMS: dict[str, tuple[str, Callable[[], bytes], Completion]] = {
    "ollama_chat-text": (
        "ollama_chat",
        _file("ollama_text.ndjson"),
        Completion(
            content="Why did the OpenTelemetry agent go to therapy?\n\nBecause it was feeling "
            "traced out and needed some instrumentation in its life!\n\n(Sorry, I know it's a "
            "bit of a stretch, but I hope it brought a smile to your face!)",
            model="llama3",
            usage=Usage(input_tokens=17, output_tokens=50),
            stop_reason="stop",
        ),
    ),
}


def _anthropic_event(kind: str, **fields: Any) -> SSEEvent:
    return SSEEvent(kind, json.dumps({"type": kind, **fields}))


MALFORMED_STREAMS = [
    pytest.param(
        "openai_chat",
        [SSEEvent(None, "{not json")],
        r"event #0: the data is not JSON",
        id="openai_chat-not-json",
    ),
    pytest.param(
        "openai_chat",
        [SSEEvent(None, "[1, 2]")],
        r"event #0: expected a JSON object, got list",
        id="openai_chat-not-an-object",
    ),
    pytest.param(
        "openai_chat",
        [SSEEvent(None, '{"id": "c"}')],
        r"event #0: the JSON has no 'choices' field",
        id="openai_chat-no-choices",
    ),
    pytest.param(
        "openai_chat",
        [SSEEvent(None, '{"error": {"message": "overloaded"}}')],
        r"event #0: the stream reports an error: \{'message': 'overloaded'\}",
        id="openai_chat-error",
    ),
    pytest.param(
        "openai_responses",
        [SSEEvent("response.created", "{not json")],
        r"^openai_responses\.decode_stream: event #0 is not JSON: '\{not json'\.$",
        id="openai_responses-not-json",
    ),
    pytest.param(
        "openai_responses",
        [SSEEvent(None, "[1, 2]")],
        r"^openai_responses\.decode_stream: event #0 is not a JSON object: '\[1, 2\]'\.$",
        id="openai_responses-not-an-object",
    ),
    pytest.param(
        "openai_responses",
        [
            SSEEvent(
                "error",
                '{"type":"error","code":"server_error","message":"Overloaded","sequence_number":0}',
            )
        ],
        r"^openai_responses\.decode_stream: event #0 \(error\) reports an error: "
        r"'Overloaded'\.$",
        id="openai_responses-error-event",
    ),
    pytest.param(
        "openai_responses",
        [
            SSEEvent(
                "response.failed",
                '{"type":"response.failed","response":{"status":"failed","output":[],'
                '"error":{"code":"server_error","message":"Boom"}}}',
            )
        ],
        r"^openai_responses\.decode_stream: event #0 \(response\.failed\) reports an error: "
        r"\{'code': 'server_error', 'message': 'Boom'\}\.$",
        id="openai_responses-failed",
    ),
    pytest.param(
        "openai_responses",
        [SSEEvent("response.completed", '{"type":"response.completed"}')],
        r"^openai_responses\.decode_stream event #0 \(response\.completed\): the JSON has no "
        r"'response' field",
        id="openai_responses-completed-without-response",
    ),
    pytest.param(
        "anthropic_messages",
        [SSEEvent("message_start", "{not json")],
        r"event #0 \(message_start\): the data is not JSON",
        id="anthropic_messages-not-json",
    ),
    pytest.param(
        "anthropic_messages",
        [SSEEvent("message_start", '{"message": {}}')],
        r"event #0 \(message_start\): the JSON has no 'type'",
        id="anthropic_messages-no-type",
    ),
    pytest.param(
        "anthropic_messages",
        [_anthropic_event("error", error={"type": "overloaded_error", "message": "Overloaded"})],
        r"event #0 \(error\): the stream reports an error: .*overloaded_error",
        id="anthropic_messages-error-event",
    ),
    pytest.param(
        "anthropic_messages",
        [
            _anthropic_event(
                "content_block_delta", index=3, delta={"type": "text_delta", "text": "x"}
            )
        ],
        r"a delta for content block 3, which never started",
        id="anthropic_messages-delta-before-start",
    ),
    pytest.param(
        "gemini",
        [SSEEvent(None, json.dumps({"error": {"code": 500, "message": "overloaded"}}))],
        r"event #0: the stream reports an error.*overloaded",
        id="gemini-error-event",
    ),
    pytest.param(
        "gemini",
        b"data: [DONE]\n\n",
        r"not JSON.*Is this a Gemini stream \(alt=sse\)\?",
        id="gemini-not-json",
    ),
    pytest.param(
        "cohere_chat",
        [SSEEvent("message-start", "{not json")],
        r"^cohere_chat\.decode_stream event #0: the data is not JSON .*Is this a Cohere v2 chat "
        r"stream\?$",
        id="cohere_chat-not-json",
    ),
    pytest.param(
        "cohere_chat",
        [
            SSEEvent(
                "message-end",
                '{"type":"message-end","delta":{"error":"overloaded","finish_reason":"ERROR"}}',
            )
        ],
        r"^cohere_chat\.decode_stream event #0: the stream reports an error: 'overloaded'\.$",
        id="cohere_chat-message-end-with-error",
    ),
    pytest.param(
        "ollama_chat",
        b'{"model":"llama3","message":{"role":"assistant","content":"Hi"},"done":false}\n'
        b'{"error":"an error was encountered while running the model"}\n',
        r"^ollama_chat\.decode_stream object #1: the stream reports an error: 'an error was "
        r"encountered while running the model'\.$",
        id="ollama_chat-error-line",
    ),
    pytest.param(
        "ollama_chat",
        "data: {}\n\n",
        r"^ollama_chat\.decode_stream line #0: not JSON .*Is this an Ollama NDJSON stream\?$",
        id="ollama_chat-sse-is-not-ndjson",
    ),
    pytest.param(
        "ollama_chat",
        b"[1]\n",
        r"^ollama_chat\.decode_stream object #0: expected a JSON object, got list\.$",
        id="ollama_chat-not-an-object",
    ),
    pytest.param(
        "bedrock",
        [
            event("messageStart", {"role": "assistant"}),
            exception("modelStreamErrorException", "Boom"),
        ],
        r"bedrock\.decode_stream: message #1 is an error: modelStreamErrorException: Boom",
        id="bedrock-exception-message",
    ),
    pytest.param(
        "bedrock",
        b"data: [DONE]\n\n",
        r"eventstream\.decode_messages: the message at byte offset 0 fails its prelude CRC",
        id="bedrock-not-an-event-stream",
    ),
    pytest.param(
        "bedrock",
        [event("chunk", {"bytes": "not base64!"})],
        r"bedrock\.decode_stream: chunk #0 does not hold the base64 of a JSON event",
        id="bedrock-chunk-not-base64",
    ),
]

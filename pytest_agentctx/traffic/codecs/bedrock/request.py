"""Bedrock requests: the URL that names the model and the operation, and the Converse
body, encoded from neutral messages and decoded back to them (an InvokeModel body with
Anthropic's Messages is read by the ``anthropic_messages`` codec).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TypedDict
from urllib.parse import unquote

from pytest_agentctx.context.tools import ToolSpec
from pytest_agentctx.traffic.codecs import anthropic_messages
from pytest_agentctx.traffic.codecs.base import (
    DecodedRequest,
    NeutralCall,
    NeutralMessage,
    NeutralTool,
    each,
    fields,
    require_list,
    text_or_none,
)
from pytest_agentctx.traffic.codecs.bedrock.blocks import (
    assistant_blocks,
    blocks_of,
    completion_of,
    mention,
    text_of,
)
from pytest_agentctx.traffic.errors import CodecError

_OPERATION = re.compile(
    r"/model/([^/]+)/(converse|converse-stream|invoke|invoke-with-response-stream)$"
)
#: Cross-region inference profiles put a geography before the model's vendor.
_GEOGRAPHY = re.compile(r"^(?:us|eu|apac|jp|au|ca|us-gov|global)\.")


def _operation(path: str) -> tuple[str, str] | None:
    found = _OPERATION.search(path.partition("?")[0].rstrip("/"))
    return (unquote(found.group(1)), found.group(2)) if found else None


def model_of_path(path: str) -> str | None:
    """The model id a Bedrock runtime path names, percent-decoded
    (``/model/us.anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse`` gives
    ``us.anthropic.claude-3-5-sonnet-20240620-v1:0``), or ``None`` for another path."""
    found = _operation(path)
    return found[0] if found else None


def is_stream_path(path: str) -> bool:
    """Whether ``path`` is a streaming operation (``converse-stream``,
    ``invoke-with-response-stream``)."""
    found = _operation(path)
    return found is not None and found[1] in ("converse-stream", "invoke-with-response-stream")


def is_invoke_path(path: str) -> bool:
    """Whether ``path`` is InvokeModel (``invoke``, ``invoke-with-response-stream``): the
    body is the model's own, not Converse's."""
    found = _operation(path)
    return found is not None and found[1].startswith("invoke")


def model_family(model: str) -> str:
    """The vendor and model line of a Bedrock model id or ARN (``meta.llama3``,
    ``amazon.nova``, ``anthropic.claude``)."""
    name = model.rpartition("/")[2]
    name = _GEOGRAPHY.sub("", name)
    return name.partition("-")[0].partition(":")[0]


class _Turn(TypedDict):
    """A Converse message: its role and its content blocks."""

    role: str
    content: list[dict[str, object]]


def _append(turns: list[_Turn], role: str, blocks: list[dict[str, object]]) -> None:
    """Add blocks, merging into the previous message of the same role (Converse requires
    user and assistant to alternate)."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    elif blocks:
        turns.append({"role": role, "content": blocks})


def _tool_result(message: Mapping[str, object]) -> dict[str, object]:
    result: dict[str, object] = {
        "toolUseId": message.get("tool_call_id"),
        "content": [{"text": message.get("content") or ""}],
    }
    if message.get("is_error"):
        result["status"] = "error"
    return {"toolResult": result}


def encode_request(
    *,
    model: str,
    messages: Sequence[Mapping[str, object]],
    tools: Sequence[ToolSpec] = (),
    max_tokens: int | None = None,
    temperature: float | None = None,
) -> dict[str, object]:
    """The Converse request for ``messages``, with the model as ``modelId``: the keyword
    arguments of boto3's ``bedrock-runtime`` ``converse(**body)`` (the HTTP body is the
    rest; the model goes in the URL).

    System messages become ``system`` text blocks; assistant messages ``toolUse`` blocks
    (and their reasoning back first); tool results ``toolResult`` blocks of a user message
    (``status: error`` for an error); consecutive messages of one role are merged. Tools are
    ``toolConfig.tools[].toolSpec`` with their JSON Schema.
    """
    system: list[dict[str, object]] = []
    turns: list[_Turn] = []
    for message in messages:
        role = message.get("role")
        if role == "system":
            system.append({"text": message.get("content") or ""})
        elif role == "user":
            _append(turns, "user", [{"text": message.get("content") or ""}])
        elif role == "assistant":
            _append(turns, "assistant", assistant_blocks(message))
        elif role == "tool":
            _append(turns, "user", [_tool_result(message)])
        else:
            raise CodecError(
                f"bedrock.encode_request: message role {role!r} is not one of system, user, "
                "assistant, tool."
            )
    body: dict[str, object] = {"modelId": model, "messages": turns}
    if system:
        body["system"] = system
    if tools:
        body["toolConfig"] = {
            "tools": [
                {
                    "toolSpec": {
                        "name": spec.name,
                        "description": spec.description,
                        "inputSchema": {"json": spec.parameters},
                    }
                }
                for spec in tools
            ]
        }
    config: dict[str, object] = {}
    if max_tokens is not None:
        config["maxTokens"] = max_tokens
    if temperature is not None:
        config["temperature"] = temperature
    if config:
        body["inferenceConfig"] = config
    return body


def _user_messages(blocks: Sequence[Mapping[str, object]]) -> list[NeutralMessage]:
    """A user turn's blocks: each text (or mentioned image, document) a user message, each
    ``toolResult`` a tool message."""
    messages: list[NeutralMessage] = []
    for block in blocks:
        if "toolResult" in block:
            result = fields(block["toolResult"])
            message: NeutralMessage = {
                "role": "tool",
                "content": text_of(list(each(result.get("content")))),
                "tool_call_id": result.get("toolUseId"),
            }
            if result.get("status") == "error":
                message["is_error"] = True
            messages.append(message)
        elif "text" in block:
            messages.append({"role": "user", "content": block["text"]})
        else:
            said = mention(block)
            if said is not None:
                messages.append({"role": "user", "content": said})
    return messages


def _assistant_message(blocks: Sequence[Mapping[str, object]], where: str) -> NeutralMessage:
    reply = completion_of(blocks, where)
    message: NeutralMessage = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        calls: list[NeutralCall] = [
            {"id": call.id, "name": call.name, "arguments": call.arguments}
            for call in reply.tool_calls
        ]
        message["tool_calls"] = calls
    if reply.reasoning:
        message["reasoning"] = [dict(item) for item in reply.reasoning]
    return message


def _tools(config: object) -> list[NeutralTool]:
    tools: list[NeutralTool] = []
    for tool in each(fields(config or {}).get("tools")):
        spec = fields(tool).get("toolSpec")
        if isinstance(spec, Mapping):
            schema = fields(spec.get("inputSchema") or {})
            tools.append(
                {
                    "name": spec.get("name"),
                    "description": spec.get("description", ""),
                    "parameters": schema.get("json", {}),
                }
            )
    return tools


def decode_request(body: Mapping[str, object]) -> DecodedRequest:
    """A Converse request body (or an InvokeModel body with Anthropic's Messages,
    ``anthropic_version`` present) in neutral form.

    The body names no model (the URL does: see :func:`decode_request_at`) unless it holds
    boto3's ``modelId``. Each text block of a user message is a message of its own, an
    image or document a mention (``[image: png]``), each ``toolResult`` a tool message; an
    assistant message's text blocks are joined.
    """
    if "anthropic_version" in body:
        return anthropic_messages.decode_request(body)
    where = "bedrock.decode_request"
    turns = require_list(body, "messages", where)
    messages: list[NeutralMessage] = [
        {"role": "system", "content": text_of([block])}
        for block in each(body.get("system"))
        if isinstance(block, Mapping) and "text" in block
    ]
    for index, turn in enumerate(turns):
        blocks = blocks_of(turn, f"{where}: messages[{index}]")
        role = fields(turn).get("role")
        if role == "assistant":
            messages.append(_assistant_message(blocks, f"{where}: messages[{index}]"))
        else:
            messages.extend(_user_messages(blocks))
    return DecodedRequest(
        model=text_or_none(body.get("modelId")),
        messages=messages,
        tools=_tools(body.get("toolConfig")),
        stream=False,
    )


def decode_request_at(path: str, body: Mapping[str, object]) -> DecodedRequest:
    """The request ``body`` sent to ``path``, with the model and whether it streams from
    the URL.

    An InvokeModel body is the model's own: the Anthropic Messages body is read, any other
    (Amazon Nova and Titan, Meta Llama, Mistral, Cohere...) raises :class:`CodecError`
    naming the model family, so capture lists the call among the non-LLM exchanges.
    """
    model = model_of_path(path)
    if is_invoke_path(path) and "anthropic_version" not in body:
        family = model_family(model or "")
        raise CodecError(
            f"bedrock: the InvokeModel body of model {model!r} (family {family!r}) is not "
            "read: only Anthropic's Messages body (with anthropic_version) is. Call the "
            "model through Converse (/model/<id>/converse) to have its calls captured."
        )
    decoded = decode_request(body)
    return replace(
        decoded, model=model or decoded.model, stream=decoded.stream or is_stream_path(path)
    )

"""The content blocks of a Converse message, read and written: text, ``toolUse``,
``toolResult``, ``reasoningContent``, and the blocks kept only as a mention (``image``,
``document``, ``video``, ``cachePoint``...).

A Converse block is an object with one key naming its kind (``{"text": "..."}``,
``{"toolUse": {"toolUseId": ..., "name": ..., "input": {...}}}``). Both directions of the
codec use them: a request's assistant turns and a response's ``output.message`` hold the
same blocks.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pytest_agentctx.context.model import ToolCall
from pytest_agentctx.traffic.codecs.base import (
    Completion,
    Usage,
    each,
    fields,
    member,
    parse_arguments,
    tier_or_none,
    token_count,
)
from pytest_agentctx.traffic.errors import CodecError

#: The reasoning item type of a ``reasoningContent`` block (kept verbatim after ``type``).
REASONING = "bedrock_reasoning"

#: The ``type`` of a ``toolUse`` block that the provider runs itself.
SERVER_TOOL_USE = "server_tool_use"

#: Blocks that carry no text capture reads: a mention stands for them in a message.
_MENTIONED = ("image", "document", "video", "audio")


def blocks_of(turn: object, where: str) -> list[Mapping[str, object]]:
    """The ``content`` blocks of a message, checked: a :class:`CodecError` names ``where``."""
    if not isinstance(turn, Mapping):
        raise CodecError(
            f"{where}: expected a JSON object with 'role' and 'content', got {type(turn).__name__}."
        )
    content = turn.get("content") or []
    if not isinstance(content, list) or not all(isinstance(b, Mapping) for b in content):
        raise CodecError(
            f"{where}: 'content' is not a list of content blocks (JSON objects): "
            f"{content!r:.80}. Is this a Converse message?"
        )
    return [block for block in content if isinstance(block, Mapping)]


def mention(block: Mapping[str, object]) -> str | None:
    """``[image: png]``, ``[document: report (pdf)]``: what stands for a block with no text,
    or ``None`` for any other block."""
    for kind in _MENTIONED:
        value = block.get(kind)
        if isinstance(value, Mapping):
            name = value.get("name")
            form = value.get("format")
            label = f"{name} ({form})" if name and form else name or form or ""
            return f"[{kind}: {label}]" if label else f"[{kind}]"
    return None


def text_of(blocks: Sequence[object]) -> str:
    """The text of a list of blocks (a ``system`` list, a ``toolResult``'s content):
    ``text`` blocks as they are, ``json`` blocks as JSON, others mentioned, one per line."""
    texts: list[str] = []
    for block in each(blocks):
        data = fields(block)
        if "text" in data:
            texts.append(str(data["text"]))
        elif "json" in data:
            texts.append(json.dumps(data["json"], ensure_ascii=False, sort_keys=True))
        else:
            said = mention(data)
            if said is not None:
                texts.append(said)
    return "\n".join(texts)


def tool_call(block: Mapping[str, object], where: str) -> ToolCall:
    """The tool call of a ``toolUse`` block."""
    use = block["toolUse"]
    if not isinstance(use, Mapping):
        raise CodecError(f"{where}: a toolUse block is a {type(use).__name__}, not an object.")
    return ToolCall.model_validate(
        {
            "id": use.get("toolUseId") or "",
            "name": use.get("name") or "",
            "arguments": parse_arguments(use.get("input")),
        }
    )


def reasoning_item(block: Mapping[str, object]) -> dict[str, object]:
    """A ``reasoningContent`` block as a reasoning item: ``{"type": "bedrock_reasoning",
    "reasoningText": {"text": ..., "signature": ...}}`` or ``{..., "redactedContent": ...}``."""
    return {"type": REASONING, **fields(block["reasoningContent"])}


def completion_of(blocks: Sequence[Mapping[str, object]], where: str) -> Completion:
    """Text, tool calls, reasoning and server tools of an assistant message's blocks
    (texts joined).

    A ``toolUse`` of ``"type": "server_tool_use"`` is a tool the provider ran itself
    (``nova_code_interpreter``): a server tool, not a tool call; its ``toolResult`` in the
    same message is the provider's too.
    """
    texts: list[str] = []
    calls: list[ToolCall] = []
    reasoning: list[dict[str, object]] = []
    server_tools: list[dict[str, object]] = []
    for block in blocks:
        if "text" in block:
            texts.append(str(block["text"]))
        elif "toolUse" in block:
            call = tool_call(block, where)
            if fields(block["toolUse"]).get("type") == SERVER_TOOL_USE:
                server_tools.append({"id": call.id, "name": call.name, "input": call.arguments})
            else:
                calls.append(call)
        elif "reasoningContent" in block:
            reasoning.append(reasoning_item(block))
    return Completion(
        content="".join(texts) or None,
        tool_calls=tuple(calls),
        reasoning=tuple(reasoning),
        server_tools=tuple(server_tools),
    )


def assistant_blocks(message: Mapping[str, object]) -> list[dict[str, object]]:
    """The blocks of an assistant message: reasoning first (as the model sent it), text,
    tool calls."""
    blocks: list[dict[str, object]] = []
    for item in each(message.get("reasoning")):
        data = fields(item)
        if data.get("type") == REASONING:
            blocks.append({"reasoningContent": {k: v for k, v in data.items() if k != "type"}})
    content = message.get("content")
    if content:
        blocks.append({"text": content})
    for call in each(message.get("tool_calls")):
        blocks.append(
            {
                "toolUse": {
                    "toolUseId": member(call, "id"),
                    "name": member(call, "name"),
                    "input": fields(call).get("arguments") or {},
                }
            }
        )
    return blocks


def decode_usage(data: object, service_tier: object = None) -> Usage | None:
    """Usage of a Converse response or stream. Its ``inputTokens`` are the uncached ones
    only: the tokens read from the cache (``cacheReadInputTokens``) and written to it
    (``cacheWriteInputTokens``; ``cacheDetails`` splits those by ``ttl``, ``5m`` or ``1h``)
    are added to make the call's input. ``service_tier`` is the response's (or the stream's
    ``metadata`` event's) ``serviceTier``, ``{"type": "priority"}``."""
    if not isinstance(data, Mapping):
        return None
    read = token_count(data.get("cacheReadInputTokens"))
    write = token_count(data.get("cacheWriteInputTokens"))
    tier = service_tier.get("type") if isinstance(service_tier, Mapping) else None
    return Usage(
        input_tokens=token_count(data.get("inputTokens")) + read + write,
        output_tokens=token_count(data.get("outputTokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=sum(
            token_count(detail.get("inputTokens"))
            for detail in each(data.get("cacheDetails"))
            if isinstance(detail, Mapping) and detail.get("ttl") == "1h"
        ),
        service_tier=tier_or_none(tier),
    )


def encode_usage(usage: Usage | None) -> dict[str, object]:
    """The ``usage`` object of a Converse response: the uncached ``inputTokens``, then the
    cache figures when there are any."""
    usage = usage or Usage()
    data: dict[str, object] = {
        "inputTokens": usage.uncached_input_tokens,
        "outputTokens": usage.output_tokens,
        "totalTokens": usage.total_tokens,
    }
    if usage.cache_read_tokens:
        data["cacheReadInputTokens"] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        data["cacheWriteInputTokens"] = usage.cache_write_tokens
        ttls = (
            ("1h", usage.cache_write_1h_tokens),
            ("5m", usage.cache_write_tokens - usage.cache_write_1h_tokens),
        )
        data["cacheDetails"] = [{"ttl": ttl, "inputTokens": count} for ttl, count in ttls if count]
    return data


def encode_tier(usage: Usage | None) -> dict[str, object]:
    """The ``serviceTier`` of a Converse response or stream ``metadata`` event, when the
    usage names a tier."""
    tier = usage.service_tier if usage is not None else None
    return {"serviceTier": {"type": tier}} if tier else {}

"""Gemini ``generateContent`` responses: decoded into a :class:`Completion` (its first
candidate, the usage, a blocked prompt's reason), and encoded from one (what the fake model
serves).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pytest_agentctx.traffic.codecs.base import Completion, Usage, require
from pytest_agentctx.traffic.codecs.gemini.parts import completion_of, get, model_parts, turn_parts
from pytest_agentctx.traffic.errors import CodecError

__all__ = ["decode_response", "encode_response", "reply_parts", "response_body"]


def _decode_usage(data: Any) -> Usage | None:
    """Usage of a response: tool-use prompt tokens count as input, thinking tokens as
    output (they are billed as output)."""
    if not isinstance(data, Mapping):
        return None
    return Usage(
        input_tokens=int(get(data, "promptTokenCount") or 0)
        + int(get(data, "toolUsePromptTokenCount") or 0),
        output_tokens=int(get(data, "candidatesTokenCount") or 0)
        + int(get(data, "thoughtsTokenCount") or 0),
    )


def decode_response(body: Mapping[str, Any]) -> Completion:
    """A ``generateContent`` response body as a :class:`Completion` (its first candidate).

    A response without candidates whose prompt was blocked is an empty reply whose stop
    reason is the block reason (``SAFETY``...).
    """
    where = "gemini.decode_response"
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    candidates = body.get("candidates")
    feedback = get(body, "promptFeedback")
    if not candidates and isinstance(feedback, Mapping) and get(feedback, "blockReason"):
        stop_reason: str | None = str(get(feedback, "blockReason"))
        parts: list[Mapping[str, Any]] = []
    else:
        candidates = require(body, "candidates", list, where)
        if not candidates or not isinstance(candidates[0], Mapping):
            raise CodecError(
                f"{where}: 'candidates' holds no candidate object ({candidates!r:.80}). Is "
                "this a complete generateContent response?"
            )
        candidate = candidates[0]
        stop_reason = get(candidate, "finishReason")
        content = candidate.get("content") or {}
        parts = turn_parts(content, f"{where}: candidates[0].content")
    completion = completion_of(parts, where)
    return replace(
        completion,
        model=get(body, "modelVersion"),
        usage=_decode_usage(get(body, "usageMetadata")),
        stop_reason=stop_reason,
        response_id=get(body, "responseId"),
    )


def reply_parts(completion: Completion) -> list[dict[str, Any]]:
    """The parts of the model turn that replies ``completion``."""
    message: dict[str, Any] = {
        "content": completion.content,
        "tool_calls": [call.model_dump(mode="json") for call in completion.tool_calls],
        "reasoning": [dict(item) for item in completion.reasoning],
    }
    return model_parts(message)


def _usage_metadata(usage: Usage, *, final: bool = True) -> dict[str, int]:
    if not final:
        return {"promptTokenCount": usage.input_tokens, "totalTokenCount": usage.input_tokens}
    return {
        "promptTokenCount": usage.input_tokens,
        "candidatesTokenCount": usage.output_tokens,
        "totalTokenCount": usage.total_tokens,
    }


def response_body(
    parts: list[dict[str, Any]],
    completion: Completion,
    response_id: str,
    *,
    final: bool = True,
) -> dict[str, Any]:
    """A ``GenerateContentResponse`` holding ``parts`` of ``completion``: the whole reply,
    or (not ``final``) a chunk of a stream before its last, without finish reason."""
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if final:
        candidate["finishReason"] = completion.stop_reason or "STOP"
    candidate["index"] = 0
    return {
        "candidates": [candidate],
        "usageMetadata": _usage_metadata(completion.usage or Usage(), final=final),
        "modelVersion": completion.model or "unknown",
        "responseId": response_id,
    }


def encode_response(
    completion: Completion, *, response_id: str, created: int = 0
) -> dict[str, Any]:
    """A ``generateContent`` response body for ``completion`` (what the fake model serves).

    Function calls with a synthetic id are sent without one, as the Gemini API sends them.
    ``created`` is accepted for symmetry with the other codecs; Gemini sends no timestamp.
    """
    return response_body(reply_parts(completion), completion, response_id)

"""Gemini ``generateContent`` responses: decoded into a :class:`Completion` (its first
candidate, the usage, a blocked prompt's reason), and encoded from one (what the fake model
serves).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from pytest_agentctx.traffic.codecs.base import (
    Completion,
    Usage,
    require_list,
    text_or_none,
    tier_or_none,
    token_count,
)
from pytest_agentctx.traffic.codecs.gemini.parts import completion_of, get, model_parts, turn_parts
from pytest_agentctx.traffic.errors import CodecError


def _decode_usage(data: object) -> Usage | None:
    """Usage of a response (its ``usageMetadata``).

    The input is ``promptTokenCount`` (which counts the tokens read from a cached content,
    ``cachedContentTokenCount``, too) plus ``toolUsePromptTokenCount``. Gemini does not
    count its thinking in ``candidatesTokenCount``: ``thoughtsTokenCount`` is apart, and
    billed at the output price. So the output is the two added up, and
    ``reasoning_tokens`` the thoughts, as OpenAI counts its reasoning inside the output: a
    price per output token applies to ``output_tokens`` as it is.
    """
    if not isinstance(data, Mapping):
        return None
    thoughts = token_count(get(data, "thoughtsTokenCount"))
    return Usage(
        input_tokens=token_count(get(data, "promptTokenCount"))
        + token_count(get(data, "toolUsePromptTokenCount")),
        output_tokens=token_count(get(data, "candidatesTokenCount")) + thoughts,
        cache_read_tokens=token_count(get(data, "cachedContentTokenCount")),
        reasoning_tokens=thoughts,
        service_tier=tier_or_none(get(data, "serviceTier")),
    )


#: The names of the finish reasons a client asking for ``enum-encoding=int`` (Vertex AI's
#: REST transport) is sent as numbers.
_FINISH_REASONS = (
    "FINISH_REASON_UNSPECIFIED",
    "STOP",
    "MAX_TOKENS",
    "SAFETY",
    "RECITATION",
    "OTHER",
    "BLOCKLIST",
    "PROHIBITED_CONTENT",
    "SPII",
    "MALFORMED_FUNCTION_CALL",
)


def _finish_reason(value: object) -> str | None:
    """A finish reason by its name, also when it came as its number."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(_FINISH_REASONS):
        return _FINISH_REASONS[value]
    return text_or_none(value)


def decode_response(body: Mapping[str, object], *, turn: int = 0) -> Completion:
    """A ``generateContent`` response body as a :class:`Completion` (its first candidate).

    A response without candidates whose prompt was blocked is an empty reply whose stop
    reason is the block reason (``SAFETY``...). ``turn``: the number of model turns in the
    request (:func:`~.parts.model_turns`), for the synthetic ids of function calls.
    """
    where = "gemini.decode_response"
    if not isinstance(body, Mapping):
        raise CodecError(f"{where}: expected a JSON object, got {type(body).__name__}.")
    candidates = body.get("candidates")
    feedback = get(body, "promptFeedback")
    if not candidates and isinstance(feedback, Mapping) and get(feedback, "blockReason"):
        stop_reason: str | None = str(get(feedback, "blockReason"))
        parts: list[Mapping[str, object]] = []
    else:
        candidates = require_list(body, "candidates", where)
        candidate = candidates[0] if candidates else None
        if not isinstance(candidate, Mapping):
            raise CodecError(
                f"{where}: 'candidates' holds no candidate object ({candidates!r:.80}). Is "
                "this a complete generateContent response?"
            )
        stop_reason = _finish_reason(get(candidate, "finishReason"))
        content = candidate.get("content") or {}
        parts = turn_parts(content, f"{where}: candidates[0].content")
    completion = completion_of(parts, where, turn)
    return replace(
        completion,
        model=text_or_none(get(body, "modelVersion")),
        usage=_decode_usage(get(body, "usageMetadata")),
        stop_reason=stop_reason,
        response_id=text_or_none(get(body, "responseId")),
    )


def reply_parts(completion: Completion) -> list[dict[str, object]]:
    """The parts of the model turn that replies ``completion``."""
    message: dict[str, object] = {
        "content": completion.content,
        "tool_calls": [call.model_dump(mode="json") for call in completion.tool_calls],
        "reasoning": [dict(item) for item in completion.reasoning],
    }
    return model_parts(message)


def _usage_metadata(usage: Usage, *, final: bool = True) -> dict[str, object]:
    """The ``usageMetadata`` of a response: the thoughts apart from the candidates' tokens,
    the cached and thought counts and the tier only when there are any."""
    data: dict[str, object] = {"promptTokenCount": usage.input_tokens}
    if final:
        data["candidatesTokenCount"] = usage.output_tokens - usage.reasoning_tokens
    data["totalTokenCount"] = usage.total_tokens if final else usage.input_tokens
    if usage.cache_read_tokens:
        data["cachedContentTokenCount"] = usage.cache_read_tokens
    if final and usage.reasoning_tokens:
        data["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.service_tier:
        data["serviceTier"] = usage.service_tier
    return data


def response_body(
    parts: list[dict[str, object]],
    completion: Completion,
    response_id: str,
    *,
    final: bool = True,
) -> dict[str, object]:
    """A ``GenerateContentResponse`` holding ``parts`` of ``completion``: the whole reply,
    or (not ``final``) a chunk of a stream before its last, without finish reason."""
    candidate: dict[str, object] = {"content": {"parts": parts, "role": "model"}}
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
) -> dict[str, object]:
    """A ``generateContent`` response body for ``completion`` (what the fake model serves).

    Function calls with a synthetic id are sent without one, as the Gemini API sends them.
    ``created`` is accepted for symmetry with the other codecs; Gemini sends no timestamp.
    """
    return response_body(reply_parts(completion), completion, response_id)

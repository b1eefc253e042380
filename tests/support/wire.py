"""Provider wire bodies the tests' own loopback servers answer with.

The test suite imports it by file name (``from support.wire import chat_completion``), as
it does ``support.http_server``.
"""

from __future__ import annotations

from typing import Any


def chat_completion(text: str, *, model: str = "gpt-4o-mini") -> dict[str, Any]:
    """An OpenAI chat completion whose answer is ``text``, with one token each way."""
    return {
        "id": "chatcmpl-e2e",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }

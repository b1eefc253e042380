"""Provider wire bodies the tests' own loopback servers answer with.

The test suite imports it by file name (``from support.wire import chat_completion``), as
it does ``support.http_server``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction


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


#: Where the recorded chat calls of :func:`chat_interaction` went.
CHAT_URL = "https://api.openai.com/v1/chat/completions"


def chat_interaction(question: str, answer: str, *, role: str = "agent") -> Interaction:
    """A recorded OpenAI chat call: ``question`` asked, ``answer`` given (5 + 3 tokens),
    made under ``role``."""
    from pytest_agentctx.traffic.cassettes.fileformat import Interaction

    request = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": question}]}
    response = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": answer},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8},
    }
    return Interaction(
        "POST", CHAT_URL, {}, {"json": request}, 200, {}, {"json": response}, role=role
    )

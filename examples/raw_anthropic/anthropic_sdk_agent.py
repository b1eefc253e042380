"""A currency agent written directly on the ``anthropic`` SDK, streaming its replies.

The tool loop is written by hand, as most first agents on the Messages API are: stream a
reply, run the ``tool_use`` blocks it holds, send the ``tool_result`` blocks back, until
the model answers in text. Nothing in it knows about tests.
"""

from __future__ import annotations

from typing import Any

import anthropic

#: Units of the quote currency for one unit of the base currency (a fixed table, so the
#: example is reproducible).
RATES = {("EUR", "USD"): 1.08, ("EUR", "GBP"): 0.85, ("USD", "JPY"): 151.2}

SYSTEM_PROMPT = (
    "You convert amounts between currencies. Always call get_exchange_rate, then give the "
    "converted amount with two decimals."
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_exchange_rate",
        "description": "How many units of `quote` one unit of `base` buys today.",
        "input_schema": {
            "type": "object",
            "properties": {
                "base": {"type": "string", "description": "ISO code, e.g. EUR"},
                "quote": {"type": "string", "description": "ISO code, e.g. USD"},
            },
            "required": ["base", "quote"],
        },
    }
]


def get_exchange_rate(base: str, quote: str) -> str:
    """The rate from the table, or an error the model can read."""
    pair = (base.upper(), quote.upper())
    if pair in RATES:
        return f"{RATES[pair]}"
    if pair[::-1] in RATES:
        return f"{1 / RATES[pair[::-1]]:.6f}"
    return f"error: no rate for {base}/{quote}"


async def convert(
    client: anthropic.AsyncAnthropic,
    question: str,
    *,
    model: str = "claude-haiku-4-5",
    max_turns: int = 4,
) -> str:
    """Answer ``question``, running the tools the model asks for, until it answers in text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    for _ in range(max_turns):
        async with client.messages.stream(
            model=model,
            max_tokens=512,
            system=SYSTEM_PROMPT,
            tools=TOOLS,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
        ) as stream:
            reply = await stream.get_final_message()
        calls = [block for block in reply.content if block.type == "tool_use"]
        if not calls:
            return "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": reply.content})
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": get_exchange_rate(**call.input),  # type: ignore[arg-type]
                    }
                    for call in calls
                ],
            }
        )
    raise RuntimeError(f"no answer after {max_turns} model calls")

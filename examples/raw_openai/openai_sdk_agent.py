"""A weather agent written directly on the ``openai`` SDK: the tool loop by hand.

This is the kind of agent most projects start with: a chat-completions call in a loop,
tools as plain functions, the messages list as its only state. Nothing in it knows about
tests; the test points the client at a ``base_url`` and pytest-agentctx captures the run.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai

TEMPERATURES = {"paris": 18, "oslo": 4, "cairo": 31}
UTC_OFFSETS = {"paris": 1, "oslo": 1, "cairo": 2}

SYSTEM_PROMPT = (
    "You are a concise weather assistant. Use get_weather for temperatures and "
    "get_local_time for the time. Answer in one sentence."
)


def get_weather(city: str) -> str:
    """Current temperature in a city, in Celsius."""
    key = city.strip().lower()
    if key not in TEMPERATURES:
        return f"error: no weather station in {city}"
    return f"{TEMPERATURES[key]}°C in {city}"


def get_local_time(city: str) -> str:
    """Local time in a city (a fixed clock, so the example is reproducible)."""
    offset = UTC_OFFSETS.get(city.strip().lower())
    if offset is None:
        return f"error: unknown time zone for {city}"
    return f"{(12 + offset) % 24:02d}:00 in {city}"


FUNCTIONS: dict[str, Callable[..., str]] = {
    "get_weather": get_weather,
    "get_local_time": get_local_time,
}


def _tool(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "The city's name."}},
                "required": ["city"],
            },
        },
    }


TOOLS = [
    _tool("get_weather", "Current temperature in a city."),
    _tool("get_local_time", "Local time in a city."),
]


async def ask(
    client: openai.AsyncOpenAI,
    question: str,
    *,
    model: str = "gpt-4o-mini",
    max_turns: int = 4,
) -> str:
    """Answer ``question``, calling the tools the model asks for, until it answers in text."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": question},
    ]
    for _ in range(max_turns):
        completion = await client.chat.completions.create(
            model=model,
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )
        message = completion.choices[0].message
        if not message.tool_calls:
            return message.content or ""
        messages.append(message.model_dump(exclude_none=True))
        for call in message.tool_calls:
            arguments = json.loads(call.function.arguments)
            result = FUNCTIONS[call.function.name](**arguments)
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    raise RuntimeError(f"no answer after {max_turns} model calls")

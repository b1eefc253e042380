"""The inner project of the end-to-end tests of raw-SDK agents: a conftest with a
:class:`~pytest_agentctx.LoopbackProvider` fixture (``model_server``) and agents written on the
plain ``openai`` and ``anthropic`` SDKs, each a tool loop of ``AGENT_STEPS`` model calls
(``script()`` scripts them)."""

CONFTEST = """
import pytest

from pytest_agentctx import LoopbackProvider


@pytest.fixture
def model_server():
    with LoopbackProvider() as provider:
        yield provider
"""

AGENTS = '''
import json
import os

import anthropic
import openai

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


def script(server):
    """AGENT_STEPS model calls: AGENT_STEPS - 1 tool calls, then the answer."""
    for _ in range(int(os.environ.get("AGENT_STEPS", "2")) - 1):
        server.reply_tool_call("get_weather", city="Paris")
    server.reply("Sunny in Paris.")


def chat_agent(base_url):
    client = openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0)
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    while True:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=[WEATHER]
        )
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content
        for call in message.tool_calls:
            messages.append({"role": "tool", "tool_call_id": call.id, "content": "Sunny"})


async def streaming_chat_agent(base_url):
    async with openai.AsyncOpenAI(api_key="sk-test", base_url=base_url, max_retries=0) as client:
        messages = [{"role": "user", "content": "Weather in Paris?"}]
        while True:
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, tools=[WEATHER], stream=True
            )
            text, calls = "", {}
            async for chunk in stream:
                delta = chunk.choices[0].delta if chunk.choices else None
                if delta is None:
                    continue
                text += delta.content or ""
                for part in delta.tool_calls or ():
                    entry = calls.setdefault(part.index, {"id": "", "name": "", "args": ""})
                    entry["id"] = part.id or entry["id"]
                    entry["name"] += part.function.name or ""
                    entry["args"] += part.function.arguments or ""
            if not calls:
                return text
            messages.append({"role": "assistant", "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": c["args"]}}
                for c in calls.values()
            ]})
            for c in calls.values():
                messages.append({"role": "tool", "tool_call_id": c["id"], "content": "Sunny"})


def anthropic_agent(base_url):
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url=base_url, max_retries=0)
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    messages = [{"role": "user", "content": "Weather in Paris?"}]
    while True:
        with client.messages.stream(
            model="claude-haiku-4-5", max_tokens=200, messages=messages, tools=tools
        ) as stream:
            message = stream.get_final_message()
        messages.append({"role": "assistant", "content": [b.model_dump() for b in message.content]})
        calls = [b for b in message.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in message.content if b.type == "text")
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": c.id, "content": "Sunny"} for c in calls
        ]})
'''

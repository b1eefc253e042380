"""End-to-end tests of Bedrock agents written on plain ``boto3``: Converse with a tool loop,
ConverseStream with a tool loop, InvokeModel and InvokeModelWithResponseStream with
Anthropic's Messages body.

Each inner agent sends through the real ``bedrock-runtime`` client (``urllib3`` and SigV4)
to a :class:`~pytest_agentctx.LoopbackProvider` the inner test starts. The outer tests
record them with ``--agent-record`` (with made-up AWS credentials in the environment), then
replay them offline with no credentials at all: the cassettes answer every call, the
server sees none, and ``agent_context`` shows the iterations, each tool call joined to its
result, usage and stop reasons; budgets count them.
"""

from __future__ import annotations

import json
from pathlib import Path

import boto3  # noqa: F401  (imported here so the inner runs do not import it again)
import pytest

CONFTEST = """
import pytest

from pytest_agentctx import LoopbackProvider, RecordMode


@pytest.fixture
def model_server(agent_cassette):
    with LoopbackProvider() as provider:
        yield provider
        if agent_cassette.mode is RecordMode.NONE:
            assert provider.exchanges == []
        else:
            provider.verify()
"""

AGENTS = '''
import json

import boto3
from botocore.config import Config

MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"
QUESTION = "Weather in Paris?"
WEATHER = {
    "name": "get_weather",
    "description": "The weather in a city.",
    "schema": {"type": "object", "properties": {"city": {"type": "string"}}},
}
TOOL_CONFIG = {
    "tools": [
        {
            "toolSpec": {
                "name": WEATHER["name"],
                "description": WEATHER["description"],
                "inputSchema": {"json": WEATHER["schema"]},
            }
        }
    ]
}


def script(server):
    server.reply_tool_call("get_weather", city="Paris").reply("Sunny in Paris.")


def get_weather(city):
    return f"Sunny in {city}"


def client(endpoint_url):
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=endpoint_url,
        config=Config(retries={"total_max_attempts": 1}),
    )


def results_of(tool_uses):
    return {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": use["toolUseId"],
                    "content": [{"text": get_weather(**use["input"])}],
                }
            }
            for use in tool_uses
        ],
    }


def converse_agent(endpoint_url):
    bedrock = client(endpoint_url)
    messages = [{"role": "user", "content": [{"text": QUESTION}]}]
    while True:
        reply = bedrock.converse(
            modelId=MODEL,
            messages=messages,
            system=[{"text": "Answer briefly."}],
            toolConfig=TOOL_CONFIG,
        )
        message = reply["output"]["message"]
        messages.append(message)
        uses = [block["toolUse"] for block in message["content"] if "toolUse" in block]
        if reply["stopReason"] != "tool_use":
            return message["content"][0]["text"]
        messages.append(results_of(uses))


def read_stream(events):
    """The assistant message and stop reason of a ConverseStream's events."""
    content, current, stop = [], None, None
    for event in events:
        if "contentBlockStart" in event:
            use = event["contentBlockStart"]["start"]["toolUse"]
            current = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}, "raw": ""}
        elif "contentBlockDelta" in event:
            delta = event["contentBlockDelta"]["delta"]
            if "toolUse" in delta:
                current["raw"] += delta["toolUse"]["input"]
            elif "text" in delta:
                current = current or {"text": ""}
                current["text"] += delta["text"]
        elif "contentBlockStop" in event:
            raw = current.pop("raw", None)
            if raw is not None:
                current["toolUse"]["input"] = json.loads(raw or "{}")
            content.append(current)
            current = None
        elif "messageStop" in event:
            stop = event["messageStop"]["stopReason"]
    return {"role": "assistant", "content": content}, stop


def converse_stream_agent(endpoint_url):
    bedrock = client(endpoint_url)
    messages = [{"role": "user", "content": [{"text": QUESTION}]}]
    while True:
        response = bedrock.converse_stream(
            modelId=MODEL, messages=messages, toolConfig=TOOL_CONFIG
        )
        message, stop = read_stream(response["stream"])
        messages.append(message)
        if stop != "tool_use":
            return message["content"][0]["text"]
        messages.append(
            results_of([block["toolUse"] for block in message["content"] if "toolUse" in block])
        )


def read_anthropic_events(events):
    """The Messages reply (content, stop_reason) of InvokeModelWithResponseStream's chunks."""
    content, raw, stop = [], {}, None
    for event in events:
        if event["type"] == "content_block_start":
            content.append(dict(event["content_block"]))
        elif event["type"] == "content_block_delta":
            delta = event["delta"]
            if delta["type"] == "text_delta":
                content[event["index"]]["text"] += delta["text"]
            else:
                raw[event["index"]] = raw.get(event["index"], "") + delta["partial_json"]
        elif event["type"] == "message_delta":
            stop = event["delta"]["stop_reason"]
    for index, text in raw.items():
        content[index]["input"] = json.loads(text or "{}")
    return {"content": content, "stop_reason": stop}


def invoke_agent(endpoint_url, stream=False):
    bedrock = client(endpoint_url)
    messages = [{"role": "user", "content": QUESTION}]
    tool = {
        "name": WEATHER["name"],
        "description": WEATHER["description"],
        "input_schema": WEATHER["schema"],
    }
    while True:
        body = {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 256,
            "messages": messages,
            "tools": [tool],
        }
        if stream:
            response = bedrock.invoke_model_with_response_stream(
                modelId=MODEL, body=json.dumps(body)
            )
            reply = read_anthropic_events(
                json.loads(item["chunk"]["bytes"]) for item in response["body"]
            )
        else:
            response = bedrock.invoke_model(modelId=MODEL, body=json.dumps(body))
            reply = json.loads(response["body"].read())
        messages.append({"role": "assistant", "content": reply["content"]})
        if reply["stop_reason"] != "tool_use":
            return reply["content"][0]["text"]
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": block["id"],
             "content": get_weather(**block["input"])}
            for block in reply["content"] if block["type"] == "tool_use"
        ]})
'''

TESTS = """
import pytest

from bedrock_agents import converse_agent, converse_stream_agent, invoke_agent, script
from pytest_agentctx import ANY, matches

AGENTS = {
    "converse": converse_agent,
    "converse_stream": converse_stream_agent,
    "invoke": invoke_agent,
    "invoke_stream": lambda url: invoke_agent(url, stream=True),
}
MODEL = "us.anthropic.claude-3-5-haiku-20241022-v1:0"


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_bedrock_agent(kind, model_server, agent_context):
    script(model_server)

    assert AGENTS[kind](model_server.bedrock_endpoint_url) == "Sunny in Paris."

    first, second = agent_context.context.iterations
    (call,) = first.tool_calls
    assert (call.name, dict(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert matches(
        first.messages[-1].to_dict(),
        {"role": "tool", "content": "Sunny in Paris", "tool_call_id": call.id},
    )
    assert second.messages[-1].content == "Sunny in Paris."
    for iteration, stop in ((first, "tool_use"), (second, "end_turn")):
        assert matches(
            dict(iteration.metadata),
            {
                "provider": "bedrock",
                "model": MODEL,
                "stop_reason": stop,
                "usage": {"input_tokens": ANY, "output_tokens": ANY, "total_tokens": ANY},
            },
        )
    assert agent_context.non_llm == []
"""

QUIET = ("-p", "no:cacheprovider")
NODES = ("converse", "converse_stream", "invoke", "invoke_stream")


@pytest.fixture
def project(agent_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_REGION", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(agent_pytester.path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(agent_pytester.path / "no-aws-keys"))
    agent_pytester.makeconftest(CONFTEST)
    agent_pytester.makepyfile(bedrock_agents=AGENTS, test_bedrock=TESTS)
    return agent_pytester


@pytest.fixture
def recorded(project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """The four agents recorded with made-up credentials, which are then taken away."""
    with monkeypatch.context() as keys:
        keys.setenv("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
        keys.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
        project.runpytest(*QUIET, "--agent-record").assert_outcomes(passed=4)
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    return project


def test_boto3_agents_replay_offline_with_their_context(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*QUIET, "-v")

    result.assert_outcomes(passed=4)
    cassettes = sorted(p.name for p in (recorded.path / "cassettes").rglob("*.json"))
    assert len(cassettes) == 4, cassettes


def test_the_cassettes_keep_no_credentials(recorded: pytest.Pytester) -> None:
    text = "".join(p.read_text() for p in (recorded.path / "cassettes").rglob("*.json"))

    assert "AKIAIOSFODNN7EXAMPLE" not in text
    assert "wJalrXUtnFEMI" not in text
    assert "Signature=" not in text


def test_a_converse_stream_is_stored_as_its_event_messages(recorded: pytest.Pytester) -> None:
    (path,) = (recorded.path / "cassettes").rglob("*converse_stream*.json")
    first = json.loads(path.read_text())["interactions"][0]

    messages = first["response"]["body"]["eventstream"]
    assert [message["headers"][":event-type"] for message in messages][:2] == [
        "messageStart",
        "contentBlockStart",
    ]
    assert all("json" in message for message in messages)


def test_a_budget_counts_the_tool_calls_of_boto3_agents(recorded: pytest.Pytester) -> None:
    result = recorded.runpytest(*QUIET, "-o", "agent_budget_max_tool_calls=0")

    result.assert_outcomes(failed=4)
    for node in NODES:
        result.stdout.fnmatch_lines(
            [f"*agent budget exceeded: max_tool_calls 1 > 0 (test_bedrock.py::*[[]{node}[]])*"]
        )


def test_the_report_measures_boto3_agents(recorded: pytest.Pytester) -> None:
    recorded.runpytest(*QUIET, "--agent-report=report.json").assert_outcomes(passed=4)

    data = json.loads(Path(recorded.path, "report.json").read_text(encoding="utf-8"))
    stats = {test["nodeid"].rsplit("[", 1)[1].rstrip("]"): test["stats"] for test in data["tests"]}
    assert {
        node: (entry["iterations"], entry["trajectory"]) for node, entry in stats.items()
    } == dict.fromkeys(NODES, (2, ["get_weather"]))

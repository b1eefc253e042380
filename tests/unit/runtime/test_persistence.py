"""Unit tests of pytest_agentctx.runtime.persistence: save_run and load_run.

A saved run is JSON with a schema name and version; loading it back gives an equal
``RunResult`` for the agent passed in (tools are never saved). Every failure is a
:class:`PersistenceError` whose message starts with the file's path.
"""

from __future__ import annotations

import json
import re
import ssl
import tempfile
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from pytest_agentctx import (
    Agent,
    AgentContext,
    AgentRuntime,
    FakeLLM,
    MaxIterationsExceeded,
    PersistenceError,
    RunResult,
    SequentialIds,
    StepClock,
    ToolCall,
    ToolResult,
    load_run,
    save_run,
    tool,
)
from pytest_agentctx.runtime.persistence import SCHEMA, SCHEMA_VERSION
from pytest_agentctx.runtime.providers import OpenAIChatProvider

_TLS = ssl.create_default_context()
T0 = datetime(2025, 1, 1, tzinfo=UTC)


@tool
def lookup_order(order_id: str) -> str:
    """Status of an order."""
    return {"A1": "shipped"}.get(order_id, "unknown")


@tool(name="lookup_order")
def lookup_order_v2(order_id: str) -> str:
    """Status of an order (a newer implementation)."""
    return f"{order_id}: shipped today"


SUPPORT = Agent(name="support", model="openai:gpt-4o-mini", tools=[lookup_order])


@pytest.fixture
async def provider() -> AsyncIterator[OpenAIChatProvider]:
    async with openai.AsyncOpenAI(
        api_key="sk-test", http_client=httpx2.AsyncClient(verify=_TLS)
    ) as client:
        yield OpenAIChatProvider(client=client)


def fresh_runtime(provider: OpenAIChatProvider) -> AgentRuntime:
    return AgentRuntime(clock=StepClock(), ids=SequentialIds(), providers={"openai": provider})


@pytest.fixture
async def completed(fake, provider) -> RunResult:
    fake.reply_tool_call("lookup_order", order_id="A1").reply("A1 has shipped.")
    return await fresh_runtime(provider).run(SUPPORT, "Where is A1?")


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def saved_data(completed: RunResult, tmp_path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(save_run(tmp_path / "run.json", completed).read_text())
    return data


def starts_with_path(path: Path) -> str:
    return "^" + re.escape(str(path)) + ": "


# -- saving and loading ----------------------------------------------------------------


def test_a_saved_run_loads_back_equal(completed, tmp_path):
    path = save_run(tmp_path / "run.json", completed)

    assert (path, load_run(path, SUPPORT)) == (tmp_path / "run.json", completed)


async def test_a_failed_run_loads_back_with_its_status_and_error(fake, provider, tmp_path):
    fake.reply_tool_call("lookup_order", order_id="A1")
    with pytest.raises(MaxIterationsExceeded) as raised:
        await fresh_runtime(provider).run(
            Agent(
                name="support", model="openai:gpt-4o-mini", tools=[lookup_order], max_iterations=1
            ),
            "Where is A1?",
        )
    failed = raised.value.result
    assert failed is not None

    loaded = load_run(save_run(tmp_path / "failed.json", failed), failed.agent)

    assert (loaded, loaded.status, loaded.error) == (failed, "failed", str(raised.value))


def test_reasoning_items_and_metadata_survive_the_round_trip(tmp_path):
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
    context = (
        AgentContext.new("Think.", at=T0)
        .with_iteration_metadata({"window": {"dropped": [1, 2]}, "usage": {"input_tokens": 3}})
        .add_assistant_message("42.", reasoning=[reasoning], at=T0)
    )
    result = RunResult(agent=SUPPORT, context=context, output="42.")

    loaded = load_run(save_run(tmp_path / "run.json", result), SUPPORT)

    assert loaded.context.iterations[0].messages[-1].reasoning == [reasoning]
    assert loaded.context.iterations[0].metadata == {
        "window": {"dropped": [1, 2]},
        "usage": {"input_tokens": 3},
    }


def test_the_file_holds_the_schema_the_agent_and_the_run(completed, tmp_path):
    match saved_data(completed, tmp_path):
        case {
            "schema": "pytest-agentctx/run",
            "version": 1,
            "agent": {"name": "support", "model": "openai:gpt-4o-mini"},
            "status": "completed",
            "error": None,
            "output": "A1 has shipped.",
            "context": {"current_iteration": 2, "iterations": [{"number": 1}, {"number": 2}]},
            **rest,
        } if not rest:
            pass
        case data:
            pytest.fail(f"unexpected file: {data}")


def test_tools_and_the_input_are_not_saved(completed, tmp_path):
    text = save_run(tmp_path / "run.json", completed).read_text()

    assert ('"tools"' in text, '"input"' in text, "Status of an order" in text) == (
        False,
        False,
        False,
    )


def test_saving_is_deterministic_sorted_and_ends_with_a_newline(completed, tmp_path):
    first = save_run(tmp_path / "a.json", completed).read_bytes()
    second = save_run(tmp_path / "b.json", completed).read_bytes()

    assert (first == second, first.endswith(b"}\n"), list(json.loads(first))) == (
        True,
        True,
        sorted(json.loads(first)),
    )


def test_saving_creates_missing_folders(completed, tmp_path):
    path = save_run(tmp_path / "runs" / "2025" / "run.json", completed)

    assert load_run(path, SUPPORT) == completed


def test_save_run_takes_a_path_as_text(completed, tmp_path):
    path = save_run(str(tmp_path / "run.json"), completed)

    assert load_run(str(path), SUPPORT) == completed


def test_save_run_refuses_anything_but_a_run_result(tmp_path):
    with pytest.raises(
        PersistenceError,
        match=r"^save_run\(\) saves the RunResult of a run, got str: 'A1 has shipped\.'\.$",
    ):
        save_run(tmp_path / "run.json", "A1 has shipped.")  # type: ignore[arg-type]


# -- continuing ------------------------------------------------------------------------


async def test_a_loaded_run_continues_as_the_original_would(completed, provider, tmp_path):
    # equal contexts; their JSON differs only in the order of metadata keys, which the
    # file stores sorted
    loaded = load_run(save_run(tmp_path / "run.json", completed), SUPPORT)
    continued = []
    for result in (completed, loaded):
        with FakeLLM() as fake:
            fake.reply("You are welcome.")
            continued.append(await fresh_runtime(provider).continue_conversation(result, "Thanks!"))

    assert continued[0] == continued[1]


async def test_a_loaded_run_continues_with_the_tools_of_the_agent_given(
    fake, completed, provider, tmp_path
):
    newer = Agent(name="support", model="openai:gpt-4o-mini", tools=[lookup_order_v2])
    loaded = load_run(save_run(tmp_path / "run.json", completed), newer)
    fake.reply_tool_call("lookup_order", order_id="A1").reply("Shipped today.")

    result = await fresh_runtime(provider).continue_conversation(loaded, "Any news?")

    assert (result.agent, result.context.get_iteration_messages(3)[2].content) == (
        newer,
        "A1: shipped today",
    )


async def test_a_loaded_failed_run_can_be_continued(fake, provider, tmp_path):
    fake.reply_tool_call("lookup_order", order_id="A1")
    impatient = Agent(
        name="support", model="openai:gpt-4o-mini", tools=[lookup_order], max_iterations=1
    )
    with pytest.raises(MaxIterationsExceeded) as raised:
        await fresh_runtime(provider).run(impatient, "Where is A1?")
    failed = raised.value.result
    assert failed is not None
    loaded = load_run(save_run(tmp_path / "failed.json", failed), impatient)
    fake.reply("Sorry, A1 has shipped.")

    result = await fresh_runtime(provider).continue_conversation(loaded, "Well?")

    assert (result.status, result.output) == ("completed", "Sorry, A1 has shipped.")


# -- atomic saving ---------------------------------------------------------------------


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_a_failed_save_keeps_the_old_file_and_leaves_no_temporary_file(
    completed, tmp_path, monkeypatch, failing
):
    path = save_run(tmp_path / "run.json", completed)
    old = path.read_bytes()
    changed = RunResult(agent=SUPPORT, context=completed.context, output="Changed.")

    def broken(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(f"pytest_agentctx._files.os.{failing}", broken)
    with pytest.raises(OSError, match="No space left on device"):
        save_run(path, changed)

    assert (path.read_bytes(), sorted(p.name for p in tmp_path.iterdir())) == (old, ["run.json"])


def test_a_successful_save_leaves_no_temporary_file(completed, tmp_path):
    save_run(tmp_path / "run.json", completed)
    save_run(tmp_path / "run.json", completed)

    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]


# -- files that cannot be loaded -------------------------------------------------------


def test_a_missing_file_is_named_with_what_to_do(tmp_path):
    path = tmp_path / "nowhere.json"

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path)
        + r"no such file\. Save a run first with save_run\(path, result\)\.$",
    ):
        load_run(path, SUPPORT)


def test_a_folder_is_not_a_saved_run(tmp_path):
    with pytest.raises(PersistenceError, match=starts_with_path(tmp_path) + "cannot be read"):
        load_run(tmp_path, SUPPORT)


def test_a_file_that_is_not_utf8_is_named(tmp_path):
    path = tmp_path / "run.json"
    path.write_bytes(b"\xff\xfe\x00{")

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path) + r"not UTF-8 text; this is not a saved run\.$",
    ):
        load_run(path, SUPPORT)


def test_corrupted_json_is_named_with_what_to_do(completed, tmp_path):
    path = save_run(tmp_path / "run.json", completed)
    path.write_text(path.read_text()[:-40], encoding="utf-8")  # cut short

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path) + r"corrupted, not valid JSON \(.+\)\. Restore it or save "
        r"the run again\.$",
    ):
        load_run(path, SUPPORT)


@pytest.mark.parametrize(
    ("data", "shown"),
    [
        pytest.param({"cassette": "pytest-agentctx", "version": 1}, "None", id="a-cassette"),
        pytest.param({"schema": "other/run", "version": 1}, "'other/run'", id="other-schema"),
        pytest.param([1, 2], "None", id="a-list"),
    ],
)
def test_a_file_of_another_schema_is_named(tmp_path, data, shown):
    path = write_json(tmp_path / "run.json", data)

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path) + rf"not a saved pytest-agentctx run \(schema {shown}, "
        r"expected 'pytest-agentctx/run'\)\.$",
    ):
        load_run(path, SUPPORT)


@pytest.mark.parametrize("version", [2, 0, "1", None])
def test_a_file_of_another_version_is_named_with_what_to_do(completed, tmp_path, version):
    data = {**saved_data(completed, tmp_path), "version": version}
    path = write_json(tmp_path / "old.json", data)

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path) + rf"saved with schema version {re.escape(repr(version))}; "
        rf"this pytest-agentctx reads version {SCHEMA_VERSION}\. Load it with the version that "
        r"saved it, or run the conversation again\.$",
    ):
        load_run(path, SUPPORT)


def test_a_run_of_another_agent_is_refused(completed, tmp_path):
    path = save_run(tmp_path / "run.json", completed)
    billing = Agent(name="billing", model="anthropic:claude-haiku-4-5")

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path) + r"saved for agent 'support' \(openai:gpt-4o-mini\), but "
        r"loaded for 'billing' \(anthropic:claude-haiku-4-5\)\. Pass the same agent, or "
        r"load_run\(\.\.\., check_agent=False\) to continue with another one on purpose\.$",
    ):
        load_run(path, billing)


def test_a_run_of_another_model_is_refused(completed, tmp_path):
    path = save_run(tmp_path / "run.json", completed)

    with pytest.raises(PersistenceError, match=r"saved for agent 'support' \(openai:gpt-4o-mini\)"):
        load_run(path, Agent(name="support", model="openai:gpt-4.1"))


def test_check_agent_false_loads_a_run_for_another_agent(completed, tmp_path):
    path = save_run(tmp_path / "run.json", completed)
    billing = Agent(name="billing", model="anthropic:claude-haiku-4-5")

    loaded = load_run(path, billing, check_agent=False)

    assert (loaded.agent, loaded.context, loaded.output) == (
        billing,
        completed.context,
        "A1 has shipped.",
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"status": "running"},
            r"status 'running'; expected 'completed' or 'failed'\. The file is corrupted\.$",
            id="status",
        ),
        pytest.param(
            {"agent": "support"},
            r"'agent' is 'support'; expected \{'name': \.\.\., 'model': \.\.\.\}\. The file is "
            r"corrupted\.$",
            id="agent",
        ),
        pytest.param(
            {"output": 42},
            r"'output' is 42; expected text or null\. The file is corrupted\.$",
            id="output",
        ),
        pytest.param(
            {"error": ["boom"]},
            r"'error' is \['boom'\]; expected text or null\. The file is corrupted\.$",
            id="error",
        ),
    ],
)
def test_a_file_with_a_wrong_field_is_named(completed, tmp_path, change, message):
    path = write_json(tmp_path / "run.json", {**saved_data(completed, tmp_path), **change})

    with pytest.raises(PersistenceError, match=starts_with_path(path) + message):
        load_run(path, SUPPORT)


@pytest.mark.parametrize(
    ("context", "first_error"),
    [
        pytest.param(
            None, "Input should be a valid dictionary or instance of AgentContext", id="missing"
        ),
        pytest.param(
            "renumbered",
            "Value error, iterations must be numbered consecutively (1, 2, 3...); got [1, 3]",
            id="renumbered",
        ),
        pytest.param(
            "bad-role", "Input should be 'system', 'user', 'assistant' or 'tool'", id="role"
        ),
    ],
)
def test_an_invalid_context_is_named_with_its_first_error(
    completed, tmp_path, context, first_error
):
    data = saved_data(completed, tmp_path)
    if context == "renumbered":
        data["context"]["iterations"][1]["number"] = 3
        data["context"]["current_iteration"] = 3
    elif context == "bad-role":
        data["context"]["iterations"][0]["messages"][0]["role"] = "robot"
    else:
        data["context"] = context
    path = write_json(tmp_path / "run.json", data)

    with pytest.raises(
        PersistenceError,
        match=starts_with_path(path)
        + r"the saved context is invalid \(\d+ error\(s\), first: "
        + re.escape(first_error)
        + r"\)\. The file is corrupted\.$",
    ):
        load_run(path, SUPPORT)


def test_the_schema_constants_name_the_format():
    assert (SCHEMA, SCHEMA_VERSION) == ("pytest-agentctx/run", 1)


def test_a_hand_built_context_with_a_pending_call_round_trips(tmp_path):
    context = AgentContext.new("Where is A1?", at=T0).add_assistant_message(
        None, [ToolCall(id="call_1", name="lookup_order", arguments={"order_id": "A1"})], at=T0
    )
    failed = RunResult(agent=SUPPORT, context=context, output=None, status="failed", error="x")

    assert load_run(save_run(tmp_path / "run.json", failed), SUPPORT) == failed


# -- an exact round trip ---------------------------------------------------------------

ROUND_TRIP = settings(
    max_examples=60,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
METADATA = st.dictionaries(st.text(max_size=6), JSON_VALUES, max_size=5)


def unsorted_run() -> RunResult:
    """A run whose metadata and arguments are not in sorted key order."""
    context = (
        AgentContext.new("Where is A1?", at=T0)
        .with_iteration_metadata({"usage": {"output_tokens": 2, "input_tokens": 9}, "model": "m"})
        .add_assistant_message(
            None, [ToolCall(id="c1", name="lookup_order", arguments={"zone": "eu", "id": "A1"})]
        )
    )
    return RunResult(agent=SUPPORT, context=context, output=None)


def test_a_loaded_run_keeps_the_order_of_its_metadata_keys(tmp_path):
    run = unsorted_run()

    loaded = load_run(save_run(tmp_path / "run.json", run), SUPPORT)

    assert list(loaded.context.iterations[0].metadata) == ["usage", "model"]
    assert list(loaded.context.iterations[0].metadata["usage"]) == ["output_tokens", "input_tokens"]
    assert list(loaded.context.all_tool_calls[0].arguments) == ["zone", "id"]


def test_a_loaded_run_is_the_same_context_byte_for_byte(tmp_path):
    run = unsorted_run()

    loaded = load_run(save_run(tmp_path / "run.json", run), SUPPORT)

    assert loaded.context.model_dump_json() == run.context.model_dump_json()


@ROUND_TRIP
@given(first=METADATA, second=METADATA, arguments=METADATA)
def test_saving_a_loaded_run_writes_the_same_bytes(first, second, arguments):
    context = (
        AgentContext.new("Go", at=T0)
        .with_iteration_metadata(first)
        .add_assistant_message(None, [ToolCall(id="c1", name="step", arguments=arguments)], at=T0)
        .add_tool_results([ToolResult(tool_call_id="c1", name="step", content="ok")], at=T0)
        .with_iteration_metadata(second)
    )
    run = RunResult(agent=SUPPORT, context=context, output=None)
    with tempfile.TemporaryDirectory() as folder:
        saved = save_run(Path(folder) / "run.json", run).read_bytes()
        loaded = load_run(Path(folder) / "run.json", SUPPORT)
        again = save_run(Path(folder) / "again.json", loaded).read_bytes()

    assert (again, loaded.context.model_dump_json()) == (saved, context.model_dump_json())

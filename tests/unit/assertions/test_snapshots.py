"""Unit tests for pytest_agentctx.assertions.snapshots: the serialized form,
normalisation, projections."""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from syrupy.data import Snapshot, SnapshotCollection
from syrupy.exceptions import TaintedSnapshotError

from pytest_agentctx import (
    Agent,
    AgentContext,
    Regex,
    RunResult,
    SnapshotError,
    ToolCall,
    ToolResult,
    matches,
)
from pytest_agentctx.assertions.snapshots.extension import AgentSnapshotExtension
from pytest_agentctx.assertions.snapshots.options import SnapshotOptions
from pytest_agentctx.assertions.snapshots.serialization import FORMAT_VERSION, HEADER, serialize
from pytest_agentctx.context._seq import Seq

T0 = datetime(2025, 6, 1, 12, 0, tzinfo=UTC)


def weather_run(
    start: datetime = T0, answer: str = "18C and sunny.", call_id: str = "call_1"
) -> AgentContext:
    def at(seconds: float) -> datetime:
        return start + timedelta(seconds=seconds)

    ctx = AgentContext.new("Weather in Paris?", system_prompt="Be brief.", at=at(0))
    ctx = ctx.with_iteration_metadata({"model": "gpt-4o-mini", "latency_ms": 812})
    call = ToolCall(id=call_id, name="get_weather", arguments={"city": "Paris"})
    ctx = ctx.add_assistant_message(None, [call], at=at(1.5))
    result = ToolResult(tool_call_id=call_id, name="get_weather", content="18C, sunny")
    ctx = ctx.add_tool_results([result], at=at(2))
    return ctx.add_assistant_message(answer, at=at(3))


def lines_of(data: Any, **options: Any) -> list[str]:
    return serialize(data, SnapshotOptions(**options)).splitlines()


def body(data: Any, **options: Any) -> list[str]:
    return [line for line in lines_of(data, **options) if not line.startswith("#")]


# -- the format ---------------------------------------------------------------------------


def test_first_line_names_the_format_version() -> None:
    assert lines_of(weather_run())[0] == f"# pytest-agentctx snapshot, format {FORMAT_VERSION}"


def test_every_value_has_its_own_line_led_by_its_path() -> None:
    lines = body(weather_run())

    assert lines[:8] == [
        "AgentContext",
        "iterations = [2 items]",
        "iterations[0].number = 1",
        "iterations[0].messages = [4 items]",
        "iterations[0].messages[0].role = 'system'",
        "iterations[0].messages[0].content = 'Be brief.'",
        "iterations[0].messages[1].role = 'user'",
        "iterations[0].messages[1].content = 'Weather in Paris?'",
    ]


def test_nested_models_are_expanded_field_by_field() -> None:
    assert "iterations[0].messages[2].tool_calls[0].arguments.city = 'Paris'" in body(weather_run())


def test_fields_at_their_default_are_left_out() -> None:
    lines = body(weather_run())

    assert not [line for line in lines if line.endswith(("= None", "= False", "= []", "= {}"))]


def test_iteration_tool_calls_refer_to_the_messages_when_they_are_the_same() -> None:
    assert "iterations[0].tool_calls = [1 item: those of the messages]" in body(weather_run())


def test_iteration_tool_calls_are_expanded_when_they_differ_from_the_messages() -> None:
    ctx = weather_run()
    odd = ctx.iterations[0].model_copy(update={"tool_calls": Seq([ToolCall(id="x", name="y")])})
    ctx = ctx.model_copy(update={"iterations": ctx.iterations.with_last(odd)})

    assert "iterations[1].tool_calls[0].name = 'y'" in body(ctx)


def test_iteration_tool_calls_are_expanded_when_the_messages_are_left_out() -> None:
    lines = body(weather_run(), omit=["**.messages"])

    assert "iterations[0].tool_calls[0].name = 'get_weather'" in lines


def test_multi_line_strings_are_written_as_blocks() -> None:
    lines = body(weather_run(answer="Sunny.\n\nWarm."))

    start = lines.index("iterations[1].messages[0].content = |")
    assert lines[start + 1 : start + 4] == ["  | Sunny.", "  |", "  | Warm."]


def test_mapping_keys_are_sorted_and_quoted_when_needed() -> None:
    assert body({"b": 1, "a-b": 2, "a": 3}) == ["a = 3", "['a-b'] = 2", "b = 1"]


def test_a_run_result_is_written_with_its_output_and_context() -> None:
    agent = Agent(name="weather", model="openai:gpt-4o-mini")
    result = RunResult(agent=agent, context=weather_run(), output="18C and sunny.")

    assert body(result)[:4] == [
        "RunResult",
        "agent = 'weather'",
        "output = '18C and sunny.'",
        "context = AgentContext",
    ]


def test_a_model_in_untyped_metadata_names_its_type() -> None:
    ctx = AgentContext.new("Plan", at=T0).with_iteration_metadata({"research": weather_run()})

    assert "iterations[0].metadata.research = AgentContext" in body(ctx)


def test_dataclasses_are_written_field_by_field() -> None:
    @dataclass
    class Usage:
        tokens: int
        model: str

    assert body({"usage": Usage(3, "m")}) == [
        "usage = Usage",
        "usage.tokens = 3",
        "usage.model = 'm'",
    ]


def test_a_value_without_a_stable_text_form_is_refused() -> None:
    with pytest.raises(SnapshotError, match=r"Cannot snapshot handle: a object has no stable"):
        serialize({"handle": object()})


def test_the_fast_path_writes_what_the_general_path_writes() -> None:
    ctx = weather_run(answer="two\nlines")

    general = body(ctx, omit=["no_such_field"])

    assert general == body(ctx)


# -- normalisation ------------------------------------------------------------------------


def test_timestamps_are_offsets_from_the_run_start() -> None:
    lines = body(weather_run())

    assert "iterations[0].completed_at = <t+2s>" in lines
    assert "iterations[0].messages[2].tool_calls[0].id = <id:1>" in lines
    assert "created_at = <t+0s>" in lines


def test_fractional_offsets_keep_their_digits() -> None:
    assert body([T0, T0 + timedelta(milliseconds=1500)]) == [
        "[2 items]",
        "[0] = <t+0s>",
        "[1] = <t+1.5s>",
    ]


def test_instants_before_the_start_are_negative_offsets() -> None:
    earlier = [T0, T0 - timedelta(milliseconds=1500), T0 - timedelta(days=1, seconds=2)]
    assert body(earlier) == ["[3 items]", "[0] = <t+0s>", "[1] = <t-1.5s>", "[2] = <t-86402s>"]


def test_two_runs_started_at_different_times_give_the_same_snapshot() -> None:
    later = weather_run(start=T0 + timedelta(days=30), call_id="call_zz9")

    assert serialize(weather_run()) == serialize(later)


def test_generated_ids_are_numbered_in_first_seen_order() -> None:
    lines = body(weather_run(call_id="toolu_01XYZ"))

    assert [line for line in lines if "id" in line.split(" = ")[0].rsplit(".", 1)[-1]] == [
        "iterations[0].messages[2].tool_calls[0].id = <id:1>",
        "iterations[0].messages[3].tool_call_id = <id:1>",
    ]


def test_id_fields_can_be_chosen() -> None:
    assert body({"run": "r-1", "trace": "t-9"}, ids=["run", "trace"]) == [
        "run = <id:1>",
        "trace = <id:2>",
    ]


def test_normalize_replaces_a_volatile_value() -> None:
    lines = body(weather_run(), normalize={"**.latency_ms": "<latency>"})

    assert "iterations[0].metadata.latency_ms = <latency>" in lines


def test_normalize_hook_receives_the_value() -> None:
    lines = body(weather_run(), normalize={"latency_ms": lambda ms: round(ms, -3)})

    assert "iterations[0].metadata.latency_ms = 1000" in lines


def test_a_failing_normalize_hook_is_reported_with_its_path() -> None:
    with pytest.raises(SnapshotError, match=r"hook for iterations\[0\]\.metadata\.model raised"):
        serialize(weather_run(), SnapshotOptions(normalize={"model": lambda m: m / 2}))


# -- projections ---------------------------------------------------------------------------


def test_last_keeps_the_last_iterations_with_their_own_indexes() -> None:
    lines = body(weather_run(), last=1)

    assert "iterations = [2 items, the first 1 left out]" in lines
    assert [line for line in lines if line.startswith("iterations[0]")] == []
    assert "iterations[1].number = 2" in lines


def test_fields_keep_only_the_selected_values() -> None:
    lines = body(weather_run(), fields=["iterations[*].messages[*].content"])

    assert lines == [
        "iterations[0].messages[0].content = 'Be brief.'",
        "iterations[0].messages[1].content = 'Weather in Paris?'",
        "iterations[0].messages[3].content = '18C, sunny'",
        "iterations[1].messages[0].content = '18C and sunny.'",
    ]


def test_omit_leaves_values_out() -> None:
    lines = body(weather_run(), omit=["metadata", "**.tool_calls"])

    assert not [line for line in lines if "metadata" in line or "tool_calls" in line]


def test_truncate_cuts_long_strings_and_says_how_much() -> None:
    lines = body(weather_run(), truncate=5)

    assert "iterations[0].messages[1].content = 'Weath' … (+12 chars)" in lines


def test_a_projection_is_named_in_the_header() -> None:
    assert lines_of(weather_run(), last=1, truncate=80)[1] == (
        "# projection: last 1 iterations; strings cut at 80 characters"
    )


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"last": 0}, r"last=0\): expected a whole number of at least 1"),
        ({"truncate": True}, r"truncate=True\): expected a whole number"),
        ({"fields": ["ok", ""]}, r"fields=...\): '' is not a path glob"),
        ({"normalize": ["x"]}, r"normalize=\['x'\]\): expected a mapping"),
    ],
)
def test_invalid_options_are_refused_with_what_to_give(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(SnapshotError, match=message):
        SnapshotOptions(**options)


def test_merged_options_add_hooks_and_replace_projections() -> None:
    base = SnapshotOptions(normalize={"a": "A"}, last=5, omit=("x",))

    merged = base.merged(normalize={"b": "B"}, last=2, omit=["y"])

    assert matches(merged, {"normalize": {"a": "A", "b": "B"}, "last": 2, "omit": ("x", "y")})


# -- the syrupy extension ----------------------------------------------------------------------


def test_extension_files_have_their_own_extension() -> None:
    assert AgentSnapshotExtension.file_extension == "agentctx"


def test_reading_a_file_in_another_format_taints_the_snapshot(tmp_path: Path) -> None:
    old = tmp_path / "test_x.agentctx"
    old.write_text("# pytest-agentctx snapshot, format 0\nAgentContext\n", encoding="utf-8")

    with pytest.raises(TaintedSnapshotError):
        AgentSnapshotExtension().read_snapshot_data_from_location(
            snapshot_location=str(old), snapshot_name="test_x", session_id="s"
        )


def test_reading_a_missing_file_gives_none(tmp_path: Path) -> None:
    data = AgentSnapshotExtension().read_snapshot_data_from_location(
        snapshot_location=str(tmp_path / "nope.agentctx"), snapshot_name="nope", session_id="s"
    )

    assert data is None


def test_writing_replaces_the_file_whole_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    location = tmp_path / "mod" / "test_x.agentctx"
    collection = SnapshotCollection(location=str(location))
    collection.add(Snapshot(name="test_x", data=serialize(weather_run())))

    AgentSnapshotExtension.write_snapshot_collection(snapshot_collection=collection)

    assert location.read_text(encoding="utf-8").startswith(HEADER + "\n")
    assert [p.name for p in location.parent.iterdir()] == ["test_x.agentctx"]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")
def test_a_written_snapshot_is_readable_by_all_whatever_the_umask(tmp_path: Path) -> None:
    location = tmp_path / "test_x.agentctx"
    collection = SnapshotCollection(location=str(location))
    collection.add(Snapshot(name="test_x", data=serialize(weather_run())))

    old_umask = os.umask(0o077)
    try:
        AgentSnapshotExtension.write_snapshot_collection(snapshot_collection=collection)
    finally:
        os.umask(old_umask)

    assert location.stat().st_mode & 0o777 == 0o644


def test_a_failed_write_keeps_the_old_snapshot_and_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location = tmp_path / "test_x.agentctx"
    collection = SnapshotCollection(location=str(location))
    collection.add(Snapshot(name="test_x", data=serialize(weather_run())))
    AgentSnapshotExtension.write_snapshot_collection(snapshot_collection=collection)
    old = location.read_bytes()
    changed = SnapshotCollection(location=str(location))
    changed.add(Snapshot(name="test_x", data=serialize(weather_run(answer="Rainy."))))

    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pytest_agentctx._files.os.replace", full)
    with pytest.raises(OSError, match="No space left"):
        AgentSnapshotExtension.write_snapshot_collection(snapshot_collection=changed)

    assert [p.name for p in location.parent.iterdir()] == ["test_x.agentctx"]
    assert location.read_bytes() == old


def test_diff_shows_only_the_changed_lines_and_their_neighbours() -> None:
    old = serialize(weather_run(answer="Sunny."))
    new = serialize(weather_run(answer="Rainy."))

    diff = [
        re.sub(r"\x1b\[[0-9;]*m", "", line)
        for line in AgentSnapshotExtension().diff_lines(new, old)
    ]

    assert diff == [
        "  ...",
        "  iterations[1].messages[0].role = 'assistant'",
        "- iterations[1].messages[0].content = 'Sunny.'",
        "+ iterations[1].messages[0].content = 'Rainy.'",
        "  iterations[1].started_at = <t+2s>",
        "  ...",
    ]


def plain_diff(new: str, old: str) -> list[str]:
    lines = AgentSnapshotExtension().diff_lines(new, old)
    return [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]


TEN_LINES = "".join(f"line {i}\n" for i in range(10))


def test_diff_of_a_change_in_the_first_line_has_no_leading_ellipsis() -> None:
    new = TEN_LINES.replace("line 0", "LINE 0")

    assert plain_diff(new, TEN_LINES) == ["- line 0", "+ LINE 0", "  line 1", "  ..."]


def test_diff_of_inserted_lines_shows_them_between_their_neighbours() -> None:
    new = TEN_LINES.replace("line 5\n", "line 5\nnew a\nnew b\n")

    assert plain_diff(new, TEN_LINES) == [
        "  ...",
        "  line 5",
        "+ new a",
        "+ new b",
        "  line 6",
        "  ...",
    ]


def test_diff_of_two_distant_changes_shows_both() -> None:
    new = TEN_LINES.replace("line 2", "X").replace("line 7", "Y")

    assert plain_diff(new, TEN_LINES) == [
        "  ...",
        "  line 1",
        "- line 2",
        "+ X",
        "  line 3",
        "  ...",
        "  line 6",
        "- line 7",
        "+ Y",
        "  line 8",
        "  ...",
    ]


def _exclude_nothing(prop: Any, path: Any) -> bool:
    return False


def test_extension_refuses_syrupy_property_filters() -> None:
    with pytest.raises(SnapshotError, match=r"use agent_snapshot\(fields=\[\.\.\.\]\)"):
        AgentSnapshotExtension().serialize({}, exclude=_exclude_nothing)


def test_regex_in_a_test_of_the_serialized_text() -> None:
    assert matches(
        serialize(weather_run()), Regex(r"created_at = <t\+0s>\nupdated_at = <t\+3s>\n$")
    )


def _every_field_context() -> AgentContext:
    """A run whose messages, calls and iterations set every field the models have."""
    ctx = AgentContext.new("Weather?", system_prompt="Be brief.", at=T0)
    ctx = ctx.with_iteration_metadata({"model": "m", "usage": {"input_tokens": 3}})
    call = ToolCall(id="call_1", name="get_weather", arguments={"city": "Paris", "n": 1})
    ctx = ctx.add_assistant_message(
        "Looking.\nOne moment.",
        [call],
        reasoning=[{"type": "thinking", "thinking": "Paris, then answer.", "signature": "s"}],
        at=T0 + timedelta(seconds=1),
    )
    result = ToolResult(tool_call_id="call_1", name="get_weather", content="18C", is_error=True)
    return ctx.add_tool_results([result], at=T0 + timedelta(seconds=2))


def test_the_fast_path_writes_every_field_the_general_path_writes() -> None:
    ctx = _every_field_context()
    fast = serialize(ctx).splitlines()
    general = serialize(ctx, SnapshotOptions(omit=("no.such.path",))).splitlines()

    assert general[1].startswith("# projection:")
    assert fast == general[:1] + general[2:]
    assert "iterations[0].messages[2].reasoning[0].thinking = 'Paris, then answer.'" in fast


def test_opaque_reasoning_tokens_are_written_as_a_placeholder() -> None:
    ctx = _every_field_context()
    reasoning = [line for line in body(ctx) if ".reasoning[0]." in line]

    assert reasoning == [
        "iterations[0].messages[2].reasoning[0].signature = <opaque>",
        "iterations[0].messages[2].reasoning[0].thinking = 'Paris, then answer.'",
        "iterations[0].messages[2].reasoning[0].type = 'thinking'",
    ]


def test_opaque_keys_in_metadata_are_placeholders_on_the_fast_path_too() -> None:
    metadata = {"a": {"signature": "x1"}, "b": {"signature": "x2"}}
    ctx = AgentContext.new("hi", at=T0).with_iteration_metadata(metadata)

    assert [line for line in body(ctx) if "signature" in line] == [
        "iterations[0].metadata.a.signature = <opaque>",
        "iterations[0].metadata.b.signature = <opaque>",
    ]


# -- secrets --------------------------------------------------------------------------------

SECRET = "sk-unit-secret-5e8f1a"


def _redactor(*secrets: str) -> Any:
    from pytest_agentctx.traffic.cassettes import Redactor

    return Redactor(env=(), extra_values=secrets or (SECRET,))


def leaky_run(secret: str = SECRET) -> AgentContext:
    """A run with ``secret`` in its prompt, tool arguments and result, answer, metadata (a
    value and a key) and in a sub-agent's run kept in its metadata."""
    sub = AgentContext.new(f"Look up {secret}", at=T0).add_assistant_message(
        f"found {secret}", at=T0 + timedelta(seconds=1)
    )
    ctx = AgentContext.new(f"Use key {secret}", at=T0).with_iteration_metadata(
        {"auth": f"Bearer {secret}", secret: 1, "subagent": sub}
    )
    call = ToolCall(id="call_1", name="lookup", arguments={"key": secret})
    ctx = ctx.add_assistant_message(None, [call], at=T0 + timedelta(seconds=1))
    result = ToolResult(tool_call_id="call_1", name="lookup", content=f"token={secret}")
    ctx = ctx.add_tool_results([result], at=T0 + timedelta(seconds=2))
    return ctx.add_assistant_message(f"Done with {secret}.", at=T0 + timedelta(seconds=3))


def test_every_secret_of_a_run_is_written_as_redacted() -> None:
    text = serialize(leaky_run(), redactor=_redactor())

    assert SECRET not in text
    assert "iterations[0].messages[0].content = 'Use key REDACTED'" in text
    assert "iterations[0].metadata.auth = 'Bearer REDACTED'" in text
    assert "iterations[0].metadata.REDACTED = 1" in text
    assert "iterations[0].metadata.subagent.iterations[0].messages[0].content = " in text
    assert "'Look up REDACTED'" in text
    assert "iterations[0].messages[1].tool_calls[0].arguments.key = 'REDACTED'" in text
    assert "iterations[0].messages[2].content = 'token=REDACTED'" in text
    assert "iterations[1].messages[0].content = 'Done with REDACTED.'" in text


def test_a_recorded_run_is_written_as_its_replay_from_the_redacted_cassette() -> None:
    # Recording: the live run holds the secret. Replaying: the cassette holds REDACTED.
    recorded = serialize(leaky_run(), redactor=_redactor())

    assert recorded == serialize(leaky_run("REDACTED"), redactor=_redactor())


@pytest.mark.parametrize(
    "options",
    [
        SnapshotOptions(truncate=10),
        SnapshotOptions(normalize={"**.content": lambda text: len(text or "")}),
        SnapshotOptions(fields=("iterations[*].messages",), last=1),
    ],
    ids=["truncate", "normalize-hook", "projection"],
)
def test_a_projected_run_is_written_as_its_redacted_replay(options: SnapshotOptions) -> None:
    recorded = serialize(leaky_run(), options, _redactor())

    assert SECRET[:8] not in recorded
    assert recorded == serialize(leaky_run("REDACTED"), options, _redactor())


def test_a_secret_with_a_quote_is_written_as_its_redacted_replay() -> None:
    secret = "it's-a-secret-9f2c"

    recorded = serialize(leaky_run(secret), redactor=_redactor(secret))

    assert "secret-9f2c" not in recorded
    assert recorded == serialize(leaky_run("REDACTED"))


def test_a_run_without_secrets_is_written_as_without_a_redactor() -> None:
    ctx = weather_run()

    assert serialize(ctx, redactor=_redactor()) == serialize(ctx)


def test_a_run_result_is_written_redacted() -> None:
    agent = Agent(name="weather", model="openai:gpt-4o-mini")
    result = RunResult(agent=agent, context=leaky_run(), output=f"Done with {SECRET}.")

    text = serialize(result, redactor=_redactor())

    assert SECRET not in text
    assert "output = 'Done with REDACTED.'" in text


def test_the_extension_redacts_with_the_running_tests_redactor() -> None:
    from pytest_agentctx.redaction.active import set_active

    previous = set_active(_redactor())
    try:
        text = AgentSnapshotExtension().serialize(leaky_run())
    finally:
        set_active(previous)

    assert SECRET not in text
    assert "'Done with REDACTED.'" in text


# -- sub-agent runs kept in metadata -----------------------------------------------------


def orchestrated_run(start: datetime = T0) -> AgentContext:
    """An orchestrator's run whose metadata keeps its sub-agent's run as the runtime does:
    as JSON, under ``subagents.<id>.context``."""
    sub = weather_run(start + timedelta(seconds=1))
    record = {"status": "completed", "context": sub.model_dump(mode="json")}
    ctx = AgentContext.new("Plan the trip.", at=start).with_iteration_metadata(
        {"subagents": {"weather": record}}
    )
    return ctx.add_assistant_message("Pack an umbrella.", at=start + timedelta(seconds=5))


def test_a_sub_agents_run_is_written_like_the_top_level_run() -> None:
    nested = "iterations[0].metadata.subagents.weather.context"
    lines = [line[len(nested) :] for line in body(orchestrated_run()) if line.startswith(nested)]

    assert lines == [
        " = AgentContext",
        ".iterations = [2 items]",
        ".iterations[0].number = 1",
        ".iterations[0].messages = [4 items]",
        ".iterations[0].messages[0].role = 'system'",
        ".iterations[0].messages[0].content = 'Be brief.'",
        ".iterations[0].messages[1].role = 'user'",
        ".iterations[0].messages[1].content = 'Weather in Paris?'",
        ".iterations[0].messages[2].role = 'assistant'",
        ".iterations[0].messages[2].tool_calls = [1 item]",
        ".iterations[0].messages[2].tool_calls[0].id = <id:1>",
        ".iterations[0].messages[2].tool_calls[0].name = 'get_weather'",
        ".iterations[0].messages[2].tool_calls[0].arguments.city = 'Paris'",
        ".iterations[0].messages[3].role = 'tool'",
        ".iterations[0].messages[3].content = '18C, sunny'",
        ".iterations[0].messages[3].tool_call_id = <id:1>",
        ".iterations[0].messages[3].name = 'get_weather'",
        ".iterations[0].tool_calls = [1 item: those of the messages]",
        ".iterations[0].started_at = <t+1s>",
        ".iterations[0].completed_at = <t+3s>",
        ".iterations[0].metadata.latency_ms = 812",
        ".iterations[0].metadata.model = 'gpt-4o-mini'",
        ".iterations[1].number = 2",
        ".iterations[1].messages = [1 item]",
        ".iterations[1].messages[0].role = 'assistant'",
        ".iterations[1].messages[0].content = '18C and sunny.'",
        ".iterations[1].started_at = <t+3s>",
        ".iterations[1].completed_at = <t+4s>",
        ".current_iteration = 2",
        ".created_at = <t+1s>",
        ".updated_at = <t+4s>",
    ]


def test_a_sub_agents_run_gives_the_same_snapshot_from_another_clock_start() -> None:
    later = T0 + timedelta(days=30, hours=5)

    assert serialize(orchestrated_run(later)) == serialize(orchestrated_run())


def test_a_sub_agents_run_is_written_like_the_top_level_run_under_path_rules() -> None:
    omitted = body(orchestrated_run(), omit=["**.latency_ms"])

    assert "iterations[0].metadata.subagents.weather.context.created_at = <t+1s>" in omitted


def test_a_context_key_that_holds_no_run_is_written_as_a_mapping() -> None:
    ctx = AgentContext.new("Hi", at=T0).with_iteration_metadata(
        {"assembly": {"context": {"iterations": 3, "source": "kb"}}}
    )

    assert [line for line in body(ctx) if ".assembly." in line] == [
        "iterations[0].metadata.assembly.context.iterations = 3",
        "iterations[0].metadata.assembly.context.source = 'kb'",
    ]


def test_a_snapshot_that_is_a_fifo_is_an_error_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "test_x.agentctx"
    os.mkfifo(fifo)

    with pytest.raises(SnapshotError) as caught:
        AgentSnapshotExtension().read_snapshot_data_from_location(
            snapshot_location=str(fifo), snapshot_name="test_x", session_id="s"
        )

    assert str(caught.value) == (
        f"Snapshot {fifo} cannot be read (a FIFO, not a regular file). Restore it from "
        "version control, or delete it and write it again: pytest --snapshot-update"
    )


def test_a_snapshot_diff_shows_control_characters_as_escapes() -> None:
    stored = f"{HEADER}\nAgentContext\n  content: 'Sunny.\x1b]52;c;cGF3bmVk\x07'\n"
    new = f"{HEADER}\nAgentContext\n  content: 'Sunny.'\n"

    # syrupy colours each character (SGR sequences): those are left out to read the text
    lines = [
        re.sub("\x1b\\[[0-9;]*m", "", line)
        for line in AgentSnapshotExtension().diff_lines(new, stored)
    ]

    assert "-   content: 'Sunny.\\x1b]52;c;cGF3bmVk\\x07'" in lines
    assert not any("\x1b" in line or "\x07" in line for line in lines)

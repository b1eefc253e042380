"""Unit tests of failure handling: ``on_failure`` handlers, compensations, ``StepFailed``.

No ``from __future__ import annotations``: tools defined in a test take a ``RunContext``
parameter, whose annotation must be a class, not a string, for ``get_type_hints``.
"""

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from pytest_agentctx.context.clock import StepClock
from pytest_agentctx.context.model import AgentContext, Iteration, Message
from pytest_agentctx.doubles.fake_tools import FakeTools
from pytest_agentctx.doubles.ids import SequentialIds
from pytest_agentctx.runtime.agent import Agent
from pytest_agentctx.runtime.errors import StepFailed, ToolDefinitionError
from pytest_agentctx.runtime.loop import AgentRuntime
from pytest_agentctx.runtime.recovery import CompletedStep, Failure, format_traceback
from pytest_agentctx.runtime.tools import RunContext, tool
from pytest_agentctx.traffic.codecs import Codec, openai_chat

T0 = datetime(2025, 1, 1, tzinfo=UTC)


def chat(content: str | None = None, *calls: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": "local-model",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }


class Script:
    """A provider that answers with the given chat completions bodies, in order."""

    codec: Codec = openai_chat

    def __init__(self, *bodies: dict[str, Any]) -> None:
        self.bodies = list(bodies)
        self.sent: list[Mapping[str, Any]] = []

    async def send(self, body: Mapping[str, Any]) -> dict[str, Any]:
        self.sent.append(body)
        return self.bodies.pop(0)


def runtime(*bodies: dict[str, Any], **options: Any) -> AgentRuntime:
    return AgentRuntime(
        clock=StepClock(), ids=SequentialIds(), providers={"local": Script(*bodies)}, **options
    )


def agent(*tools: Any) -> Agent:
    return Agent(name="booker", model="local:model", tools=tools)


class Journal:
    """Records what handlers and compensations were called with."""

    def __init__(self, recover: Any = None) -> None:
        self.recover = recover
        self.failures: list[Failure] = []
        self.undone: list[CompletedStep] = []

    def handle(self, failure: Failure) -> Any:
        self.failures.append(failure)
        return self.recover

    def undo(self, step: CompletedStep) -> None:
        self.undone.append(step)


def booking_tools(journal: Journal) -> tuple[Any, Any, Any]:
    @tool(compensate=journal.undo)
    def reserve_seat(flight: str) -> dict[str, str]:
        """Reserve a seat."""
        return {"seat": "12A", "flight": flight}

    @tool(compensate=journal.undo)
    def hold_hotel(city: str) -> str:
        """Hold a hotel room."""
        return f"room in {city}"

    @tool(on_failure=journal.handle)
    def charge_card(amount: int) -> str:
        """Charge the card."""
        raise RuntimeError(f"card declined for {amount}")

    return reserve_seat, hold_hotel, charge_card


def booking_run(journal: Journal) -> tuple[AgentRuntime, Agent]:
    rt = runtime(
        chat(None, ("c1", "reserve_seat", {"flight": "AF1"})),
        chat(None, ("c2", "hold_hotel", {"city": "Oslo"}), ("c3", "charge_card", {"amount": 5})),
        chat("Booked."),
    )
    return rt, agent(*booking_tools(journal))


# -- definition ----------------------------------------------------------------------------


def test_on_failure_must_be_callable():
    with pytest.raises(ToolDefinitionError, match="on_failure='log'"):

        @tool(on_failure="log")  # type: ignore[call-overload, untyped-decorator]
        def lookup(key: str) -> str:
            """Look up a key."""
            return key


def test_compensate_must_be_callable():
    with pytest.raises(ToolDefinitionError, match="compensate=1"):

        @tool(compensate=1)  # type: ignore[call-overload, untyped-decorator]
        def lookup(key: str) -> str:
            """Look up a key."""
            return key


def test_a_tool_keeps_its_handler_and_compensation():
    journal = Journal()

    @tool(on_failure=journal.handle, compensate=journal.undo)
    def lookup(key: str) -> str:
        """Look up a key."""
        return key

    assert (lookup.on_failure, lookup.compensate) == (journal.handle, journal.undo)
    properties = lookup.parameters["properties"]
    assert isinstance(properties, dict)
    assert "on_failure" not in properties


# -- without a handler ---------------------------------------------------------------------


async def test_a_tool_without_handler_still_feeds_its_error_back_to_the_model():
    @tool
    def lookup(key: str) -> str:
        """Look up a key."""
        raise KeyError(key)

    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})), chat("Not found."))

    result = await rt.run(agent(lookup), "Find x")

    match result.context.iterations[0]:
        case Iteration(
            messages=[*_, Message(role="tool", is_error=True, content=str(text))], metadata=metadata
        ):
            assert text == "Tool lookup failed: KeyError: 'x'"
            assert "failures" not in metadata
        case other:
            pytest.fail(f"unexpected iteration: {other}")


# -- the handler ---------------------------------------------------------------------------


async def test_the_handler_receives_type_message_traceback_step_and_clock_time():
    journal = Journal(recover="fallback")

    @tool(on_failure=journal.handle)
    def lookup(key: str) -> str:
        """Look up a key."""
        raise LookupError(f"no {key}")

    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})), chat("Done."))

    await rt.run(agent(lookup), "Find x")

    match journal.failures:
        case [
            Failure(
                step="lookup",
                tool_call_id="c1",
                iteration=1,
                error_type="LookupError",
                message="no x",
                traceback=str(text),
                at=at,
                arguments={"key": "x"},
                exception=LookupError(),
            )
        ]:
            assert at == T0.replace(second=2)
            assert text.endswith("LookupError: no x")
            assert 'File "test_recovery.py"' in text
        case other:
            pytest.fail(f"unexpected failures: {other}")


async def test_a_handler_that_returns_a_value_recovers_and_the_value_is_the_result():
    journal = Journal(recover={"status": "cached", "value": 3})

    @tool(on_failure=journal.handle)
    def lookup(key: str) -> str:
        """Look up a key."""
        raise TimeoutError("slow")

    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})), chat("It is 3."))

    result = await rt.run(agent(lookup), "Find x")

    assert result.output == "It is 3."
    match result.context.iterations[0]:
        case Iteration(
            messages=[*_, Message(role="tool", is_error=False, content=str(text))],
            metadata={
                "failures": [
                    {
                        "step": "lookup",
                        "recovered": True,
                        "handler": "handle",
                        "error_type": "TimeoutError",
                    }
                ]
            },
        ):
            assert json.loads(text) == {"status": "cached", "value": 3}
        case other:
            pytest.fail(f"unexpected iteration: {other}")


async def test_an_async_handler_is_awaited():
    async def recover(failure: Failure) -> str:
        return f"recovered from {failure.error_type}"

    @tool(on_failure=recover)
    def lookup(key: str) -> str:
        """Look up a key."""
        raise ValueError(key)

    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})), chat("Done."))

    result = await rt.run(agent(lookup), "Find x")

    assert result.context.iterations[0].messages[-1].content == "recovered from ValueError"


async def test_a_handler_applies_to_a_replaced_tool_that_raises():
    journal = Journal(recover="from the handler")

    @tool(on_failure=journal.handle)
    def lookup(key: str) -> str:
        """Look up a key."""
        return key

    fakes = FakeTools()
    fakes.replace("lookup", raises=ConnectionError("down"))
    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})), chat("Done."), tool_overrides=fakes)

    result = await rt.run(agent(lookup), "Find x")

    assert [f.error_type for f in journal.failures] == ["ConnectionError"]
    assert result.context.iterations[0].messages[-1].content == "from the handler"


# -- no recovery: compensation and StepFailed ----------------------------------------------


async def test_a_handler_that_returns_none_ends_the_run_with_step_failed():
    journal = Journal()
    rt, booker = booking_run(journal)

    with pytest.raises(StepFailed) as excinfo:
        await rt.run(booker, "Book a trip")

    error = excinfo.value
    assert "step 'charge_card' failed in iteration 2 with RuntimeError" in str(error)
    match error:
        case StepFailed(
            failure=Failure(step="charge_card", message="card declined for 5"),
            result=object(status="failed"),
            context=AgentContext(current_iteration=2),
        ):
            pass
        case other:
            pytest.fail(f"unexpected error: {other!r}")
    assert isinstance(error.__cause__, RuntimeError)


async def test_compensations_of_the_steps_done_run_newest_first():
    journal = Journal()
    rt, booker = booking_run(journal)

    with pytest.raises(StepFailed):
        await rt.run(booker, "Book a trip")

    match journal.undone:
        case [
            CompletedStep(step="hold_hotel", iteration=2, output="room in Oslo"),
            CompletedStep(
                step="reserve_seat",
                tool_call_id="c1",
                iteration=1,
                arguments={"flight": "AF1"},
                output={"seat": "12A", "flight": "AF1"},
                run_context=RunContext(iteration=1),
            ),
        ]:
            pass
        case other:
            pytest.fail(f"unexpected compensations: {other}")


async def test_failure_and_compensations_are_recorded_in_the_iterations_metadata():
    rt, booker = booking_run(Journal())

    with pytest.raises(StepFailed) as excinfo:
        await rt.run(booker, "Book a trip")

    match excinfo.value.context.iterations[-1].metadata:
        case {
            "failures": [
                {
                    "step": "charge_card",
                    "tool_call_id": "c3",
                    "error_type": "RuntimeError",
                    "message": "card declined for 5",
                    "traceback": str(),
                    "at": "2025-01-01T00:00:04+00:00",
                    "handler": "handle",
                    "recovered": False,
                }
            ],
            "compensations": [
                {"step": "hold_hotel", "status": "compensated", "at": "2025-01-01T00:00:05+00:00"},
                {"step": "reserve_seat", "status": "compensated", "tool_call_id": "c1"},
            ],
        }:
            pass
        case other:
            pytest.fail(f"unexpected metadata: {other}")


async def test_a_failed_run_closes_its_iteration_with_every_call_answered():
    journal = Journal()
    reserve_seat, _, charge_card = booking_tools(journal)
    rt = runtime(
        chat(
            None,
            ("c1", "reserve_seat", {"flight": "AF1"}),
            ("c2", "charge_card", {"amount": 5}),
            ("c3", "reserve_seat", {"flight": "AF2"}),
        )
    )

    with pytest.raises(StepFailed) as excinfo:
        await rt.run(agent(reserve_seat, charge_card), "Book")

    match excinfo.value.context:
        case AgentContext(
            iterations=[
                Iteration(
                    messages=[
                        Message(role="user"),
                        Message(role="assistant"),
                        Message(role="tool", tool_call_id="c1", is_error=False),
                        Message(role="tool", tool_call_id="c2", is_error=True),
                        Message(role="tool", tool_call_id="c3", is_error=True, content=str(t)),
                    ],
                    completed_at=datetime(),
                )
            ],
            current_iteration=1,
        ):
            assert t == "Not executed: the run stopped because step charge_card failed."
        case other:
            pytest.fail(f"unexpected context: {other}")
    assert [step.tool_call_id for step in journal.undone] == ["c1"]


async def test_a_failing_compensation_is_recorded_and_the_others_still_run():
    undone: list[str] = []

    def undo_badly(step: CompletedStep) -> None:
        raise OSError("cannot release")

    async def undo(step: CompletedStep) -> None:
        undone.append(step.step)

    @tool(compensate=undo)
    def first(x: int) -> int:
        """First step."""
        return x

    @tool(compensate=undo_badly)
    def second(x: int) -> int:
        """Second step."""
        return x

    @tool(on_failure=lambda failure: None)
    def third(x: int) -> int:
        """Third step."""
        raise ValueError("no")

    rt = runtime(
        chat(None, ("c1", "first", {"x": 1}), ("c2", "second", {"x": 2}), ("c3", "third", {"x": 3}))
    )

    with pytest.raises(StepFailed, match=r"Compensated: second \(failed\), first \(compensated\)"):
        await rt.run(agent(first, second, third), "Go")

    assert undone == ["first"]
    assert rt.results[0].context.iterations[0].metadata["compensations"][0] == {
        "step": "second",
        "tool_call_id": "c2",
        "iteration": 1,
        "status": "failed",
        "at": "2025-01-01T00:00:03+00:00",
        "error": "OSError: cannot release",
    }


async def test_a_handler_that_raises_does_not_recover_and_its_error_is_recorded():
    def handler(failure: Failure) -> str:
        raise RuntimeError("handler broke")

    @tool(on_failure=handler)
    def lookup(key: str) -> str:
        """Look up a key."""
        raise KeyError(key)

    rt = runtime(chat(None, ("c1", "lookup", {"key": "x"})))

    with pytest.raises(StepFailed) as excinfo:
        await rt.run(agent(lookup), "Find x")

    match excinfo.value.context.iterations[0].metadata["failures"]:
        case [{"recovered": False, "handler_error": "RuntimeError: handler broke"}]:
            pass
        case other:
            pytest.fail(f"unexpected failures: {other}")


async def test_a_compensation_reaches_the_run_dependencies():
    released: list[str] = []

    def release(step: CompletedStep) -> None:
        assert step.run_context is not None
        step.run_context.deps["seats"].remove(step.output)
        released.append(step.output)

    @tool(compensate=release)
    def reserve(ctx: RunContext, seat: str) -> str:
        """Reserve a seat."""
        ctx.deps["seats"].append(seat)
        return seat

    @tool(on_failure=lambda failure: None)
    def pay(amount: int) -> str:
        """Pay."""
        raise RuntimeError("declined")

    seats: list[str] = []
    rt = runtime(chat(None, ("c1", "reserve", {"seat": "12A"}), ("c2", "pay", {"amount": 1})))

    with pytest.raises(StepFailed):
        await rt.run(agent(reserve, pay), "Book", deps={"seats": seats})

    assert (seats, released) == ([], ["12A"])


async def test_a_step_failed_run_is_kept_in_results_and_can_be_continued():
    rt, booker = booking_run(Journal())
    rt.providers["local"] = Script(
        chat(None, ("c1", "reserve_seat", {"flight": "AF1"})),
        chat(None, ("c2", "hold_hotel", {"city": "Oslo"}), ("c3", "charge_card", {"amount": 5})),
        chat("Sorry, the card was declined."),
    )
    with pytest.raises(StepFailed) as excinfo:
        await rt.run(booker, "Book a trip")

    failed = excinfo.value.result
    assert failed is not None
    continued = await rt.continue_conversation(failed, "What happened?")

    assert rt.results[0] is excinfo.value.result
    match continued.context.iterations[-1]:
        case Iteration(number=3, messages=[Message(role="user", content="What happened?"), _]):
            pass
        case other:
            pytest.fail(f"unexpected last iteration: {other}")


async def test_compensations_cover_the_steps_of_the_current_run_only():
    journal = Journal()
    reserve_seat, _, charge_card = booking_tools(journal)
    booker = agent(reserve_seat, charge_card)
    rt = runtime(
        chat(None, ("c1", "reserve_seat", {"flight": "AF1"})),
        chat("Reserved."),
        chat(None, ("c2", "charge_card", {"amount": 5})),
    )
    first = await rt.run(booker, "Reserve")

    with pytest.raises(StepFailed):
        await rt.continue_conversation(first, "Now pay")

    assert journal.undone == []


# -- tracebacks ----------------------------------------------------------------------------


def _raise_deep() -> None:
    raise ValueError("deep")


def test_format_traceback_names_files_by_base_name_and_skips_the_package():
    try:
        _raise_deep()
    except ValueError as exc:
        text = format_traceback(exc)

    lines = text.splitlines()
    assert lines[0] == "Traceback (most recent call last):"
    assert lines[-1] == "ValueError: deep"
    assert all("/" not in line for line in lines if line.startswith("  File"))
    assert "in _raise_deep" in text


def test_format_traceback_of_an_exception_never_raised_is_its_last_line():
    assert format_traceback(KeyError("k")) == "KeyError: 'k'"

"""A tool keeps its function's signature for type checkers: ``mypy --strict`` on a user's file.

Each test writes a small test module of a user to ``tmp_path`` and runs mypy on it in a fresh
interpreter, with its cache under ``tmp_path`` (so no run sees another's cache and the order
of the tests does not matter). One run takes a few seconds.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

#: A user's module: sync and async tools, in both decorator forms, called directly and given
#: to agents as a list literal, as a list variable and through the built-in artifact tools.
CORRECT = '''\
from typing import Any, Coroutine, assert_type

from pytest_agentctx import Agent, Tool, tool
from pytest_agentctx.runtime.artifacts import ARTIFACT_TOOLS


@tool
def get_weather(city: str, unit: str = "celsius") -> str:
    """Current weather for a city."""
    return f"18 degrees {unit} in {city}"


@tool(name="add_numbers", description="Add two numbers.")
def add(a: int, b: int) -> int:
    return a + b


@tool
async def fetch(url: str) -> bytes:
    return url.encode()


@tool(description="Count up to n.")
async def count(n: int) -> list[int]:
    return list(range(n))


def weather_test() -> None:
    assert_type(get_weather("Paris"), str)
    assert_type(get_weather("Paris", unit="fahrenheit"), str)
    assert_type(add(1, b=2), int)


async def async_tools_test() -> None:
    pending = assert_type(fetch("https://example.com"), Coroutine[Any, Any, bytes])
    assert_type(await pending, bytes)
    assert_type(await count(3), list[int])


def tool_name(any_tool: Tool[Any]) -> str:
    return any_tool.name


def agents() -> list[Agent]:
    tools = [get_weather, add, fetch]
    orchestrator_tools = [Agent(name="helper", model="openai:gpt-4o-mini").as_tool(), count]
    return [
        Agent(name="literal", model="openai:gpt-4o-mini", tools=[get_weather, add, count]),
        Agent(name="variable", model="openai:gpt-4o-mini", tools=tools),
        Agent(name="artifacts", model="openai:gpt-4o-mini", tools=[*ARTIFACT_TOOLS, add]),
        Agent(name="orchestrator", model="openai:gpt-4o-mini", tools=orchestrator_tools),
    ]


names = [tool_name(get_weather), tool_name(count)]
'''

#: A user's module that calls tools with arguments of the wrong type, one per decorator form.
WRONG = """\
from pytest_agentctx import tool


@tool
def get_weather(city: str) -> str:
    return city


@tool(name="add_numbers")
async def add(a: int, b: int) -> int:
    return a + b


async def weather_test() -> None:
    get_weather(75001)
    await add(1, "2")
"""


async def _mypy_strict(tmp_path: Path, source: str) -> tuple[int, str]:
    """Run ``mypy --strict`` on ``source`` as ``user_tools.py``: its exit code and report."""
    pytest.importorskip("mypy", reason="mypy is in the dev extra: pip install -e '.[dev]'")
    (tmp_path / "user_tools.py").write_text(source, encoding="utf-8")
    (tmp_path / "mypy.ini").write_text("[mypy]\n", encoding="utf-8")  # not the project's
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--config-file",
        "mypy.ini",
        "--cache-dir",
        str(tmp_path / ".mypy_cache"),
        "--no-error-summary",
        "--hide-error-context",
        "--no-pretty",
        "user_tools.py",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(process.communicate(), timeout=300)
    assert process.returncode is not None
    return process.returncode, out.decode()


async def test_mypy_strict_passes_tools_called_and_given_to_agents_as_typed(
    tmp_path: Path,
) -> None:
    returncode, report = await _mypy_strict(tmp_path, CORRECT)

    assert (returncode, report) == (0, "")


async def test_mypy_strict_reports_a_wrong_argument_to_a_tool_on_its_line(
    tmp_path: Path,
) -> None:
    returncode, report = await _mypy_strict(tmp_path, WRONG)

    assert returncode == 1
    assert report.splitlines() == [
        'user_tools.py:15: error: Argument 1 to "get_weather" has incompatible type "int"; '
        'expected "str"  [arg-type]',
        'user_tools.py:16: error: Argument 2 to "add" has incompatible type "str"; '
        'expected "int"  [arg-type]',
    ]

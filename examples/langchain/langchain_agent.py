"""A trip-planning agent on LangChain: ``create_agent`` (a LangGraph ReAct loop) with two
tools, on any LangChain chat model.

``build_agent(model)`` takes the chat model, as LangChain code usually does
(``ChatOpenAI(model=...)`` in production, the same class pointed at another ``base_url``
in a test). Nothing in it knows about tests.
"""

from __future__ import annotations

from typing import Any

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import tool

FORECASTS = {"lisbon": "sunny, 24°C", "oslo": "rain, 6°C", "rome": "cloudy, 17°C"}
FLIGHTS = {
    ("paris", "lisbon"): ["TP433 07:05", "AF1024 13:40"],
    ("paris", "oslo"): ["SK846 10:15"],
}

SYSTEM_PROMPT = (
    "You plan short trips. Check the forecast with get_forecast and the flights with "
    "find_flights before you recommend anything. Two sentences at most."
)


@tool
def get_forecast(city: str) -> str:
    """Tomorrow's weather in a city."""
    return FORECASTS.get(city.strip().lower(), f"no forecast for {city}")


@tool
def find_flights(origin: str, destination: str) -> str:
    """Tomorrow's direct flights from one city to another, with departure times."""
    flights = FLIGHTS.get((origin.strip().lower(), destination.strip().lower()), [])
    return ", ".join(flights) or f"no direct flight from {origin} to {destination}"


def build_agent(model: BaseChatModel | str = "openai:gpt-4o-mini") -> Any:
    """The trip planner on ``model`` (a chat model, or a ``provider:model`` name)."""
    return create_agent(model, tools=[get_forecast, find_flights], system_prompt=SYSTEM_PROMPT)


async def plan(agent: Any, request: str) -> str:
    """The planner's final answer to ``request``."""
    state = await agent.ainvoke({"messages": [{"role": "user", "content": request}]})
    return str(state["messages"][-1].content)

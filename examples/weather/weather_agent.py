"""A small weather agent with two tools, used by the example tests.

The tools read from a weather service passed in at run time (``deps``), so the agent
itself holds no state and the tests can hand it a canned service.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pytest_agentctx import Agent, RunContext, tool


@dataclass
class WeatherService:
    """A stand-in for a real weather API: temperatures in Celsius by city."""

    temperatures: dict[str, float] = field(
        default_factory=lambda: {"paris": 18.0, "oslo": 4.0, "cairo": 31.0}
    )
    utc_offsets: dict[str, int] = field(default_factory=lambda: {"paris": 1, "oslo": 1, "cairo": 2})


@tool
def get_weather(ctx: RunContext, city: str, unit: str = "celsius") -> str:
    """Current temperature in a city.

    Args:
        city: The city's name, e.g. "Paris".
        unit: "celsius" or "fahrenheit".
    """
    service: WeatherService = ctx.deps["weather"]
    key = city.strip().lower()
    if key not in service.temperatures:
        raise LookupError(f"no weather station in {city!r}")
    if unit not in ("celsius", "fahrenheit"):
        raise ValueError(f"unit must be 'celsius' or 'fahrenheit', not {unit!r}")
    value = service.temperatures[key]
    if unit == "fahrenheit":
        return f"{value * 9 / 5 + 32:.0f}°F in {city}"
    return f"{value:.0f}°C in {city}"


@tool
def get_local_time(ctx: RunContext, city: str) -> str:
    """Local time in a city, from the runtime's clock.

    Args:
        city: The city's name.
    """
    service: WeatherService = ctx.deps["weather"]
    offset = service.utc_offsets.get(city.strip().lower())
    if offset is None:
        raise LookupError(f"unknown time zone for {city!r}")
    now = ctx.clock.now()
    return f"{(now.hour + offset) % 24:02d}:{now.minute:02d} in {city}"


SYSTEM_PROMPT = (
    "You are a concise weather assistant. Use get_weather for temperatures and "
    "get_local_time for the time. Answer in one sentence."
)


def weather_agent(model: str = "openai:gpt-4o-mini", max_iterations: int = 4) -> Agent:
    """The weather agent on the given model (``openai:...`` or ``anthropic:...``)."""
    return Agent(
        name="weather",
        model=model,
        system_prompt=SYSTEM_PROMPT,
        tools=[get_weather, get_local_time],
        max_iterations=max_iterations,
    )

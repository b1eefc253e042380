"""The limits a behaviour budget can set (:data:`BUDGET_LIMITS`) and the ini option of
each (:func:`ini_name`); the budgets themselves are :mod:`.budgets`'s."""

from __future__ import annotations

#: The limits a budget can set, in the order they are reported.
BUDGET_LIMITS = (
    "max_iterations",
    "max_tool_calls",
    "max_tokens",
    "max_cost_usd",
    "max_duration_s",
    "max_mcp_calls",
    "max_cache_write_tokens",
    "min_cache_read_share",
)
#: The limits that are floors: the measured figure must reach them (the others are
#: ceilings it must not pass).
FLOORS = frozenset({"min_cache_read_share"})


def ini_name(limit: str) -> str:
    """The ini option that sets ``limit`` for every agent test: ``agent_budget_<limit>``."""
    return f"agent_budget_{limit}"

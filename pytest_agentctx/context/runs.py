"""The runs a test made, as budgets and reports receive them: :class:`RunRecord`, a run's
name, where its context came from and the context itself.

The runtime makes them from its results and the capture of a test's traffic from the
conversations it rebuilt; their figures are :func:`~pytest_agentctx.reports.figures.run_stats`'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pytest_agentctx.context.model import AgentContext


@dataclass(frozen=True)
class RunRecord:
    """One run a test made: a name (the agent's, or the conversation's), where the context
    came from (``runtime``: the package's runtime; ``captured``: built from the test's HTTP
    traffic) and the context itself."""

    name: str
    source: Literal["runtime", "captured"]
    context: AgentContext
    #: The role its model calls were made under: ``"agent"``, or a judge's or simulated
    #: user's run (``"judge"``, ``"user_sim"``), which reports list apart.
    role: str = "agent"

"""The captured runs of a test (or of any code): contexts read off its LLM traffic."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import overload

from pytest_agentctx.context.clock import DEFAULT_START, parse_datetime
from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.context.runs import RunRecord
from pytest_agentctx.traffic.capture.builder import Built, build
from pytest_agentctx.traffic.capture.exchange import Exchange, TrafficRecorder, _as_exchange
from pytest_agentctx.traffic.capture.mcp import as_interaction, read_mcp
from pytest_agentctx.traffic.cassettes.fileformat import Interaction
from pytest_agentctx.traffic.cassettes.store import load_cassette
from pytest_agentctx.traffic.errors import CaptureError, CassetteFormatError, NotOneConversation
from pytest_agentctx.traffic.roles import DEFAULT_ROLE, check_role

ExchangeSource = Callable[[], Sequence[Exchange | Interaction]]


class CapturedRuns:
    """The conversations found in a sequence of HTTP exchanges, as contexts.

    The exchanges are read again whenever they changed, so a ``CapturedRuns`` fed by a live
    log (the ``agent_context`` fixture, :func:`capture_contexts`) shows the conversations
    so far, during and after the agent ran.

    * :attr:`contexts`: one :class:`AgentContext` per top-level conversation, in the order
      they started (sub-agents live in their parent's iteration metadata, under
      ``metadata["subagents"][<tool call id>]``);
    * :attr:`context`: the one conversation (:class:`NotOneConversation` if there are 0
      or several);
    * :attr:`non_llm`: the exchanges that were no model call (embeddings, tracing uploads,
      polling, MCP traffic...), with :attr:`non_llm_reasons`;
    * :attr:`mcp_calls`: the MCP ``tools/call`` requests (each also in its iteration's
      ``metadata["mcp"]``), and :attr:`tool_contract`: each MCP server's ``tools/list``;
    * :meth:`of_role`: the conversations of the model calls made under another role
      (``model_role("judge")``, ``"user_sim"``), kept apart: they are in none of the
      above, nor in :meth:`records` (the agent's budgets and trajectory).

    ``len()``, iteration and indexing go over :attr:`contexts`.
    """

    def __init__(
        self,
        exchanges: Sequence[Exchange | Interaction] | ExchangeSource,
        *,
        clock_start: datetime | str = DEFAULT_START,
        clock_step: timedelta = timedelta(seconds=1),
    ) -> None:
        if callable(exchanges):
            self._source: ExchangeSource = exchanges
        else:
            fixed = list(exchanges)
            self._source = lambda: fixed
        self.clock_start = parse_datetime(clock_start, what="clock_start")
        self.clock_step = clock_step
        self._key: tuple[int, ...] | None = None
        self._built: Built | None = None
        self._contexts: list[AgentContext] = []
        #: The conversations of each other role than the agent's, by role.
        self._roles: dict[str, list[AgentContext]] = {}

    # -- reading -------------------------------------------------------------------

    @property
    def exchanges(self) -> list[Exchange]:
        """Every exchange read so far, model calls or not, in request order."""
        return [_as_exchange(item) for item in self._source()]

    def _refresh(self) -> Built:
        items = self._source()
        key = tuple(id(item) for item in items)
        if self._built is None or key != self._key:
            exchanges = [_as_exchange(item) for item in items]
            for position, item in enumerate(exchanges):
                if not isinstance(item, Exchange):
                    raise CaptureError(
                        f"exchange #{position} is a {type(item).__name__}; capture reads "
                        "Exchange objects or cassette Interactions."
                    )
            mcp = read_mcp([as_interaction(item) for item in items])
            by_role: dict[str, list[Exchange]] = {}
            for exchange in exchanges:
                by_role.setdefault(exchange.role, []).append(exchange)
            agents = by_role.pop(DEFAULT_ROLE, [])
            self._built = build(agents, start=self.clock_start, step=self.clock_step, mcp=mcp)
            self._contexts = [c.context() for c in self._built.conversations]
            start, step = self.clock_start, self.clock_step
            self._roles = {
                role: [c.context() for c in build(group, start=start, step=step).conversations]
                for role, group in by_role.items()
            }
            self._key = key
        return self._built

    @property
    def contexts(self) -> list[AgentContext]:
        """One context per top-level conversation, in the order they started."""
        self._refresh()
        return list(self._contexts)

    @property
    def context(self) -> AgentContext:
        """The context of the only conversation; raises :class:`NotOneConversation`."""
        built = self._refresh()
        if len(self._contexts) == 1:
            return self._contexts[0]
        if not self._contexts:
            seen = len(built.non_llm)
            raise NotOneConversation(
                "agent_context.context: the test made no model call, so there is no "
                f"conversation ({seen} other exchange(s) were seen"
                + (f": {_listed(built)}" if seen else "")
                + "). Check that the agent ran inside the test and calls OpenAI chat "
                "completions, OpenAI Responses or Anthropic Messages."
            )
        listed = "\n".join(
            f"  [{i}] conversation {i + 1} ({c.summary()})"
            for i, c in enumerate(built.conversations)
        )
        raise NotOneConversation(
            f"agent_context.context: the test ran {len(self._contexts)} conversations, "
            f"not one:\n{listed}\nPick one with agent_context.contexts[i] (or iterate "
            "over agent_context)."
        )

    @property
    def non_llm(self) -> list[Exchange]:
        """The exchanges that were not model calls, in request order."""
        return list(self._refresh().non_llm)

    @property
    def non_llm_reasons(self) -> list[str]:
        """Why each exchange of :attr:`non_llm` is not a model call (same order)."""
        return list(self._refresh().reasons)

    @property
    def mcp_calls(self) -> list[dict[str, object]]:
        """Every MCP ``tools/call`` the test made, in order, as kept in
        ``metadata["mcp"]`` (``tool_call_id`` ``None``: joined to no tool call of the
        model; such a call made before any model call is in no context, only here)."""
        return [call.to_dict() for call in self._refresh().mcp.calls]

    @property
    def tool_contract(self) -> dict[str, list[dict[str, object]]]:
        """Each MCP server's tools, as its last ``tools/list`` answer gave them (``name``,
        ``description``, ``inputSchema``, ``outputSchema``, ``annotations``...), by server
        (a stdio server's label, or the HTTP URL without its query)."""
        contract = self._refresh().mcp.contract
        return {server: [dict(tool) for tool in tools] for server, tools in contract.items()}

    def of_role(self, role: str) -> list[AgentContext]:
        """The conversations of the model calls made under ``role`` (``"judge"``,
        ``"user_sim"``; ``"agent"``: :attr:`contexts`), in the order they started."""
        check_role(role, where="agent_context.of_role")
        if role == DEFAULT_ROLE:
            return self.contexts
        self._refresh()
        return list(self._roles.get(role, []))

    def role_records(self) -> list[RunRecord]:
        """The conversations of the other roles as :class:`RunRecord` objects (named
        ``judge 1``, ``user_sim 1``..., with their role): listed apart in reports,
        never in the agent's budgets."""
        self._refresh()
        return [
            RunRecord(f"{role} {number}", "captured", context, role=role)
            for role, contexts in self._roles.items()
            for number, context in enumerate(contexts, start=1)
        ]

    def records(self) -> list[RunRecord]:
        """The conversations as :class:`RunRecord` objects (for budgets and reports)."""
        return [
            RunRecord(f"conversation {number}", "captured", context)
            for number, context in enumerate(self.contexts, start=1)
        ]

    def __len__(self) -> int:
        self._refresh()
        return len(self._contexts)

    def __iter__(self) -> Iterator[AgentContext]:
        return iter(self.contexts)

    @overload
    def __getitem__(self, index: int) -> AgentContext: ...

    @overload
    def __getitem__(self, index: slice) -> list[AgentContext]: ...

    def __getitem__(self, index: int | slice) -> AgentContext | list[AgentContext]:
        return self.contexts[index]

    def __repr__(self) -> str:
        built = self._refresh()
        return (
            f"CapturedRuns({len(self._contexts)} conversation(s), "
            f"{len(built.non_llm)} non-LLM exchange(s))"
        )


def _listed(built: Built) -> str:
    # an MCP server over stdio is named by its URL (mcp+stdio://<server>/): its path says nothing
    shown = [
        f"{e.method} {e.url if e.url.startswith('mcp+stdio:') else e.path}"
        for e in built.non_llm[:5]
    ]
    more = f" and {len(built.non_llm) - 5} more" if len(built.non_llm) > 5 else ""
    return ", ".join(shown) + more


def build_contexts(
    exchanges: Sequence[Exchange | Interaction],
    *,
    clock_start: datetime | str = DEFAULT_START,
    clock_step: timedelta = timedelta(seconds=1),
) -> CapturedRuns:
    """The conversations of a list of exchanges (or cassette interactions), in order."""
    return CapturedRuns(list(exchanges), clock_start=clock_start, clock_step=clock_step)


def contexts_from_cassette(
    path: str | Path,
    *,
    clock_start: datetime | str = DEFAULT_START,
    clock_step: timedelta = timedelta(seconds=1),
) -> CapturedRuns:
    """The conversations recorded in a cassette file (this package's or vcrpy's format)."""
    location = Path(path)
    if not location.is_file():
        raise CaptureError(
            f"contexts_from_cassette({str(path)!r}): there is no such file. Give the path of "
            "a cassette (pytest --agent-record writes them under cassettes/)."
        )
    try:
        interactions = load_cassette(location)
    except CassetteFormatError as exc:
        raise CaptureError(f"contexts_from_cassette({str(path)!r}): {exc}") from None
    return build_contexts(interactions, clock_start=clock_start, clock_step=clock_step)


@contextlib.contextmanager
def capture_contexts(
    *,
    clock_start: datetime | str = DEFAULT_START,
    clock_step: timedelta = timedelta(seconds=1),
) -> Iterator[CapturedRuns]:
    """Capture the conversations of the ``httpx2``/``httpx`` traffic inside the block.

    Requests reach whatever would answer them without the block (a cassette, the fake
    model, the network), and a copy of each exchange is kept::

        with capture_contexts() as runs:
            my_agent.run("What is the weather in Paris?")
        print(runs.context.final_output)
    """
    recorder = TrafficRecorder()
    runs = CapturedRuns(lambda: recorder.exchanges, clock_start=clock_start, clock_step=clock_step)
    recorder.start()
    try:
        yield runs
    finally:
        recorder.stop()

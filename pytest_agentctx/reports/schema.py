"""The entries of a test's record, as typed dicts: what the JSON report stores of a test's
figures (:class:`StatsEntry`), runs, cassette, budget, repetitions and failure, and the
record itself (:class:`Record`).

A record is built once, in the process that ran the test, from these entries; it is JSON
data already (lists, never tuples), so it travels on the test's teardown report (and
through pytest-xdist) as it is, and the session's report holds it as it was built.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

Suite = Literal["unit", "integration"]
CassetteStatus = Literal[
    "replayed", "recorded", "live", "discarded", "unsaved", "stale", "unused", "missing"
]


class StatsEntry(TypedDict):
    """The figures of one run or of several (``RunStats.to_dict``)."""

    runs: int
    iterations: int
    tool_calls: int
    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: float | None
    duration_s: float
    models: list[str]
    trajectory: list[str]
    #: MCP tool calls, present when the runs made any.
    mcp_calls: NotRequired[int]
    #: The input by kind (neither read from nor written to the prompt cache, read, written)
    #: and the output tokens spent reasoning: each present when the runs had some (the
    #: uncached input with the cache's tokens).
    uncached_input_tokens: NotRequired[int]
    cache_read_tokens: NotRequired[int]
    cache_write_tokens: NotRequired[int]
    reasoning_tokens: NotRequired[int]
    #: The models no price knows (``cost_usd`` is then ``None``).
    unpriced: NotRequired[list[str]]


class TranscriptMessage(TypedDict):
    """One message of a simulated conversation: ``user`` the simulated user's, ``assistant``
    the agent's."""

    role: str
    content: str


class TranscriptEntry(TypedDict):
    """A simulated user's conversation with the agent (``Transcript.to_dict()``): who played
    the user, the messages, the turns completed and why it stopped (``done``, ``stop``,
    ``max_turns``, ``error``; ``done_reason``: what the simulated user said when done, or
    the error that ended the conversation)."""

    persona: str
    goal: str
    messages: list[TranscriptMessage]
    turns: int
    stopped_because: str
    done_reason: str


class McpCallEntry(TypedDict):
    """One MCP tool call of a run: its server and tool, the iteration it was made in, the
    model tool call it joined (``None``: none), whether its result is an ``isError`` one and
    the JSON-RPC error's message, if any."""

    server: str
    tool: str
    iteration: int
    tool_call_id: str | None
    is_error: bool
    error: str | None


class CallEntry(TypedDict):
    """One model call of a run (its iteration ``iteration``, from 0): the model, the tokens
    as the provider counted them and by kind where it reported them, and its price in US
    dollars (``None``: no price knows the model) with the price of each kind of token
    (``cost_parts``: ``uncached_input``, ``cache_read``, ``cache_write``, ``output``)."""

    iteration: int
    model: str | None
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    cost_parts: NotRequired[dict[str, float]]
    uncached_input_tokens: NotRequired[int]
    cache_read_tokens: NotRequired[int]
    cache_write_tokens: NotRequired[int]
    cache_write_1h_tokens: NotRequired[int]
    reasoning_tokens: NotRequired[int]
    service_tier: NotRequired[str]


class RunEntry(TypedDict):
    """One run of a test: its name, where it came from, its figures and (when the session
    keeps them) its context as JSON data; its MCP tool calls when it made any."""

    name: str
    source: Literal["runtime", "captured"]
    stats: StatsEntry
    context: NotRequired[dict[str, object]]
    mcp_calls: NotRequired[list[McpCallEntry]]
    #: The role of a run listed apart (``role_runs``): ``judge``, ``user_sim``.
    role: NotRequired[str]
    #: Each model call that reported its usage, priced (:class:`CallEntry`).
    calls: NotRequired[list[CallEntry]]


class EasedEntry(TypedDict):
    """What the migration period (``agent_migration_until``, the last day: ``until``) let
    a passing test get away with: misses its code caught, recordings it left unused."""

    until: str
    misses: int
    unused: int


class CassetteEntry(TypedDict):
    """A test's cassette after the test ran (``shared``: used by several tests, dropped
    from the report once the collector judged it). ``digests``: a digest of the request of
    each unused recording, by its index (as a string), that ``pytest-agentctx cassettes
    prune`` checks the file against; ``eased``: what the migration period let pass;
    ``recorded_on``: the day its recordings the test used were made (the latest), whose
    prices priced the test's calls."""

    path: str
    mode: str
    status: CassetteStatus
    interactions: int
    unused: list[int]
    shared: NotRequired[bool]
    digests: NotRequired[dict[str, str]]
    eased: NotRequired[EasedEntry]
    recorded_on: NotRequired[str]


class ExceededEntry(TypedDict):
    """One limit of a budget that a test went over."""

    name: str
    measured: int | float
    allowed: int | float


class BudgetEntry(TypedDict):
    """A test's budget: the limits set, those exceeded, and whether nothing was measured."""

    limits: dict[str, int | float]
    exceeded: list[ExceededEntry]
    unmeasured: NotRequired[bool]


class PerRunEntry(TypedDict):
    """The figures of one repetition of an ``agent_repeat`` test, for the baseline."""

    iterations: int
    tool_calls: int
    total_tokens: int
    trajectory: list[str]


class ScoreEntry(TypedDict):
    """The mean of one judge's scores against one rubric over a test's repetitions, with
    its bootstrap interval (``bootstrap_mean``, seeded: the same on every replay)."""

    judge: str
    rubric_id: str
    n: int
    mean: float
    interval: list[float]
    confidence: float


class RepeatEntry(TypedDict):
    """The pass rate of an ``agent_repeat`` test, and the figures of each repetition."""

    runs: int
    passed: int
    pass_rate: float
    min_pass_rate: float
    #: The gate's rule: ``lower_bound`` (the interval's lower bound against
    #: ``min_pass_rate``) or ``point`` (the rate itself); absent in older reports.
    rule: NotRequired[str]
    #: The pass rate's interval ``[low, high]`` by ``method`` (``wilson``,
    #: ``clopper_pearson``) at ``confidence``, and whether the test is a ``stable pass``, a
    #: ``stable fail`` or ``stochastic`` (absent when no run counted, and in older reports).
    interval: NotRequired[list[float]]
    method: NotRequired[str]
    confidence: NotRequired[float]
    stability: NotRequired[str]
    #: pass@k and pass^k estimates by ``k`` (as text), when the marker asks for a ``k``.
    pass_at_k: NotRequired[dict[str, float]]
    pass_hat_k: NotRequired[dict[str, float]]
    #: The pass^k target: ``{"k": 3, "target": 0.5}``.
    min_pass_hat_k: NotRequired[dict[str, float]]
    #: Each judge's mean score over the repetitions, with its bootstrap interval.
    scores: NotRequired[list[ScoreEntry]]
    #: Each repetition's outcome, in order (``passed``, ``failed``, ``skipped``): what the
    #: baseline pairs by repetition and a shard merge recomputes the statistics from.
    outcomes: NotRequired[list[str]]
    per_run: NotRequired[list[PerRunEntry]]


class FailureEntry(TypedDict):
    """Why a test failed: the phase, a one-line message, the (cut) failure text."""

    phase: str
    message: str
    text: str
    truncated: bool
    cut: int


class Record(TypedDict):
    """One test's record (``measured``: present, and false, when its captured runs were
    not measured)."""

    suite: Suite
    cassette: CassetteEntry | None
    budget: BudgetEntry | None
    repeat: RepeatEntry | None
    stats: StatsEntry
    runs: list[RunEntry]
    failure: FailureEntry | None
    measured: NotRequired[bool]
    #: Each MCP server's tools (its last ``tools/list`` answer), by server, when the test's
    #: traffic had any.
    mcp_contract: NotRequired[dict[str, list[dict[str, object]]]]
    #: The verdicts of the test's judges (``Verdict.to_dict()``), when it had any.
    verdicts: NotRequired[list[dict[str, object]]]
    #: The runs made under another role than the agent's (a judge's, a simulated user's),
    #: named ``judge 1``..., each with its role: apart from ``runs`` and ``stats``.
    role_runs: NotRequired[list[RunEntry]]
    #: The totals of :attr:`role_runs`, by role: each role's own cost line.
    role_stats: NotRequired[dict[str, StatsEntry]]
    #: The simulated users' conversations of the test (``agent_simulated_user``), in order.
    transcripts: NotRequired[list[TranscriptEntry]]


class ReportEntry(Record):
    """A test of the session's report: its record, its node id and outcome."""

    nodeid: str
    outcome: str

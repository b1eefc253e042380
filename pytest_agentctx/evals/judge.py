"""A judge: one model call, made under ``model_role("judge")``, that grades a subject (a
text, a run's context) against a rubric and gives a :class:`~.verdict.Verdict`.

The call goes through the runtime's providers (``openai:``, ``openai-responses:``,
``anthropic:``, ``gemini:`` or ``google:``, ``bedrock:`` model names, their wire formats),
so a test's cassette records and replays it like the agent's calls, kept apart by its role:
a judge's call never replays the agent's recording, and ``--agent-record=judge`` records
the judge's calls again while the agent's are replayed. The request holds the rubric
between markers (:data:`~pytest_agentctx.traffic.roles.RUBRIC_OPEN`), so that a replayed
judge whose rubric changed is told so, with the diff.

The model is asked for a JSON object ``{"score": 0..1, "rationale": "..."}``; any other
reply is a :class:`~.errors.JudgeReplyError`, never a made-up verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pytest_agentctx.context.model import AgentContext
from pytest_agentctx.evals.errors import JudgeError
from pytest_agentctx.evals.verdict import Verdict, check_threshold, parse_verdict, rubric_id
from pytest_agentctx.traffic.roles import RUBRIC_CLOSE, RUBRIC_OPEN, model_role

if TYPE_CHECKING:
    from pytest_agentctx.runtime.providers import Provider

#: The model a judge uses unless told otherwise.
DEFAULT_MODEL = "openai:gpt-4o-mini"
#: The threshold a verdict is held to unless told otherwise.
DEFAULT_THRESHOLD = 0.7

#: Model prefixes that are other names of the runtime's.
_ALIASES = {"gemini": "google"}

#: What the judge model is told, before the rubric and the subject.
INSTRUCTIONS = (
    "You are a strict evaluator. Grade the subject against the rubric. Reply with only a "
    'JSON object, no other text: {"score": <a number from 0 to 1, 1 when the subject '
    'fully meets the rubric>, "rationale": "<one or two sentences: why this score>"}.'
)

#: What a judge grades: a text, a context, or what has one (a run's result, a test's
#: captured runs with one conversation).
Subject = str | AgentContext | object


class Judge:
    """Grades subjects against rubrics with one model call each, under the role ``judge``.

    ``model``: ``"PROVIDER:MODEL"`` (``"openai:gpt-4o-mini"``); ``threshold``: the score a
    verdict needs to pass (0..1); ``name``: the judge's name in its verdicts; ``providers``:
    a provider by model prefix (``{"openai": OpenAIChatProvider(client=...)}``), else the
    runtime's default one (its SDK reads its key and base URL from the environment).
    Every verdict given is kept in :attr:`verdicts` and handed to ``on_verdict``.
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        name: str = "judge",
        providers: Mapping[str, Provider] | None = None,
        max_tokens: int | None = 512,
        on_verdict: Callable[[Verdict], None] | None = None,
    ) -> None:
        self.model = model
        self.threshold = check_threshold(threshold)
        self.name = name
        self.providers: dict[str, Provider] = dict(providers or {})
        self.max_tokens = max_tokens
        self.on_verdict = on_verdict
        #: Every verdict this judge gave, in order.
        self.verdicts: list[Verdict] = []

    async def __call__(
        self,
        rubric: str,
        subject: Subject,
        *,
        threshold: float | None = None,
        model: str | None = None,
        rubric_name: str | None = None,
    ) -> Verdict:
        """The verdict on ``subject`` against ``rubric`` (``threshold`` and ``model``: this
        call's, else the judge's; ``rubric_name``: the rubric's id in reports, else its
        digest). Raises :class:`~.errors.JudgeReplyError` when the reply is no verdict."""
        if not isinstance(rubric, str) or not rubric.strip():
            raise JudgeError(
                f"rubric={rubric!r}: expected the rubric's text, what a good subject does "
                '(rubric="The answer gives the temperature in Paris").'
            )
        bar = self.threshold if threshold is None else check_threshold(threshold)
        used = model or self.model
        ident = rubric_id(rubric, rubric_name)
        reply = await self._ask(used, _prompt(rubric, subject_text(subject)))
        score, rationale = parse_verdict(reply, model=f"The judge model {used!r}")
        verdict = Verdict(self.name, ident, rubric.strip(), score, bar, rationale, score >= bar)
        self.verdicts.append(verdict)
        if self.on_verdict is not None:
            self.on_verdict(verdict)
        return verdict

    async def assert_passes(
        self,
        rubric: str,
        subject: Subject,
        *,
        threshold: float | None = None,
        model: str | None = None,
        rubric_name: str | None = None,
    ) -> Verdict:
        """:meth:`__call__`, and the test fails (:class:`~.errors.VerdictFailed`, with the
        rubric, the score, the threshold and the rationale) unless the verdict passed."""
        verdict = await self(
            rubric, subject, threshold=threshold, model=model, rubric_name=rubric_name
        )
        return verdict.assert_passed()

    async def _ask(self, model: str, messages: list[dict[str, object]]) -> str | None:
        """The judge model's reply to ``messages``, asked under the role ``judge``."""
        from pytest_agentctx.runtime.errors import ProviderError
        from pytest_agentctx.runtime.providers import default_provider, split_model

        try:
            prefix, name = split_model(model)
        except ProviderError as exc:
            raise JudgeError(f"model={model!r}: {exc}") from None
        prefix = _ALIASES.get(prefix, prefix)
        owned = prefix not in self.providers
        provider = default_provider(prefix) if owned else self.providers[prefix]
        body = provider.codec.encode_request(
            model=name, messages=messages, max_tokens=self.max_tokens, temperature=0.0
        )
        turns = getattr(provider.codec, "model_turns", None)
        turn = {} if turns is None else {"turn": turns(body.get("contents"))}
        try:
            with model_role("judge"):
                raw = await provider.send(body)
        finally:
            close = getattr(provider, "aclose", None)
            if owned and close is not None:
                await close()
        content: str | None = provider.codec.decode_response(raw, **turn).content
        return content


def _prompt(rubric: str, subject: str) -> list[dict[str, object]]:
    """The judge's messages: the instructions, then the rubric and the subject."""
    text = (
        f"Rubric:\n{RUBRIC_OPEN}{rubric.strip()}{RUBRIC_CLOSE}\n\n"
        f"Subject:\n<subject>\n{subject}\n</subject>"
    )
    return [{"role": "system", "content": INSTRUCTIONS}, {"role": "user", "content": text}]


def subject_text(subject: Subject) -> str:
    """The text a judge is shown of ``subject``: a string as it is; a context as its
    conversation, one message a line (tool calls and results named); anything with a
    ``context`` (a run's result, a test's captured runs) as that context."""
    if isinstance(subject, str):
        return subject
    context = subject if isinstance(subject, AgentContext) else getattr(subject, "context", None)
    if not isinstance(context, AgentContext):
        raise JudgeError(
            f"subject is a {type(subject).__name__}; expected a text, an AgentContext, or "
            "what has one (a RunResult, agent_context): subject=result.output or "
            "subject=agent_context.context."
        )
    lines = []
    for message in context.get_all_messages():
        if message.role == "tool":
            lines.append(f"[tool result {message.name or ''}] {message.content or ''}")
            continue
        if message.content:
            lines.append(f"[{message.role}] {message.content}")
        for call in message.tool_calls:
            lines.append(f"[{message.role} calls {call.name}] {call.arguments_json}")
    return "\n".join(lines)

"""Simulated users: a model that plays a user with a persona and a goal, turn by turn.

A :class:`SimulatedUser` converses with the agent a test supplies (an async or plain
callable, the user's message in, the agent's reply out) for at most ``max_turns`` turns.
Before each turn it asks its model, through the runtime's providers (any wire format) and
under ``model_role("user_sim")``, to write the user's next message or to say it is done.
Its calls are recorded and replayed with the rest of the test's traffic, and kept apart from
the agent's runs by their role.

Each request the simulator sends is the conversation so far seen from the user's side: the
instructions (persona, goal, when to stop) as the system prompt, an opening line, then the
simulated user's messages as the assistant's and the agent's replies as the user's. Every
request extends the one before it, so capture rebuilds the simulator's calls as one
conversation, and a replayed request whose agent replies differ from the recording names
the turn where the agent diverged (:mod:`.divergence`).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from pytest_agentctx.evals.divergence import OPENING, ROLE
from pytest_agentctx.evals.errors import SimulatedUserError, SimulatedUserReplyError
from pytest_agentctx.runtime.providers import Provider, default_provider, split_model
from pytest_agentctx.traffic.roles import model_role

#: What the simulated user's model answers when the conversation is over, at the start of its
#: reply, followed by why (optional).
DONE = "[DONE]"

#: What ``stop`` says by default: the simulated user ends the conversation when its goal is met.
GOAL_MET = "when the goal is met"

#: Why a conversation stopped: the simulated user said it was done, the test's stop condition
#: held, the turn limit was reached, or an error ended it (the agent, the simulated user's
#: model or the cassette raised; the error is raised on to the test).
StoppedBecause = Literal["done", "stop", "max_turns", "error"]

#: The agent a simulated user talks to: the user's message in, the agent's reply out.
AgentTurn = Callable[[str], Awaitable[str] | str]


@dataclass(frozen=True)
class Transcript:
    """A simulated conversation: the messages (``user`` the simulated user, ``assistant``
    the agent), who played the user and why it stopped."""

    persona: str
    goal: str
    messages: tuple[Mapping[str, str], ...]
    turns: int
    stopped_because: StoppedBecause
    #: What the simulated user said when it ended the conversation; for ``error``, the
    #: error's type and the first line of its message ("" otherwise).
    done_reason: str = ""

    @property
    def user_messages(self) -> list[str]:
        """The simulated user's messages, in order."""
        return [m["content"] for m in self.messages if m["role"] == "user"]

    @property
    def agent_replies(self) -> list[str]:
        """The agent's replies, in order."""
        return [m["content"] for m in self.messages if m["role"] == "assistant"]

    @property
    def last_reply(self) -> str:
        """The agent's last reply ("" when it never replied)."""
        replies = self.agent_replies
        return replies[-1] if replies else ""

    def to_dict(self) -> dict[str, object]:
        """The transcript as the test's record keeps it (under ``transcripts``)."""
        return {
            "persona": self.persona,
            "goal": self.goal,
            "messages": [dict(m) for m in self.messages],
            "turns": self.turns,
            "stopped_because": self.stopped_because,
            "done_reason": self.done_reason,
        }


def instructions(persona: str, goal: str, stop: str) -> str:
    """The system prompt of the simulator's model."""
    return (
        "You play a user talking to an AI assistant, to test the assistant. Stay in "
        "character; never say you are an AI or that this is a test.\n"
        f"Who you are: {persona}\n"
        f"Your goal: {goal}\n"
        "Each of your replies is the user's next message to the assistant, and nothing else. "
        f"End the conversation {stop}: then reply with {DONE} alone, optionally followed "
        "by why, and nothing else."
    )


@dataclass
class SimulatedUser:
    """A user played by a model, with a persona and a goal, that converses with an agent.

    ``model`` is ``"PROVIDER:MODEL"`` (``openai:gpt-4o-mini``, ``anthropic:...``, any prefix
    of the runtime's providers), sent through ``provider`` when given (an object with a
    ``codec`` and ``async send(body)``, e.g. ``OpenAIChatProvider(client=...)``), else
    through the prefix's default provider. ``max_turns`` bounds the user's messages.
    ``stop`` says when the conversation ends: a text, which the model is told (it then says
    it is done), or a callable given the transcript so far after each agent reply, which ends
    it when true. ``first_message`` opens the conversation without a model call.
    """

    persona: str
    goal: str
    model: str = "openai:gpt-4o-mini"
    max_turns: int = 5
    stop: str | Callable[[Transcript], bool] = GOAL_MET
    first_message: str | None = None
    provider: Provider | None = None
    max_tokens: int = 1024
    temperature: float | None = 0.0
    #: Called with each transcript made (the plugin's fixture keeps them for the report).
    on_transcript: Callable[[Transcript], None] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in ("persona", "goal"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise SimulatedUserError(
                    f"SimulatedUser({name}={value!r}): the {name} must be a non-empty text, "
                    f'for example SimulatedUser(persona="a busy customer", goal="get a '
                    'refund for order 42").'
                )
        if isinstance(self.max_turns, bool) or not isinstance(self.max_turns, int):
            raise SimulatedUserError(
                f"SimulatedUser(max_turns={self.max_turns!r}): expected a whole number of "
                "turns of at least 1, for example max_turns=5."
            )
        if self.max_turns < 1:
            raise SimulatedUserError(
                f"SimulatedUser(max_turns={self.max_turns}): a conversation needs at least "
                "one turn; pass max_turns=1 or more."
            )
        if not callable(self.stop) and not (isinstance(self.stop, str) and self.stop.strip()):
            raise SimulatedUserError(
                f"SimulatedUser(stop={self.stop!r}): expected a text the model is told (such "
                f"as {GOAL_MET!r}) or a callable given the transcript that returns True "
                "to end the conversation."
            )
        split_model(self.model)  # a model that names no provider fails here, not mid-test

    @property
    def system_prompt(self) -> str:
        stop = self.stop if isinstance(self.stop, str) else GOAL_MET
        return instructions(self.persona, self.goal, stop)

    async def converse(self, agent: AgentTurn) -> Transcript:
        """Talk to ``agent`` until the user is done, ``stop`` holds or ``max_turns`` is
        reached; the transcript of the conversation. When an error ends it (the agent's,
        the simulated user's model's, a cassette miss), ``on_transcript`` is given the
        conversation so far (``stopped_because == "error"``) before the error is raised."""
        provider, owned = self._provider()
        messages: list[dict[str, str]] = []
        try:
            transcript = await self._converse(agent, provider, messages)
        except Exception as exc:
            # the conversation so far goes into the test's record before the error goes on
            if self.on_transcript is not None:
                turns = sum(1 for message in messages if message["role"] == "assistant")
                first = str(exc).strip().splitlines()[:1]
                why = f"{type(exc).__name__}: {first[0]}" if first else type(exc).__name__
                self.on_transcript(self._transcript(messages, turns, "error", why))
            raise
        finally:
            aclose = getattr(provider, "aclose", None)
            if owned and aclose is not None:
                await aclose()
        if self.on_transcript is not None:
            self.on_transcript(transcript)
        return transcript

    async def _converse(
        self, agent: AgentTurn, provider: Provider, messages: list[dict[str, str]]
    ) -> Transcript:
        for turn in range(1, self.max_turns + 1):
            if turn == 1 and self.first_message is not None:
                said: str | None = self.first_message
                reason = ""
            else:
                said, reason = await self._next_message(provider, messages, turn)
            if said is None:
                return self._transcript(messages, turn - 1, "done", reason)
            messages.append({"role": "user", "content": said})
            reply = await _reply_of(agent, said, turn)
            messages.append({"role": "assistant", "content": reply})
            if callable(self.stop) and self.stop(self._transcript(messages, turn, "stop")):
                return self._transcript(messages, turn, "stop")
        return self._transcript(messages, self.max_turns, "max_turns")

    def _transcript(
        self, messages: list[dict[str, str]], turns: int, why: StoppedBecause, reason: str = ""
    ) -> Transcript:
        return Transcript(
            self.persona, self.goal, tuple(dict(m) for m in messages), turns, why, reason
        )

    def request_messages(self, messages: list[dict[str, str]]) -> list[dict[str, str]]:
        """The messages the simulator's model is sent: the conversation from the user's side
        (the user's messages as the assistant's, the agent's replies as the user's)."""
        flipped = [
            {"role": "assistant" if m["role"] == "user" else "user", "content": m["content"]}
            for m in messages
        ]
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": OPENING},
            *flipped,
        ]

    async def _next_message(
        self, provider: Provider, messages: list[dict[str, str]], turn: int
    ) -> tuple[str | None, str]:
        """The user's next message, or ``None`` and why when the model says it is done."""
        _, name = split_model(self.model)
        body = provider.codec.encode_request(
            model=name,
            messages=self.request_messages(messages),
            max_tokens=self.max_tokens,
            temperature=self.temperature,
        )
        with model_role(ROLE):
            answer = await provider.send(body)
        completion = provider.codec.decode_response(answer)
        text = (completion.content or "").strip()
        if completion.tool_calls or not text:
            asked = (
                f"tool calls {[c.name for c in completion.tool_calls]}"
                if completion.tool_calls
                else "no text"
            )
            raise SimulatedUserReplyError(
                f"The simulated user's model ({self.model}) answered turn {turn} with {asked}; "
                f"expected the user's next message, or {DONE} when the conversation is over. "
                "Check the model and its recording (re-record this test with "
                "pytest --agent-record), or give a model that follows instructions."
            )
        if text.startswith(DONE):
            return None, text[len(DONE) :].strip(" :-\n")
        return text, ""

    def _provider(self) -> tuple[Provider, bool]:
        if self.provider is not None:
            return self.provider, False
        prefix, _ = split_model(self.model)
        return default_provider(prefix), True


async def _reply_of(agent: AgentTurn, message: str, turn: int) -> str:
    reply = agent(message)
    if inspect.isawaitable(reply):
        reply = await reply
    if not isinstance(reply, str):
        raise SimulatedUserError(
            f"The agent given to SimulatedUser.converse() returned {type(reply).__name__} "
            f"at turn {turn}; expected the agent's reply as a str. Return the reply's text "
            "(for a RunResult, its final_output)."
        )
    return reply

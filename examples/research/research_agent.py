"""A research team: an orchestrator that delegates to a researcher and a writer.

* The **researcher** reads the brief's topic from the run's state and the knowledge-base
  documents nearest to it (context assembly: ``FromState`` and ``FromRetrieval``), and
  writes its findings as an artifact.
* The **writer** reads that artifact, saves a customer-facing report and publishes it.
  Saving can be undone (``compensate=``) and publishing has a failure handler
  (``on_failure=``): a delayed publication is recovered, an outage fails the writer's run
  and the saved report is discarded.
* The **orchestrator** delegates to both (``SubAgent``); sub-agents do not call each other.

System prompts come from templates: the package's ``researcher`` and ``orchestrator``
templates, and this example's own ``prompts/writer.md``, which overrides the package's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pytest_agentctx import (
    Agent,
    CompletedStep,
    Document,
    Failure,
    FromRetrieval,
    FromState,
    InMemoryVectorStore,
    PromptTemplates,
    RunContext,
    SubAgent,
    list_artifacts,
    read_artifact,
    tool,
    write_artifact,
)

MODEL = "openai:gpt-4o-mini"
WORKSPACE = "the team's workspace of artifacts"
#: The example's prompts folder first, then the package's default templates.
PROMPTS = PromptTemplates(Path(__file__).parent / "prompts")

KNOWLEDGE_BASE = [
    Document("refunds", "Refunds are paid back to the original card within five business days."),
    Document("refund-exceptions", "Refunds are not possible for gift cards or final-sale items."),
    Document("shipping", "Standard shipping takes between two and four days."),
    Document("returns", "Items can be returned within 30 days, in their original packaging."),
]


def seed_knowledge_base(store: InMemoryVectorStore) -> InMemoryVectorStore:
    """Put the knowledge base in the store's ``kb`` collection."""
    return store.add("kb", KNOWLEDGE_BASE)


@dataclass
class Brief:
    """What the team works on: the run's state, read by the context sources."""

    topic: str
    audience: str = "customers"


class PublishDelayed(Exception):
    """The publishing service accepted the report but will publish it later."""


@dataclass
class Publisher:
    """A stand-in for a publishing service (a CMS): ``down`` or ``delayed`` to fail."""

    down: bool = False
    delayed: bool = False
    published: dict[str, str] = field(default_factory=dict)

    def publish(self, path: str, text: str) -> str:
        if self.down:
            raise ConnectionError("the publishing service is unreachable")
        if self.delayed:
            raise PublishDelayed(f"{path} is queued behind other publications")
        self.published[path] = text
        return f"https://help.example.com/{path.removesuffix('.md')}"


def discard_report(step: CompletedStep) -> None:
    """Compensation of ``save_report``: delete the report it saved."""
    assert step.run_context is not None
    step.run_context.deps["artifacts"].delete(step.arguments["path"])


@tool(compensate=discard_report)
def save_report(ctx: RunContext, path: str, content: str) -> str:
    """Save the customer-facing report as an artifact.

    Args:
        path: Where to save it, such as 'reports/refunds.md'.
        content: The report's full text.
    """
    ref = ctx.deps["artifacts"].write(path, content)
    return f"Saved {ref}."


def publish_failed(failure: Failure) -> str | None:
    """A delayed publication is fine (the report is queued); anything else fails the run."""
    if failure.error_type == "PublishDelayed":
        return f"Queued: {failure.message}. It will go live without further action."
    return None


@tool(on_failure=publish_failed)
def publish(ctx: RunContext, path: str) -> str:
    """Publish a saved report on the help centre.

    Args:
        path: The report's artifact path.
    """
    publisher: Publisher = ctx.deps["publisher"]
    return publisher.publish(path, ctx.deps["artifacts"].read(path))


def researcher_agent(model: str = MODEL) -> Agent:
    """Finds what the knowledge base says about the brief's topic; writes it down."""
    tools = [write_artifact, list_artifacts]
    return Agent(
        name="researcher",
        model=model,
        system_prompt=PROMPTS.render(
            "researcher",
            agent_type="researcher",
            goal="Find what the knowledge base says about the topic, with sources.",
            tools=tools,
            workspace=WORKSPACE,
        ),
        tools=tools,
        context=[
            FromState("topic", label="Topic"),
            FromRetrieval(
                "kb", query_from="topic", top_k=2, min_relevance=0.05, label="Knowledge base"
            ),
        ],
        state_type=Brief,
        max_iterations=4,
    )


def writer_agent(model: str = MODEL) -> Agent:
    """Turns the research artifact into a published report."""
    tools = [read_artifact, save_report, publish]
    return Agent(
        name="writer",
        model=model,
        system_prompt=PROMPTS.render(
            "writer",
            agent_type="writer",
            goal="Answer the customer's question from the research, then publish it.",
            audience="customers",
            tools=tools,
            workspace=WORKSPACE,
        ),
        tools=tools,
        max_iterations=5,
    )


def orchestrator_agent(model: str = MODEL) -> Agent:
    """Delegates research, then writing; sub-agents each keep their own context."""
    team = [
        SubAgent(
            researcher_agent(model),
            id="researcher",
            description="Finds facts in the knowledge base and saves them as an artifact.",
        ),
        SubAgent(
            writer_agent(model),
            id="writer",
            description="Writes and publishes a customer-facing report from an artifact.",
        ),
    ]
    return Agent(
        name="orchestrator",
        model=model,
        system_prompt=PROMPTS.render(
            "orchestrator",
            agent_type="orchestrator",
            goal="Publish a help-centre answer on the brief's topic.",
            tools=team,
            workspace=WORKSPACE,
        ),
        tools=team,
        context=[FromState("topic", label="Topic"), FromState("audience", label="Audience")],
        state_type=Brief,
        max_iterations=5,
    )

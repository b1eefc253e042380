"""A library-desk agent on the OpenAI Agents SDK (``openai-agents``), with two tools.

Ordinary Agents-SDK agents: module-level ``Agent`` objects with ``@function_tool`` tools,
run with ``Runner.run``; ``reading_guide`` also calls another agent as a tool. The SDK
talks to the OpenAI Responses API; ``ask(question, run_config)`` lets the caller choose
the model provider (and so the client and its ``base_url``) and the tracing settings, as
the SDK's ``RunConfig`` allows. Nothing in it knows about tests.
"""

from __future__ import annotations

from agents import Agent, RunConfig, Runner, function_tool

CATALOGUE = {
    "978-0441013593": {"title": "Dune", "author": "Frank Herbert", "copies": 2},
    "978-0141439587": {"title": "Emma", "author": "Jane Austen", "copies": 0},
}


@function_tool
def search_catalogue(query: str) -> str:
    """Books whose title or author contains the query, with their ISBN.

    Args:
        query: Words of a title or an author's name.
    """
    words = query.lower()
    found = [
        f"{isbn}: {book['title']} by {book['author']}"
        for isbn, book in CATALOGUE.items()
        if words in str(book["title"]).lower() or words in str(book["author"]).lower()
    ]
    return "\n".join(found) or f"nothing matches {query!r}"


@function_tool
def check_availability(isbn: str) -> str:
    """How many copies of a book can be borrowed now.

    Args:
        isbn: The book's ISBN, as search_catalogue gives it.
    """
    book = CATALOGUE.get(isbn)
    if book is None:
        return f"unknown ISBN {isbn}"
    return f"{book['copies']} copies of {book['title']} available"


library_desk = Agent(
    name="library_desk",
    instructions=(
        "You help visitors of a public library. Find books with search_catalogue, then "
        "check_availability before you say whether they can borrow one. One sentence."
    ),
    model="gpt-4o-mini",
    tools=[search_catalogue, check_availability],
)


#: A sub-agent: ``reading_guide`` calls it as a tool (``Agent.as_tool``), and each call is
#: a run of its own, with its own model calls.
summariser = Agent(
    name="summariser",
    instructions="Summarise the book you are given in one sentence, without spoilers.",
    model="gpt-4o-mini",
)

reading_guide = Agent(
    name="reading_guide",
    instructions=(
        "You recommend books of the library. Find them with search_catalogue and ask "
        "summarise_book for a summary before you recommend one."
    ),
    model="gpt-4o-mini",
    tools=[
        search_catalogue,
        summariser.as_tool(
            tool_name="summarise_book",
            tool_description="A one-sentence summary of a book, given its title.",
        ),
    ],
)


async def ask(
    question: str, run_config: RunConfig | None = None, *, agent: Agent = library_desk
) -> str:
    """The answer of ``agent`` (the library desk by default) to ``question``."""
    result = await Runner.run(agent, question, run_config=run_config)
    return str(result.final_output)

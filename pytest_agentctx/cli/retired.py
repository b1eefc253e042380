"""Models their providers have retired: requests to them fail, so a cassette that still
replays one tests an agent that no longer works against the real provider.

:data:`RETIRED_MODELS` is the built-in table, from the providers' deprecation pages
(OpenAI, Anthropic, Google Vertex AI); a project adds its own rows with the ini option
``agent_retired_models`` or ``--retired-models FILE``, one ``model = YYYY-MM-DD`` a line.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping

from pytest_agentctx.exceptions import UsageError

_OPENAI_GPT3 = dt.date(2024, 1, 4)
_CLAUDE_1 = dt.date(2024, 11, 6)
_CLAUDE_2 = dt.date(2025, 7, 21)

#: Model name -> the date its provider stopped answering requests to it.
RETIRED_MODELS: Mapping[str, dt.date] = {
    # OpenAI: the GPT-3 completion models, then early GPT-3.5 Turbo snapshots
    **dict.fromkeys(
        (
            "ada",
            "babbage",
            "curie",
            "davinci",
            "text-ada-001",
            "text-babbage-001",
            "text-curie-001",
            "text-davinci-001",
            "text-davinci-002",
            "text-davinci-003",
        ),
        _OPENAI_GPT3,
    ),
    "gpt-3.5-turbo-0301": dt.date(2024, 6, 13),
    "gpt-3.5-turbo-0613": dt.date(2024, 9, 13),
    "gpt-3.5-turbo-16k-0613": dt.date(2024, 9, 13),
    # OpenAI: the shutdown of 2026-10-23 (GPT-3.5 Turbo, GPT-4 and GPT-4 Turbo, the first
    # GPT-4o snapshot, o1, o1-pro, o3-mini, o4-mini, GPT-4.1 nano)
    **dict.fromkeys(
        (
            "gpt-3.5-turbo",
            "gpt-3.5-turbo-0125",
            "gpt-4",
            "gpt-4-0613",
            "gpt-4-1106-preview",
            "gpt-4-turbo",
            "gpt-4-turbo-2024-04-09",
            "gpt-4o-2024-05-13",
            "o1",
            "o1-2024-12-17",
            "o1-pro",
            "o1-pro-2025-03-19",
            "o3-mini",
            "o3-mini-2025-01-31",
            "o4-mini",
            "o4-mini-2025-04-16",
            "gpt-4.1-nano",
            "gpt-4.1-nano-2025-04-14",
        ),
        dt.date(2026, 10, 23),
    ),
    # Anthropic
    **dict.fromkeys(
        (
            "claude-1.0",
            "claude-1.1",
            "claude-1.2",
            "claude-1.3",
            "claude-instant-1.0",
            "claude-instant-1.1",
            "claude-instant-1.2",
        ),
        _CLAUDE_1,
    ),
    "claude-2.0": _CLAUDE_2,
    "claude-2.1": _CLAUDE_2,
    "claude-3-sonnet-20240229": _CLAUDE_2,
    "claude-3-opus-20240229": dt.date(2026, 1, 5),
    # Google (Vertex AI's dates; the Gemini API retired them no later)
    "gemini-1.0-pro": dt.date(2025, 4, 9),
    "gemini-1.0-pro-001": dt.date(2025, 4, 9),
    "gemini-1.0-pro-vision-001": dt.date(2025, 4, 9),
    "gemini-1.5-pro-001": dt.date(2025, 5, 24),
    "gemini-1.5-flash-001": dt.date(2025, 5, 24),
    "gemini-1.5-pro-002": dt.date(2025, 9, 24),
    "gemini-1.5-flash-002": dt.date(2025, 9, 24),
}


def parse_retired(lines: Iterable[str], *, where: str) -> dict[str, dt.date]:
    """Rows ``model = YYYY-MM-DD`` (blank lines and ``#`` comments skipped); a
    :class:`UsageError` naming ``where`` for a row that is not one."""
    table: dict[str, dt.date] = {}
    for number, raw in enumerate(lines, start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        model, sep, when = (part.strip() for part in line.partition("="))
        try:
            if not sep or not model:
                raise ValueError
            table[model] = dt.date.fromisoformat(when)
        except ValueError:
            raise UsageError(
                f"{where}, line {number}: {raw.strip()!r}; expected 'model = YYYY-MM-DD' (the "
                "date the provider retired it), e.g. 'gpt-4-0314 = 2024-06-13'. Fix the line "
                "and run the command again."
            ) from None
    return table


def retirement_of(model: str, table: Mapping[str, dt.date]) -> dt.date | None:
    """When ``model`` was (or will be) retired, by its name as a request gives it
    (``models/gemini-1.0-pro`` and ``publishers/google/models/...`` included)."""
    name = model.rsplit("/", 1)[-1].strip()
    return table.get(name)

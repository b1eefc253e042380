"""The simulated users' conversations of a test on the HTML page, beside its runs.

Each transcript of a test's record (``transcripts``) is a collapsed block: who played the
user, with what goal, how many turns and why it stopped; opened, the conversation message
by message, the simulated user's and the agent's. Every text is HTML-escaped.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_agentctx.reports.html_text import as_map, as_seq, badge, esc, fmt_count

#: How each side of a simulated conversation is labelled.
_SPEAKERS = {"user": "simulated user", "assistant": "agent"}


def transcripts_html(transcripts: Sequence[object]) -> str:
    """The page's fragment for a test's ``transcripts`` ("" when it has none)."""
    parts: list[str] = []
    for number, item in enumerate(transcripts, 1):
        transcript = as_map(item)
        why = str(transcript.get("stopped_because", "?"))
        reason = transcript.get("done_reason")
        parts.append(
            f'<details class="meta transcript"><summary class="facts">simulated user '
            f"{number}: {esc(transcript.get('persona', ''))} · goal: "
            f"{esc(transcript.get('goal', ''))} · {fmt_count(transcript.get('turns'))} turns · "
            f"stopped: {badge(why)}{f' {esc(reason)}' if reason else ''}</summary>\n<ol>"
        )
        for message in as_seq(transcript.get("messages")):
            entry = as_map(message)
            role = str(entry.get("role", ""))
            parts.append(
                f'<li class="msg {esc(role)}"><b>{esc(_SPEAKERS.get(role, role))}</b>: '
                f"<pre>{esc(entry.get('content', ''))}</pre></li>"
            )
        parts.append("</ol></details>\n")
    return "".join(parts)

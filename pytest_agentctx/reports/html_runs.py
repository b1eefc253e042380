"""One agent run of the HTML report, as a timeline of its iterations.

:class:`RunTimeline` writes a run of a JSON report: its figures and trajectory, a bar of
its iterations (each as wide as its share of the run's time), then each iteration,
collapsed, with its messages, the tool calls with their arguments and results, and its
metadata. Sub-agent runs found in an iteration's metadata (context-shaped values, as
:func:`pytest_agentctx.assertions.trajectory.nested_runs` finds them) are written in full
inside that iteration, and shown as a placeholder in its metadata.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import TypeGuard

from pytest_agentctx.reports.html_text import (
    as_instant,
    as_int,
    as_json,
    as_map,
    as_seq,
    badge,
    elapsed,
    esc,
    fmt_cost,
    fmt_count,
    fmt_seconds,
    one_line,
)

#: Iteration metadata keys shown in the iteration's header rather than in its metadata block.
_HEADER_KEYS = frozenset({"usage", "model", "provider", "stop_reason"})


def _is_context(value: object) -> TypeGuard[Mapping[str, object]]:
    return (
        isinstance(value, Mapping)
        and "iterations" in value
        and "current_iteration" in value
        and bool(as_seq(value.get("iterations")))
    )


def _nested(value: object, keys: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], object]]:
    """Every context-shaped value inside ``value`` (sub-agent runs), depth first, in order;
    as :func:`pytest_agentctx.assertions.trajectory.nested_runs` finds them."""
    if _is_context(value):
        yield keys, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _nested(item, (*keys, str(key)))
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        for index, item in enumerate(value):
            yield from _nested(item, (*keys, str(index)))


def _without_nested(value: object) -> object:
    """``value`` with every nested context replaced by a short placeholder."""
    if _is_context(value):
        return f"<sub-agent run: {len(as_seq(value.get('iterations')))} iterations, shown below>"
    if isinstance(value, Mapping):
        return {str(key): _without_nested(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [_without_nested(item) for item in value]
    return value


def _own_figures(context: Mapping[str, object]) -> str:
    """A nested run's own iterations, tool calls, tokens and time, read off its JSON."""
    iterations = [as_map(item) for item in as_seq(context.get("iterations"))]
    calls = sum(len(as_seq(item.get("tool_calls"))) for item in iterations)
    tokens_in = tokens_out = 0
    for item in iterations:
        usage = as_map(as_map(item.get("metadata")).get("usage"))
        tokens_in += as_int(usage.get("input_tokens"))
        tokens_out += as_int(usage.get("output_tokens"))
    text = (
        f"{len(iterations):,} iterations · {calls:,} tool calls · "
        f"{tokens_in:,} in / {tokens_out:,} out tokens"
    )
    if iterations:
        last = iterations[-1]
        duration = elapsed(
            as_instant(iterations[0].get("started_at")),
            as_instant(last.get("completed_at") or last.get("started_at")),
        )
        if duration is not None:
            text += f" · {fmt_seconds(max(duration, 0.0)) or '0 ms'}"
    return text


def _iteration_head(
    iteration: Mapping[str, object],
    metadata: Mapping[str, object],
    duration: float | None,
    run_start: datetime | None,
    calls: Sequence[Mapping[str, object]],
    subs: int,
) -> list[str]:
    """The parts of an iteration's summary line: when, how long, model, tokens, calls."""
    usage = as_map(metadata.get("usage"))
    offset = elapsed(run_start, as_instant(iteration.get("started_at")))
    head = []
    if offset is not None:
        head.append(f"+{fmt_seconds(offset) or '0 ms'}")
    head.append(fmt_seconds(duration) or "0 ms" if iteration.get("completed_at") else "in progress")
    if metadata.get("model"):
        head.append(str(metadata["model"]))
    if usage:
        inp, outp = as_int(usage.get("input_tokens")), as_int(usage.get("output_tokens"))
        head.append(f"{inp + outp:,} tokens ({inp:,} in / {outp:,} out)")
        read, write = (
            as_int(usage.get("cache_read_tokens")),
            as_int(usage.get("cache_write_tokens")),
        )
        if read or write:  # which calls read the prompt cache and which wrote it
            head.append(f"cache read {read:,} / written {write:,}")
    if calls:
        head.append("calls " + ", ".join(str(call.get("name", "?")) for call in calls))
    if subs:
        head.append(f"{subs} sub-agent run{'s' if subs != 1 else ''}")
    return head


def _mcp_failed(entry: Mapping[str, object]) -> bool:
    return bool(entry.get("is_error")) or entry.get("error") is not None


def _mcp_badge(entry: Mapping[str, object]) -> str:
    """``MCP <server>`` beside a tool call, with ``isError`` or the JSON-RPC error."""
    text = (
        f'<span class="label">MCP</span> <span class="mono">{esc(entry.get("server", "?"))}</span>'
    )
    if entry.get("is_error"):
        text += " " + badge("isError", "error")
    error = as_map(entry.get("error"))
    if error:
        text += (
            " " + badge("error") + f' <span class="muted">{esc(error.get("message", ""))}</span>'
        )
    return text


def _last_text(messages: Sequence[Mapping[str, object]]) -> str:
    """The preview of an iteration: its last text that is not a tool result, or ``""``."""
    for message in reversed(messages):
        content = message.get("content")
        if message.get("role") != "tool" and isinstance(content, str):
            return f"{message.get('role')}: {one_line(content)}"
    return ""


def _iteration_facts(iteration: Mapping[str, object], metadata: Mapping[str, object]) -> list[str]:
    """The provider, the stop reason and the times of an iteration, those it has."""
    facts = []
    for key in ("provider", "stop_reason"):
        if metadata.get(key) is not None:
            facts.append(f"{key}: {metadata[key]}")
    if iteration.get("started_at"):
        facts.append(f"started {iteration['started_at']}")
    if iteration.get("completed_at"):
        facts.append(f"completed {iteration['completed_at']}")
    return facts


class RunTimeline:
    """Writes runs into the fragments of a page (``out``, joined by the page once)."""

    def __init__(self, out: list[str]) -> None:
        self.w = out.append
        #: The MCP calls of the iteration being written, by the model tool call they join.
        self.mcp: dict[str, Mapping[str, object]] = {}

    def run(self, run_id: str, run: Mapping[str, object]) -> None:
        w = self.w
        stats = as_map(run.get("stats"))
        w(
            f'<div class="run" id="{run_id}"><div class="run-head">{esc(run.get("name", "run"))} '
            f'<span class="badge">{esc(run.get("source", ""))}</span> '
            f'<span class="muted">{fmt_count(stats.get("iterations"))} iterations · '
            f"{fmt_count(stats.get('tool_calls'))} tool calls · "
            f"{fmt_count(stats.get('input_tokens'))} in / "
            f"{fmt_count(stats.get('output_tokens'))} out tokens · "
            f"{fmt_cost(stats.get('cost_usd'))} · "
            f"{fmt_seconds(stats.get('duration_s')) or '0 ms'}</span></div>\n"
        )
        trajectory = [str(name) for name in as_seq(stats.get("trajectory"))]
        if trajectory:
            w(
                f'<div class="facts">trajectory: <span class="mono">{esc(" → ".join(trajectory))}'
                "</span></div>\n"
            )
        self.context(run_id, as_map(run.get("context")))
        w("</div>\n")

    def context(self, prefix: str, context: Mapping[str, object]) -> None:
        w = self.w
        iterations = [as_map(item) for item in as_seq(context.get("iterations"))]
        if not iterations:
            w('<p class="muted">This run has no iteration.</p>\n')
            return
        results: dict[str, Mapping[str, object]] = {}
        for iteration in iterations:
            for message in as_seq(iteration.get("messages")):
                message = as_map(message)
                if message.get("role") == "tool" and message.get("tool_call_id") is not None:
                    results.setdefault(str(message["tool_call_id"]), message)
        start = as_instant(iterations[0].get("started_at"))
        durations = [
            elapsed(as_instant(it.get("started_at")), as_instant(it.get("completed_at")))
            for it in iterations
        ]
        total = sum(d for d in durations if d is not None and d > 0)
        w('<div class="timeline" role="list" aria-label="iterations">')
        for iteration, duration in zip(iterations, durations, strict=True):
            number = esc(iteration.get("number", "?"))
            calls = len(as_seq(iteration.get("tool_calls")))
            grow = (duration / total * 1000) if total and duration and duration > 0 else 0
            share = f"{max(grow, 1000 / len(iterations) / 8):.0f}" if total else "1"
            title = f"iteration {number}: {fmt_seconds(duration) or 'in progress'}"
            if calls:
                title += f", {calls} tool call{'s' if calls != 1 else ''}"
            w(
                f'<a role="listitem" href="#{prefix}-i{number}" title="{esc(title)}" '
                f'class="{"calls" if calls else "text"}" style="flex-grow:{share}"></a>'
            )
        w("</div>\n")
        for iteration, duration in zip(iterations, durations, strict=True):
            self.iteration(prefix, iteration, duration, start, results)

    def iteration(
        self,
        prefix: str,
        iteration: Mapping[str, object],
        duration: float | None,
        run_start: datetime | None,
        results: Mapping[str, Mapping[str, object]],
    ) -> None:
        w = self.w
        number = esc(iteration.get("number", "?"))
        metadata = as_map(iteration.get("metadata"))
        messages = [as_map(message) for message in as_seq(iteration.get("messages"))]
        calls = [as_map(call) for call in as_seq(iteration.get("tool_calls"))]
        subs = list(_nested(metadata, ()))
        head = _iteration_head(iteration, metadata, duration, run_start, calls, len(subs))
        preview = _last_text(messages)
        w(
            f'<details class="it" id="{prefix}-i{number}"><summary><span class="num">#{number}'
            f"</span> {esc(' · '.join(head))}"
        )
        if preview:
            w(f' <span class="preview">— {esc(preview)}</span>')
        w('</summary>\n<div class="it-body">\n')
        facts = _iteration_facts(iteration, metadata)
        if facts:
            w(f'<div class="facts">{esc(" · ".join(facts))}</div>\n')
        shown: set[str] = set()
        mcp = [as_map(entry) for entry in as_seq(metadata.get("mcp"))]
        self.mcp = {str(e["tool_call_id"]): e for e in mcp if e.get("tool_call_id") is not None}
        for message in messages:
            self.message(message, results, shown)
        extra = [call for call in calls if str(call.get("id")) not in shown]
        if extra:
            w('<div class="msg"><span class="role role-assistant">tool calls</span>')
            for call in extra:
                self.call(call, results, shown)
            w("</div>\n")
        unjoined = [entry for entry in mcp if entry.get("tool_call_id") is None]
        if unjoined:
            w('<div class="msg"><span class="role role-assistant">MCP calls, no model call')
            w("</span>")
            for entry in unjoined:
                w(
                    f'<div class="call{" error" if _mcp_failed(entry) else ""}">'
                    f'<span class="label">tool call</span> <b class="mono">'
                    f"{esc(entry.get('tool', '?'))}</b> {_mcp_badge(entry)}"
                    f"<pre>{esc(as_json(entry.get('arguments', {})))}</pre></div>\n"
                )
            w("</div>\n")
        self.mcp = {}
        rest = {key: value for key, value in metadata.items() if key not in _HEADER_KEYS}
        if rest:
            w(
                '<details class="meta"><summary class="muted">metadata</summary><pre>'
                f"{esc(as_json(_without_nested(rest)))}</pre></details>\n"
            )
        self.sub_runs(f"{prefix}-i{number}", subs)
        w("</div></details>\n")

    def sub_runs(self, prefix: str, subs: Sequence[tuple[tuple[str, ...], object]]) -> None:
        """The sub-agent runs found in an iteration's metadata, each nested in full."""
        w = self.w
        for number_of_sub, (keys, sub) in enumerate(subs):
            sub_prefix = f"{prefix}-s{number_of_sub}"
            w(
                f'<div class="sub"><div class="run nested" id="{sub_prefix}">'
                f'<div class="run-head">sub-agent <span class="mono">'
                f'metadata.{esc(".".join(keys))}</span> <span class="muted">'
                f"{esc(_own_figures(as_map(sub)))}</span></div>\n"
            )
            self.context(sub_prefix, as_map(sub))
            w("</div></div>\n")

    def message(
        self,
        message: Mapping[str, object],
        results: Mapping[str, Mapping[str, object]],
        shown: set[str],
    ) -> None:
        role = str(message.get("role", "?"))
        call_id = message.get("tool_call_id")
        if role == "tool" and call_id is not None and str(call_id) in shown:
            return  # shown with its call
        w = self.w
        label = role
        if role == "tool":
            label = f"tool {message.get('name') or ''} result".replace("  ", " ")
        w(f'<div class="msg"><span class="role role-{esc(role)}">{esc(label)}</span>')
        if message.get("is_error"):
            w(f" {badge('error')}")
        content = message.get("content")
        if content is not None:
            w(f"<pre>{esc(content)}</pre>")
        for call in as_seq(message.get("tool_calls")):
            self.call(as_map(call), results, shown)
        reasoning = as_seq(message.get("reasoning"))
        if reasoning:
            w(
                '<details><summary class="muted">reasoning</summary>'
                f"<pre>{esc(as_json(list(reasoning)))}</pre></details>"
            )
        w("</div>\n")

    def call(
        self,
        call: Mapping[str, object],
        results: Mapping[str, Mapping[str, object]],
        shown: set[str],
    ) -> None:
        w = self.w
        call_id = str(call.get("id", ""))
        result = results.get(call_id)
        error = bool(result and result.get("is_error"))
        mcp = self.mcp.get(call_id)
        w(
            f'<div class="call{" error" if error else ""}"><span class="label">tool call</span> '
            f'<b class="mono">{esc(call.get("name", "?"))}</b> '
            f'<span class="muted mono">{esc(call_id)}</span>'
            + (f" {_mcp_badge(mcp)}" if mcp is not None else "")
            + f"<pre>{esc(as_json(call.get('arguments', {})))}</pre>"
        )
        if result is None:
            w('<span class="label">no result in this run</span>')
        else:
            w(
                f'<span class="label">result</span>{" " + badge("error") if error else ""}'
                f"<pre>{esc(result.get('content', ''))}</pre>"
            )
        w("</div>\n")
        shown.add(call_id)

"""One self-contained HTML page from a JSON report: each agent run as a timeline.

:func:`render_html` turns the report that ``--agent-report`` writes (its schema is in the
reports documentation) into a single page with its CSS and JavaScript inline, no external
resource, usable offline. The page opens with the session's summary (tests, outcomes,
tokens, cost, the gate) and a table of every test; below it each test shows its runs, and
each run its iterations on a timeline: the messages, the tool calls with their arguments
and results, the durations, the tokens and the model. Iterations are collapsed and open
on a click; sub-agent runs found in an iteration's metadata are shown inside it.

The page is a pure function of the report: the same report gives the same bytes (no
wall-clock time, no random ids), and every piece of text from the report is HTML-escaped.
It is built in one list of fragments joined once, so a report of thousands of tests is
rendered in linear time.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from html import escape
from importlib import resources
from typing import Any

__all__ = ["render_html"]

#: Iteration metadata keys shown in the iteration's header rather than in its metadata block.
_HEADER_KEYS = frozenset({"usage", "model", "provider", "stop_reason"})
#: Longest preview of a message in an iteration's one-line summary.
_PREVIEW = 90

#: The folder of the page's stylesheet and script, inlined into every page.
_ASSETS = "report_assets"


@functools.cache
def _asset(name: str) -> str:
    """The text of the file ``name`` of the package's report assets (read once).

    Read as text, so line ends are ``\\n`` however the file was checked out.
    """
    return (resources.files(__package__) / _ASSETS / name).read_text(encoding="utf-8")


def _e(value: Any) -> str:
    """Any value as escaped HTML text."""
    return escape(value if isinstance(value, str) else str(value), quote=True)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _seq(value: Any) -> Sequence[Any]:
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return value
    return ()


def _int(value: Any) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, (int, float)):
        return int(value)
    return 0


def _json(value: Any) -> str:
    """``value`` as JSON: on one line when short, else indented."""
    line = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    if len(line) <= _PREVIEW:
        return line
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _count(value: Any) -> str:
    return f"{_int(value):,}"


def _cost(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "n/a"
    if value == 0:
        return "$0"
    return f"${value:.4f}" if value >= 0.0001 else f"${value:.8f}".rstrip("0")


def _seconds(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return ""
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 60:
        return f"{value:.2f} s"
    minutes, seconds = divmod(value, 60)
    return f"{int(minutes)} min {seconds:.0f} s"


def _instant(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def _elapsed(start: datetime | None, end: datetime | None) -> float | None:
    if start is None or end is None:
        return None
    try:
        return (end - start).total_seconds()
    except TypeError:  # one aware, one naive
        return None


def _badge(text: Any, kind: str | None = None) -> str:
    css = f"badge b-{_e(kind if kind is not None else text)}"
    return f'<span class="{css}">{_e(text)}</span>'


def _preview(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _PREVIEW else line[: _PREVIEW - 1] + "\u2026"


def _is_context(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and "iterations" in value
        and "current_iteration" in value
        and bool(_seq(value.get("iterations")))
    )


def _nested(value: Any, keys: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], Any]]:
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


def _without_nested(value: Any) -> Any:
    """``value`` with every nested context replaced by a short placeholder."""
    if _is_context(value):
        return f"<sub-agent run: {len(_seq(value.get('iterations')))} iterations, shown below>"
    if isinstance(value, Mapping):
        return {str(key): _without_nested(item) for key, item in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes, bytearray)):
        return [_without_nested(item) for item in value]
    return value


def _own_figures(context: Mapping[str, Any]) -> str:
    """A nested run's own iterations, tool calls, tokens and time, read off its JSON."""
    iterations = [_map(item) for item in _seq(context.get("iterations"))]
    calls = sum(len(_seq(item.get("tool_calls"))) for item in iterations)
    tokens_in = tokens_out = 0
    for item in iterations:
        usage = _map(_map(item.get("metadata")).get("usage"))
        tokens_in += _int(usage.get("input_tokens"))
        tokens_out += _int(usage.get("output_tokens"))
    text = (
        f"{len(iterations):,} iterations · {calls:,} tool calls · "
        f"{tokens_in:,} in / {tokens_out:,} out tokens"
    )
    if iterations:
        last = iterations[-1]
        duration = _elapsed(
            _instant(iterations[0].get("started_at")),
            _instant(last.get("completed_at") or last.get("started_at")),
        )
        if duration is not None:
            text += f" · {_seconds(max(duration, 0.0)) or '0 ms'}"
    return text


def _iteration_head(
    iteration: Mapping[str, Any],
    metadata: Mapping[str, Any],
    duration: float | None,
    run_start: datetime | None,
    calls: Sequence[Mapping[str, Any]],
    subs: int,
) -> list[str]:
    """The parts of an iteration's summary line: when, how long, model, tokens, calls."""
    usage = _map(metadata.get("usage"))
    offset = _elapsed(run_start, _instant(iteration.get("started_at")))
    head = []
    if offset is not None:
        head.append(f"+{_seconds(offset) or '0 ms'}")
    head.append(_seconds(duration) or "0 ms" if iteration.get("completed_at") else "in progress")
    if metadata.get("model"):
        head.append(str(metadata["model"]))
    if usage:
        inp, outp = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        head.append(f"{inp + outp:,} tokens ({inp:,} in / {outp:,} out)")
    if calls:
        head.append("calls " + ", ".join(str(call.get("name", "?")) for call in calls))
    if subs:
        head.append(f"{subs} sub-agent run{'s' if subs != 1 else ''}")
    return head


def _last_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The preview of an iteration: its last text that is not a tool result, or ``""``."""
    for message in reversed(messages):
        if message.get("role") != "tool" and isinstance(message.get("content"), str):
            return f"{message.get('role')}: {_preview(message['content'])}"
    return ""


def _iteration_facts(iteration: Mapping[str, Any], metadata: Mapping[str, Any]) -> list[str]:
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


class _Page:
    """The fragments of the page, written in order and joined once."""

    def __init__(self) -> None:
        self.out: list[str] = []
        self.w = self.out.append

    # -- the session ---------------------------------------------------------------------

    def document(self, report: Mapping[str, Any]) -> str:
        summary = _map(report.get("summary"))
        tests = [_map(test) for test in _seq(report.get("tests"))]
        gate_lines = self._gate_lines_by_test(summary, tests)
        w = self.w
        w('<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n')
        w('<meta name="viewport" content="width=device-width, initial-scale=1">\n')
        w("<title>pytest-agentctx report</title>\n<style>\n")
        w(_asset("report.css"))
        w("</style>\n</head>\n<body>\n")
        self.summary(report, summary, tests)
        w("<main>\n")
        self.controls(len(tests))
        self.table(tests, gate_lines)
        w("<h2>Runs</h2>\n")
        for index, test in enumerate(tests):
            self.test(index, test, gate_lines.get(index, ()))
        w("</main>\n<script>\n")
        w(_asset("report.js"))
        w("</script>\n</body>\n</html>\n")
        return "".join(self.out)

    @staticmethod
    def _gate_lines_by_test(
        summary: Mapping[str, Any], tests: Sequence[Mapping[str, Any]]
    ) -> dict[int, list[str]]:
        """Gate failure lines that name a test: the line starts with its node id."""
        index = {str(test.get("nodeid", "")): i for i, test in enumerate(tests)}
        found: dict[int, list[str]] = {}
        for line in _seq(_map(summary.get("gate")).get("failures")):
            text = str(line)
            match = None
            for position, char in enumerate(text):
                if char in " :" and text[:position] in index:
                    match = index[text[:position]]  # the longest node id wins
            if text in index:
                match = index[text]
            if match is not None:
                found.setdefault(match, []).append(text)
        return found

    def summary(
        self,
        report: Mapping[str, Any],
        summary: Mapping[str, Any],
        tests: Sequence[Mapping[str, Any]],
    ) -> None:
        w = self.w
        stats = _map(summary.get("stats"))
        w('<header class="top">\n<h1>pytest-agentctx report</h1>\n')
        if report.get("format") != "pytest-agentctx-report" or report.get("version") != 1:
            w(
                '<p class="facts bad">This page was made for report format '
                "<code>pytest-agentctx-report</code> version 1; this report says "
                f"<code>{_e(report.get('format'))}</code> version "
                f"<code>{_e(report.get('version'))}</code>. Some parts may be missing.</p>\n"
            )
        cards = [
            ("tests", _count(summary.get("tests", len(tests)))),
            ("passed", _count(summary.get("passed"))),
            ("failed", _count(summary.get("failed"))),
            ("skipped", _count(summary.get("skipped"))),
            (
                "unit / integration",
                f"{_count(summary.get('unit'))} / {_count(summary.get('integration'))}",
            ),
            ("runs", _count(stats.get("runs"))),
            ("iterations", _count(stats.get("iterations"))),
            ("tool calls", _count(stats.get("tool_calls"))),
            (
                "tokens in / out",
                f"{_count(stats.get('input_tokens'))} / {_count(stats.get('output_tokens'))}",
            ),
            ("cost", _cost(stats.get("cost_usd"))),
            ("agent time", _seconds(stats.get("duration_s")) or "0 ms"),
        ]
        w('<div class="cards">')
        for label, value in cards:
            w(f'<div class="card"><b>{_e(value)}</b><span>{_e(label)}</span></div>')
        w("</div>\n")
        models = [str(model) for model in _seq(stats.get("models"))]
        if models:
            w(f'<div class="facts">models: {_e(", ".join(models))}</div>\n')
        self.gate(_map(summary.get("gate")))
        w("</header>\n")

    def gate(self, gate: Mapping[str, Any]) -> None:
        w = self.w
        if not gate.get("enabled"):
            w(
                '<div class="gate">Gate: not enabled (run pytest with <code>--agent-gate</code>'
                " to fail the session on budgets, stale cassettes and drift).</div>\n"
            )
            return
        failures = [str(line) for line in _seq(gate.get("failures"))]
        if gate.get("passed") and not failures:
            w('<div class="gate pass" id="gate">Gate: <b>passed</b></div>\n')
            return
        w(
            f'<div class="gate fail" id="gate">Gate: <b>failed</b> ({len(failures):,} '
            f"{'failure' if len(failures) == 1 else 'failures'})<ul>"
        )
        for line in failures:
            w(f'<li class="mono">{_e(line)}</li>')
        w("</ul></div>\n")

    def controls(self, total: int) -> None:
        self.w(
            '<div class="controls">'
            '<input type="search" id="filter" placeholder="Filter tests by node id" '
            'aria-label="Filter tests by node id">'
            '<select id="outcome" aria-label="Show tests">'
            '<option value="">all tests</option>'
            '<option value="failed">failed</option>'
            '<option value="passed">passed</option>'
            '<option value="skipped">skipped</option>'
            '<option value="attention">needing attention</option>'
            "</select>"
            '<button type="button" id="expand-tests">Open all tests</button>'
            '<button type="button" id="collapse-all">Collapse all</button>'
            f'<span class="muted"><span id="shown">{total:,}</span> of {total:,} tests shown'
            "</span></div>\n"
        )

    # -- the table of tests --------------------------------------------------------------

    def table(
        self, tests: Sequence[Mapping[str, Any]], gate_lines: Mapping[int, Sequence[str]]
    ) -> None:
        w = self.w
        w(
            '<table class="tests"><thead><tr><th>test</th><th>outcome</th><th>suite</th>'
            '<th class="n">runs</th><th class="n">iterations</th><th class="n">tool calls</th>'
            '<th class="n">tokens</th><th class="n">cost</th><th class="n">agent time</th>'
            "<th>cassette</th><th>budget</th></tr></thead>\n<tbody>\n"
        )
        for index, test in enumerate(tests):
            stats = _map(test.get("stats"))
            cassette = _map(test.get("cassette"))
            w(
                f'<tr data-test="{index}"><td><a href="#t{index}">{_e(test.get("nodeid", ""))}'
                f"</a></td><td>{_badge(test.get('outcome', 'unknown'))}</td>"
                f"<td>{_e(test.get('suite', ''))}</td>"
                f'<td class="n">{_count(stats.get("runs"))}</td>'
                f'<td class="n">{_count(stats.get("iterations"))}</td>'
                f'<td class="n">{_count(stats.get("tool_calls"))}</td>'
                f'<td class="n">{_count(stats.get("total_tokens"))}</td>'
                f'<td class="n">{_cost(stats.get("cost_usd"))}</td>'
                f'<td class="n">{_seconds(stats.get("duration_s"))}</td>'
                f"<td>{_badge(cassette['status']) if cassette.get('status') else ''}</td>"
                f"<td>{self._budget_badge(test)}"
                f"{_badge('gate', 'failed') if index in gate_lines else ''}</td></tr>\n"
            )
        w("</tbody></table>\n")

    @staticmethod
    def _budget_badge(test: Mapping[str, Any]) -> str:
        budget = _map(test.get("budget"))
        if not budget:
            return ""
        return _badge("exceeded") if _seq(budget.get("exceeded")) else _badge("within", "ok")

    # -- one test ------------------------------------------------------------------------

    @staticmethod
    def _needs_attention(test: Mapping[str, Any], gate_lines: Sequence[str]) -> bool:
        cassette = _map(test.get("cassette"))
        repeat = _map(test.get("repeat"))
        return bool(
            test.get("outcome") == "failed"
            or gate_lines
            or _seq(_map(test.get("budget")).get("exceeded"))
            or cassette.get("status") in ("unsaved", "stale", "unused", "missing")
            or (repeat and repeat.get("pass_rate", 1) < repeat.get("min_pass_rate", 0))
        )

    def test(self, index: int, test: Mapping[str, Any], gate_lines: Sequence[str]) -> None:
        w = self.w
        nodeid = str(test.get("nodeid", ""))
        outcome = str(test.get("outcome", "unknown"))
        attention = self._needs_attention(test, gate_lines)
        stats = _map(test.get("stats"))
        cassette = _map(test.get("cassette"))
        open_attr = " open" if attention else ""
        w(
            f'<details class="test" id="t{index}" data-nodeid="{_e(nodeid)}" '
            f'data-outcome="{_e(outcome)}" data-attention="{int(attention)}"{open_attr}>'
            f'<summary><span class="nodeid">{_e(nodeid)}</span> {_badge(outcome)} '
            f"{_badge(test.get('suite', 'unit'))}"
        )
        if cassette.get("status"):
            w(f" {_badge(cassette['status'])}")
        w(
            f' <span class="muted">{_count(stats.get("iterations"))} iterations · '
            f"{_count(stats.get('tool_calls'))} tool calls · "
            f"{_count(stats.get('total_tokens'))} tokens · {_cost(stats.get('cost_usd'))}"
            '</span></summary>\n<div class="test-body">\n'
        )
        self.test_facts(test, gate_lines)
        runs = [_map(run) for run in _seq(test.get("runs"))]
        if not runs:
            w('<p class="muted">No agent run was recorded for this test.</p>\n')
        for number, run in enumerate(runs):
            self.run(f"t{index}-r{number}", run)
        w("</div></details>\n")

    def test_facts(self, test: Mapping[str, Any], gate_lines: Sequence[str]) -> None:
        w = self.w
        cassette = _map(test.get("cassette"))
        if cassette:
            unused = [str(n) for n in _seq(cassette.get("unused"))]
            w(
                f'<div class="facts">cassette <code>{_e(cassette.get("path", ""))}</code> · '
                f"mode {_e(cassette.get('mode', ''))} · {_badge(cassette.get('status', '?'))} · "
                f"{_count(cassette.get('interactions'))} interactions"
            )
            if unused:
                w(f' · <span class="bad">unused interactions: {_e(", ".join(unused))}</span>')
            w("</div>\n")
        budget = _map(test.get("budget"))
        if budget:
            limits = _map(budget.get("limits"))
            exceeded = {
                str(_map(item).get("name")): _map(item) for item in _seq(budget.get("exceeded"))
            }
            parts = []
            for name in sorted(set(limits) | set(exceeded)):
                over = exceeded.get(name)
                if over is not None:
                    parts.append(
                        f'<span class="bad">{_e(name)}: measured '
                        f"{_e(over.get('measured'))} &gt; allowed "
                        f"{_e(over.get('allowed'))}</span>"
                    )
                else:
                    parts.append(f"{_e(name)} ≤ {_e(limits[name])}")
            w(f'<div class="facts">budget: {" · ".join(parts) or "no limit"}</div>\n')
        repeat = _map(test.get("repeat"))
        if repeat:
            rate = repeat.get("pass_rate")
            low = isinstance(rate, (int, float)) and rate < repeat.get("min_pass_rate", 0)
            text = (
                f"repeated: {_count(repeat.get('passed'))} of {_count(repeat.get('runs'))}"
                f" runs passed (pass rate {_e(rate)}, minimum "
                f"{_e(repeat.get('min_pass_rate'))})"
            )
            w(f'<div class="facts">{f"<span class=bad>{text}</span>" if low else text}</div>\n')
        for line in gate_lines:
            w(f'<div class="facts bad">gate: {_e(line)}</div>\n')

    # -- one run -------------------------------------------------------------------------

    def run(self, run_id: str, run: Mapping[str, Any]) -> None:
        w = self.w
        stats = _map(run.get("stats"))
        w(
            f'<div class="run" id="{run_id}"><div class="run-head">{_e(run.get("name", "run"))} '
            f'<span class="badge">{_e(run.get("source", ""))}</span> '
            f'<span class="muted">{_count(stats.get("iterations"))} iterations · '
            f"{_count(stats.get('tool_calls'))} tool calls · "
            f"{_count(stats.get('input_tokens'))} in / {_count(stats.get('output_tokens'))} out "
            f"tokens · {_cost(stats.get('cost_usd'))} · "
            f"{_seconds(stats.get('duration_s')) or '0 ms'}</span></div>\n"
        )
        trajectory = [str(name) for name in _seq(stats.get("trajectory"))]
        if trajectory:
            w(
                f'<div class="facts">trajectory: <span class="mono">{_e(" → ".join(trajectory))}'
                "</span></div>\n"
            )
        self.context(run_id, _map(run.get("context")))
        w("</div>\n")

    def context(self, prefix: str, context: Mapping[str, Any]) -> None:
        w = self.w
        iterations = [_map(item) for item in _seq(context.get("iterations"))]
        if not iterations:
            w('<p class="muted">This run has no iteration.</p>\n')
            return
        results: dict[str, Mapping[str, Any]] = {}
        for iteration in iterations:
            for message in _seq(iteration.get("messages")):
                message = _map(message)
                if message.get("role") == "tool" and message.get("tool_call_id") is not None:
                    results.setdefault(str(message["tool_call_id"]), message)
        start = _instant(iterations[0].get("started_at"))
        durations = [
            _elapsed(_instant(it.get("started_at")), _instant(it.get("completed_at")))
            for it in iterations
        ]
        total = sum(d for d in durations if d is not None and d > 0)
        w('<div class="timeline" role="list" aria-label="iterations">')
        for iteration, duration in zip(iterations, durations, strict=True):
            number = _e(iteration.get("number", "?"))
            calls = len(_seq(iteration.get("tool_calls")))
            grow = (duration / total * 1000) if total and duration and duration > 0 else 0
            share = f"{max(grow, 1000 / len(iterations) / 8):.0f}" if total else "1"
            title = f"iteration {number}: {_seconds(duration) or 'in progress'}"
            if calls:
                title += f", {calls} tool call{'s' if calls != 1 else ''}"
            w(
                f'<a role="listitem" href="#{prefix}-i{number}" title="{_e(title)}" '
                f'class="{"calls" if calls else "text"}" style="flex-grow:{share}"></a>'
            )
        w("</div>\n")
        for iteration, duration in zip(iterations, durations, strict=True):
            self.iteration(prefix, iteration, duration, start, results)

    def iteration(
        self,
        prefix: str,
        iteration: Mapping[str, Any],
        duration: float | None,
        run_start: datetime | None,
        results: Mapping[str, Mapping[str, Any]],
    ) -> None:
        w = self.w
        number = _e(iteration.get("number", "?"))
        metadata = _map(iteration.get("metadata"))
        messages = [_map(message) for message in _seq(iteration.get("messages"))]
        calls = [_map(call) for call in _seq(iteration.get("tool_calls"))]
        subs = list(_nested(metadata, ()))
        head = _iteration_head(iteration, metadata, duration, run_start, calls, len(subs))
        preview = _last_text(messages)
        w(
            f'<details class="it" id="{prefix}-i{number}"><summary><span class="num">#{number}'
            f"</span> {_e(' · '.join(head))}"
        )
        if preview:
            w(f' <span class="preview">— {_e(preview)}</span>')
        w('</summary>\n<div class="it-body">\n')
        facts = _iteration_facts(iteration, metadata)
        if facts:
            w(f'<div class="facts">{_e(" · ".join(facts))}</div>\n')
        shown: set[str] = set()
        for message in messages:
            self.message(message, results, shown)
        extra = [call for call in calls if str(call.get("id")) not in shown]
        if extra:
            w('<div class="msg"><span class="role role-assistant">tool calls</span>')
            for call in extra:
                self.call(call, results, shown)
            w("</div>\n")
        rest = {key: value for key, value in metadata.items() if key not in _HEADER_KEYS}
        if rest:
            w(
                '<details class="meta"><summary class="muted">metadata</summary><pre>'
                f"{_e(_json(_without_nested(rest)))}</pre></details>\n"
            )
        self.sub_runs(f"{prefix}-i{number}", subs)
        w("</div></details>\n")

    def sub_runs(self, prefix: str, subs: Sequence[tuple[tuple[str, ...], Any]]) -> None:
        """The sub-agent runs found in an iteration's metadata, each nested in full."""
        w = self.w
        for number_of_sub, (keys, sub) in enumerate(subs):
            sub_prefix = f"{prefix}-s{number_of_sub}"
            w(
                f'<div class="sub"><div class="run nested" id="{sub_prefix}">'
                f'<div class="run-head">sub-agent <span class="mono">'
                f'metadata.{_e(".".join(keys))}</span> <span class="muted">'
                f"{_e(_own_figures(_map(sub)))}</span></div>\n"
            )
            self.context(sub_prefix, _map(sub))
            w("</div></div>\n")

    def message(
        self,
        message: Mapping[str, Any],
        results: Mapping[str, Mapping[str, Any]],
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
        w(f'<div class="msg"><span class="role role-{_e(role)}">{_e(label)}</span>')
        if message.get("is_error"):
            w(f" {_badge('error')}")
        content = message.get("content")
        if content is not None:
            w(f"<pre>{_e(content)}</pre>")
        for call in _seq(message.get("tool_calls")):
            self.call(_map(call), results, shown)
        reasoning = _seq(message.get("reasoning"))
        if reasoning:
            w(
                '<details><summary class="muted">reasoning</summary>'
                f"<pre>{_e(_json(list(reasoning)))}</pre></details>"
            )
        w("</div>\n")

    def call(
        self, call: Mapping[str, Any], results: Mapping[str, Mapping[str, Any]], shown: set[str]
    ) -> None:
        w = self.w
        call_id = str(call.get("id", ""))
        result = results.get(call_id)
        error = bool(result and result.get("is_error"))
        w(
            f'<div class="call{" error" if error else ""}"><span class="label">tool call</span> '
            f'<b class="mono">{_e(call.get("name", "?"))}</b> '
            f'<span class="muted mono">{_e(call_id)}</span>'
            f"<pre>{_e(_json(call.get('arguments', {})))}</pre>"
        )
        if result is None:
            w('<span class="label">no result in this run</span>')
        else:
            w(
                f'<span class="label">result</span>{" " + _badge("error") if error else ""}'
                f"<pre>{_e(result.get('content', ''))}</pre>"
            )
        w("</div>\n")
        shown.add(call_id)


def render_html(report: Mapping[str, Any]) -> str:
    """The HTML page of a JSON report (the dict ``--agent-report`` writes).

    One self-contained document: inline CSS and JavaScript, no external resource, every
    text from the report escaped; the same report always gives the same string. A summary
    and a table of the tests come first, then each test's runs as timelines of iterations,
    collapsed until clicked, with sub-agent runs nested in the iteration that made them.
    """
    return _Page().document(report)
